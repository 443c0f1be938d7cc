"""SWE-bench experiments submissions: `evaluation/<split>/<folder>/` holding
`results/results.json` (the primary file), `metadata.yaml` and per-instance
`logs/<instance_id>/report.json`. The folder name is the run key."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchledger.adapters.formats import yaml_bounded
from benchledger.adapters.formats.common import read_json
from benchledger.adapters.formats.swebench_common import (
    INSTANCE_ID,
    SPLITS,
    UNKNOWN,
    UNKNOWN_BENCHMARK,
    Count,
    FiniteFloat,
    Strict,
    attempts,
    cell,
    duplicates,
    header,
    jsonable,
    reconcile,
    run_record,
    split_name,
    split_of,
    validate,
)
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell, RunRecord

METADATA_NAMES = ("metadata.yaml", "metadata.yml")


class Results(Strict):
    resolved: list[str]
    no_generation: list[str] = []
    no_logs: list[str] = []
    total_instances: Count | None = None
    total_in_dataset: Count | None = None
    not_resolved: list[str] | Count | None = None  # ids, or (older writers) a count
    resolve_rate: FiniteFloat | None = None


class Info(Strict):
    name: str


class Tags(Strict):
    model: list[str] | str | None = None
    org: list[str] | str | None = None
    system: dict[str, Any] | None = None
    checked: bool | str | None = None
    os_model: bool | None = None
    os_system: bool | None = None


class Metadata(Strict):
    name: str | None = None  # the 2024 schema: name, oss, site, verified
    info: Info | None = None
    tags: Tags | None = None


class TestLists(Strict):
    success: list[str] = []
    failure: list[str] = []


class InstanceReport(Strict):
    resolved: bool
    patch_is_None: bool | None = None
    patch_exists: bool | None = None
    patch_successfully_applied: bool | None = None
    tests_status: dict[str, TestLists] | None = None


def claims(path: Path, head: bytes) -> bool:
    """A results.json of a SWE-bench submission (not another benchmark's same layout)."""
    if INSTANCE_ID.search(head):
        return True
    return b"[]" in head and split_of(path.parent.parent.parent.name) is not None


def instance_report(path: Path) -> tuple[str, bool, dict[str, Any]]:
    """One harness `report.json`: instance id, resolved, and its patch and test counts."""
    document = read_json(path)
    if not isinstance(document, dict) or len(document) != 1:
        raise InputFormatError(str(path), "expected one object keyed by the instance id")
    [(instance_id, body)] = document.items()
    report = validate(InstanceReport, body, path, prefix=instance_id)
    metrics: dict[str, Any] = {}
    if report.patch_exists is not None:
        metrics["patch_exists"] = report.patch_exists
    if report.patch_successfully_applied is not None:
        metrics["patch_applied"] = report.patch_successfully_applied
    for kind, lists in sorted((report.tests_status or {}).items()):
        if kind in ("FAIL_TO_PASS", "PASS_TO_PASS") or lists.success or lists.failure:
            metrics[f"{kind.lower()}_success"] = len(lists.success)
            metrics[f"{kind.lower()}_failure"] = len(lists.failure)
    return instance_id, report.resolved, metrics


def instance_reports(directory: Path) -> dict[str, tuple[bool, dict[str, Any]]]:
    """Every `<instance>/report.json` under `directory`, by instance id."""
    reports: dict[str, tuple[bool, dict[str, Any]]] = {}
    for path in sorted(directory.glob("*/report.json")):
        instance_id, resolved, metrics = instance_report(path)
        if instance_id != path.parent.name:
            metrics["directory"] = path.parent.name
        reports[instance_id] = (resolved, metrics)
    return reports


def members(path: Path) -> list[Path]:
    folder = path.parent.parent
    found = [folder / name for name in METADATA_NAMES if (folder / name).is_file()]
    found += [p for p in path.parent.iterdir() if p.is_file() and p != path]
    found += sorted((folder / "logs").glob("*/report.json"))
    return found


def _metadata(folder: Path) -> tuple[Metadata | None, Path | None]:
    for name in METADATA_NAMES:
        path = folder / name
        if path.is_file():
            document = yaml_bounded.load(path)
            return validate(Metadata, jsonable(document), path), path
    return None, None


def _evaluated(results_dir: Path) -> int | None:
    """Instances evaluated, when resolved_by_repo.json gives counts (not id lists)."""
    path = results_dir / "resolved_by_repo.json"
    if not path.is_file():
        return None
    document = read_json(path)
    if not isinstance(document, dict) or not document:
        return None
    totals = [v.get("total") if isinstance(v, dict) else None for v in document.values()]
    if all(isinstance(t, int) and not isinstance(t, bool) for t in totals):
        return sum(t for t in totals if isinstance(t, int))
    return None


def _who(
    meta: Metadata | None, meta_path: Path | None, quirks: list[str]
) -> tuple[str, str, dict[str, Any]]:
    """Agent, model and the provenance fields metadata.yaml gives."""
    if meta is None or meta_path is None:
        quirks.append("no metadata.yaml: agent and model are unknown")
        return UNKNOWN, UNKNOWN, {}
    name = meta.info.name if meta.info else meta.name
    if not name:
        raise InputFormatError(str(meta_path), "is required", field="info.name")
    tags = meta.tags or Tags()
    models = [tags.model] if isinstance(tags.model, str) else list(tags.model or [])
    models = [m for m in (m.strip() for m in models) if m]
    system, named_model = split_name(name)
    if models:
        model = "+".join(models)
    elif named_model:
        model = named_model
        quirks.append("model taken from the submission name (metadata.yaml names none)")
    else:
        model = UNKNOWN
        quirks.append("metadata.yaml names no model")
    prov: dict[str, Any] = {"name": name}
    prov.update((meta.info.model_extra or {}) if meta.info else {})
    prov.update(meta.model_extra or {})
    if models:
        prov["models"] = models
    for key in ("org", "checked", "os_model", "os_system", "system"):
        if (value := getattr(tags, key)) is not None:
            prov[key] = value
    return system, model, prov


def _cells(
    results: Results, reports: dict[str, tuple[bool, dict[str, Any]]], quirks: list[str]
) -> tuple[list[Cell], int, list[str]]:
    """One cell per instance any list or report names; resolved count; report disagreements."""
    unresolved = results.not_resolved if isinstance(results.not_resolved, list) else []
    status = dict.fromkeys(unresolved, "not_resolved")
    status.update(dict.fromkeys(results.no_logs, "no_logs"))
    status.update(dict.fromkeys(results.no_generation, "no_generation"))
    status.update(dict.fromkeys(results.resolved, "resolved"))
    listed = [*unresolved, *results.no_logs, *results.no_generation, *results.resolved]
    if dup := duplicates(listed):
        quirks.append(f"listed twice (resolved wins): {', '.join(dup)}")
    disagree = sorted(i for i, (ok, _) in reports.items() if ok != (status.get(i) == "resolved"))
    cells: list[Cell] = []
    for instance_id in sorted(status.keys() | reports.keys()):
        metrics = dict(reports[instance_id][1]) if instance_id in reports else {}
        state = status.get(instance_id, "unresolved")
        if state in ("no_logs", "no_generation"):
            metrics["status"] = state
        if instance_id in disagree:
            metrics["report_resolved"] = reports[instance_id][0]
        cells.append(cell(instance_id, "passed" if state == "resolved" else "failed", metrics))
    resolved = sum(1 for c in cells if c.outcome == "passed")
    return cells, resolved, disagree


def _metrics(
    results: Results, cells: list[Cell], size: int | None, evaluated: int | None
) -> dict[str, Any]:
    by_status = [c.metrics.get("status") for c in cells]
    metrics: dict[str, Any] = {
        "resolved": sum(1 for c in cells if c.outcome == "passed"),
        "no_generation": by_status.count("no_generation"),
        "no_logs": by_status.count("no_logs"),
        "instances": size,
        "instances_listed": len(cells),
    }
    for key, value in sorted((results.model_extra or {}).items()):
        if isinstance(value, list):
            metrics[key] = len(value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            metrics[key] = jsonable(value)
    for key in ("total_instances", "total_in_dataset", "not_resolved", "resolve_rate"):
        if (value := getattr(results, key)) is not None:
            metrics[key] = len(value) if isinstance(value, list) else value
    if evaluated is not None:
        metrics["instances_evaluated"] = evaluated
    return metrics


def _submission_date(folder: str) -> str | None:
    """The YYYYMMDD stamp of a folder name: a date, not a time, so never started_at."""
    if stamp := re.search(r"(?:^|_)(\d{8})_", folder):
        try:
            return dt.datetime.strptime(stamp[1], "%Y%m%d").date().isoformat()
        except ValueError:
            return None
    return None


def parse(path: Path, data: bytes, defaults: Mapping[str, Any] | None) -> RunRecord:
    folder_dir = path.parent.parent
    folder, _, version = folder_dir.name.partition("@")
    split_dir = folder_dir.parent.name
    split = split_of(split_dir)
    results = validate(Results, read_json(path, data), path)
    meta, meta_path = _metadata(folder_dir)
    reports = instance_reports(folder_dir / "logs")
    quirks: list[str] = []
    agent, model, who = _who(meta, meta_path, quirks)
    cells, resolved, disagree = _cells(results, reports, quirks)
    size = SPLITS[split][1] if split else results.total_in_dataset
    if split is None:
        quirks.append(f"split unknown: parent directory '{split_dir}'")
    evaluated = results.total_instances or _evaluated(path.parent)
    if size and evaluated is not None and evaluated < size:
        quirks.append(f"partial run: {evaluated} of {size} instances evaluated")
    elif size and len(cells) < size:
        quirks.append(
            f"{size - len(cells)} of {size} instances are in no list and have no report "
            "(counted as unresolved)"
        )
    provenance: dict[str, Any] = {"layout": "experiments", "split": split_dir, "folder": folder}
    if version:
        provenance["folder_version"] = version
    if date := _submission_date(folder):
        provenance["submission_date"] = date
    provenance.update(who)
    provenance["instance_reports"] = len(reports)
    mismatch: dict[str, Any] = {}
    if disagree:
        mismatch["instance_reports"] = disagree
    rate = results.resolve_rate
    if rate is not None and size and (found := reconcile(rate, resolved, len(cells), size)):
        mismatch["resolve_rate"] = found
    if quirks:
        provenance["quirks"] = quirks
    if mismatch:
        provenance["mismatch"] = mismatch
    tried = attempts(((meta.tags.system or {}) if meta and meta.tags else {}).get("attempts"))
    fields = {
        "run_key": f"{split or split_dir}/{folder}",
        "benchmark": SPLITS[split][0] if split else UNKNOWN_BENCHMARK,
        "agent": agent,
        "model": model,
        "config": {} if tried is None else {"attempts": tried},
        "score": resolved / size if size else None,
        "metrics": _metrics(results, cells, size, evaluated),
        "provenance": jsonable(provenance),
    }
    unstated = {"agent", "model"} if meta is None else set()
    # A model read out of the submission's name is the importer's: its tags name none.
    named = meta is not None and "models" not in who
    return run_record(header(path, fields, defaults, unstated), cells, *(["model"] * named))
