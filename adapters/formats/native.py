"""benchledger's own result format: one run as JSON, or runs and cells as JSONL.

See docs/native-format.md. JSON: one object, the run header's fields plus an
optional "cells" array. JSONL: one object per line; a line with
"type": "run" opens a run (header fields), each "type": "cell" line after it
is one of its cells.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from benchledger.adapters.formats.common import loads
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell, RunHeader, RunRecord

NAME = "native"
SYSTEM = "native"
SCHEMA_ID = "benchledger/run@1"
SUFFIXES = (".json", ".jsonl", ".ndjson")


def detect(path: Path, head: bytes) -> bool:
    if path.suffix.lower() not in SUFFIXES:
        return False
    text = head.lstrip()
    if path.suffix.lower() == ".json":
        return SCHEMA_ID.encode() in head
    return text.startswith(b"{") and b'"type"' in text.split(b"\n", 1)[0]


def parse(path: Path, data: bytes, defaults: dict[str, Any] | None = None) -> Iterator[RunRecord]:
    """Runs in the file; `defaults` fill header fields the file leaves out (the runner
    knows benchmark, agent, provider and model of what it executed)."""
    name = str(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputFormatError(name, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    if path.suffix.lower() == ".json":
        yield _parse_json(name, text, defaults or {})
    else:
        yield from _parse_jsonl(name, text, defaults or {})


def _loads(name: str, text: str, line: int | None = None) -> Any:
    # Strict: a key stated twice is refused rather than the last one silently winning.
    return loads(name, text, line=line, unique_keys=True)


def _field_error(
    name: str, error: ValidationError, *, line: int | None, prefix: str = ""
) -> InputFormatError:
    first = error.errors()[0]
    loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"]).lstrip(".")
    field = f"{prefix}{loc}" if loc else prefix.rstrip(".") or None
    return InputFormatError(name, first["msg"], line=line, field=field)


class _CellLine(Cell):
    """A JSONL cell line, validated in one pass; its `type` tag is never stored."""

    type: Literal["cell"] = Field(exclude=True)


# Ends every key, and possibly some text inside strings: never fewer than the keys.
_KEY_END = re.compile(r'"\s*:')


def _no_repeated_key(line: str, cell: _CellLine) -> bool:
    """True when the line states no key twice: as many key ends as the cell has keys (a
    one-pass parse keeps the last of repeated keys, so a repeat leaves fewer keys)."""
    keys = len(cell.model_fields_set) + len(cell.metrics)
    stack: list[Any] = [v for v in cell.metrics.values() if isinstance(v, dict | list)]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            keys += len(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return len(_KEY_END.findall(line)) == keys


def _parse_json(name: str, text: str, defaults: dict[str, Any]) -> RunRecord:
    document = _loads(name, text)
    if not isinstance(document, dict):
        raise InputFormatError(name, "expected a JSON object (one run)")
    document.pop("schema", None)
    raw_cells = document.pop("cells", [])
    if not isinstance(raw_cells, list):
        raise InputFormatError(name, "must be an array", field="cells")
    try:
        header = RunHeader.model_validate({**defaults, **document})
    except ValidationError as e:
        raise _field_error(name, e, line=None) from None
    cells = []
    for i, raw in enumerate(raw_cells):
        try:
            cells.append(Cell.model_validate(raw))
        except ValidationError as e:
            raise _field_error(name, e, line=None, prefix=f"cells[{i}].") from None
    return RunRecord(header=header, cells=tuple(cells))


def _parse_jsonl(name: str, text: str, defaults: dict[str, Any]) -> Iterator[RunRecord]:
    header: RunHeader | None = None
    cells: list[Cell] = []
    validate_cell = Cell.model_validate
    validate_cell_line = _CellLine.model_validate_json
    for lineno, line in enumerate(text.splitlines(), start=1):
        if header is not None:
            try:
                cell = validate_cell_line(line)
            except ValidationError:
                pass  # a run line, a blank line or a bad cell: the slow path says which
            else:
                if _no_repeated_key(line, cell):
                    cells.append(cell)
                    continue
        if not line.strip():
            continue
        obj = _loads(name, line, lineno)
        if not isinstance(obj, dict):
            raise InputFormatError(name, "expected a JSON object", line=lineno)
        kind = obj.pop("type", None)
        if kind == "cell":
            if header is None:
                raise InputFormatError(
                    name, "a cell line comes before any run line", line=lineno, field="type"
                )
            try:
                cells.append(validate_cell(obj))
            except ValidationError as e:
                raise _field_error(name, e, line=lineno) from None
        elif kind == "run":
            if header is not None:
                yield RunRecord(header=header, cells=tuple(cells))
            obj.pop("schema", None)
            try:
                header = RunHeader.model_validate({**defaults, **obj})
            except ValidationError as e:
                raise _field_error(name, e, line=lineno) from None
            cells = []
        else:
            raise InputFormatError(
                name, f"must be 'run' or 'cell', not {kind!r}", line=lineno, field="type"
            )
    if header is None:
        raise InputFormatError(name, "no run line found (an empty file?)")
    yield RunRecord(header=header, cells=tuple(cells))


def json_schema() -> dict[str, Any]:
    """The JSON Schema of one native run document (the .json form)."""
    header = RunHeader.model_json_schema()
    cell = Cell.model_json_schema()
    defs = {**header.pop("$defs", {}), **cell.pop("$defs", {}), "Cell": cell}
    header["properties"]["schema"] = {"const": SCHEMA_ID}
    header["properties"]["cells"] = {"type": "array", "items": {"$ref": "#/$defs/Cell"}}
    header["$defs"] = defs
    header["$id"] = SCHEMA_ID
    header["title"] = "benchledger run"
    return header


def dump_jsonl(records: list[RunRecord]) -> str:
    """Write runs in the JSONL form (used by the demo and by tests)."""
    lines = []
    for record in records:
        head = {"type": "run", **record.header.model_dump(mode="json", exclude_none=True)}
        lines.append(json.dumps(head, sort_keys=True))
        for cell in record.cells:
            body = {"type": "cell", **cell.model_dump(mode="json", exclude_defaults=True)}
            body.setdefault("outcome", cell.outcome)
            lines.append(json.dumps(body, sort_keys=True))
    return "\n".join(lines) + "\n"
