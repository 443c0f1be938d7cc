"""Gate verdicts, reviews and comparisons: publication decisions, each an event.

Each carries the ledger position and head hash it was made at, so any number it
names can be traced to the events behind it and re-derived later.
"""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from pydantic import Field

from benchledger.domain.base import Event

# `runtime`: the host's runtime gates (a registry entry's `requires`), not the latest rows.
GateName = Literal["publishability", "comparability", "readiness", "calibration", "runtime"]


class GateEvaluated(Event):
    gate: GateName
    params: dict[str, Any] = Field(default_factory=dict)
    ok: bool
    findings: list[dict[str, Any]] = Field(default_factory=list)
    position: int
    head_sha256: str
    actor: str


class ReviewRecorded(Event):
    reviewer: str
    note: str
    scope: dict[str, Any] = Field(default_factory=dict)
    ok: bool
    blocking_findings: int
    position: int
    head_sha256: str
    gate_verdict_ids: list[UUID] = Field(default_factory=list)
    manifest_sha256: str


class ComparisonRecorded(Event):
    comparison_id: str
    a: dict[str, Any]
    b: dict[str, Any]
    benchmarks: list[str]
    rows: list[dict[str, Any]]
    position: int
    head_sha256: str
    actor: str
    # How the rows were decided (tolerance, alpha, bootstrap seed and resamples): empty
    # in comparisons recorded before `compare` stated it.
    statistics: dict[str, Any] = Field(default_factory=dict)
    # For a comparison whose sides `compare --run` ran: how they ran (agent, mode,
    # sampling), each side's run group and runs, and when; empty for one over the ledger.
    execution: dict[str, Any] = Field(default_factory=dict)


class RankingRecorded(Event):
    """One benchmark's agents ranked in tie groups (`latest --rank --record`), as shown."""

    ranking_id: str
    benchmark: str
    rows: list[dict[str, Any]]
    position: int
    head_sha256: str
    actor: str
    statistics: dict[str, Any] = Field(default_factory=dict)


def first_event(cls: type[Event], aggregate_id: UUID, **fields: Any) -> Event:
    """Each verdict, review and comparison is a stream of one event."""
    return cls(originator_id=aggregate_id, originator_version=1, **fields)
