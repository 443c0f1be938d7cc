"""The SWE-bench site's data files: `leaderboards.json` (one run per board row, keyed
by board and experiments folder; per-instance cells where the row has them) and
`info_for_leaderboard.json` (per-instance results keyed by a short model alias)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from benchledger.adapters.formats.swebench_common import (
    SIZES,
    SPLITS,
    UNKNOWN,
    UNKNOWN_BENCHMARK,
    Count,
    FiniteFloat,
    Strict,
    attempts,
    cell,
    denominator_quirk,
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

INFO_FILE = "info_for_leaderboard.json"
MINI_SWE_AGENT = "mini-swe-agent"
Percent = Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)]


class Detail(Strict):
    resolved: bool
    cost: FiniteFloat | None = None
    api_calls: Count | FiniteFloat | None = None


class Row(Strict):
    name: str
    folder: Annotated[str, Field(min_length=1)]
    resolved: Percent
    date: str | None = None
    tags: list[str] = []
    cost: FiniteFloat | None = None
    instance_cost: FiniteFloat | None = None
    instance_calls: FiniteFloat | None = None
    per_instance_details: dict[str, Detail] | None = None
    mini_swe_agent_version: str | None = Field(default=None, alias="mini-swe-agent_version")


class Board(Strict):
    name: Annotated[str, Field(min_length=1)]
    results: list[Row]


class Leaderboards(Strict):
    leaderboards: list[Board]


def _cells(details: Mapping[str, Detail]) -> list[Cell]:
    cells = []
    for instance_id, detail in sorted(details.items()):
        metrics = {"cost": detail.cost, "api_calls": detail.api_calls}
        metrics = {k: v for k, v in metrics.items() if v is not None}
        cells.append(cell(instance_id, "passed" if detail.resolved else "failed", metrics))
    return cells


def _tags(tags: list[str]) -> dict[str, list[str]]:
    """'Model: x' / 'Org: y' / 'System: Attempts - 1' tags by kind, in file order."""
    kinds: dict[str, list[str]] = {}
    for tag in tags:
        kind, colon, value = tag.partition(":")
        key = kind.strip().lower() if colon else "other"
        kinds.setdefault(key, []).append(value.strip() if colon else tag)
    return kinds


def _filled(row: Row) -> list[str]:
    """The provenance keys the row leaves to the importer: its tags, when it has none
    (the older schema), and its logs and trajectories where it states only that it has
    them (`true`, the older schema's flag), where a newer one states where they are."""
    filled = [] if "tags" in row.model_fields_set else ["provenance.tags"]
    flags = row.model_extra or {}
    return filled + [f"provenance.{key}" for key in ("logs", "trajs") if flags.get(key) is True]


def _row(board: str, row: Row, path: Path, defaults: Mapping[str, Any] | None) -> RunRecord:
    split = split_of(board.lower())
    slug = re.sub(r"[^a-z0-9]+", "_", board.lower()).strip("_")
    benchmark, size = SPLITS[split] if split else (f"swe_bench_{slug}", None)
    quirks: list[str] = [] if split else [f"board '{board}' names no known split"]
    kinds = _tags(row.tags)
    models = [m for m in kinds.get("model", []) if m]
    system, named_model = split_name(row.name)
    agent = MINI_SWE_AGENT if row.mini_swe_agent_version else system
    if models:
        model = "+".join(models)
    elif named_model:
        model = named_model
        quirks.append("model taken from the row's name (it has no Model tag)")
    else:
        model = UNKNOWN
        quirks.append("the row names no model")
    config: dict[str, Any] = {}
    for value in kinds.get("system", []):
        label, _, rest = value.partition(" - ")
        if label.strip().lower() == "attempts" and (n := attempts(rest)) is not None:
            config["attempts"] = n
    metrics: dict[str, Any] = {"published_resolved_pct": row.resolved, "instances": size}
    for key in ("cost", "instance_cost", "instance_calls"):
        if getattr(row, key) is not None:
            metrics[key] = getattr(row, key)
    cells = _cells(row.per_instance_details or {})
    mismatch = None
    if cells:
        resolved = sum(1 for c in cells if c.outcome == "passed")
        metrics["resolved_instances"] = resolved
        metrics["recomputed_resolved_rate"] = resolved / (size or len(cells))
        mismatch = reconcile(row.resolved, resolved, len(cells), size)
        if size and len(cells) != size:
            quirks.append(f"per-instance details cover {len(cells)} of {size} instances")
    if size and (found := denominator_quirk(row.resolved, size)):
        quirks.append(found)
    provenance: dict[str, Any] = {
        **(row.model_extra or {}),
        "layout": "leaderboard",
        "board": board,
        "folder": row.folder,
        "name": row.name,
        "date": row.date,
        "tags": row.tags,
    }
    if models:
        provenance["models"] = models
    if row.mini_swe_agent_version:
        provenance["mini_swe_agent_version"] = row.mini_swe_agent_version
    if quirks:
        provenance["quirks"] = quirks
    if mismatch:
        provenance["mismatch"] = {"per_instance_details": mismatch}
    fields = {
        "run_key": f"leaderboard/{split or slug}/{row.folder}",
        "benchmark": benchmark,
        "agent": agent,
        "model": model,
        "config": config,
        "score": round(row.resolved / 100, 8),  # 74.4 / 100 is 0.7440000000000001
        "metrics": metrics,
        "provenance": jsonable(provenance),
    }
    # A model read out of the row's name is the importer's: the row has no Model tag.
    named = ["model"] if not models and named_model else []
    return run_record(header(path, fields, defaults), cells, *named, *_filled(row))


def parse_leaderboards(
    path: Path, document: Any, defaults: Mapping[str, Any] | None
) -> Iterator[RunRecord]:
    data = validate(Leaderboards, document, path)
    for b, board in enumerate(data.leaderboards):
        seen: set[str] = set()
        for r, row in enumerate(board.results):
            if row.folder in seen:
                raise InputFormatError(
                    str(path),
                    f"'{row.folder}' appears twice on board '{board.name}'",
                    field=f"leaderboards[{b}].results[{r}].folder",
                )
            seen.add(row.folder)
            yield _row(board.name, row, path, defaults)


def parse_info(
    path: Path, document: Any, defaults: Mapping[str, Any] | None
) -> Iterator[RunRecord]:
    if not isinstance(document, dict) or not document:
        raise InputFormatError(str(path), "expected an object of model aliases")
    for alias, raw in document.items():
        if not isinstance(raw, dict):
            raise InputFormatError(str(path), "expected an object of instances", field=alias)
        details = {
            iid: validate(Detail, value, path, prefix=f"{alias}.{iid}")
            for iid, value in raw.items()
        }
        cells = _cells(details)
        resolved = sum(1 for c in cells if c.outcome == "passed")
        benchmark = SIZES.get(len(cells), UNKNOWN_BENCHMARK)
        quirks = [
            f"benchmark inferred from its {len(cells)} instances (the file names none)",
            "agent assumed: the site uses this file for bash-only (mini-swe-agent) entries",
            "model is the site's short alias",
        ]
        fields = {
            "run_key": f"info_for_leaderboard/{alias}",
            "benchmark": benchmark,
            "agent": MINI_SWE_AGENT,
            "model": alias or UNKNOWN,
            "score": resolved / len(cells) if cells else None,
            "metrics": {"resolved_instances": resolved, "instances": len(cells)},
            "provenance": {"layout": "leaderboard_info", "alias": alias, "quirks": quirks},
        }
        unstated = {"agent", "benchmark"}
        yield run_record(header(path, fields, defaults, unstated), cells)
