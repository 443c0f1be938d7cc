"""`gate_verdicts`, `gate_findings`, `reviews`, `comparisons`, `comparison_rows`, `rankings`.

A verdict's findings are stored once per distinct set (`GateFindingsRecorded`, by digest):
`gate_findings` holds each set's rows once, under the first verdict that found them, and
`gate_verdicts.findings_sha256` names each verdict's set. A verdict's findings are the
rows whose `findings_sha256` is its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from benchledger.domain.verdicts import (
    ComparisonRecorded,
    GateEvaluated,
    GateFindingsRecorded,
    RankingRecorded,
    ReviewRecorded,
    findings_digest,
)
from benchledger.projections import versions
from benchledger.projections.base import (
    Change,
    Envelope,
    ForeignKey,
    Params,
    Projection,
    Table,
    iso,
    to_json,
    topics_of,
)

GATE = (
    "INSERT INTO [{gate_verdicts}] (verdict_id, gate, ok, findings, findings_sha256, params, "
    "position, head_sha256, actor, evaluated_at, event_position) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
FINDING = (
    "INSERT INTO [{gate_findings}] (verdict_id, findings_sha256, gate, scope, reason, value, "
    "detail) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
REVIEW = (
    "INSERT INTO [{reviews}] (review_id, reviewer, note, ok, blocking_findings, scope, "
    "position, head_sha256, gate_verdict_ids, manifest_sha256, reviewed_at, event_position) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
COMPARISON = (
    "INSERT INTO [{comparisons}] (comparison_id, a, b, benchmarks, position, head_sha256, "
    "actor, recorded_at, event_position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
RANKING_ROW = (
    "INSERT INTO [{rankings}] (ranking_id, benchmark, rank, tie_group, agent, provider, model, "
    "score, unit, leader, paired_cells, p_vs_leader, p_holm, rule, run_id, position, "
    "recorded_at, event_position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
COMPARISON_ROW = (
    "INSERT INTO [{comparison_rows}] (comparison_id, benchmark_id, a_score, b_score, delta, "
    "higher_is_better, winner, a_run_id, b_run_id, unit, paired_cells, mean_difference, "
    "ci_low, ci_high, sign_test_p, p_value, p_holm, status, status_rule) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class VerdictsProjection(Projection):
    name = "verdicts"
    version = versions.version(name)
    tables = (
        Table(
            "gate_verdicts",
            {
                "verdict_id": str,
                "gate": str,
                "ok": int,
                "findings": int,
                "findings_sha256": str,
                "params": str,
                "position": int,
                "head_sha256": str,
                "actor": str,
                "evaluated_at": str,
                "event_position": int,
            },
            pk=("verdict_id",),
            indexes=(("gate",), ("findings_sha256",)),
        ),
        Table(
            "gate_findings",
            {
                "verdict_id": str,
                "findings_sha256": str,
                "gate": str,
                "scope": str,
                "reason": str,
                "value": str,
                "detail": str,
            },
            indexes=(("verdict_id",), ("findings_sha256",)),
            foreign_keys=(ForeignKey("verdict_id", "gate_verdicts", "verdict_id"),),
        ),
        Table(
            "reviews",
            {
                "review_id": str,
                "reviewer": str,
                "note": str,
                "ok": int,
                "blocking_findings": int,
                "scope": str,
                "position": int,
                "head_sha256": str,
                "gate_verdict_ids": str,
                "manifest_sha256": str,
                "reviewed_at": str,
                "event_position": int,
            },
            pk=("review_id",),
        ),
        Table(
            "comparisons",
            {
                "comparison_id": str,
                "a": str,
                "b": str,
                "benchmarks": str,
                "position": int,
                "head_sha256": str,
                "actor": str,
                "recorded_at": str,
                "event_position": int,
            },
            pk=("comparison_id",),
        ),
        Table(
            "comparison_rows",
            {
                "comparison_id": str,
                "benchmark_id": str,
                "a_score": float,
                "b_score": float,
                "delta": float,
                "higher_is_better": int,
                "winner": str,
                "a_run_id": str,
                "b_run_id": str,
                "unit": str,
                "paired_cells": int,
                "mean_difference": float,
                "ci_low": float,
                "ci_high": float,
                "sign_test_p": float,
                # Comparisons recorded with paired statistics (see docs/statistics.md).
                "p_value": float,
                "p_holm": float,
                "status": str,
                "status_rule": str,
            },
            indexes=(("comparison_id",),),
            foreign_keys=(
                ForeignKey("comparison_id", "comparisons", "comparison_id"),
                ForeignKey("a_run_id", "runs", "run_id"),
                ForeignKey("b_run_id", "runs", "run_id"),
            ),
        ),
        Table(
            "rankings",
            {
                "ranking_id": str,
                "benchmark": str,
                "rank": int,
                "tie_group": int,
                "agent": str,
                "provider": str,
                "model": str,
                "score": float,
                "unit": str,
                "leader": str,
                "paired_cells": int,
                "p_vs_leader": float,
                "p_holm": float,
                "rule": str,
                "run_id": str,
                "position": int,
                "recorded_at": str,
                "event_position": int,
            },
            indexes=(("benchmark", "event_position"), ("ranking_id",)),
            foreign_keys=(ForeignKey("run_id", "runs", "run_id"),),
        ),
    )

    topics = topics_of(
        GateEvaluated, GateFindingsRecorded, ReviewRecorded, ComparisonRecorded, RankingRecorded
    )

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        event = envelope.event
        stream = str(envelope.stream)
        if isinstance(event, GateEvaluated):
            inline = findings_digest(event.findings)[0] if event.findings else None
            yield (
                GATE,
                (
                    stream,
                    event.gate,
                    int(event.ok),
                    event.count,
                    event.findings_sha256 or inline,
                    to_json(event.params),
                    event.position,
                    event.head_sha256,
                    event.actor,
                    iso(event.timestamp),
                    envelope.position,
                ),
            )
            if event.findings:  # a verdict recorded with its findings inline
                yield FINDING, _finding_rows(stream, inline, event.gate, event.findings)
        elif isinstance(event, GateFindingsRecorded):
            # Under the first verdict that found them; a later verdict with the same
            # findings reads them through its findings_sha256.
            verdict = str(event.verdict_id)
            yield FINDING, _finding_rows(verdict, event.sha256, event.gate, event.findings)
        elif isinstance(event, ReviewRecorded):
            yield (
                REVIEW,
                (
                    stream,
                    event.reviewer,
                    event.note,
                    int(event.ok),
                    event.blocking_findings,
                    to_json(event.scope),
                    event.position,
                    event.head_sha256,
                    to_json([str(v) for v in event.gate_verdict_ids]),
                    event.manifest_sha256,
                    iso(event.timestamp),
                    envelope.position,
                ),
            )
        elif isinstance(event, RankingRecorded):
            yield (
                RANKING_ROW,
                [
                    (
                        event.ranking_id,
                        event.benchmark,
                        r.get("rank"),
                        r.get("group"),
                        r.get("agent"),
                        r.get("provider"),
                        r.get("model"),
                        r.get("score"),
                        r.get("unit"),
                        r.get("leader"),
                        r.get("cells"),
                        r.get("p_vs_leader"),
                        r.get("p_holm"),
                        r.get("rule"),
                        r.get("run_id"),
                        event.position,
                        iso(event.timestamp),
                        envelope.position,
                    )
                    for r in event.rows
                ],
            )
        elif isinstance(event, ComparisonRecorded):
            yield (
                COMPARISON,
                (
                    event.comparison_id,
                    to_json(event.a),
                    to_json(event.b),
                    to_json(event.benchmarks),
                    event.position,
                    event.head_sha256,
                    event.actor,
                    iso(event.timestamp),
                    envelope.position,
                ),
            )
            yield (
                COMPARISON_ROW,
                [
                    (
                        event.comparison_id,
                        r.get("benchmark_id"),
                        r.get("a_score"),
                        r.get("b_score"),
                        r.get("delta"),
                        _bool(r.get("higher_is_better")),
                        r.get("winner"),
                        r.get("a_run_id"),
                        r.get("b_run_id"),
                        r.get("unit"),
                        (r.get("paired") or {}).get("cells"),
                        (r.get("paired") or {}).get("mean_difference"),
                        (r.get("paired") or {}).get("ci95_low"),
                        (r.get("paired") or {}).get("ci95_high"),
                        (r.get("paired") or {}).get("sign_test_p"),
                        (r.get("paired") or {}).get("p"),
                        (r.get("paired") or {}).get("p_holm"),
                        r.get("status"),
                        r.get("status_rule"),
                    )
                    for r in event.rows
                ],
            )


def _finding_rows(
    verdict_id: str, digest: str | None, gate: str | None, findings: list[dict[str, Any]]
) -> list[Params]:
    return [
        (
            verdict_id,
            digest,
            gate,
            f.get("scope"),
            f.get("reason"),
            _text(f.get("value")),
            to_json({k: v for k, v in f.items() if k not in ("scope", "reason", "value")}) or None,
        )
        for f in findings
    ]


def _text(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def _bool(value: object) -> int | None:
    return None if value is None else int(bool(value))
