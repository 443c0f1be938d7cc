"""Trajectory review briefs and diagnoses for the head-to-head improvement queue.

A brief is what the orchestrator's code-agent matrix puts in a queue entry
(`target_trajectory_review` / `baseline_trajectory_review`): turns, input/output/total
tokens, cached-token percent, latency and repeated-prefix signals. Ours is computed from
the run's trajectory turns in the ledger (the `turns` read model), not from files on a
host, so a report made `--as-of` a position says what the ledger held then. The turns
keep no prompt text, so repeated prompt prefixes are not measured here: they are the ones
the run's source measured (its `trajectory_summary.repeated_prefixes`, as the
orchestrator's rows state them), else `repeated_prefix_count` is null and
`top_repeated_prefixes` empty.

The diagnosis strings and failure classes are the orchestrator's words, so a queue
entry reads the same from both systems; its "cell" is our side's run.
"""

from __future__ import annotations

import json
from typing import Any

from benchledger.adapters.publication.queries import Queries

# A turn without a total counts prompt + completion, as the orchestrator's trajectory
# analyzer and its importer count it.
TURN_TOTALS = (
    "SELECT count(*), count(DISTINCT trajectory_file), sum(prompt_tokens), "
    "sum(completion_tokens), "
    "CASE WHEN count(prompt_tokens) + count(completion_tokens) + count(total_tokens) > 0 "
    "THEN sum(CASE WHEN coalesce(total_tokens, 0) != 0 THEN total_tokens "
    "ELSE coalesce(prompt_tokens, 0) + coalesce(completion_tokens, 0) END) END, "
    "sum(cached_tokens) FROM turns WHERE run_id = ?"
)
TRAJECTORY_DELTAS = {
    "turn_delta": "turns",
    "input_token_delta": "input_tokens",
    "output_token_delta": "output_tokens",
    "total_token_delta": "total_tokens",
    "cached_token_percent_delta": "cached_token_percent",
    "repeated_prefix_delta": "repeated_prefix_count",
    "mean_latency_ms_delta": "mean_latency_ms",
    "p95_latency_ms_delta": "p95_latency_ms",
}


def turn_totals(queries: Queries, run_id: str) -> dict[str, Any]:
    """The run's trajectory turns summed: calls, files, prompt, completion, total, cached
    tokens (a sum is None when no turn states it)."""
    calls, files, prompt, completion, total, cached = queries.conn.execute(
        TURN_TOTALS, (run_id,)
    ).fetchone()
    return {
        "turns": calls,
        "files": files,
        "input_tokens": prompt,
        "output_tokens": completion,
        "total_tokens": total,
        "cached_tokens": cached,
    }


def trajectory_review(queries: Queries, run_id: str | None) -> dict[str, Any]:
    """The brief of one side's trajectory, from its turns; zeros and a note without a run."""
    if run_id is None:
        return _review(None, _totals_of_nothing(), [], ["no run recorded"])
    latencies = [
        float(r[0])
        for r in queries.conn.execute(
            "SELECT latency_ms FROM turns WHERE run_id = ? AND latency_ms IS NOT NULL "
            "ORDER BY latency_ms",
            (run_id,),
        )
    ]
    totals = turn_totals(queries, run_id)
    notes = []
    if totals["files"] == 0:
        notes.append("no trajectory files found")
    if totals["turns"] == 0:
        notes.append("no trajectory turns found")
    prefixes = stated_prefixes(queries, run_id)
    if prefixes:
        notes.append("repeated prompt prefixes detected")
    review = _review(run_id, totals, latencies, notes)
    if prefixes is not None:
        review["repeated_prefix_count"] = len(prefixes)
        review["top_repeated_prefixes"] = prefixes[:3]
    return review


def stated_prefixes(queries: Queries, run_id: str) -> list[dict[str, Any]] | None:
    """The repeated prompt prefixes the run's source measured (the orchestrator's
    `trajectory_summary.repeated_prefixes`, `[snippet, count]` pairs or objects), as
    `{count, snippet}`; None when its source states none (the ledger keeps no prompt
    text to measure them itself)."""
    row = queries.conn.execute(
        "SELECT json_extract(metrics, '$.trajectory_summary.repeated_prefixes') FROM runs "
        "WHERE run_id = ?",
        (run_id,),
    ).fetchone()
    try:
        stated = json.loads(row[0]) if row and row[0] else None
    except ValueError:
        return None
    if not isinstance(stated, list):
        return None
    out = []
    for item in stated:
        if isinstance(item, list | tuple) and len(item) == 2:
            snippet, count = item
        elif isinstance(item, dict):
            snippet, count = item.get("snippet"), item.get("count")
        else:
            continue
        if isinstance(snippet, str) and isinstance(count, int) and not isinstance(count, bool):
            out.append({"count": count, "snippet": snippet[:160]})
    return out


def _totals_of_nothing() -> dict[str, Any]:
    names = ("turns", "files", "input_tokens", "output_tokens", "total_tokens")
    return {**dict.fromkeys(names, 0), "cached_tokens": None}


def _review(
    run_id: str | None, totals: dict[str, Any], latencies: list[float], notes: list[str]
) -> dict[str, Any]:
    input_tokens, cached = totals["input_tokens"] or 0, totals["cached_tokens"]
    cached_pct = 100.0 * cached / input_tokens if cached is not None and input_tokens else None
    if cached_pct is None:
        notes.append("no cached-token telemetry found")
    mean = sum(latencies) / len(latencies) if latencies else None
    # The orchestrator's p95: the sorted latency at round((n - 1) * 0.95).
    p95 = latencies[round((len(latencies) - 1) * 0.95)] if latencies else None
    return {
        "run_id": run_id,
        "trajectory_files": totals["files"],
        "turns": totals["turns"],
        "input_tokens": input_tokens,
        "output_tokens": totals["output_tokens"] or 0,
        "total_tokens": totals["total_tokens"] or 0,
        "cached_tokens": cached,
        "cached_token_percent": cached_pct,
        "mean_latency_ms": mean,
        "p95_latency_ms": p95,
        "repeated_prefix_count": None,
        "top_repeated_prefixes": [],
        "review_notes": notes,
    }


def failure_class(side: dict[str, Any]) -> str | None:
    """The orchestrator's failure class of a side's run, from what the ledger holds: `pass`
    when every scored cell passed, `tests_failed` when some failed, `unknown_failure`
    without outcomes; None without a run."""
    if not side:
        return None
    if not side.get("total"):
        return "unknown_failure"
    return "tests_failed" if side["wrong"] else "pass"


def queue_diagnosis(
    row: dict[str, Any],
    classes: dict[str, str | None],
    reviews: dict[str, dict[str, Any]],
) -> list[str]:
    """What a queued row lacks or loses, in the orchestrator's words and order."""
    status = row["comparison_status"]
    notes = []
    if status == "inferior":
        notes.append("target accuracy is below baseline")
    elif status == "weak":
        notes.append("both adapters have measured zero accuracy")
    elif status == "missing":
        notes.append("missing comparable outcome evidence")
    for side in ("target", "baseline"):
        if classes[side] is None:
            notes.append(f"{side} cell result is missing")
        elif classes[side] != "pass":
            notes.append(f"{side} failure class: {classes[side]}")
    for side in ("target", "baseline"):
        if not row[f"{side}_total"]:
            notes.append(f"{side} right/wrong/total evidence is incomplete")
    for side in ("target", "baseline"):
        if not reviews[side]["trajectory_files"] or not reviews[side]["turns"]:
            notes.append(f"{side} trajectory telemetry is missing")
    if reviews["target"]["repeated_prefix_count"]:
        notes.append("target repeated prompt prefixes need review")
    if (row["total_tokens_delta"] or 0) > 0:
        notes.append("target used more total tokens than baseline")
    if (row["llm_calls_delta"] or 0) > 0:
        notes.append("target made more LLM calls than baseline")
    if (row["cached_pct_delta"] or 0) < 0:
        notes.append("target cached-token percentage is below baseline")
    return notes


def trajectory_delta(target: dict[str, Any], baseline: dict[str, Any]) -> dict[str, Any]:
    """Target - baseline of each brief figure (floats, as the orchestrator gives them)."""
    return {
        name: _delta(target.get(field), baseline.get(field))
        for name, field in TRAJECTORY_DELTAS.items()
    }


def _delta(left: Any, right: Any) -> float | None:
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (left, right))
    return float(left) - float(right) if numbers else None


def improvement_focus(diagnosis: list[str], deltas: dict[str, Any]) -> list[str]:
    """Where to look first, from the diagnosis and the trajectory deltas."""
    focus = []
    if "target accuracy is below baseline" in diagnosis:
        focus.append("inspect the target's failed tasks and its task strategy")
    if any("failure class" in note for note in diagnosis):
        focus.append("fix harness or runtime failures before tuning prompts")
    if any("trajectory telemetry is missing" in note for note in diagnosis):
        focus.append("record trajectory turns so both sides can be reviewed")
    if (deltas["repeated_prefix_delta"] or 0) > 0:
        focus.append("remove repeated prompt-prefix churn")
    if (deltas["total_token_delta"] or 0) > 0:
        focus.append("reduce the trajectory's token load against the baseline")
    if any("more total tokens" in note or "more LLM calls" in note for note in diagnosis):
        focus.append("reduce extra LLM calls and tokens")
    if "target cached-token percentage is below baseline" in diagnosis:
        focus.append("make prompts more cacheable")
    return focus
