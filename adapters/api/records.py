"""What the Python API's read helpers return: plain, frozen records of read-model rows.

Each record names the fields most readers want and keeps the whole row as it was read
(`row`), so nothing the read models hold is lost on the way out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class RunSummary:
    """One run as `benchledger runs` and `show` list it."""

    run_id: str
    run_key: str | None
    benchmark: str
    agent: str
    provider: str
    model: str
    status: str
    score: float | None
    unit: str | None
    attempt: int | None
    started_at: str | None
    ended_at: str | None
    error: str | None
    cells: int
    cells_passed: int
    cells_failed: int
    cells_error: int
    cells_skipped: int
    invalidated: bool
    config: Mapping[str, Any]
    metrics: Mapping[str, Any]
    # Every column of the row, decoded as the CLI decodes it (`queries.decode_run`).
    row: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RunSummary:
        return cls(
            run_id=str(row["run_id"]),
            run_key=row.get("run_key"),
            benchmark=str(row["benchmark"]),
            agent=str(row["agent"]),
            provider=str(row.get("provider") or ""),
            model=str(row["model"]),
            status=str(row["status"]),
            score=row.get("score"),
            unit=row.get("unit"),
            attempt=row.get("attempt"),
            started_at=row.get("started_at"),
            ended_at=row.get("ended_at"),
            error=row.get("error"),
            cells=int(row.get("cells") or 0),
            cells_passed=int(row.get("cells_passed") or 0),
            cells_failed=int(row.get("cells_failed") or 0),
            cells_error=int(row.get("cells_error") or 0),
            cells_skipped=int(row.get("cells_skipped") or 0),
            invalidated=bool(row.get("invalidated")),
            config=MappingProxyType(dict(row.get("config") or {})),
            metrics=MappingProxyType(dict(row.get("metrics") or {})),
            row=MappingProxyType(dict(row)),
        )


@dataclass(frozen=True)
class CellResult:
    """One cell of a run, as recorded: its key, outcome, score and metrics."""

    key: str
    outcome: str
    score: float | None
    metrics: Mapping[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> CellResult:
        return cls(
            key=str(row["key"]),
            outcome=str(row["outcome"]),
            score=row["score"],
            metrics=MappingProxyType(dict(row["metrics"] or {})),
        )
