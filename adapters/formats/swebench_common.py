"""Shared pieces of the SWE-bench layouts: splits, validation, names, reconciliation."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell, CellOutcome, RunHeader, RunRecord

UNIT = "resolved_rate"
UNKNOWN = "unknown"
UNKNOWN_BENCHMARK = "swe_bench_unknown"

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0)]

# Experiments split directory -> (benchmark id, instances in the split).
SPLITS: dict[str, tuple[str, int]] = {
    "verified": ("swe_bench_verified", 500),
    "bash-only": ("swe_bench_verified", 500),  # the bash-only board runs on Verified
    "lite": ("swe_bench_lite", 300),
    "test": ("swe_bench", 2294),
    "multimodal": ("swe_bench_multimodal", 517),
    "multilingual": ("swe_bench_multilingual", 300),
}
# Dataset sizes a harness report's `total_instances` can name (it names no dataset).
SIZES: dict[int, str] = {
    2294: "swe_bench",
    225: "swe_bench_dev",
    300: "swe_bench_lite",
    23: "swe_bench_lite_dev",
    500: "swe_bench_verified",
    517: "swe_bench_multimodal",
}
BENCHMARK_SIZES: dict[str, int] = {name: size for size, name in SIZES.items()}

# owner__repo-123: every SWE-bench instance id has this shape.
INSTANCE_ID = re.compile(rb'"[A-Za-z0-9_.-]+__[A-Za-z0-9_.-]+-\d+"')

Model = TypeVar("Model", bound=BaseModel)


class Strict(BaseModel):
    """A source document's shape: strict types, unknown keys kept (writers add keys)."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)


def validate(model: type[Model], value: Any, path: Path, prefix: str = "") -> Model:
    """`value` as `model`; a mismatch names the file and the first bad field."""
    try:
        return model.model_validate(value)
    except ValidationError as e:
        first = e.errors()[0]
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
        field = (prefix + loc).lstrip(".") or None
        raise InputFormatError(str(path), first["msg"], field=field) from None


def jsonable(value: Any) -> Any:
    """A value made JSON-safe (YAML dates become ISO strings) with its keys sorted, so a
    source that only reorders its keys states the same record."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    return str(value)


def split_name(name: str) -> tuple[str, str | None]:
    """'SWE-agent + Claude 3.5 Sonnet' -> ('SWE-agent', 'Claude 3.5 Sonnet'): system and
    model, split at the first ' + ' outside parentheses; (name, None) when there is none."""
    depth = 0
    for i, char in enumerate(name):
        depth += char == "("
        depth -= char == ")"
        if depth == 0 and name.startswith(" + ", i):
            system, model = name[:i].strip(), name[i + 3 :].strip()
            if system and model:
                return system, model
    return name.strip() or UNKNOWN, None


def attempts(value: Any) -> int | str | None:
    """Attempts as the source states them: '1' and 1 are the same, 'best-of-3' stays text."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    return int(text) if text.isdigit() else text or None


def split_of(directory: str) -> str | None:
    """The split a submission's parent directory names ('verified', 'verified_old', ...)."""
    if directory in SPLITS:
        return directory
    head = re.split(r"[_@.]", directory, maxsplit=1)[0]
    return head if head in SPLITS else None


def pct(count: int, total: int) -> float:
    return round(100.0 * count / total, 2)


def denominator_quirk(published: float, size: int) -> str | None:
    """Why a published percentage is no whole number of `size` instances, if it is not."""
    if pct(round(published * size / 100), size) == published:
        return None
    for other in (size - 1, size + 1):
        count = round(published * other / 100)
        if pct(count, other) == published:
            return f"published {published}% is {count}/{other}, not a count of {size}"
    return f"published {published}% is no whole number of {size} instances"


def reconcile(
    published: float, resolved: int, cells: int, size: int | None
) -> dict[str, Any] | None:
    """The disagreement between a published % and the per-instance results, if any."""
    total = size or cells
    if total <= 0 or pct(resolved, total) == published:
        return None
    mismatch: dict[str, Any] = {
        "published_pct": published,
        "recomputed_pct": pct(resolved, total),
        "resolved_cells": resolved,
        "cells": cells,
        "denominator": total,
    }
    for other in (total - 1, cells):
        if 0 < other != total and pct(resolved, other) == published:
            mismatch["published_matches_denominator"] = other
            break
    return mismatch


def cell(key: str, outcome: CellOutcome, metrics: dict[str, Any] | None = None) -> Cell:
    """An instance's cell, clustered on its repository: instances of one repository
    share its code base and test suite, so their results are not independent."""
    score = {"passed": 1.0, "failed": 0.0}.get(outcome)
    return Cell(
        key=key, outcome=outcome, score=score, metrics=metrics or {}, cluster=repository(key)
    )


# `owner__repo-number`, as SWE-bench names its instances (`django__django-11099`).
INSTANCE_REPOSITORY = re.compile(r"^(?P<owner>[^_\s/]+(?:_[^_\s/]+)*)__(?P<repo>[^\s/]+)-[0-9]+$")


def repository(instance_id: str) -> str | None:
    """`owner/repo` of a SWE-bench instance id; None for an id of another shape."""
    match = INSTANCE_REPOSITORY.match(instance_id)
    return f"{match['owner']}/{match['repo']}" if match else None


def duplicates(ids: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    dup: set[str] = set()
    for item in ids:
        (dup if item in seen else seen).add(item)
    return sorted(dup)


def header(
    path: Path,
    fields: dict[str, Any],
    defaults: Mapping[str, Any] | None,
    unstated: Iterable[str] = (),
) -> RunHeader:
    """A finished run's header; `defaults` (what the runner knew) fill the fields the
    source does not state, and always the provider, which no SWE-bench file names."""
    filled = {"status": "succeeded", "unit": UNIT, "higher_is_better": True, **fields}
    for key in {"provider", *unstated} & set(defaults or {}):
        if key in ("benchmark", "agent", "provider", "model", "config"):
            filled[key] = (defaults or {})[key]
    return validate(RunHeader, filled, path)


# What the importers fill in where a file names no benchmark, agent or model.
FILLERS = {"benchmark": UNKNOWN_BENCHMARK, "agent": UNKNOWN, "model": UNKNOWN}


def run_record(run: RunHeader, cells: Iterable[Cell], *filled: str) -> RunRecord:
    """The run's record, its placeholders marked: the header fields still holding what the
    importer filled in (a runner's `--model` may have replaced it), and the provenance keys
    in `filled` (`provenance.tags`) that it filled where the file is silent."""
    marked = [name for name, filler in FILLERS.items() if getattr(run, name) == filler]
    return RunRecord(header=run, cells=tuple(cells), placeholders=(*marked, *filled))
