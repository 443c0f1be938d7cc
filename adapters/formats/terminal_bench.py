"""Terminal-Bench submission directories (../shared/corpus/terminal_bench/FORMAT.md).

A submission `<dir>/` holds `metadata.yaml` and `results/`: `detailed_results.json`
(one object per task: the cells, and the file a submission is claimed through),
`results.json` (resolved / unresolved task ids) and tallies by difficulty and
category; those are members, cross-checked against the cells, and disagreements are
flagged in provenance, never "fixed". The run key is the folder name (folder dates
are not trustworthy, so nothing is read from them). A task's outcome follows
`resolved` (best-of-N across retry rounds, not pass@1), whatever its `test_pass`;
score = resolved / dataset_size. The attempt policy and the dataset size are config:
a best-of-3 or a 50-task run is not comparable with a single-attempt full run.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchledger.adapters.formats import terminal_bench_files as files
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell, RunHeader, RunRecord, SkipRecord

NAME = "terminal_bench"
SYSTEM = "terminal_bench"
PRIMARY = "detailed_results.json"
TEXT_LIMIT = 500
_TASK_LIST = re.compile(rb'\A\s*\[\s*\{\s*"task_id"\s*:')
_DATE = re.compile(r"(20\d{2})(\d{2})(\d{2})")


def detect(path: Path, head: bytes) -> bool:
    return (
        path.name == PRIMARY
        and path.parent.name == "results"
        and _TASK_LIST.match(head) is not None
    )


def members(path: Path) -> list[Path]:
    results = path.parent
    candidates = [results.parent / "metadata.yaml", results / "results.json"]
    candidates += [results / name for name in files.TALLIES]
    return [p for p in candidates if p.is_file()]


def parse(
    path: Path, data: bytes, defaults: dict[str, Any] | None = None
) -> Iterator[RunRecord | SkipRecord]:
    """The submission's one run; `defaults` fill what metadata.yaml leaves out."""
    tasks = files.read_tasks(path, data)
    results, submission = path.parent, path.parent.parent
    metadata = files.read_metadata(submission / "metadata.yaml")
    published = files.read_published(results / "results.json")
    tallies = {name: files.read_tally(results / name) for name in files.TALLIES}
    tags = metadata.tags if metadata else files.Tags()
    quirks: list[str] = [] if metadata else ["no metadata.yaml: agent and model are unknown"]
    cells = [_cell(task) for task in tasks]
    resolved = sum(1 for task in tasks if task.resolved)
    size = tags.dataset_size or len(tasks)
    if tags.dataset_size is not None and tags.dataset_size != len(tasks):
        quirks.append(f"dataset_size says {tags.dataset_size} but {len(tasks)} tasks are listed")
    metrics: dict[str, Any] = {
        "resolved": resolved,
        "unresolved": len(tasks) - resolved,
        "tasks": len(tasks),
        "dataset_size": size,
    }
    for name, tally in tallies.items():
        key = name.removeprefix("results_").removesuffix(".json")  # by_difficulty, by_category
        field = "difficulty" if key == "by_difficulty" else "category"
        metrics[key] = _tally(tasks, field)
        if tally is not None:
            stated = {k: v.model_dump() for k, v in sorted(tally.items())}
            if stated != metrics[key]:
                quirks.append(f"{name} disagrees with the task results")
    if published is not None:
        quirks += _reconcile(published, tasks)
    quirks += _attempt_quirks(tags, tasks)
    header = _header(submission, tags, metadata, defaults or {}, tasks, quirks)
    header.update(score=resolved / size if tasks else None, metrics=metrics)
    if not tasks:
        header.update(status="error", error="the submission lists no task results")
    try:
        run = RunHeader.model_validate(header)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or None
        raise InputFormatError(str(path), first["msg"], field=where) from None
    yield RunRecord(header=run, cells=tuple(cells))


def _cell(task: files.TaskResult) -> Cell:
    metrics: dict[str, Any] = {}
    for key in ("test_pass", "solution_judge", "n_attempts", "difficulty", "category"):
        value = getattr(task, key)
        if value is not None:
            metrics[key] = value
    for key in ("failure_reason", "best_experiment", "session_url"):
        value = getattr(task, key)
        if value:
            metrics[key] = value[:TEXT_LIMIT]
    outcome = "passed" if task.resolved else "failed"
    return Cell(key=task.task_id, outcome=outcome, score=float(task.resolved), metrics=metrics)


def _tally(tasks: list[files.TaskResult], field: str) -> dict[str, dict[str, int]]:
    totals: Counter[str] = Counter()
    passed: Counter[str] = Counter()
    for task in tasks:
        group = getattr(task, field) or "unknown"
        totals[group] += 1
        passed[group] += task.resolved
    return {g: {"resolved": passed[g], "total": totals[g]} for g in sorted(totals)}


def _reconcile(published: files.Published, tasks: list[files.TaskResult]) -> list[str]:
    resolved = {t.task_id for t in tasks if t.resolved}
    unresolved = {t.task_id for t in tasks if not t.resolved}
    quirks = []
    if set(published.resolved) != resolved:
        quirks.append(
            f"results.json lists {len(published.resolved)} resolved tasks, "
            f"the task results {len(resolved)} (or other ones)"
        )
    if set(published.unresolved) != unresolved:
        quirks.append(
            f"results.json lists {len(published.unresolved)} unresolved tasks, "
            f"the task results {len(unresolved)} (or other ones)"
        )
    return quirks


def _attempt_quirks(tags: files.Tags, tasks: list[files.TaskResult]) -> list[str]:
    most = max((t.n_attempts or 0 for t in tasks), default=0)
    quirks = []
    if most > 1:
        quirks.append(f"resolved is best-of-N over up to {most} attempts, not pass@1")
    stated = tags.system.attempts if tags.system else None
    if stated is not None and str(stated).isdigit() and int(stated) < most:
        quirks.append(f"system.attempts says {stated} but tasks record up to {most} attempts")
    runs = sorted({m.group(0) for t in tasks for m in _DATE.finditer(t.best_experiment or "")})
    day = _eval_date(tags)
    if runs and day is not None and day.strftime("%Y%m%d") < runs[0]:
        quirks.append(f"eval_date {day.isoformat()} precedes the experiments it reports")
    return quirks


def _eval_date(tags: files.Tags) -> dt.date | None:
    if isinstance(tags.eval_date, dt.date):
        return tags.eval_date
    try:
        return dt.date.fromisoformat(tags.eval_date) if tags.eval_date else None
    except ValueError:
        return None


def _header(
    submission: Path,
    tags: files.Tags,
    metadata: files.Metadata | None,
    defaults: dict[str, Any],
    tasks: list[files.TaskResult],
    quirks: list[str],
) -> dict[str, Any]:
    models = [tags.model] if isinstance(tags.model, str) else list(tags.model or [])
    agent = (metadata.info.name if metadata else None) or tags.harness
    attempts = tags.system.attempts if tags.system else None
    config: dict[str, Any] = dict(defaults.get("config") or {})
    if attempts is not None:
        config["attempts"] = str(attempts)
    config["dataset_size"] = tags.dataset_size or len(tasks)
    day = _eval_date(tags)
    if tags.eval_date is not None and day is None:
        quirks.append(f"eval_date {tags.eval_date!r} is not a date")
    provenance: dict[str, Any] = {"submission": submission.name}
    for key in ("org", "scoring", "eval_environment", "harness", "langsmith_experiment"):
        value = getattr(tags, key)
        if value:
            provenance[key] = value
    if models:
        provenance["models"] = models
    if tags.eval_date is not None:
        provenance["eval_date"] = str(tags.eval_date)
    if tags.notes:
        provenance["notes"] = tags.notes.strip()[:TEXT_LIMIT]
    if quirks:
        provenance["quirks"] = quirks
    return {
        "run_key": submission.name,
        "benchmark": tags.benchmark or defaults.get("benchmark") or "terminal-bench",
        "agent": agent or defaults.get("agent") or "unknown",
        "provider": defaults.get("provider") or "",
        "model": "+".join(models) or defaults.get("model") or "unknown",
        "config": config,
        # The day the vendor says it evaluated: a real date, at day precision.
        "started_at": dt.datetime.combine(day, dt.time(), dt.UTC) if day else None,
        "status": "succeeded",
        "unit": "resolved_rate",
        "higher_is_better": True,
        "provenance": provenance,
    }
