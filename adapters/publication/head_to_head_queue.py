"""The head-to-head report's queues, their follow-up commands, and reading a previous
report's queue back (`head-to-head --rerun-queue SUMMARY`).

An improvement-queue entry has the orchestrator's code-agent matrix fields (`status`,
`priority` p0 for inferior and weak rows, p1 for missing ones, `diagnosis`,
`primary_diagnosis`, `suggested_focus`, `rerun_command_template`, `next_action`, the
deltas, both failure classes and trajectory review briefs, `trajectory_delta`) beside
ours (`comparison_status`, `reason`, both runs' locations, `rerun_commands`,
`report_command`). Commands never carry a secret-looking config value.
"""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any

from benchledger.adapters.publication import head_to_head_reviews as reviews
from benchledger.domain.secrets import masks

if TYPE_CHECKING:
    from benchledger.adapters.publication.head_to_head import Options, Side

QUEUED = ("inferior", "weak", "missing")
PRIORITIES = {"inferior": "p0", "weak": "p0", "missing": "p1"}
# Gates a targeted follow-up keeps: the orchestrator's rerun templates keep comparable,
# token-evidence and required-stats enforcement, never coverage (full reports only).
TEMPLATE_GATES = ("comparable", "token_evidence", "required_stats")
# Left bare in a template (the orchestrator's placeholder): the summary.json to read.
SUMMARY_PLACEHOLDER = "{summary_json}"
NEXT_ACTIONS = {
    "inferior": "review target and baseline trajectories, then improve the target",
    "weak": "review the benchmark's evidence: both sides measured zero",
    "missing": "record a live run of each side until both have comparable outcomes",
}


def priority(status: str) -> str | None:
    return PRIORITIES.get(status)


def rerun_command(benchmark: str, facts: dict[str, Any]) -> str:
    """`benchledger run` for this benchmark with the run's agent, provider, model and
    config, secret-looking config values left out."""
    config = {k: v for k, v in facts["config"].items() if not masks(k, v)}
    words = ["benchledger", "run", "--benchmarks", benchmark, "--agent", facts["agent"]]
    if facts["provider"]:
        words += ["--provider", facts["provider"]]
    words += ["--model", facts["model"]]
    if config:
        words += ["--extra", json.dumps(config, sort_keys=True, separators=(",", ":"))]
    words.append("--force")
    return shlex.join(words)


def report_command(benchmark: str, target: Side, baseline: Side, options: Options) -> str:
    """The head-to-head for this one benchmark with the same options, coverage left
    out (it is for full reports, not targeted reruns)."""
    words = ["benchledger", "head-to-head", "--target", target.spec, "--baseline", baseline.spec]
    words += ["--benchmarks", benchmark, "--tolerance", repr(options.tolerance)]
    for gate in options.enforce:
        if gate not in ("coverage", "release", "no_regression", "quality"):
            words.append("--enforce-" + gate.replace("_", "-"))
    if options.publish_latest_dir:
        words += ["--publish-latest-dir", options.publish_latest_dir]
    return shlex.join(words)


def queue_rerun_template(
    priority_name: str, status: str, target: Side, baseline: Side, options: Options
) -> str:
    """This report again over the entries of one priority and status of its own queue,
    compared with it: `{summary_json}` stands for its summary.json. The tolerance,
    `--publish-latest-dir` and comparable/token/stats enforcement are kept."""
    words = ["benchledger", "head-to-head", "--target", target.spec, "--baseline", baseline.spec]
    words += ["--rerun-queue", SUMMARY_PLACEHOLDER, "--queue-priorities", priority_name]
    words += ["--queue-statuses", status, "--compare-summary", SUMMARY_PLACEHOLDER]
    words += ["--tolerance", repr(options.tolerance)]
    if options.publish_latest_dir:
        words += ["--publish-latest-dir", options.publish_latest_dir]
    words += ["--enforce-" + g.replace("_", "-") for g in TEMPLATE_GATES if g in options.enforce]
    return " ".join(w if w == SUMMARY_PLACEHOLDER else shlex.quote(w) for w in words)


def queues(
    rows: list[dict[str, Any]], target: Side, baseline: Side, options: Options
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The improvement queue (inferior, weak, missing rows; by priority, then benchmark)
    and the efficiency queue (rows where the target costs more), in report order."""
    improvement, efficiency = [], []
    for row in rows:
        entry = _entry(row, target, baseline, options)
        if row["comparison_status"] in QUEUED:
            improvement.append({**entry, **_improvement(row, target, baseline, options)})
        if row["efficiency_regressions"]:
            efficiency.append({**entry, "regressions": row["efficiency_regressions"]})
    improvement.sort(key=lambda e: (e["priority"], e["benchmark"]))
    return improvement, efficiency


def _entry(row: dict[str, Any], target: Side, baseline: Side, options: Options) -> dict[str, Any]:
    reruns = [
        rerun_command(row["benchmark"], facts)
        for facts in (row["_runs"]["target"], row["_runs"]["baseline"])
        if facts is not None
    ]
    if not reruns:
        reruns = [
            shlex.join(["benchledger", "run", "--benchmarks", row["benchmark"], "--agent", s.agent])
            for s in (target, baseline)
        ]
    return {
        "benchmark": row["benchmark"],
        "comparison_status": row["comparison_status"],
        "reason": row["status_reason"],
        "target": row["_locations"]["target"],
        "baseline": row["_locations"]["baseline"],
        "rerun_commands": reruns,
        "report_command": report_command(row["benchmark"], target, baseline, options),
    }


def _improvement(
    row: dict[str, Any], target: Side, baseline: Side, options: Options
) -> dict[str, Any]:
    """The orchestrator's queue-entry fields of a queued row."""
    status = row["comparison_status"]
    rank = PRIORITIES[status]
    briefs, classes = row["_reviews"], row["_failure_classes"]
    diagnosis = reviews.queue_diagnosis(row, classes, briefs)
    deltas = reviews.trajectory_delta(briefs["target"], briefs["baseline"])
    return {
        "status": status,
        "priority": rank,
        "diagnosis": diagnosis,
        "primary_diagnosis": diagnosis[0] if diagnosis else "",
        "suggested_focus": reviews.improvement_focus(diagnosis, deltas),
        "rerun_command_template": queue_rerun_template(rank, status, target, baseline, options),
        "next_action": NEXT_ACTIONS[status],
        "accuracy_delta": row["accuracy_delta"],
        "right_delta": _difference(row["target_right"], row["baseline_right"]),
        "total_token_delta": row["total_tokens_delta"],
        "cached_token_percent_delta": row["cached_pct_delta"],
        "llm_call_delta": row["llm_calls_delta"],
        "target_failure_class": classes["target"],
        "baseline_failure_class": classes["baseline"],
        "target_trajectory_review": briefs["target"],
        "baseline_trajectory_review": briefs["baseline"],
        "trajectory_delta": deltas,
    }


def _difference(left: int | None, right: int | None) -> int | None:
    return left - right if left is not None and right is not None else None


# -- reading a previous report's queue -----------------------------------------------------


def queued_benchmarks(
    summary: dict[str, Any],
    priorities: set[str] | None = None,
    statuses: set[str] | None = None,
) -> list[str]:
    """The benchmarks of a summary's improvement queue (ours or the orchestrator's), in
    queue order, each once, keeping only the given priorities and statuses. An entry
    without a priority (a report made before they were recorded) gets its status's."""
    names = []
    for entry in summary.get("improvement_queue") or []:
        if not isinstance(entry, dict):
            continue
        status = str(entry.get("status") or entry.get("comparison_status") or "")
        rank = str(entry.get("priority") or priority(status) or "")
        if priorities is not None and rank not in priorities:
            continue
        if statuses is not None and status not in statuses:
            continue
        if isinstance(entry.get("benchmark"), str) and entry["benchmark"]:
            names.append(entry["benchmark"])
    return list(dict.fromkeys(names))
