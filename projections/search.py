"""`search`: the ledger's prose, full-text searchable (SQLite FTS5).

Everything a person or a harness wrote about a run or a gate, one row per statement:
run errors, invalidation, reinstatement, supersession and correction reasons, stale-run
recoveries, review notes and gate findings. Rows are only ever added: a search finds what
was said even after a later event replaced it in `runs` (a reinstated run's invalidation
reason, an error corrected later), as the log itself keeps it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from benchledger.domain.run import (
    RunFactsAdded,
    RunFinished,
    RunImported,
    RunInvalidated,
    RunReinstated,
    RunSuperseded,
    ScoreCorrected,
    StaleRunRecovered,
)
from benchledger.domain.verdicts import GateEvaluated, GateFindingsRecorded, ReviewRecorded
from benchledger.projections import versions
from benchledger.projections.base import (
    Change,
    Envelope,
    Params,
    Projection,
    Table,
    to_json,
    topics_of,
)

INSERT = (
    "INSERT INTO [{search}] (text, kind, run_id, stream, position, recorded_at) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)


class SearchProjection(Projection):
    name = "search"
    version = versions.version(name)
    tables = (
        Table(
            "search",
            {
                "text": str,
                # error, invalidated, reinstated, superseded, corrected, recovered,
                # review or gate_finding
                "kind": str,
                "run_id": str,  # NULL for a review or a gate's finding
                "stream": str,
                "position": int,
                "recorded_at": str,
            },
            full_text=("text",),
        ),
    )
    topics = topics_of(
        RunImported,
        RunFinished,
        RunFactsAdded,
        RunInvalidated,
        RunReinstated,
        RunSuperseded,
        ScoreCorrected,
        StaleRunRecovered,
        ReviewRecorded,
        GateEvaluated,
        GateFindingsRecorded,
    )

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        event = envelope.event
        stream, at, pos = envelope.stream_id, envelope.recorded_at, envelope.position
        if isinstance(event, ReviewRecorded):
            yield INSERT, (event.note, "review", None, stream, pos, at)
            return
        if isinstance(event, GateEvaluated | GateFindingsRecorded):
            # Findings stored apart are found once, under the first verdict that found them.
            verdict = str(event.verdict_id) if isinstance(event, GateFindingsRecorded) else stream
            rows: list[Params] = [
                (_finding(f), "gate_finding", None, verdict, pos, at) for f in event.findings
            ]
            if rows:
                yield INSERT, rows
            return
        kind, text = _run_text(event)
        if text:
            yield INSERT, (text, kind, stream, stream, pos, at)


def _run_text(event: Any) -> tuple[str, str | None]:
    """What a run event says in words, and of what kind."""
    if isinstance(event, RunFinished | RunImported):
        return "error", event.error
    if isinstance(event, RunFactsAdded):
        error = event.facts.get("error")
        return "error", error if isinstance(error, str) else None
    if isinstance(event, RunInvalidated):
        return "invalidated", event.reason
    if isinstance(event, RunReinstated):
        return "reinstated", event.reason
    if isinstance(event, RunSuperseded):
        return "superseded", event.reason
    if isinstance(event, ScoreCorrected):
        return "corrected", event.reason
    if isinstance(event, StaleRunRecovered):
        return "recovered", event.detail
    return "", None


def _finding(finding: dict[str, Any]) -> str:
    """A gate's finding as words: its reason, then its scope and value as stated."""
    parts = [finding.get("reason"), finding.get("scope"), finding.get("value")]
    return " ".join(p if isinstance(p, str) else to_json(p) or "" for p in parts if p is not None)
