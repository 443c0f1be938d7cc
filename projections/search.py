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

from benchledger.domain import topics as known
from benchledger.projections import versions
from benchledger.projections.base import (
    Change,
    Envelope,
    Params,
    Projection,
    Table,
    to_json,
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
    # Recognized by topic: none of the event modules is loaded for this read model (a
    # catch-up that folds a verdict alone loads no run events).
    topics = frozenset(
        {
            known.RUN_IMPORTED,
            known.RUN_FINISHED,
            known.RUN_FACTS_ADDED,
            known.RUN_INVALIDATED,
            known.RUN_REINSTATED,
            known.RUN_SUPERSEDED,
            known.SCORE_CORRECTED,
            known.STALE_RUN_RECOVERED,
            known.REVIEW_RECORDED,
            known.GATE_EVALUATED,
            known.GATE_FINDINGS_RECORDED,
        }
    )

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        event: Any = envelope.event
        topic = envelope.topic
        stream, at, pos = envelope.stream_id, envelope.recorded_at, envelope.position
        if topic == known.REVIEW_RECORDED:
            yield INSERT, (event.note, "review", None, stream, pos, at)
            return
        if topic in (known.GATE_EVALUATED, known.GATE_FINDINGS_RECORDED):
            # Findings stored apart are found once, under the first verdict that found them.
            verdict = str(event.verdict_id) if topic == known.GATE_FINDINGS_RECORDED else stream
            rows: list[Params] = [
                (_finding(f), "gate_finding", None, verdict, pos, at) for f in event.findings
            ]
            if rows:
                yield INSERT, rows
            return
        kind, text = _run_text(topic, event)
        if text:
            yield INSERT, (text, kind, stream, stream, pos, at)


def _run_text(topic: str, event: Any) -> tuple[str, str | None]:
    """What a run event says in words, and of what kind."""
    if topic in (known.RUN_FINISHED, known.RUN_IMPORTED):
        return "error", event.error
    if topic == known.RUN_FACTS_ADDED:
        error = event.facts.get("error")
        return "error", error if isinstance(error, str) else None
    if topic == known.RUN_INVALIDATED:
        return "invalidated", event.reason
    if topic == known.RUN_REINSTATED:
        return "reinstated", event.reason
    if topic == known.RUN_SUPERSEDED:
        return "superseded", event.reason
    if topic == known.SCORE_CORRECTED:
        return "corrected", event.reason
    if topic == known.STALE_RUN_RECOVERED:
        return "recovered", event.detail
    return "", None


def _finding(finding: dict[str, Any]) -> str:
    """A gate's finding as words: its reason, then its scope and value as stated."""
    parts = [finding.get("reason"), finding.get("scope"), finding.get("value")]
    return " ".join(p if isinstance(p, str) else to_json(p) or "" for p in parts if p is not None)
