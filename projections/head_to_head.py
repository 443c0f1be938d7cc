"""`head_to_head_reports` and `head_to_head_rows`: the recorded head-to-head reports.

One row per report (its sides, exit code and reason) and one per benchmark row of
it, folded from `HeadToHeadRecorded` so Datasette can browse and facet them; the
report itself is re-rendered from its event, never from these tables.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from benchledger.domain.head_to_head import HeadToHeadRecorded
from benchledger.projections import versions
from benchledger.projections.base import (
    Change,
    Envelope,
    ForeignKey,
    Projection,
    Table,
    iso,
    to_json,
    topics_of,
)

REPORT_COLUMNS: dict[str, type] = {
    "report_id": str,
    "target": str,
    "baseline": str,
    "benchmarks": str,
    "exit_code": int,
    "exit_reason": str,
    "position": int,
    "head_sha256": str,
    "actor": str,
    "recorded_at": str,
    "event_position": int,
}
# Flat report-row fields copied as they are; `paired` is kept as JSON.
ROW_FIELDS: dict[str, type] = {
    "benchmark": str,
    "comparison_status": str,
    "status_reason": str,
    "target_run_id": str,
    "baseline_run_id": str,
    "target_right": int,
    "target_wrong": int,
    "target_total": int,
    "target_accuracy": float,
    "baseline_right": int,
    "baseline_wrong": int,
    "baseline_total": int,
    "baseline_accuracy": float,
    "accuracy_delta": float,
    "target_input_tokens": int,
    "target_output_tokens": int,
    "target_total_tokens": int,
    "target_cached_tokens": int,
    "target_cached_pct": float,
    "target_llm_calls": int,
    "baseline_input_tokens": int,
    "baseline_output_tokens": int,
    "baseline_total_tokens": int,
    "baseline_cached_tokens": int,
    "baseline_cached_pct": float,
    "baseline_llm_calls": int,
    "total_tokens_delta": int,
    "llm_calls_delta": int,
    "cached_pct_delta": float,
    "differing_keys": str,
}
ROW_COLUMNS: dict[str, type] = {"report_id": str, **ROW_FIELDS, "paired": str}
REPORT = (
    f"INSERT INTO [{{head_to_head_reports}}] ({', '.join(REPORT_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(REPORT_COLUMNS))})"
)
ROW = (
    f"INSERT INTO [{{head_to_head_rows}}] ({', '.join(ROW_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(ROW_COLUMNS))})"
)


class HeadToHeadProjection(Projection):
    name = "head_to_head"
    version = versions.version(name)
    tables = (
        Table("head_to_head_reports", REPORT_COLUMNS, pk=("report_id",)),
        Table(
            "head_to_head_rows",
            ROW_COLUMNS,
            indexes=(("report_id",), ("benchmark",)),
            foreign_keys=(
                ForeignKey("report_id", "head_to_head_reports", "report_id"),
                ForeignKey("target_run_id", "runs", "run_id"),
                ForeignKey("baseline_run_id", "runs", "run_id"),
            ),
        ),
    )
    topics = topics_of(HeadToHeadRecorded)

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        event = envelope.event
        if not isinstance(event, HeadToHeadRecorded):
            return
        report = event.report
        yield (
            REPORT,
            (
                event.report_id,
                event.target.get("spec"),
                event.baseline.get("spec"),
                to_json(event.benchmarks),
                report.get("exit_code"),
                report.get("exit_reason"),
                event.position,
                event.head_sha256,
                event.actor,
                iso(event.timestamp),
                envelope.position,
            ),
        )
        yield ROW, [_row(event.report_id, r) for r in report.get("report_rows", [])]


def _row(report_id: str, row: dict[str, Any]) -> tuple[object, ...]:
    values: list[object] = [report_id]
    for name in ROW_FIELDS:
        value = row.get(name)
        values.append(to_json(value) if isinstance(value, list | dict) else value)
    values.append(to_json(row["paired"]) if row.get("paired") else None)
    return tuple(values)
