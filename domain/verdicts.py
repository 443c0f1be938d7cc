"""Gate verdicts, reviews and comparisons: publication decisions, each an event.

Each carries the ledger position and head hash it was made at, so any number it
names can be traced to the events behind it and re-derived later.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from collections.abc import Sequence
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
    # The findings themselves, as verdicts recorded before `findings_sha256` held them;
    # a verdict recorded since names them by digest (`GateFindingsRecorded`).
    findings: list[dict[str, Any]] = Field(default_factory=list)
    position: int
    head_sha256: str
    actor: str
    findings_sha256: str | None = None
    finding_count: int | None = None

    @property
    def count(self) -> int:
        return self.finding_count if self.finding_count is not None else len(self.findings)


class GateFindingsRecorded(Event):
    """The findings of a gate verdict, stored once however many verdicts find them (the
    stream is named by their digest): a readiness check of a large ledger repeated adds a
    small verdict, not its findings again. `compressed` is the base64 of their canonical
    JSON (`pack_findings`) compressed with zlib; `verdict_id`, the first verdict that
    found them, and `gate` its gate."""

    verdict_id: UUID
    gate: GateName
    sha256: str
    count: int
    compressed: str

    @property
    def findings(self) -> list[dict[str, Any]]:
        return unpack_findings(self.compressed)


def findings_digest(findings: Sequence[dict[str, Any]]) -> tuple[str, bytes]:
    """(sha256 of the findings' compact JSON, that JSON): each finding's keys in the order
    its gate gave them, as its report prints them."""
    text = json.dumps(list(findings), separators=(",", ":"), ensure_ascii=False)
    data = text.encode()
    return hashlib.sha256(data).hexdigest(), data


def pack_findings(findings: Sequence[dict[str, Any]]) -> tuple[str, str]:
    """(digest, compressed) of the findings, as `GateFindingsRecorded` holds them."""
    digest, data = findings_digest(findings)
    return digest, base64.b64encode(zlib.compress(data, 9)).decode("ascii")


def unpack_findings(compressed: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(zlib.decompress(base64.b64decode(compressed)))
    return found


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
