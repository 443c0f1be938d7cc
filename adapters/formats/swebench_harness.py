"""SWE-bench evaluation reports: `run_evaluation` run reports `<model>.<run_id>.json`,
and sb-cli reports `<subset>__<split>__<run_id>.json` (log directories standing alone:
`swebench_logs`).

A run report's name joins the model (`/` written `__`) and the run id with a dot, and
either may hold dots (`claude-haiku-4.5.eval.2025.06.json`), so the name is never split.
The model is the report's own `model_name_or_path` (or `model`) when it has one; the
harness writes none, so else it is read from the log directory beside the report, whose
path `logs/run_evaluation/<run_id>/<model>/` holds the two apart. With neither, the model
is unknown (a caller's `model` fills it), the run is keyed by the whole name, and a quirk
says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchledger.adapters.formats.common import read_json
from benchledger.adapters.formats.swebench_common import (
    BENCHMARK_SIZES,
    SIZES,
    UNKNOWN,
    UNKNOWN_BENCHMARK,
    Count,
    Strict,
    cell,
    header,
    jsonable,
    run_record,
    validate,
)
from benchledger.adapters.formats.swebench_experiments import instance_reports
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell, CellOutcome, RunRecord

# A report's id lists, most telling first: an instance in two lists takes the first.
ID_LISTS: tuple[tuple[str, CellOutcome, str | None], ...] = (
    ("resolved_ids", "passed", None),
    ("unresolved_ids", "failed", None),
    ("error_ids", "error", None),
    ("failed_ids", "error", "evaluation_failed"),
    ("empty_patch_ids", "failed", "empty_patch"),
    ("pending_ids", "skipped", "pending"),
    ("incomplete_ids", "skipped", "incomplete"),
    ("submitted_ids", "skipped", "submitted"),
    ("completed_ids", "skipped", "completed"),
)
COUNTS = (
    "total_instances",
    "submitted_instances",
    "completed_instances",
    "resolved_instances",
    "unresolved_instances",
    "empty_patch_instances",
    "error_instances",
    "pending_instances",
    "failed_instances",
)


class RunReport(Strict):
    total_instances: Count
    resolved_instances: Count
    submitted_instances: Count | None = None
    completed_instances: Count | None = None
    unresolved_instances: Count | None = None
    empty_patch_instances: Count | None = None
    error_instances: Count | None = None
    pending_instances: Count | None = None
    failed_instances: Count | None = None
    resolved_ids: list[str] = []
    unresolved_ids: list[str] = []
    error_ids: list[str] = []
    failed_ids: list[str] = []
    empty_patch_ids: list[str] = []
    pending_ids: list[str] = []
    incomplete_ids: list[str] = []
    submitted_ids: list[str] = []
    completed_ids: list[str] = []
    schema_version: int | None = None


def is_sb_cli(document: Mapping[str, Any]) -> bool:
    return "pending_instances" in document or "failed_instances" in document


def _sb_cli_names(path: Path) -> tuple[str, dict[str, Any]]:
    """Run key and the filename's parts: `<subset>__<split>__<run_id>` (no part holds `__`)."""
    stem = path.name.removesuffix(".json")
    parts = stem.split("__", 2)
    if len(parts) == 3 and all(parts):
        subset, split, run_id = parts
        return f"sb-cli/{subset}/{split}/{run_id}", {
            "subset": subset,
            "split": split,
            "run_id": run_id,
        }
    return f"sb-cli/{stem}", {"run_id": stem}


def stated_model(document: Any) -> str | None:
    """The model a run report names itself, if it does (the harness's own reports do not)."""
    if not isinstance(document, Mapping):
        return None
    for key in ("model_name_or_path", "model"):
        value = document.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def log_pairs(path: Path) -> list[tuple[str, str]]:
    """(model directory, run id) of each harness log directory beside a run report whose
    two names, joined as the harness joins them, are the report's name."""
    stem = path.name.removesuffix(".json")
    runs = path.parent / "logs" / "run_evaluation"
    return sorted(
        (model.name, model.parent.name)
        for model in runs.glob("*/*")
        if model.is_dir() and f"{model.name}.{model.parent.name}" == stem
    )


def split_name(
    path: Path, document: Any, quirks: list[str] | None = None
) -> tuple[str | None, str | None, str | None]:
    """(model, model directory, run id) of a run report, from what states them; a part
    nothing states is None, and `quirks` says why."""
    stem = path.name.removesuffix(".json")
    notes = quirks if quirks is not None else []
    model = stated_model(document)
    if model is not None:
        prefix = model.replace("/", "__") + "."
        if stem.startswith(prefix) and len(stem) > len(prefix):
            return model, prefix[:-1], stem[len(prefix) :]
        notes.append(
            f"the file name '{stem}' does not start with the report's model '{model}': "
            "the run id is unknown"
        )
        return model, None, None
    pairs = log_pairs(path)
    if len(pairs) == 1:
        [(model_dir, run_id)] = pairs
        return model_dir.replace("__", "/"), model_dir, run_id
    why = (
        f"{len(pairs)} log directories pair with it"
        if pairs
        else "no log directory beside it pairs with it"
    )
    notes.append(
        f"the report names no model and {why}: its name '{stem}' is <model>.<run_id>, "
        "and either may hold dots, so it is not split; the model is unknown"
    )
    return None, None, None


def _benchmark(names: dict[str, Any], total: int, quirks: list[str]) -> str:
    subset = str(names.get("subset", "")).lower().replace("-", "_")
    if subset:
        benchmark = {"swe_bench_m": "swe_bench_multimodal"}.get(subset, subset)
        benchmark += "_dev" if names.get("split") == "dev" else ""
        if BENCHMARK_SIZES.get(benchmark, total) != total:
            quirks.append(f"{benchmark} has {BENCHMARK_SIZES[benchmark]} instances, not {total}")
        return benchmark
    if total in SIZES:
        quirks.append(f"benchmark inferred from total_instances = {total} (the report names none)")
        return SIZES[total]
    quirks.append(f"benchmark unknown: total_instances = {total} names no known split")
    return UNKNOWN_BENCHMARK


def logs_dir(path: Path, run_id: str, model_part: str) -> Path:
    """Where `run_evaluation` wrote the per-instance reports of a run report's run."""
    return path.parent / "logs" / "run_evaluation" / run_id / model_part


def report_members(path: Path) -> list[Path]:
    try:
        document = read_json(path)
    except InputFormatError:
        return []  # parse says what is wrong, naming the file and field
    if isinstance(document, Mapping) and is_sb_cli(document):
        return []
    _, model_dir, run_id = split_name(path, document)
    if model_dir is None or run_id is None:
        return []
    return sorted(logs_dir(path, run_id, model_dir).glob("*/report.json"))


def parse_report(path: Path, defaults: Mapping[str, Any] | None, document: Any) -> RunRecord:
    sb_cli = isinstance(document, dict) and is_sb_cli(document)
    report = validate(RunReport, document, path)
    quirks: list[str] = []
    reports: dict[str, tuple[bool, dict[str, Any]]] = {}
    model: str = UNKNOWN
    if sb_cli:
        run_key, names = _sb_cli_names(path)
    else:
        stated, model_dir, run_id = split_name(path, document, quirks)
        model = stated or UNKNOWN
        stem = path.name.removesuffix(".json")
        if model_dir is not None and run_id is not None:
            run_key, names = f"harness/{run_id}/{model_dir}", {"run_id": run_id}
            reports = instance_reports(logs_dir(path, run_id, model_dir))
        else:
            run_key, names = f"harness/{stem}", {"report_name": stem}
    outcome: dict[str, tuple[CellOutcome, str | None]] = {}
    for key, state, status in reversed(ID_LISTS):
        outcome.update(dict.fromkeys(getattr(report, key), (state, status)))
    cells: list[Cell] = []
    disagree: list[str] = []
    for instance_id in sorted(outcome):
        state, status = outcome[instance_id]
        metrics = dict(reports[instance_id][1]) if instance_id in reports else {}
        if status is not None:
            metrics["status"] = status
        if instance_id in reports and reports[instance_id][0] != (state == "passed"):
            disagree.append(instance_id)
            metrics["report_resolved"] = reports[instance_id][0]
        cells.append(cell(instance_id, state, metrics))
    metrics_out = {k: getattr(report, k) for k in COUNTS if getattr(report, k) is not None}
    # What newer harnesses state beyond these (infra_failure_ids, failure_reasons, ...):
    # kept as stated, under their own names.
    for key, value in sorted((report.model_extra or {}).items()):
        metrics_out.setdefault(key, jsonable(value))
    if report.submitted_instances:
        metrics_out["resolved_rate_of_submitted"] = (
            report.resolved_instances / report.submitted_instances
        )
    mismatch: dict[str, Any] = {}
    counted = sum(1 for c in cells if c.outcome == "passed")
    if counted != report.resolved_instances:
        mismatch["resolved_ids"] = {
            "resolved_instances": report.resolved_instances,
            "listed": counted,
        }
    if disagree:
        mismatch["instance_reports"] = disagree
    if (
        report.submitted_instances is not None
        and report.submitted_instances < report.total_instances
    ):
        quirks.append(
            f"partial run: {report.submitted_instances} of {report.total_instances} submitted"
        )
    if report.pending_instances:
        quirks.append(f"{report.pending_instances} instances were still pending")
    benchmark = _benchmark(names, report.total_instances, quirks)
    if model == UNKNOWN and sb_cli:
        quirks.append("the report names no model")
    quirks.append("the report names no agent")
    provenance: dict[str, Any] = {"layout": "sb_cli" if sb_cli else "harness", **names}
    if report.schema_version is not None:
        provenance["schema_version"] = report.schema_version
    if reports:
        provenance["instance_reports"] = len(reports)
    provenance["quirks"] = quirks
    if mismatch:
        provenance["mismatch"] = mismatch
    fields = {
        "run_key": run_key,
        "benchmark": benchmark,
        "agent": UNKNOWN,
        "model": model,
        "score": report.resolved_instances / report.total_instances
        if report.total_instances
        else None,
        "metrics": metrics_out,
        "provenance": jsonable(provenance),
    }
    unstated = {"agent", "benchmark"} | ({"model"} if model == UNKNOWN else set())
    return run_record(header(path, fields, defaults, unstated), cells)
