"""Value objects for what a run reports: its header and its cells."""

from __future__ import annotations

import math
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from domain.signatures import canonical_json, comparison_signature, sha256_hex, signature

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
NonEmptyStr = Annotated[str, Field(min_length=1)]


class RunStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    ERROR = "error"


FINISHED_STATUSES = tuple(s for s in RunStatus if s is not RunStatus.RUNNING)


class CellOutcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"


def json_safe(value: Any) -> Any:
    """Spell non-finite floats as strings so every stored value is valid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Cell(Record):
    """One task / instance / sample result inside a run."""

    key: NonEmptyStr
    outcome: CellOutcome
    score: FiniteFloat | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)

    @field_validator("metrics")
    @classmethod
    def _json_safe_metrics(cls, value: dict[str, Any]) -> dict[str, Any]:
        return json_safe(value)  # type: ignore[no-any-return]

    def digest(self) -> str:
        """Short fingerprint of the payload, to tell a repeat from a conflict."""
        return sha256_hex(canonical_json(self.model_dump(mode="json")))[:16]


class RunHeader(Record):
    """What a result source says about one run, before its cells."""

    run_key: NonEmptyStr | None = None
    benchmark: NonEmptyStr
    agent: NonEmptyStr
    provider: str = ""
    model: NonEmptyStr
    config: dict[str, Any] = Field(default_factory=dict)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    status: RunStatus
    score: FiniteFloat | None = None
    unit: str | None = None
    higher_is_better: bool = True
    metrics: dict[str, Any] = Field(default_factory=dict)
    tokens: dict[str, int] = Field(default_factory=dict)
    error: str | None = None

    @field_validator("config", "metrics")
    @classmethod
    def _json_safe(cls, value: dict[str, Any]) -> dict[str, Any]:
        return json_safe(value)  # type: ignore[no-any-return]

    @field_validator("status")
    @classmethod
    def _finished(cls, value: RunStatus) -> RunStatus:
        if value is RunStatus.RUNNING:
            raise ValueError("an imported run must be finished, not 'running'")
        return value

    @property
    def signature(self) -> str:
        return signature(self.benchmark, self.agent, self.provider, self.model, self.config)

    @property
    def comparison_signature(self) -> str:
        return comparison_signature(self.benchmark, self.provider, self.model, self.config)

    def natural_key(self) -> str:
        """The run's key within its source: given, or derived from who ran what when."""
        if self.run_key:
            return self.run_key
        started = self.started_at.isoformat() if self.started_at else ""
        return f"{self.signature}@{started}"


class RunRecord(Record):
    """One run as a result source states it: header plus cells."""

    header: RunHeader
    cells: tuple[Cell, ...] = ()

    def content_sha256(self) -> str:
        """Fingerprint of the run's content, independent of file layout."""
        return sha256_hex(
            canonical_json(
                {
                    "header": self.header.model_dump(mode="json"),
                    "cells": [c.model_dump(mode="json") for c in self.cells],
                }
            )
        )


class SourceFile(Record):
    """Provenance of an imported file."""

    path: str
    sha256: str
    size: int
    format: str
