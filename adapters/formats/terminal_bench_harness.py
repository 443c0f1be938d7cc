"""Terminal-Bench harness run folders: what `tb run` writes to `<output>/<run_id>/`.

The run is claimed through its `results.json` (BenchmarkResults: one entry per trial,
and the figures the harness computes from them); `run_metadata.json` beside it is a
member, so a change to it is a new version of the run. The per-trial folders repeat
each trial's entry and are not read. Without run_metadata.json the run is still
recorded, from what results.json says.

A results.json is often published alone, out of its run folder and renamed by its run
(`2025-08-25__12-29-38_results.json`, several in one folder). A file whose name ends in
`results.json` is claimed when its head shows the harness's trial list (`results`, a
list of objects naming `trial_name` and `task_id`), and read alone: a run_metadata.json
beside it is not taken for its own (it states another run, or none), nor is the folder
its run's name.

Mapping (see the module docstring of `terminal_bench_harness_files` for the shapes):

- run key: run_metadata's `run_id`; without it, the run id every trial name ends with
  (`<task>.<k>-of-<n>.<run_id>`, the same key run_metadata would give, and one a resumed
  run keeps, where results.json's `id` is drawn anew), else the folder's name for a
  results.json in its run folder, else results.json's `id`, else the file's name.
- benchmark: the dataset, `<dataset_name>@<dataset_version>` (`terminal-bench-core@0.1.1`):
  versions hold different tasks, so their scores never share a benchmark, a high score
  or a latest row. A run on a local dataset (no name) or without run_metadata.json is
  `terminal-bench` unless `--benchmark` says otherwise.
- agent: `agent_name`; model: `model_name`, split at its first `/` into provider and
  model as LiteLLM names them (`anthropic/claude-sonnet-4-20250514`). The harness leaves
  `model_name` null for agents that choose their own model; the model is then the
  runner's `--model`, else `unknown`, never guessed, and the provenance says so (an
  `unknown` model compares with no named one, and refusing would lose real runs).
- score = the stated `accuracy` (resolved trials / trials: every attempt counts), unit
  `accuracy`; `n_resolved`, `pass_at_k` and the rest are metrics; figures that disagree
  with the trials are flagged in provenance (`mismatch`), never "fixed".
- one cell per trial, keyed by `trial_name` (attempts of one task are distinct trials):
  passed / failed from `is_resolved`; a trial whose tests never ran or could not be
  parsed (`is_resolved: null`) is an `error` cell scoring 0, as the harness counts it.
- tokens: the trials' stated totals summed; the harness writes 0 for agents that do not
  count tokens, so an all-zero total is left out rather than recorded as "none used".
- absolute host paths (`output_path`, `dataset_path`) are kept by their last part.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchledger.adapters.formats import terminal_bench_harness_files as files
from benchledger.adapters.formats import terminal_bench_harness_header as run_header
from benchledger.adapters.formats.terminal_bench_files import validate
from benchledger.adapters.formats.terminal_bench_harness_files import (
    Results,
    RunMetadata,
    Trial,
    parse_time,
)
from benchledger.domain.records import Cell, RunHeader, RunRecord, SkipRecord

NAME = "terminal_bench_harness"
SYSTEM = "terminal_bench_harness"
TOLERANCE = 1e-9
_RESULTS_LIST = re.compile(rb'"results"\s*:\s*\[')
_TRIAL_LIST = re.compile(rb'"results"\s*:\s*\[\s*\{')
_COMPUTED = (b'"n_resolved"', b'"resolved_ids"', b'"accuracy"')
_PHASES = ("trial", "agent", "test")


def detect(path: Path, head: bytes) -> bool:
    """A `results.json` that holds a list of trials, or the figures only the harness
    computes; a trial folder's own results.json (one trial, no list) is not claimed.
    A published copy renamed `<anything>results.json` must show the trial list itself."""
    if not head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return False
    if files.named_by_harness(path):
        trials = _RESULTS_LIST.search(head) is not None and b'"trial_name"' in head
        return trials or all(key in head for key in _COMPUTED)
    return files.published_copy(path) and _lists_trials(head)


def _lists_trials(head: bytes) -> bool:
    """Whether the head shows `"results": [{...` naming a trial and its task."""
    found = _TRIAL_LIST.search(head)
    if found is None:
        return False
    rest = head[found.end() :]
    return b'"trial_name"' in rest and b'"task_id"' in rest


def members(path: Path) -> list[Path]:
    if not files.named_by_harness(path):
        return []
    metadata = path.parent / files.METADATA
    return [metadata] if metadata.is_file() else []


def parse(
    path: Path, data: bytes, defaults: dict[str, Any] | None = None
) -> Iterator[RunRecord | SkipRecord]:
    """The folder's one run; `defaults` fill what run_metadata.json leaves out."""
    results = files.read_results(path, data)
    # A renamed copy was taken out of its run folder: what lies beside it is not its own.
    beside = path.parent / files.METADATA
    metadata = files.read_metadata(beside) if files.named_by_harness(path) else None
    trials = results.results
    quirks: list[str] = []
    mismatch = _mismatch(results, metadata)
    header = run_header.header(path, metadata, results, defaults or {}, quirks)
    resolved = sum(1 for t in trials if t.is_resolved)
    counted = resolved / len(trials) if trials else None
    header["score"] = results.accuracy if results.accuracy is not None else counted
    header["metrics"] = _metrics(results, resolved)
    header["tokens"] = _tokens(trials, quirks)
    ungraded = sum(1 for t in trials if t.is_resolved is None)
    if ungraded:
        trials_were = "1 trial was" if ungraded == 1 else f"{ungraded} trials were"
        quirks.append(
            f"{trials_were} never graded (is_resolved null): error cells, "
            "counted unresolved as the harness counts them"
        )
    if not trials:
        header.update(status="error", score=None, error="results.json holds no trials")
    if results.id is not None:
        header["provenance"]["results_id"] = results.id
    if quirks:
        header["provenance"]["quirks"] = quirks
    if mismatch:
        header["provenance"]["mismatch"] = mismatch
    run = validate(RunHeader, header, path)
    yield RunRecord(header=run, cells=tuple(_cell(t) for t in trials))


def _cell(trial: Trial) -> Cell:
    metrics: dict[str, Any] = trial.extras()
    metrics["task_id"] = trial.task_id
    attempt = files.attempt_of(trial)
    if attempt is not None:
        metrics.setdefault("attempt", int(attempt["attempt"]))
        metrics.setdefault("attempts", int(attempt["attempts"]))
    stated: dict[str, Any] = {
        "trial_id": trial.id or trial.uuid,
        "failure_mode": trial.failure_mode,
        "parser_results": trial.parser_results,
        "input_tokens": trial.total_input_tokens,
        "output_tokens": trial.total_output_tokens,
        "n_commands": trial.n_commands,
        "recording_path": trial.recording_path,
        "instruction": trial.instruction,
    }
    if trial.id is not None and trial.uuid is not None:
        stated["uuid"] = trial.uuid
    for phase in _PHASES:
        start, end = getattr(trial, f"{phase}_started_at"), getattr(trial, f"{phase}_ended_at")
        stated[f"{phase}_started_at"], stated[f"{phase}_ended_at"] = start, end
        began, ended = parse_time(start), parse_time(end)
        if began is not None and ended is not None:
            stated[f"{phase}_seconds"] = (ended - began).total_seconds()
    metrics.update({k: v for k, v in stated.items() if v is not None})
    outcome = "error" if trial.is_resolved is None else "passed" if trial.is_resolved else "failed"
    return Cell(
        key=trial.trial_name, outcome=outcome, score=float(bool(trial.is_resolved)), metrics=metrics
    )


def _metrics(results: Results, resolved: int) -> dict[str, Any]:
    trials = results.results
    stated_resolved = results.n_resolved
    metrics: dict[str, Any] = results.extras()
    metrics.update(
        {
            "n_resolved": resolved if stated_resolved is None else stated_resolved,
            "n_unresolved": (
                len(trials) - resolved if results.n_unresolved is None else results.n_unresolved
            ),
            "trials": len(trials),
            "tasks": len({t.task_id for t in trials}),
            "failure_modes": dict(
                sorted(Counter(t.failure_mode for t in trials if t.failure_mode).items())
            ),
        }
    )
    if results.pass_at_k is not None:
        metrics["pass_at_k"] = dict(sorted(results.pass_at_k.items(), key=lambda kv: _k(kv[0])))
    metrics["trials_with_tokens"] = sum(1 for t in trials if _states_tokens(t))
    return metrics


def _states_tokens(trial: Trial) -> bool:
    return trial.total_input_tokens is not None or trial.total_output_tokens is not None


def _k(key: str) -> tuple[int, str]:
    return (int(key), "") if key.isdigit() else (1 << 62, key)


def _tokens(trials: list[Trial], quirks: list[str]) -> dict[str, int]:
    tokens = {
        "input_tokens": sum(t.total_input_tokens or 0 for t in trials),
        "output_tokens": sum(t.total_output_tokens or 0 for t in trials),
    }
    if any(_states_tokens(t) for t in trials) and not any(tokens.values()):
        quirks.append("every trial states 0 tokens: the agent does not report its usage")
    return {k: v for k, v in tokens.items() if v}


def _mismatch(results: Results, metadata: RunMetadata | None) -> dict[str, Any]:
    """Where the figures the files state disagree with the trials (or each other)."""
    trials = results.results
    resolved = [t.task_id for t in trials if t.is_resolved]
    unresolved = [t.task_id for t in trials if not t.is_resolved]
    found: dict[str, Any] = {}
    for name, count, of_trials in (
        ("n_resolved", results.n_resolved, len(resolved)),
        ("n_unresolved", results.n_unresolved, len(unresolved)),
    ):
        if count is not None and count != of_trials:
            found[name] = {"stated": count, "trials": of_trials}
    for name, ids, derived in (
        ("resolved_ids", results.resolved_ids, resolved),
        ("unresolved_ids", results.unresolved_ids, unresolved),
    ):
        if ids is not None and Counter(ids) != Counter(derived):
            found[name] = {
                "only_stated": sorted((Counter(ids) - Counter(derived)).elements()),
                "only_trials": sorted((Counter(derived) - Counter(ids)).elements()),
            }
    # The harness's own definition, 0.0 for no trials.
    accuracy = len(resolved) / len(trials) if trials else 0.0
    if results.accuracy is not None and abs(results.accuracy - accuracy) > TOLERANCE:
        found["accuracy"] = {"stated": results.accuracy, "trials": accuracy}
    if metadata is None:
        return found
    # run_metadata.json repeats the figures when the run ends (null until then).
    stated, again = results.accuracy, metadata.accuracy
    if stated is not None and again is not None and abs(stated - again) > TOLERANCE:
        found["run_metadata_accuracy"] = again
    if None not in (results.pass_at_k, metadata.pass_at_k) and (
        results.pass_at_k != metadata.pass_at_k
    ):
        found["run_metadata_pass_at_k"] = metadata.pass_at_k
    named = files.named_run_id(trials)
    if named is not None and named != metadata.run_id:
        found["trial_names_run_id"] = named
    return found
