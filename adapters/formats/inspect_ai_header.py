"""An inspect log's header as the ledger's run header: who ran what, how it ended, its score."""

from __future__ import annotations

import math
from typing import Any

from benchledger.adapters.formats.inspect_ai_cells import canonical, usage_dump
from benchledger.adapters.formats.inspect_ai_models import LogHeader, Plan, Results
from benchledger.domain.records import Cell, RunStatus

STATUSES = {
    "success": RunStatus.SUCCEEDED,
    "cancelled": RunStatus.CANCELLED,
    "error": RunStatus.ERROR,
    # Never finished: interrupted, or still running when the file was copied.
    "started": RunStatus.RECOVERED,
}
NEVER_FINISHED = "the log was never finished (status 'started'): interrupted or still running"
# Metrics that describe spread, never the headline of a scorer.
SPREAD = frozenset({"stderr", "std", "var", "bootstrap_stderr"})
# Generate-config keys about throughput, not about what was asked of the model.
OPERATIONAL = frozenset(
    {"max_connections", "max_retries", "timeout", "attempt_timeout", "max_subprocesses"}
)
# ledger token name -> inspect ModelUsage field
TOKENS = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "total_tokens": "total_tokens",
    "cached_tokens": "input_tokens_cache_read",
    "cache_creation_input_tokens": "input_tokens_cache_write",
    "reasoning_tokens": "reasoning_tokens",
}
TOLERANCE = 1e-9


def present(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None and v != {} and v != []}


def finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def headline_scorer(log: LogHeader) -> str | None:
    """The scorer whose value scores each cell: the first of the results, else of the task."""
    if log.results and log.results.scores:
        return log.results.scores[0].name
    return log.eval.scorers[0].name if log.eval.scorers else None


def headline(results: Results | None) -> tuple[float | None, str | None]:
    """The first scorer's accuracy, else its first metric that is not a spread."""
    if results is None or not results.scores:
        return None, None
    metrics = results.scores[0].metrics
    readable = [n for n, m in metrics.items() if n not in SPREAD and finite(m.value) is not None]
    name = "accuracy" if "accuracy" in metrics else next(iter(readable), None)
    return (finite(metrics[name].value), name) if name else (None, None)


def agent_name(plan: Plan) -> str:
    """A named plan (an agent) by its name, else its solver chain, else `inspect_ai`."""
    if plan.name and plan.name != "plan":
        return plan.name
    return "+".join(step.solver for step in plan.steps) or "inspect_ai"


def run_config(log: LogHeader) -> dict[str, Any]:
    """What defines the experiment; throughput and logging settings stay in provenance."""
    spec, settings = log.eval, log.eval.config
    epochs = settings.epochs or 1
    generate = {**log.plan.config, **spec.model_generate_config}
    return canonical(
        present(
            {
                "task_version": spec.task_version if spec.task_version not in (0, "0") else None,
                "task_args": spec.task_args,
                "limit": settings.limit,
                "sample_id": settings.sample_id,
                "epochs": epochs if epochs > 1 else None,
                "epochs_reducer": settings.epochs_reducer if epochs > 1 else None,
                "generate_config": present(
                    {k: v for k, v in generate.items() if k not in OPERATIONAL}
                ),
                "model_args": spec.model_args,
            }
        )
    )


def run_metrics(log: LogHeader) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    if log.results is not None:
        scores: dict[str, Any] = {}
        for score in log.results.scores:
            key = score.name if score.name not in scores else f"{score.name}/{score.reducer}"
            while key in scores:
                key += "'"
            scores[key] = {n: m.value for n, m in score.metrics.items()}
        metrics["scores"] = scores
        metrics["total_samples"] = log.results.total_samples
        metrics["completed_samples"] = log.results.completed_samples
    usage = log.stats.model_usage
    if usage:
        metrics["model_usage"] = usage_dump(usage)
    costs = [u.total_cost for u in usage.values() if u.total_cost is not None]
    if costs:
        metrics["total_cost"] = sum(costs)
    return canonical(present(metrics))


def run_tokens(log: LogHeader) -> dict[str, int]:
    """Token counts summed over every model the eval used (per model: metrics.model_usage)."""
    usage = list(log.stats.model_usage.values())
    tokens = {}
    for name, field in TOKENS.items():
        counts = [getattr(u, field) for u in usage if getattr(u, field) is not None]
        if counts:
            tokens[name] = sum(counts)
    return tokens


def quirks(log: LogHeader, cells: list[Cell], cells_from: str | None) -> dict[str, Any]:
    """What is odd about this log, and the score recomputed from its cells where it differs."""
    notes: list[str] = []
    found: dict[str, Any] = {}
    results = log.results
    if log.status == "cancelled" and results is not None:
        notes.append("cancelled: results cover only the samples completed before cancellation")
    if results is not None and not results.scores:
        notes.append("the results hold no aggregate scores")
    if cells_from == "samples" and results is not None and len(cells) != results.completed_samples:
        notes.append(
            f"the log holds {len(cells)} samples of the {results.completed_samples} "
            "it says were completed"
        )
    if cells_from == "reductions":
        notes.append("no samples logged: cells are the epoch-reduced values of `reductions`")
    if log.invalidated:
        notes.append("inspect marks this log invalidated")
    score, unit = headline(results)
    scored = [c.score for c in cells if c.score is not None]
    reducers = log.eval.config.epochs_reducer
    if (
        score is not None
        and unit == "accuracy"
        and scored
        and len(scored) == len(cells)
        and reducers in (None, ["mean"])
    ):
        recomputed = sum(scored) / len(scored)
        if abs(recomputed - score) > TOLERANCE:
            found["recomputed_score"] = recomputed
            notes.append(f"published accuracy {score} differs from the cells' mean {recomputed}")
    if notes:
        found["quirks"] = notes
    return found


def provenance(log: LogHeader, cells: list[Cell], cells_from: str | None) -> dict[str, Any]:
    spec = log.eval
    roles = {
        role: value["model"]
        for role, value in (spec.model_roles or {}).items()
        if isinstance(value, dict) and isinstance(value.get("model"), str)
    }
    scorers = [
        present(s.model_dump(include={"name", "scorer", "reducer", "scored_samples"}))
        | present({"unscored_samples": s.unscored_samples})
        for s in (log.results.scores if log.results else [])
    ]
    return canonical(
        present(
            {
                "eval_id": spec.eval_id,
                "run_id": spec.run_id,
                "eval_set_id": spec.eval_set_id,
                "task": spec.task,
                "task_id": spec.task_id,
                "task_file": spec.task_file,
                "task_registry_name": spec.task_registry_name,
                "task_display_name": spec.task_display_name,
                "created": spec.created.isoformat() if spec.created else None,
                "log_version": log.version,
                "log_status": log.status,
                "inspect_ai": spec.packages.get("inspect_ai"),
                "packages": spec.packages if set(spec.packages) - {"inspect_ai"} else None,
                "revision": spec.revision.model_dump(exclude_none=True) if spec.revision else None,
                "dataset": spec.dataset.model_dump(exclude_none=True) if spec.dataset else None,
                "plan": [present(step.model_dump()) for step in log.plan.steps],
                "scorers": scorers,
                "eval_config": spec.config.model_dump(exclude_unset=True),
                "model_base_url": spec.model_base_url,
                "model_roles": roles,
                "sandbox": spec.sandbox,
                "invalidated": log.invalidated or None,
                "cells_from": cells_from,
                **quirks(log, cells, cells_from),
            }
        )
    )


def run_header(log: LogHeader, cells: list[Cell], cells_from: str | None) -> dict[str, Any]:
    """The RunHeader fields of one log (validated by the caller)."""
    spec = log.eval
    provider, _, model = spec.model.partition("/") if "/" in spec.model else ("", "", spec.model)
    score, unit = headline(log.results)
    status = STATUSES[log.status]
    error = log.error.message if log.error else None
    if status is RunStatus.RECOVERED:
        error = error or NEVER_FINISHED
    run_key = spec.eval_id or (f"{spec.run_id}:{spec.task_id}" if spec.task_id else spec.run_id)
    return {
        "run_key": run_key,
        # The task's own name: one registry entry (a bridge, a factory taking a split)
        # builds many tasks, and its name stays in provenance.
        "benchmark": spec.task,
        "agent": agent_name(log.plan),
        "provider": provider,
        "model": model,
        "config": run_config(log),
        "started_at": log.stats.started_at,
        "ended_at": log.stats.completed_at,
        "status": status,
        "score": score,
        "unit": unit,
        "higher_is_better": True,
        "metrics": run_metrics(log),
        "tokens": run_tokens(log),
        "error": error,
        "provenance": provenance(log, cells, cells_from),
    }
