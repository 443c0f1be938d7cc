"""lm-eval per-sample logs (`--log_samples`) as cells of their task's run.

lm-eval writes `<dir>/results_<ts>.json` and, next to it, one
`samples_<task>_<ts>.jsonl` per task (same `<ts>`); older custom writers put the
same lines inline under the results file's `samples` key.

A cell is one line: one document under one filter. Its key is the `doc_id`, with
"/<filter>" when the task logged several filters and "#<n>" for a repeated key.
Its score is the line's value of the headline metric; it passed when that value
gives any credit (> 0; for a lower-is-better metric, only a perfect 0). A line whose
value is not finite failed; one whose value is not a number (corpus-level metrics
such as F1 log [gold, prediction] pairs) has no verdict of its own: skipped.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from benchledger.adapters.formats.common import DistinctKeys, loads, read_bytes
from benchledger.adapters.formats.lm_eval_document import (
    field_error,
    json_safe,
    number,
)
from benchledger.adapters.formats.lm_eval_metrics import Headline
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell, CellOutcome

TIMESTAMP = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"
# lm-eval ≥0.4.2 names results `results_<ts>.json`; some callers add a prefix before it.
RESULTS_NAME = re.compile(rf"^results_(?:.*_)?(?P<ts>{TIMESTAMP})\.json$")


class SampleLine(BaseModel):
    """The fields of a sample line the ledger reads; the rest (doc, prompts) is left alone."""

    model_config = ConfigDict(extra="allow")

    doc_id: StrictInt | Annotated[str, Field(min_length=1)]
    filter: str | None = None
    metrics: list[Any] | None = None
    doc_hash: str | None = None
    prompt_hash: str | None = None
    target_hash: str | None = None


def sample_files(results: Path) -> dict[str, Path]:
    """Task name -> its samples file, by lm-eval's own naming."""
    match = RESULTS_NAME.match(results.name)
    if not match:
        return {}
    suffix = f"_{match['ts']}.jsonl"
    try:
        children = sorted(results.parent.iterdir())
    except OSError:
        return {}
    found = {}
    for child in children:
        name = child.name
        if name.startswith("samples_") and name.endswith(suffix) and child.is_file():
            task = name[len("samples_") : -len(suffix)]
            if task:
                found[task] = child
    return found


def read_lines(path: Path) -> list[SampleLine]:
    name = str(path)
    try:
        text = read_bytes(path).decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputFormatError(name, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    lines = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        obj = loads(name, line, line=lineno)
        lines.append(validate_line(name, obj, line=lineno))
    return lines


def validate_line(name: str, obj: Any, *, line: int | None, field: str = "") -> SampleLine:
    if not isinstance(obj, dict):
        raise InputFormatError(name, "expected a JSON object", line=line, field=field or None)
    try:
        return SampleLine.model_validate(obj)
    except ValidationError as e:
        error = field_error(name, e, line=line)
        where = f"{field}.{error.field}" if field and error.field else field or error.field
        raise InputFormatError(name, error.message, line=line, field=where) from None


def cells(lines: Sequence[SampleLine], head: Headline | None, names: list[str]) -> list[Cell]:
    several_filters = len({line.filter for line in lines}) > 1
    keys = DistinctKeys()
    out = []
    for line in lines:
        base = f"{line.doc_id}/{line.filter or 'none'}" if several_filters else str(line.doc_id)
        key = keys.key(base)
        extra = line.model_extra or {}
        logged = [m for m in line.metrics or () if isinstance(m, str)]
        metrics: dict[str, Any] = {
            m: json_safe(extra[m]) for m in dict.fromkeys([*names, *logged]) if m in extra
        }
        if line.filter is not None:
            metrics["filter"] = line.filter
        if line.doc_hash is not None:
            metrics["doc_hash"] = line.doc_hash
        value = _value(extra.get(head.metric)) if head else None
        outcome = _outcome(value, head.higher_is_better if head else True)
        score = value if value is not None and math.isfinite(value) else None
        out.append(Cell(key=key, outcome=outcome, score=score, metrics=metrics))
    return out


def _value(raw: Any) -> float | None:
    return float(raw) if isinstance(raw, bool) else number(raw)


def _outcome(value: float | None, higher_is_better: bool) -> CellOutcome:
    if value is None:
        return "skipped"
    if not math.isfinite(value):
        return "failed"
    passed = value > 0 if higher_is_better else value <= 0
    return "passed" if passed else "failed"


def task_hash(lines: Sequence[SampleLine]) -> str | None:
    """What lm-eval records as `task_hashes[task]`: sha256 over the lines' three hashes."""
    parts = []
    for line in lines:
        if line.doc_hash is None or line.prompt_hash is None or line.target_hash is None:
            return None
        parts.append(line.doc_hash + line.prompt_hash + line.target_hash)
    return hashlib.sha256("".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def headline_lines(lines: Sequence[SampleLine], head: Headline) -> list[SampleLine]:
    """The lines scored under the headline's filter (all lines when none is logged)."""
    return [line for line in lines if line.filter in (None, head.filter)]


def mean_of(lines: Sequence[SampleLine], metric: str) -> float | None:
    """The per-sample mean of a metric, when every line has a finite number for it."""
    values = [_value((line.model_extra or {}).get(metric)) for line in lines]
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite or len(finite) != len(values):
        return None
    mean = sum(finite) / len(finite)
    return mean if math.isfinite(mean) else None
