"""What may be published: the rules that keep demo, mock and sample results out of `latest`.

The markers follow the rules existing users of the ElizaOS orchestrator rely on:
truthy non-real flags anywhere in a payload, sample dataset sources, warnings
and free-text markers of demo, mock, smoke or stub runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

NON_REAL_FLAGS = frozenset(
    {
        "demo",
        "demo_mode",
        "dry_run",
        "fixture",
        "fixtures",
        "mock",
        "mock_mode",
        "oracle",
        "sample",
        "sample_tasks",
        "stub",
        "synthetic",
        "use_sample_tasks",
        "using_sample_tasks",
    }
)
TEXT_MARKERS = (
    "bundled smoke",
    "demo mode",
    "dry run",
    "fixture dataset",
    "larp",
    "mock run",
    "mock runtime",
    "oracle mode",
    "sample task set",
    "sample_task_set",
    "smoke task",
    "stub runtime",
    "synthetic dataset",
    "using sample task",
)
# "mock runtime" must not be reported as its prefix "mock run".
_LONGEST_FIRST = tuple(sorted(TEXT_MARKERS, key=len, reverse=True))
WARNING_MARKERS = ("demo", "dry_run", "fixture", "larp", "mock", "smoke", "stub")
SYNTHETIC_AGENTS = frozenset({"random_v1", "perfect_v1", "wrong_v1", "half_v1"})
CALIBRATION_EXPECTED = {"perfect_v1": 1.0, "wrong_v1": 0.0, "half_v1": 0.5}


# Labels that name a smoke test or a stand-in, not an agent under test.
NON_REAL_AGENTS = frozenset({"mock", "smoke", "final-smoke", "full-sweep", "dummy", "stub"})


def agent_marker(agent: str) -> str | None:
    return "non_real_agent_label" if agent.lower() in NON_REAL_AGENTS else None


def is_synthetic(agent: str) -> bool:
    """Calibration harnesses: their rows are baselines, never published results."""
    return agent in SYNTHETIC_AGENTS


def _walk(value: Any) -> Iterator[tuple[str | None, Any]]:
    """(key, value) for every node of a JSON-like payload."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield str(key), child
            yield from _walk(child)
    elif isinstance(value, list | tuple):
        for child in value:
            yield None, child
            yield from _walk(child)


# Every flag, warning marker and text marker holds one of these (a test checks it): a
# payload whose text, lower-cased, holds none of them has no marker, with no walk.
MARKER_ROOTS = (
    "demo",
    "dry",
    "fixture",
    "larp",
    "mock",
    "oracle",
    "sample",
    "smoke",
    "stub",
    "synthetic",
)


def may_hold_marker(*texts: str | None) -> bool:
    """False when no marker can be in a payload whose keys and strings are all in
    `texts` (its JSON, say): then `non_real_marker` of it is None."""
    for text in texts:
        if text:
            lowered = text.lower()
            if any(root in lowered for root in MARKER_ROOTS):
                return True
    return False


def non_real_marker(payload: Any) -> str | None:
    """The first reason this payload is not a real result, or None."""
    for key, value in _walk(payload):
        name = (key or "").lower()
        if name in NON_REAL_FLAGS and not _falsy(value):
            return "truthy_non_real_flag"
        if name == "dataset_source" and value in ("sample", "sample-files"):
            return "sample_dataset_source"
        if name in ("warnings", "publication_warnings") and isinstance(value, list):
            for warning in value:
                text = str(warning).lower()
                if text == "sample_task_set" or any(m in text for m in WARNING_MARKERS):
                    return "non_real_publication_warning"
        if isinstance(value, str):
            lowered = value.lower()
            for marker in _LONGEST_FIRST:
                if marker in lowered:
                    return f"non_real_text_marker:{marker}"
    return None


def _falsy(value: Any) -> bool:
    """False, None, "", 0, [] and {} say "not a mock"; anything else says it is."""
    if value is None or value is False or value == "" or value == [] or value == {}:
        return True
    return isinstance(value, int | float) and not isinstance(value, bool) and value == 0


def high_score_delta(
    score: float | None,
    unit: str | None,
    higher_is_better: bool,
    reference: float | None,
    reference_unit: str | None,
) -> float | None:
    """How far ahead of the reference a score is (positive is better), in the score's unit.

    Computed when read, never stored. Percent references are rescaled to fractions
    and back; other unit mismatches have no delta.
    """
    if score is None or reference is None:
        return None
    scaled = _rescale(reference, reference_unit, unit)
    if scaled is None:
        return None
    return score - scaled if higher_is_better else scaled - score


PERCENT = {"%", "percent", "pct", "percentage"}


def _rescale(value: float, source: str | None, target: str | None) -> float | None:
    src, dst = (source or "").lower(), (target or "").lower()
    if not src or not dst or src == dst:
        return value
    if src in PERCENT and dst not in PERCENT:
        return value / 100
    if dst in PERCENT and src not in PERCENT:
        return value * 100
    return None


def matrix_contract(
    benchmarks: list[str],
    harnesses: list[str],
    latest: dict[tuple[str, str], dict[str, Any]],
    quarantine: dict[tuple[str, str], dict[str, Any]],
) -> dict[str, Any]:
    """Benchmarks x harnesses: which required cells have a publishable latest row."""
    summary = dict.fromkeys(
        (
            "benchmarks",
            "required_real_cells",
            "succeeded_required_real_cells",
            "missing_required_real_cells",
            "failed_required_real_cells",
            "unsupported_real_cells",
            "complete_benchmarks",
            "incomplete_benchmarks",
            "no_required_real_harness_benchmarks",
            # The orchestrator's subscription cohorts; the ledger has none, so always 0.
            "invalid_subscription_cohort_benchmarks",
        ),
        0,
    )
    table: dict[str, Any] = {}
    for benchmark in benchmarks:
        cells: dict[str, Any] = {}
        for harness in harnesses:
            row = latest.get((benchmark, harness))
            held = quarantine.get((benchmark, harness))
            if row is not None:
                state, source = "succeeded", row
            elif held is not None:
                status = str(held.get("status"))
                reason = str(held.get("quarantine_reason"))
                state = reason if status == "succeeded" else status
                source = held
            else:
                state, source = "missing", {}
            cells[harness] = {
                "required": True,
                "state": state,
                "status": source.get("status", "missing"),
                "score": source.get("score") if row is not None else None,
                "run_id": source.get("run_id"),
                "run_group_id": source.get("run_group_id"),
            }
            summary["required_real_cells"] += 1
            key = {
                "succeeded": "succeeded_required_real_cells",
                "missing": "missing_required_real_cells",
            }.get(state or "", "failed_required_real_cells")
            summary[key] += 1
        complete = bool(harnesses) and all(c["state"] == "succeeded" for c in cells.values())
        summary["benchmarks"] += 1
        summary["complete_benchmarks" if complete else "incomplete_benchmarks"] += 1
        if not harnesses:
            summary["no_required_real_harness_benchmarks"] += 1
        table[benchmark] = {
            "compatible_harnesses": list(harnesses),
            "complete": complete,
            "cohort_run_group_id": None,
            "cohort_reason": None,
            "cells": cells,
        }
    status = "complete" if summary["incomplete_benchmarks"] == 0 else "incomplete"
    return {"status": status, "harnesses": list(harnesses), "summary": summary, "benchmarks": table}
