"""EleutherAI lm-evaluation-harness results JSON (v0 through 0.4.x), one run per task.

A results file is one evaluation of one model on N tasks (and groups); each task
(or group row) becomes a run whose benchmark is the task name, whose score is the
task's headline metric (see lm_eval_metrics) and whose metrics keep every
metric/filter pair with its stderr. Paired `samples_<task>_<ts>.jsonl` files are
members of the result and become the task's cells (see lm_eval_samples).

Run key: "<backend>:<model>|<task>|<evaluation>", where the evaluation is the file's
`date` (wall-clock start) or, for files without one (v0.2/v0.3), a digest of the
whole document: the same file always gives the same keys, two evaluations never
share one. Times are real only from `date` (+ `total_evaluation_time_seconds` for
the end); `start_time` / `end_time` are perf_counter values and stay provenance.

agent is the harness, provider the backend (`config.model`: hf, vllm,
openai-chat-completions, ...), model `model_name` or else the model_args entry lm-eval
itself would name. model_args strings are read as lm-eval reads them, so the string
and dict forms of the same arguments give one config. `lm_eval_version` and
`git_hash` are kept as stated, never one inferred from the other (they can disagree).
Anything odd found is listed in provenance["quirks"]: non_finite_metric_values,
stderr_not_available, headline_not_finite, no_metrics, model_name_empty,
model_unknown, secrets_redacted, monotonic_times_not_used, no_wall_clock_time,
limited, samples_task_hash_mismatch, samples_count_mismatch, samples_mean_mismatch.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchledger.adapters.formats import lm_eval_samples as samples
from benchledger.adapters.formats.lm_eval_document import (
    ResultsDocument,
    field_error,
    json_safe,
    loads,
    validate,
)
from benchledger.adapters.formats.lm_eval_evaluation import UNKNOWN_MODEL, Evaluation
from benchledger.adapters.formats.lm_eval_metrics import (
    Headline,
    aggregation,
    headline,
    listed_metrics,
    metric_names,
    quirks_of,
    row_metrics,
)
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell, RunHeader, RunRecord, RunStatus, SkipRecord

NAME = "lm_eval"
SYSTEM = "lm_eval"
AGENT = "lm-evaluation-harness"

_FIRST_KEY = re.compile(rb'^\{\s*"results"\s*:\s*\{\s*(?:"[^"\\]*"\s*:\s*\{|\})')
_MARKERS = tuple(
    f'"{key}"'.encode()
    for key in (
        "versions",
        "n-shot",
        "model_args",
        "git_hash",
        "lm_eval_version",
        "group_subtasks",
        "higher_is_better",
        "task_hashes",
        "configs",
    )
)
_TASK_CONFIG_KEYS = ("dataset_path", "dataset_name", "output_type")


def detect(path: Path, head: bytes) -> bool:
    """A results JSON: `results` first (as lm-eval writes it), or beside lm-eval's own keys."""
    if path.suffix.lower() != ".json":
        return False
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if not text.startswith(b"{"):
        return False
    if _FIRST_KEY.match(text):
        return True
    return b'"results"' in text and sum(marker in text for marker in _MARKERS) >= 2


def members(path: Path) -> list[Path]:
    """The per-task samples logs written beside the results file."""
    return sorted(samples.sample_files(path).values())


def parse(
    path: Path, data: bytes, defaults: dict[str, Any] | None = None
) -> Iterator[RunRecord | SkipRecord]:
    """One run per task or group row; `defaults` fill what the file does not say."""
    name = str(path)
    raw = loads(name, data)
    doc = validate(name, raw)
    tasks = [*doc.results, *(g for g in doc.groups if g not in doc.results)]
    if not tasks:
        raise InputFormatError(name, "no task results in the file", field="results")
    if "" in tasks:
        raise InputFormatError(name, "a task has an empty name", field="results")
    evaluation = Evaluation.of(name, raw, doc)
    files = samples.sample_files(path) if doc.samples is None else {}
    for task in tasks:
        record = _run(name, doc, evaluation, task, files, defaults or {})
        if record is not None:
            yield record


def _run(
    name: str,
    doc: ResultsDocument,
    evaluation: Evaluation,
    task: str,
    files: dict[str, Path],
    defaults: dict[str, Any],
) -> RunRecord | None:
    samples_file = files.get(task)
    row = doc.results.get(task, doc.groups.get(task, {}))
    subtasks = doc.group_subtasks.get(task) or []
    is_group = task in doc.groups or bool(subtasks)
    task_config = doc.configs.get(task, {})
    listed = listed_metrics(task_config)
    head = headline(row, doc.higher_is_better.get(task, {}), listed)
    if head is None and is_group:
        return None  # a group header row with no aggregate of its own
    quirks = [*evaluation.quirks, *quirks_of(row)]
    metrics = row_metrics(row)
    provenance = dict(evaluation.provenance)
    if head is None:
        quirks.append("no_metrics")
    else:
        provenance["headline"] = head.key
        if head.score is None:
            quirks.append("headline_not_finite")
    for key, value in (
        ("task_alias", row.get("alias")),
        ("group_subtasks", subtasks or None),
        ("task_hash", doc.task_hashes.get(task) or None),
        ("task_config", {k: task_config[k] for k in _TASK_CONFIG_KEYS if k in task_config} or None),
    ):
        if value is not None:
            provenance[key] = json_safe(value)
    counts = doc.n_samples.get(task)
    if counts is not None:
        metrics["n-samples"] = json_safe(counts)
        if counts.get("effective") != counts.get("original"):
            quirks.append("limited")
    lines = _lines(name, doc, task, samples_file, provenance)
    if lines and head is not None:
        quirks += _check_samples(doc, task, lines, head, listed, counts, provenance)
    if quirks:
        provenance["quirks"] = list(dict.fromkeys(quirks))
    config = dict(evaluation.config)
    fewshot = doc.n_shot.get(task, doc.config.num_fewshot if doc.config else None)
    for key, value in (("num_fewshot", fewshot), ("task_version", doc.versions.get(task))):
        if value is not None:
            config[key] = json_safe(value)
    fields: dict[str, Any] = {
        "run_key": evaluation.run_key(task),
        "benchmark": task,
        "agent": AGENT,
        "config": config,
        "started_at": evaluation.started_at,
        "ended_at": evaluation.ended_at,
        "status": RunStatus.SUCCEEDED,
        "score": head.score if head else None,
        "unit": head.unit if head else None,
        "higher_is_better": head.higher_is_better if head else True,
        "metrics": metrics,
        "provenance": provenance,
    }
    if evaluation.provider:
        fields["provider"] = evaluation.provider
    if evaluation.model != UNKNOWN_MODEL or "model" not in defaults:
        fields["model"] = evaluation.model
    try:
        header = RunHeader.model_validate({**defaults, **fields})
    except ValidationError as e:
        raise field_error(name, e) from None
    names = metric_names(row)
    cells = samples.cells(lines, head, names)
    if is_group and not lines:
        cells = _group_cells(name, doc, subtasks, files)
    return RunRecord(header=header, cells=tuple(cells))


def _group_cells(
    name: str, doc: ResultsDocument, subtasks: list[str], files: dict[str, Path]
) -> list[Cell]:
    """A group's cells: its subtasks' samples, keyed `subtask/doc` and clustered on the
    subtask, whose samples share a prompt format and topic and are not independent."""
    cells = []
    for subtask in subtasks:
        row = doc.results.get(subtask)
        if row is None:
            continue  # a nested group: its own run holds its subtasks
        listed = listed_metrics(doc.configs.get(subtask, {}))
        head = headline(row, doc.higher_is_better.get(subtask, {}), listed)
        lines = _lines(name, doc, subtask, files.get(subtask), {})
        cells += [
            cell.model_copy(update={"key": f"{subtask}/{cell.key}", "cluster": subtask})
            for cell in samples.cells(lines, head, metric_names(row))
        ]
    return cells


def _lines(
    name: str,
    doc: ResultsDocument,
    task: str,
    samples_file: Path | None,
    provenance: dict[str, Any],
) -> list[samples.SampleLine]:
    if doc.samples is not None:
        inline = doc.samples.get(task, [])
        if inline:
            provenance["samples"] = "inline"
        return [
            samples.validate_line(name, obj, line=None, field=f"samples.{task}[{i}]")
            for i, obj in enumerate(inline)
        ]
    if samples_file is None:
        return []
    provenance["samples"] = samples_file.name
    return samples.read_lines(samples_file)


def _check_samples(
    doc: ResultsDocument,
    task: str,
    lines: list[samples.SampleLine],
    head: Headline,
    listed: list[dict[str, Any]],
    counts: dict[str, Any] | None,
    provenance: dict[str, Any],
) -> list[str]:
    """Compare the samples with what the results file publishes about them."""
    found = []
    published_hash = doc.task_hashes.get(task)
    computed_hash = samples.task_hash(lines)
    if published_hash and computed_hash:
        provenance["samples_task_hash_matches"] = published_hash == computed_hash
        if published_hash != computed_hash:
            found.append("samples_task_hash_mismatch")
    scored = samples.headline_lines(lines, head)
    if counts is not None and counts.get("effective") not in (None, len(scored)):
        found.append("samples_count_mismatch")
    if aggregation(head.metric, listed) == "mean" and head.score is not None:
        mean = samples.mean_of(scored, head.metric)
        if mean is not None:
            provenance["samples_mean"] = mean
            if abs(mean - head.score) > 1e-9 * max(1.0, abs(head.score)):
                found.append("samples_mean_mismatch")
    return found
