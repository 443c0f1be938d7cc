"""SWE-bench evaluation reports: `run_evaluation` run reports `<model>.<run_id>.json`,
sb-cli reports `<subset>__<split>__<run_id>.json`, and harness log directories
`logs/run_evaluation/<run_id>/<model>/<instance>/report.json` standing alone."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

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
    validate,
)
from benchledger.adapters.formats.swebench_experiments import instance_reports
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


def _names(path: Path, sb_cli: bool) -> tuple[str, str, dict[str, Any]]:
    """Run key, the model the filename names (if any), and the filename's parts."""
    stem = path.name.removesuffix(".json")
    if sb_cli:
        parts = stem.split("__", 2)
        if len(parts) == 3 and all(parts):
            subset, split, run_id = parts
            return (
                f"sb-cli/{subset}/{split}/{run_id}",
                UNKNOWN,
                {
                    "subset": subset,
                    "split": split,
                    "run_id": run_id,
                },
            )
        return f"sb-cli/{stem}", UNKNOWN, {"run_id": stem}
    model_part, dot, run_id = stem.rpartition(".")
    if not dot or not model_part or not run_id:
        return f"harness/{stem}", UNKNOWN, {"run_id": stem}
    return f"harness/{run_id}/{model_part}", model_part.replace("__", "/"), {"run_id": run_id}


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
    model_part, _, run_id = path.name.removesuffix(".json").rpartition(".")
    if not model_part or not run_id:
        return []
    return sorted(logs_dir(path, run_id, model_part).glob("*/report.json"))


def parse_report(path: Path, defaults: Mapping[str, Any] | None, document: Any) -> RunRecord:
    sb_cli = isinstance(document, dict) and is_sb_cli(document)
    report = validate(RunReport, document, path)
    run_key, model, names = _names(path, sb_cli)
    quirks: list[str] = []
    reports: dict[str, tuple[bool, dict[str, Any]]] = {}
    if not sb_cli and "." in path.stem:
        model_part, _, run_id = path.stem.rpartition(".")
        reports = instance_reports(logs_dir(path, run_id, model_part))
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
    if model == UNKNOWN:
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
    return RunRecord(header=header(path, fields, defaults, unstated), cells=tuple(cells))


def claimed_by_run_report(path: Path) -> bool:
    """A per-instance report the run report next to its `logs/` directory reads."""
    parents = path.parents
    if len(parents) < 6 or parents[4].name != "logs":
        return False
    run_id, model_part = parents[2].name, parents[1].name
    return (parents[5] / f"{model_part}.{run_id}.json").is_file()


def is_primary_instance_report(path: Path) -> bool:
    """The first instance (by name) of a harness log directory claims the whole run."""
    parents = path.parents
    if len(parents) < 4 or parents[3].name != "run_evaluation":
        return False
    if claimed_by_run_report(path):
        return False
    first = min((p.parent.name for p in parents[1].glob("*/report.json")), default=None)
    return path.parent.name == first


def logs_members(path: Path) -> list[Path]:
    return sorted(p for p in path.parents[1].glob("*/report.json") if p != path)


def parse_logs(path: Path, defaults: Mapping[str, Any] | None) -> RunRecord:
    model_dir = path.parents[1]
    run_id, model_part = model_dir.parent.name, model_dir.name
    reports = instance_reports(model_dir)
    cells = []
    for instance_id, (resolved, metrics) in sorted(reports.items()):
        cells.append(cell(instance_id, "passed" if resolved else "failed", metrics))
    resolved_count = sum(1 for c in cells if c.outcome == "passed")
    quirks = [
        "no run report: the split is unknown and the score counts only the "
        f"{len(cells)} instances with a report",
        "the logs name no agent",
    ]
    fields = {
        "run_key": f"harness/{run_id}/{model_part}",
        "benchmark": UNKNOWN_BENCHMARK,
        "agent": UNKNOWN,
        "model": model_part.replace("__", "/"),
        "score": resolved_count / len(cells) if cells else None,
        "metrics": {"resolved_instances": resolved_count, "instance_reports": len(cells)},
        "provenance": {"layout": "harness_logs", "run_id": run_id, "quirks": quirks},
    }
    return RunRecord(
        header=header(path, fields, defaults, {"agent", "benchmark"}), cells=tuple(cells)
    )
