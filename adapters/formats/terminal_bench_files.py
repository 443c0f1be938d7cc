"""The files of a Terminal-Bench submission directory, read and validated.

`results/detailed_results.json` (one object per task) is required; `metadata.yaml`,
`results/results.json` and the two `results_by_*.json` tallies are read when present.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchledger.adapters.formats import yaml_bounded
from benchledger.adapters.formats.common import read_json
from benchledger.domain.errors import InputFormatError

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0)]
Text = Annotated[str, Field(min_length=1)]
TALLIES = ("results_by_difficulty.json", "results_by_category.json")

Model = TypeVar("Model", bound=BaseModel)


class _Shape(BaseModel):
    # Strict types, unknown keys tolerated: the vendor adds keys (failure_reason came later).
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class TaskResult(_Shape):
    task_id: Text
    resolved: bool
    test_pass: FiniteFloat | None = None
    solution_judge: FiniteFloat | None = None
    n_attempts: Count | None = None
    difficulty: str | None = None
    category: str | None = None
    best_experiment: str | None = None
    session_url: str | None = None
    failure_reason: str | None = None


class Info(_Shape):
    name: str | None = None
    site: str | None = None


class System(_Shape):
    attempts: str | int | None = None


class Tags(_Shape):
    model: list[str] | str | None = None
    org: str | None = None
    system: System | None = None
    benchmark: str | None = None
    # Written as a string ("89") by this vendor; a YAML integer is the same statement.
    dataset_size: Annotated[int, Field(ge=1, strict=False)] | None = None
    eval_date: dt.date | str | None = None
    eval_environment: str | None = None
    scoring: str | None = None
    harness: str | None = None
    langsmith_experiment: str | None = None
    notes: str | None = None


class Metadata(_Shape):
    info: Info = Info()
    tags: Tags = Tags()


class Published(_Shape):
    resolved: list[str]
    unresolved: list[str] = []


class Tally(_Shape):
    resolved: Count
    total: Count


def validate(model: type[Model], value: Any, path: Path, prefix: str = "") -> Model:
    """`value` as `model`; a mismatch names the file and the first bad field."""
    try:
        return model.model_validate(value)
    except ValidationError as e:
        first = e.errors()[0]
        loc = "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}"
            for p in _in(value, first["loc"], first["type"] == "missing")
        )
        field = f"{prefix}{loc}".lstrip(".") or None
        raise InputFormatError(str(path), first["msg"], field=field) from None


def _in(value: Any, loc: tuple[int | str, ...], missing: bool) -> list[int | str]:
    """The part of an error location that exists in the document (not union-member names)."""
    found: list[int | str] = []
    for part in loc:
        in_dict = isinstance(value, dict) and part in value
        in_list = isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value)
        if in_dict or in_list:
            value = value[part]
        else:
            if missing and part == loc[-1]:
                found.append(part)  # the missing key itself
            break
        found.append(part)
    return found


def read_tasks(path: Path, data: bytes) -> list[TaskResult]:
    document = read_json(path, data)
    if not isinstance(document, list):
        raise InputFormatError(str(path), "expected a list of task results")
    tasks = [validate(TaskResult, item, path, prefix=f"[{i}]") for i, item in enumerate(document)]
    seen: set[str] = set()
    for i, task in enumerate(tasks):
        if task.task_id in seen:
            raise InputFormatError(
                str(path), f"task {task.task_id!r} appears twice", field=f"[{i}].task_id"
            )
        seen.add(task.task_id)
    return tasks


def read_metadata(path: Path) -> Metadata | None:
    if not path.is_file():
        return None
    document = yaml_bounded.load(path)
    if not isinstance(document, dict):
        raise InputFormatError(str(path), "expected a mapping with info and tags")
    return validate(Metadata, document, path)


def read_published(path: Path) -> Published | None:
    return validate(Published, read_json(path), path) if path.is_file() else None


def read_tally(path: Path) -> dict[str, Tally] | None:
    if not path.is_file():
        return None
    document = read_json(path)
    if not isinstance(document, dict):
        raise InputFormatError(str(path), "expected an object of {resolved, total} tallies")
    return {str(k): validate(Tally, v, path, prefix=str(k)) for k, v in document.items()}
