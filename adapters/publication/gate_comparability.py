"""The comparability gate: each benchmark's required latest rows, as the orchestrator's
`validate-latest-comparability` checks them, plus benchledger's score spread.

The orchestrator (E2) checks that the required rows are all there, succeeded, scored and
set up alike (one comparison signature, recorded and re-derived from the row's config;
subscription rows from one run group); its `--tolerance` is kept but ignored, since
different agents are expected to score differently. benchledger also reports scores of
one comparison signature further apart than the tolerance (`score_spread_exceeds_
tolerance`, the orchestrator's E1 check), labelled as extra.
"""

from __future__ import annotations

import json
import math
from typing import Any

from benchledger.adapters.publication.gate_findings import Finding, finding, finite, named
from benchledger.adapters.publication.publication import Publication
from benchledger.domain.matrix import SUBSCRIPTION_PROVIDER
from benchledger.domain.signatures import comparison_signature

DEFAULT_TOLERANCE = 0.08


def compared_benchmarks(pub: Publication) -> list[str]:
    """The benchmarks the gate checks: those with a latest row and those of the matrix
    contract (a directory's as stated; the ledger's every benchmark in scope)."""
    contract = pub.contract() or {}
    stated = contract.get("benchmarks") if isinstance(contract.get("benchmarks"), dict) else {}
    return sorted(b for b in {b for b, _ in pub.latest} | set(stated or {}) if pub.selects(b))


def comparability(pub: Publication, tolerance: float | None = None) -> list[Finding]:
    benchmarks = compared_benchmarks(pub)
    out: list[Finding] = []
    if pub.filtered and not benchmarks:
        everything = "filters excluded every benchmark"
        out.append(named(".", "no_selected_benchmarks", everything, benchmark_id="."))
    elif not benchmarks:
        out.append(finding("benchmarks", "no_selected_benchmarks", "0 benchmarks in scope"))
    for benchmark in benchmarks:
        out.extend(_benchmark(pub, benchmark))
    tol = DEFAULT_TOLERANCE if tolerance is None else tolerance
    for benchmark in benchmarks:
        out.extend(_spread(pub, benchmark, tol))
    return out


def _benchmark(pub: Publication, benchmark: str) -> list[Finding]:
    required = pub.required_agents(benchmark)
    if not required:
        return []

    def found(reason: str, value: str) -> Finding:
        return named(benchmark, reason, value, benchmark_id=benchmark)

    rows = {a: pub.latest[(benchmark, a)] for a in required if (benchmark, a) in pub.latest}
    missing = sorted(a for a in required if a not in rows)
    if missing:
        return [found("missing_required_latest_rows", ", ".join(missing))]
    out: list[Finding] = []
    recorded: dict[str, str] = {}
    derived: dict[str, str] = {}
    for agent in required:
        row = rows[agent]
        if row.get("status") != "succeeded":
            out.append(found(f"{agent}_not_succeeded", str(row.get("status"))))
        if not finite(row.get("score")):
            out.append(found(f"{agent}_missing_numeric_score", str(row.get("score"))))
        derived[agent] = _derived_signature(pub, benchmark, agent, row)
        stated = row.get("comparison_signature")
        recorded[agent] = (
            stated.strip() if isinstance(stated, str) and stated.strip() else (derived[agent])
        )
    if len(set(recorded.values())) > 1 or len(set(derived.values())) > 1:
        value = {"derived_input_config": derived, "recorded": recorded}
        out.append(found("mixed_comparison_signatures", json.dumps(value, sort_keys=True)))
    subscription = [
        rows[a]
        for a in required
        if str(rows[a].get("provider") or "").strip().lower() == SUBSCRIPTION_PROVIDER
    ]
    if len(subscription) == len(required):
        groups = {str(r.get("run_group_id") or "").strip() for r in subscription}
        if "" in groups or len(groups) != 1:
            value_groups = {a: rows[a].get("run_group_id") for a in required}
            out.append(
                found(
                    "subscription_rows_not_single_cohort",
                    json.dumps(value_groups, sort_keys=True),
                )
            )
    return out


def _derived_signature(pub: Publication, benchmark: str, agent: str, row: dict[str, Any]) -> str:
    """The comparison signature re-derived from the row's own setup, as the orchestrator
    re-derives it from a latest file (its directory, else the benchmark id)."""
    config = row.get("config")
    directory = row.get("benchmark_directory") or pub.benchmarks.get(benchmark, {}).get("directory")
    return comparison_signature(
        benchmark,
        str(row.get("provider") or ""),
        str(row.get("model") or ""),
        config if isinstance(config, dict) else {},
        directory=str(directory or benchmark),
        agent=agent,
    )


def _spread(pub: Publication, benchmark: str, tol: float) -> list[Finding]:
    """benchledger's extra check: scores of one comparison signature within tolerance."""
    cohorts: dict[str, dict[str, float]] = {}
    for agent in pub.required_agents(benchmark):
        row = pub.latest.get((benchmark, agent))
        if row is not None and finite(row.get("score")):
            cohorts.setdefault(str(row.get("comparison_signature")), {})[agent] = row["score"]
    out: list[Finding] = []
    for signature, scores in sorted(cohorts.items()):
        if len(scores) < 2:
            continue
        high = max(scores, key=lambda a: (scores[a], a))
        low = min(scores, key=lambda a: (scores[a], a))
        if not math.isclose(scores[high], scores[low], rel_tol=tol, abs_tol=tol):
            spread = scores[high] - scores[low]
            out.append(
                finding(
                    benchmark,
                    "score_spread_exceeds_tolerance",
                    f"{high}={scores[high]:.6g} {low}={scores[low]:.6g} "
                    f"spread={spread:.6g} tolerance={tol:g}",
                    benchmark_id=benchmark,
                    comparison_signature=signature,
                    spread=spread,
                    tolerance=tol,
                )
            )
    return out
