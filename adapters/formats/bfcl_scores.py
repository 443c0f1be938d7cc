"""BFCL per-category score files: `BFCL_v<N>_<category>_score.json`, JSON Lines.

Line 1 is the category's summary (`accuracy`, `correct_count`, `total_count`, and for
format sensitivity its spread and per-configuration tallies); every other line is one
test entry that failed. `bfcl evaluate` writes the file to
`<score dir>/<model>/<group>/` (v4: group `non_live`, `live`, `multi_turn`, `agentic`,
`format_sensitivity`; memory under `agentic/memory/<backend>/`) or to
`<score dir>/<model>/` (v2, v3).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchledger.adapters.formats.bfcl_common import UNKNOWN, header, identity, sorted_json
from benchledger.adapters.formats.common import DistinctKeys, loads
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell, CellOutcome, RunRecord

FILE_NAME = re.compile(r"\ABFCL_(v\d+)_(\w+)_score\.json\Z")
GROUPS = frozenset({"non_live", "live", "multi_turn", "agentic", "format_sensitivity"})
SUMMARY = ("accuracy", "correct_count", "total_count")
# Keys an entry states that the run already holds (or that become the cell's own fields).
IDENTITY_KEYS = frozenset({"id", "model_name", "test_category", "valid"})


def claims(path: Path, head: bytes) -> bool:
    """By name alone: the name is BFCL's, so a damaged score file is refused, not passed
    over as some other format's."""
    return FILE_NAME.match(path.name) is not None


def parse(path: Path, data: bytes, defaults: Mapping[str, Any]) -> RunRecord:
    match = FILE_NAME.match(path.name)
    if match is None:
        raise InputFormatError(str(path), "not a BFCL score file (BFCL_v<N>_<category>_score.json)")
    version, category = match.groups()
    name = str(path)
    lines = _lines(name, data)
    if not lines:
        raise InputFormatError(name, "empty: expected the summary line", line=1)
    number, summary = lines[0]
    summary_fields = _summary(name, number, summary)
    model_dir, group, score_dir = _layout(path)
    model, quirks = _model(model_dir, [entry for _, entry in lines[1:]], defaults)
    keys = DistinctKeys()
    cells: list[Cell] = []
    others: dict[str, set[str]] = {"test_category": set(), "model_name": set()}
    stated = {"test_category": category, "model_name": model}
    for number, entry in lines[1:]:
        cells.append(_cell(name, number, entry, keys, stated))
        for key, expected in stated.items():
            value = entry.get(key)
            if key in entry and value != expected:
                others[key].add(str(value))
    failed = sum(1 for c in cells if c.outcome == "failed")
    accuracy, correct, total = (summary_fields[k] for k in SUMMARY)
    quirks += _checks(accuracy, correct, total, failed, cells, keys, others, category, model)
    extras = {k: sorted_json(v) for k, v in summary.items() if k not in SUMMARY}
    provenance: dict[str, Any] = {
        "layout": "score_file",
        "file": path.name,
        "version": version,
        "category": category,
        "group": group,
        "score_dir": score_dir,
        "cells": "failed entries only: the passing cases are not listed in the file",
        "failed_listed": failed,
        "passed_not_listed": correct,
    }
    if any(type(entry.get("id")) is int for _, entry in lines[1:]):
        # Before January 2025 (gorilla #893) BFCL wrote an entry's position, from 1.
        provenance["ids"] = "positions in the category's dataset, counted from 1"
    if quirks:
        provenance["quirks"] = quirks
    fields = identity(model, defaults)
    fields["config"]["version"] = version
    fields.update(
        run_key=f"{score_dir}/{model}/BFCL_{version}_{category}",
        benchmark=f"bfcl_{category}",
        score=accuracy,
        # The summary's own keys win over the two this importer adds (both are in the
        # provenance too), so nothing the file states is overwritten.
        metrics={"category": category, "failed_listed": failed, **summary_fields, **extras},
        provenance=provenance,
    )
    return RunRecord(header=header(path, fields), cells=tuple(cells))


def _lines(name: str, data: bytes) -> list[tuple[int, dict[str, Any]]]:
    """The file's JSON objects with their line numbers (blank lines carry nothing)."""
    out: list[tuple[int, dict[str, Any]]] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        value = loads(name, raw, line=number)
        if not isinstance(value, dict):
            what = "the summary object" if not out else "a test entry object"
            raise InputFormatError(name, f"expected {what}", line=number)
        out.append((number, value))
    return out


def _summary(name: str, number: int, summary: dict[str, Any]) -> dict[str, Any]:
    if number != 1:
        raise InputFormatError(name, "expected the summary object on the first line", line=1)
    if "accuracy" not in summary:
        raise InputFormatError(name, "missing (the summary line)", line=1, field="accuracy")
    accuracy = summary["accuracy"]
    if type(accuracy) not in (int, float) or not math.isfinite(accuracy):
        raise InputFormatError(name, "expected a finite number", line=1, field="accuracy")
    out: dict[str, Any] = {"accuracy": float(accuracy)}
    for key in ("correct_count", "total_count"):
        if key not in summary:
            raise InputFormatError(name, "missing (the summary line)", line=1, field=key)
        value = summary[key]
        if type(value) is not int or value < 0:
            raise InputFormatError(name, "expected a count (an integer >= 0)", line=1, field=key)
        out[key] = value
    return out


def _model(
    model_dir: str, entries: list[dict[str, Any]], defaults: Mapping[str, Any]
) -> tuple[str, list[str]]:
    """The model directory's name; without one (a file at the top of a file system), the
    entries' `model_name`, else the caller's model."""
    if model_dir:
        return model_dir, []
    named = next((e["model_name"] for e in entries if isinstance(e.get("model_name"), str)), "")
    model = named or defaults.get("model") or UNKNOWN
    source = "the entries' model_name" if named else "not stated"
    return model, [f"no model directory: the model is {source}"]


def _layout(path: Path) -> tuple[str, str | None, str]:
    """(model directory, group directory, score directory) of a score file."""
    parent = Path(os.path.abspath(path)).parent  # as laid out: symbolic links not followed
    group: str | None = None
    if parent.parent.name == "memory" and parent.parent.parent.name == "agentic":
        group, model_dir = f"agentic/memory/{parent.name}", parent.parent.parent.parent
    elif parent.name in GROUPS:
        group, model_dir = parent.name, parent.parent
    else:
        model_dir = parent
    return model_dir.name, group, model_dir.parent.name


def _cell(
    name: str,
    number: int,
    entry: dict[str, Any],
    keys: DistinctKeys,
    stated_elsewhere: dict[str, str],
) -> Cell:
    """The entry's cell: its verdict and every other field it states; `test_category`
    and `model_name` only where they differ from the run's (`stated_elsewhere`)."""
    ident = entry.get("id")
    if "id" not in entry:
        raise InputFormatError(name, "missing (every test entry has one)", line=number, field="id")
    if isinstance(ident, bool) or not isinstance(ident, str | int) or ident == "":
        raise InputFormatError(name, "expected a test entry id", line=number, field="id")
    valid = entry.get("valid", False)
    if not isinstance(valid, bool):
        raise InputFormatError(name, "expected true or false", line=number, field="valid")
    error = entry.get("error")
    metrics: dict[str, Any] = {}
    error_type = entry.get("error_type")
    if error_type is None and isinstance(error, dict):
        error_type = error.get("error_type")  # agentic and multi-turn nest it in the error
    if error_type is not None:
        metrics["error_type"] = error_type
    if "error" in entry:
        metrics["error"] = sorted_json(error)
    # Everything else the entry states is kept: the prompt, the model's raw and decoded
    # output, the expected answers, an inference log (within the limits every import
    # reads under: a string past them refuses the file, naming the field).
    for key, value in entry.items():
        if key not in IDENTITY_KEYS and key not in ("error", "error_type"):
            metrics[key] = sorted_json(value)
    for key, expected in stated_elsewhere.items():
        if key in entry and entry[key] != expected:
            metrics[key] = sorted_json(entry[key])
    outcome: CellOutcome = "passed" if valid else "failed"
    return Cell(
        key=keys.key(str(ident)),
        outcome=outcome,
        score=1.0 if valid else 0.0,
        metrics=metrics,
    )


def _checks(
    accuracy: float,
    correct: int,
    total: int,
    failed: int,
    cells: list[Cell],
    keys: DistinctKeys,
    others: dict[str, set[str]],
    category: str,
    model: str,
) -> list[str]:
    """What the file states that does not add up; flagged, never "fixed"."""
    quirks = []
    if total and abs(accuracy - correct / total) > 1e-9:
        quirks.append(f"accuracy {accuracy} is not correct_count / total_count")
    if correct > total:
        quirks.append(f"correct_count {correct} exceeds total_count {total}")
    elif failed != total - correct:
        quirks.append(
            f"{failed} failed entries listed, but total_count - correct_count is {total - correct}"
        )
    if len(cells) != failed:
        quirks.append(f"{len(cells) - failed} listed entries say valid: true")
    if keys.repeated():
        quirks.append(f"{keys.repeated()} entry ids listed more than once (kept as id#2, ...)")
    if others["test_category"]:
        stated = ", ".join(sorted(others["test_category"]))
        quirks.append(f"entries name test_category {stated}, the file name {category}")
    if others["model_name"]:
        stated = ", ".join(sorted(others["model_name"]))
        quirks.append(f"entries name model_name {stated}, the directory {model}")
    return quirks
