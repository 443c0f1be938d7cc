"""SWE-bench harness log directories `logs/run_evaluation/<run_id>/<model>/<instance>/
report.json`: read by the run report beside their `logs/` when there is one, else a run of
their own claimed through the directory's first instance (by name)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchledger.adapters.formats.common import Owner, kept_read, subdirectory_names
from benchledger.adapters.formats.swebench_common import (
    UNKNOWN,
    UNKNOWN_BENCHMARK,
    cell,
    header,
    run_record,
)
from benchledger.adapters.formats.swebench_experiments import instance_reports
from benchledger.adapters.formats.swebench_harness import report_members
from benchledger.domain.records import RunRecord


def claiming_run_report(path: Path) -> Path | None:
    """The run report next to its `logs/` directory that reads this per-instance report."""
    parents = path.parents
    if len(parents) < 6 or parents[4].name != "logs":
        return None
    run_id, model_part = parents[2].name, parents[1].name
    report = parents[5] / f"{model_part}.{run_id}.json"
    if not report.is_file():
        return None
    # Asked for each of the run's instances: the report read and its logs listed once.
    members = kept_read("run report members", report, lambda: frozenset(report_members(report)))
    return report if path in members else None


def claimed_by_run_report(path: Path) -> bool:
    return claiming_run_report(path) is not None


def first_instance_report(model_dir: Path) -> Path | None:
    """The report of the instance first by name that has one (`*/report.json`). Asked
    for each of a directory's instances (is it the primary, whose is it): the directory
    is listed once per import, and reports are looked for in name order up to the first,
    where a glob per instance made N x N checks (minutes at 2,000 instances)."""
    for name in subdirectory_names(model_dir):
        report = model_dir / name / "report.json"
        if report.exists():
            return report
    return None


def is_primary_instance_report(path: Path) -> bool:
    """The first instance (by name) of a harness log directory claims the whole run."""
    parents = path.parents
    if len(parents) < 4 or parents[3].name != "run_evaluation":
        return False
    if claimed_by_run_report(path):
        return False
    first = first_instance_report(parents[1])
    return first is not None and path.parent.name == first.parent.name


def logs_owner(path: Path) -> Owner | None:
    """The run a per-instance report that does not claim it is part of: its run report's,
    else its log directory's (read through the directory's first instance)."""
    report = claiming_run_report(path)
    if report is not None:
        return Owner(report, "a harness run", report)
    model_dir = path.parents[1]
    first = first_instance_report(model_dir)
    if first is None or first.parent.name == path.parent.name:
        return None
    return Owner(first, "a harness run", model_dir)


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
    return run_record(header(path, fields, defaults, {"agent", "benchmark"}), cells)
