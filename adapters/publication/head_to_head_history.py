"""What a head-to-head report says beyond its rows: the previous-summary comparison
(`--compare-summary`) and the benchmark coverage with its deferred entries.

`previous_summary_comparison` has the orchestrator's code-agent matrix shape: per
benchmark of either summary the target's accuracy trend (`improved`, `unchanged`,
`regressed`, `missing`), both statuses, and the target's token, cached-token and
LLM-call deltas, current - previous; ours adds both values of each figure and
`status_changed`. A previous summary is read whether benchledger wrote it (`report_rows`)
or the orchestrator did (`report_rows` or `head_to_head.comparisons`, its field names).

Coverage: the benchmarks a release report must cover (the registered ones after the
filters) are `included`; related benchmarks not yet release-comparable are `deferred`
entries with their reason, promotion requirements and priority, so they are tracked
rather than silently left out. A deferred benchmark is not required by the coverage gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TRENDS = ("improved", "unchanged", "regressed", "missing")
# A previous row's figure under our name, then the orchestrator's.
FIGURES = {
    "status": ("comparison_status", "status"),
    "target_accuracy": ("target_accuracy",),
    "accuracy_delta": ("accuracy_delta",),
    "target_total_tokens": ("target_total_tokens",),
    "target_cached_token_percent": ("target_cached_pct", "target_cached_token_percent"),
    "target_llm_call_count": ("target_llm_calls", "target_llm_call_count"),
}


@dataclass(frozen=True)
class Deferred:
    """A related benchmark not yet release-comparable, and what would promote it."""

    benchmark: str
    domains: tuple[str, ...]
    reason: str
    promotion_requirements: tuple[str, ...] = ()
    promotion_priority: str = "p2"

    def as_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "domains": list(self.domains),
            "reason": self.reason,
            "promotion_requirements": list(self.promotion_requirements),
            "promotion_priority": self.promotion_priority,
        }


# The orchestrator's deferred code-agent coverage (its README names these three).
KNOWN_DEFERRED = (
    Deferred(
        "swe_bench_pro",
        ("coding",),
        "The patch-generation wrapper runs both agents on the public split, but "
        "non-mock patch generation is not yet validated against local Docker or Modal "
        "scoring.",
        (
            "validate non-mock patch generation of both agents on the public split",
            "score the patches with the local Docker or the Modal evaluator",
            "report right/wrong/total with token and LLM-call telemetry",
        ),
        "p1",
    ),
    Deferred(
        "qwen_web_bench",
        ("browser", "web", "coding"),
        "Waits for the upstream public runner and dataset.",
        ("adopt the upstream runner and dataset once published",),
        "p2",
    ),
    Deferred(
        "vision_language",
        ("computer-use", "browser", "vision"),
        "The vision computer-use harness labels both agents, but still needs non-stub "
        "runs with matched drivers before its results are release-comparable.",
        (
            "run both agents through the harness without stubs",
            "use real model input bundles and real desktop capture",
            "report grounding and click checks as right/wrong/total with token and "
            "LLM-call telemetry",
        ),
        "p1",
    ),
)
DEFAULT_DEFERRED = tuple(d.benchmark for d in KNOWN_DEFERRED)


def deferred_entries(names: tuple[str, ...]) -> list[dict[str, Any]]:
    """The entries of the named deferred benchmarks: a known one's reason, else the
    operator's word for it."""
    known = {d.benchmark: d for d in KNOWN_DEFERRED}
    return [
        (known.get(n) or Deferred(n, (), "deferred with --deferred-benchmarks")).as_dict()
        for n in names
    ]


def coverage_summary(
    selected: list[str], included: tuple[str, ...], deferred: tuple[str, ...]
) -> dict[str, Any]:
    """The coverage section: which included benchmarks the report selected, and the
    deferred ones (with whether the report selected them anyway)."""
    chosen = set(selected)
    rows = [{"benchmark": b, "selected": b in chosen} for b in included]
    unselected = [r["benchmark"] for r in rows if not r["selected"]]
    deferred_rows = [
        {**d, "selected": d["benchmark"] in chosen} for d in deferred_entries(deferred)
    ]
    return {
        "selected_benchmarks": list(selected),
        "included_benchmarks": rows,
        "deferred_benchmarks": deferred_rows,
        "selection_complete": not unselected,
        "unselected_included_benchmarks": unselected,
        "status_counts": {
            "included": len(rows),
            "included_selected": len(rows) - len(unselected),
            "included_unselected": len(unselected),
            "deferred": len(deferred_rows),
        },
        "message": (
            "all included benchmarks are selected"
            if not unselected
            else "some included benchmarks were not selected for this report"
        ),
    }


def previous_rows(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A summary's rows by benchmark, each figure under the orchestrator's name."""
    found = summary.get("report_rows")
    if not isinstance(found, list):
        head_to_head = summary.get("head_to_head")
        found = head_to_head.get("comparisons") if isinstance(head_to_head, dict) else None
    rows = {}
    for row in found if isinstance(found, list) else []:
        if isinstance(row, dict) and isinstance(row.get("benchmark"), str):
            rows[row["benchmark"]] = {
                name: next((row[k] for k in keys if row.get(k) is not None), None)
                for name, keys in FIGURES.items()
            }
    return rows


def previous_summary_comparison(
    current: dict[str, Any], previous: dict[str, Any], generated_at: str
) -> dict[str, Any]:
    """Per benchmark of either summary: the target's trend and figures, current - previous."""
    now, before = previous_rows(current), previous_rows(previous)
    comparisons = []
    for benchmark in sorted(now.keys() | before.keys()):
        cur, prev = now.get(benchmark, {}), before.get(benchmark, {})
        accuracy = _delta(cur.get("target_accuracy"), prev.get("target_accuracy"))
        entry = {
            "benchmark": benchmark,
            "trend": _trend(accuracy),
            "previous_status": prev.get("status"),
            "current_status": cur.get("status"),
            "previous_target_accuracy": prev.get("target_accuracy"),
            "current_target_accuracy": cur.get("target_accuracy"),
            "target_accuracy_delta": accuracy,
            "previous_accuracy_delta": prev.get("accuracy_delta"),
            "current_accuracy_delta": cur.get("accuracy_delta"),
            "accuracy_delta_change": _delta(cur.get("accuracy_delta"), prev.get("accuracy_delta")),
        }
        for name, figure in (
            ("target_total_token_delta", "target_total_tokens"),
            ("target_cached_token_percent_delta", "target_cached_token_percent"),
            ("target_llm_call_delta", "target_llm_call_count"),
        ):
            entry[name] = _delta(cur.get(figure), prev.get(figure))
            entry[f"previous_{figure}"] = prev.get(figure)
            entry[f"current_{figure}"] = cur.get(figure)
        entry["status_changed"] = prev.get("status") != cur.get("status")
        comparisons.append(entry)
    return {
        "previous_report_id": previous.get("report_id"),
        "previous_generated_at": previous.get("generated_at") or previous.get("recorded_at"),
        "current_generated_at": generated_at,
        "trend_counts": {t: sum(1 for c in comparisons if c["trend"] == t) for t in TRENDS},
        "comparisons": comparisons,
    }


def _delta(current: Any, previous: Any) -> int | float | None:
    pair = (current, previous)
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in pair)
    return current - previous if numbers else None


def _trend(delta: int | float | None) -> str:
    if delta is None:
        return "missing"
    return "improved" if delta > 0 else "regressed" if delta < 0 else "unchanged"
