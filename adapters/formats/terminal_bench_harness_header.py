"""Who ran a `tb run` run, on what, how and when: its header, from run_metadata.json,
else from what results.json and the runner's defaults say (see terminal_bench_harness)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path, PurePath
from typing import Any

from benchledger.adapters.formats import terminal_bench_harness_files as files
from benchledger.adapters.formats.terminal_bench_harness_files import (
    Results,
    RunMetadata,
    Trial,
    parse_time,
    stated_time,
)

UNIT = "accuracy"
DEFAULT_BENCHMARK = "terminal-bench"
UNKNOWN = "unknown"
# What the run's signature is made of: these choose the work (the tasks, the attempts,
# the agent's own arguments); the rest of the metadata says how and where it ran.
CONFIG = ("dataset_name", "dataset_version", "n_attempts", "dataset_size", "n_tasks")
LISTS = ("task_ids", "exclude_task_ids")
PROVENANCE = (
    "run_id",
    "uuid",
    "model_name",
    "commit_hash",
    "username",
    "s3_bucket",
    "log_level",
    "no_rebuild",
    "cleanup",
    "n_concurrent_trials",
    "resumed_at",
)
HOST_PATHS = ("output_path", "dataset_path")


def header(
    path: Path,
    metadata: RunMetadata | None,
    results: Results,
    defaults: dict[str, Any],
    quirks: list[str],
) -> dict[str, Any]:
    """The run's header fields, before its score and figures."""
    trials = results.results
    config: dict[str, Any] = dict(defaults.get("config") or {})
    provenance: dict[str, Any] = {"layout": "tb_run"}
    if metadata is None:
        who = _without_metadata(path, results, defaults, config, provenance, quirks)
    else:
        who = _from_metadata(path, metadata, trials, defaults, config, provenance, quirks)
    # A resumed run's metadata keeps no end time: the trials still say when they ran.
    started = who.pop("started_at", None) or _moment(trials, "trial_started_at", min)
    ended = who.pop("ended_at", None) or _moment(trials, "trial_ended_at", max)
    return {
        **who,
        "config": config,
        "started_at": started,
        "ended_at": ended,
        "status": "succeeded",
        "unit": UNIT,
        "higher_is_better": True,
        "provenance": provenance,
    }


def _without_metadata(
    path: Path,
    results: Results,
    defaults: dict[str, Any],
    config: dict[str, Any],
    provenance: dict[str, Any],
    quirks: list[str],
) -> dict[str, Any]:
    trials = results.results
    quirks.append("no run_metadata.json: the dataset, agent and model are not stated")
    if files.published_copy(path):
        quirks.append("a results.json published alone, renamed out of its run folder")
    run_id = _run_id(path, trials)
    attempts = files.named_attempts(trials)
    if attempts is not None:
        config["n_attempts"] = attempts
    if run_id is not None:
        provenance["run_id"] = run_id
    return {
        # A copy with no run id: the `id` the harness gave its results, else its name.
        "run_key": run_id or results.id or path.stem,
        "benchmark": defaults.get("benchmark") or DEFAULT_BENCHMARK,
        "agent": defaults.get("agent") or UNKNOWN,
        "provider": defaults.get("provider") or "",
        "model": defaults.get("model") or UNKNOWN,
    }


def _run_id(path: Path, trials: list[Trial]) -> str | None:
    """The run id the trial names carry (the key run_metadata.json would give, and one a
    resumed run keeps); else the name of the run folder `tb run` names after the run."""
    named = files.named_run_id(trials)
    if named:
        return named
    return path.parent.name if files.named_by_harness(path) else None


def _from_metadata(
    path: Path,
    metadata: RunMetadata,
    trials: list[Trial],
    defaults: dict[str, Any],
    config: dict[str, Any],
    provenance: dict[str, Any],
    quirks: list[str],
) -> dict[str, Any]:
    name, version = metadata.dataset_name, metadata.dataset_version
    if name:
        benchmark = f"{name}@{version}" if version else name
    else:
        benchmark = defaults.get("benchmark") or DEFAULT_BENCHMARK
        quirks.append("run_metadata.json names no dataset_name (a local dataset)")
    config.update({k: getattr(metadata, k) for k in CONFIG if getattr(metadata, k) is not None})
    config.update({k: sorted(getattr(metadata, k)) for k in LISTS if getattr(metadata, k)})
    if metadata.agent_kwargs:
        config["agent_kwargs"] = metadata.agent_kwargs
    planned = (metadata.dataset_size or 0) * (metadata.n_attempts or 1)
    if len(trials) < planned:
        quirks.append(f"partial run: {len(trials)} of the {planned} trials planned")
    provider, model = _model(metadata.model_name)
    if model is None:
        provider, model = defaults.get("provider") or "", defaults.get("model") or UNKNOWN
        quirks.append(f"run_metadata.json names no model_name: the model is {model!r}")
    if metadata.end_time is None:
        quirks.append("run_metadata.json has no end_time (a resumed or unfinished run)")
    provenance.update(metadata.extras())
    provenance.update(
        {k: getattr(metadata, k) for k in PROVENANCE if getattr(metadata, k) is not None}
    )
    for key in HOST_PATHS:
        value = getattr(metadata, key)
        if value:  # the ledger names no host path: the folder's own name is kept
            provenance[key] = PurePath(value).name or value
    where = path.parent / files.METADATA
    return {
        "run_key": metadata.run_id,
        "benchmark": benchmark,
        "agent": metadata.agent_name,
        "provider": provider or defaults.get("provider") or "",
        "model": model,
        "started_at": stated_time(metadata.start_time, where, "start_time"),
        "ended_at": stated_time(metadata.end_time, where, "end_time"),
    }


def _model(model_name: str | None) -> tuple[str, str | None]:
    """LiteLLM's `provider/model` split at the first `/`; a bare name has no provider."""
    if not model_name:
        return "", None
    provider, slash, model = model_name.partition("/")
    return (provider, model) if slash and provider and model else ("", model_name)


def _moment(
    trials: list[Trial], field: str, pick: Callable[[list[datetime]], datetime]
) -> datetime | None:
    moments = [m for t in trials if (m := parse_time(getattr(t, field))) is not None]
    return pick(moments) if moments else None
