"""benchledger's own result format: one run as JSON, or runs and cells as JSONL.

See docs/native-format.md. JSON: one object, the run header's fields plus an
optional "cells" array and an optional "turns" array (its trajectory: one model
call each). JSONL: one object per line; a line with "type": "run" opens a run
(header fields), each "type": "cell" or "type": "turn" line after it is one of its
cells or turns.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchledger.adapters.formats.common import open_regular, read_bytes, refuse_nul
from benchledger.adapters.formats.kept import check_cells
from benchledger.adapters.formats.native_common import field_error, strict_loads
from benchledger.adapters.formats.native_lines import decoded_blocks, parse_lines
from benchledger.adapters.formats.native_turns import NativeTurn, RunTurns, native_fields
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell, RunHeader, RunRecord

NAME = "native"
SYSTEM = "native"
SCHEMA_ID = "benchledger/run@1"
SUFFIXES = (".json", ".jsonl", ".ndjson")
# `stream` checks its records' cells against the limits itself (most by their text).
STREAM_CHECKS_CELLS = True


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
    refuse_nul(name, data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputFormatError(name, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    if path.suffix.lower() == ".json":
        yield _parse_json(name, text, defaults or {})
    else:
        yield from parse_lines(name, [text.splitlines()], defaults or {})


def _parse_json(name: str, text: str, defaults: dict[str, Any]) -> RunRecord:
    document = strict_loads(name, text)
    if not isinstance(document, dict):
        raise InputFormatError(name, "expected a JSON object (one run)")
    document.pop("schema", None)
    raw_cells = document.pop("cells", [])
    if not isinstance(raw_cells, list):
        raise InputFormatError(name, "must be an array", field="cells")
    raw_turns = document.pop("turns", [])
    if not isinstance(raw_turns, list):
        raise InputFormatError(name, "must be an array", field="turns")
    try:
        header = RunHeader.model_validate({**defaults, **document})
    except ValidationError as e:
        raise field_error(name, e, line=None) from None
    cells = []
    for i, raw in enumerate(raw_cells):
        try:
            cells.append(Cell.model_validate(raw))
        except ValidationError as e:
            raise field_error(name, e, line=None, prefix=f"cells[{i}].") from None
    turns = RunTurns(name)
    for i, raw in enumerate(raw_turns):
        turns.add(raw, prefix=f"turns[{i}].")
    return RunRecord(header=header, cells=tuple(cells), turns=turns.turns)


def stream(path: Path, defaults: dict[str, Any] | None = None) -> Iterator[RunRecord]:
    """`parse`, reading a JSONL file a line at a time: memory holds one run, not the file."""
    if path.suffix.lower() == ".json":
        for record in parse(path, read_bytes(path), defaults):
            check_cells(str(path), record, 0)
            yield record
        return
    with open_regular(path) as f:
        yield from parse_lines(str(path), decoded_blocks(str(path), f), defaults or {})


def json_schema() -> dict[str, Any]:
    """The JSON Schema of one native run document (the .json form)."""
    header = RunHeader.model_json_schema()
    cell = Cell.model_json_schema()
    turn = NativeTurn.model_json_schema()
    defs = {**header.pop("$defs", {}), **cell.pop("$defs", {}), "Cell": cell, "Turn": turn}
    header["properties"]["schema"] = {"const": SCHEMA_ID}
    header["properties"]["cells"] = {"type": "array", "items": {"$ref": "#/$defs/Cell"}}
    header["properties"]["turns"] = {
        "type": "array",
        "items": {"$ref": "#/$defs/Turn"},
        "description": "the run's trajectory: one model call each",
    }
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
        for turn in record.turns:
            lines.append(json.dumps({"type": "turn", **native_fields(turn)}, sort_keys=True))
    return "\n".join(lines) + "\n"
