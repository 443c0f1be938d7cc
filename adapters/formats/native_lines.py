"""The JSONL form of the native format, read a line at a time.

Cell lines between two run lines are validated in bulk, a few thousand in one call;
any line the bulk call cannot take goes through the exact per-line path, so errors
name the same line and field as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO, Literal

from pydantic import Field, TypeAdapter, ValidationError

from benchledger.adapters.formats.common import loads
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell, RunHeader, RunRecord

# Cell lines validated in one call: large enough to amortise the call, small enough
# that a batch's lines and cells are a few MiB at most.
BULK = 2000


def strict_loads(name: str, text: str, line: int | None = None) -> Any:
    # Strict: a key stated twice is refused rather than the last one silently winning.
    return loads(name, text, line=line, unique_keys=True)


def field_error(
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
_SPACED_KEY_END = re.compile(r'"\s+:')


def _keys(cell: _CellLine) -> int:
    """How many keys the parsed cell holds, nested metrics included."""
    metrics = cell.metrics
    keys = len(cell.model_fields_set) + len(metrics)
    stack: list[Any] = [v for v in metrics.values() if isinstance(v, dict | list)]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            keys += len(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return keys


def _key_ends(text: str) -> int:
    """Every key's end, and possibly some text inside strings: never fewer than the keys."""
    if _SPACED_KEY_END.search(text):  # rare: count the key ends with spaces too
        return len(_KEY_END.findall(text))
    return text.count('":')


def _no_repeated_key(line: str, cell: _CellLine) -> bool:
    """True when the line states no key twice: as many key ends as the cell has keys (a
    one-pass parse keeps the last of repeated keys, so a repeat leaves fewer keys)."""
    return _key_ends(line) == _keys(cell)


_CELL_LINES = TypeAdapter(list[_CellLine])
# Ends a batch of cell lines. A guess: a line it misses fails the bulk call and takes
# the per-line path, a cell line it catches takes the per-line path; only time is lost.
_RUN_LINE = re.compile(r'"type"\s*:\s*"run"')
# Line breaks str.splitlines() knows besides \n.
_OTHER_BREAK = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def decoded_lines(name: str, f: BinaryIO) -> Iterator[str]:
    """The file's lines as str.splitlines() gives them when the file is read whole."""
    offset = 0
    for raw in f:
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            where = offset + e.start
            raise InputFormatError(name, f"not UTF-8 text ({e.reason} at byte {where})") from None
        offset += len(raw)
        body = line[:-1] if line.endswith("\n") else line
        if _OTHER_BREAK.search(body):
            yield from body.splitlines()
        else:
            yield body


class _Lines:
    """A run being read: its header and the cells read so far."""

    def __init__(self, name: str, defaults: dict[str, Any]) -> None:
        self.name = name
        self.defaults = defaults
        self.header: RunHeader | None = None
        self.cells: list[Cell] = []

    def batch(self, lines: list[tuple[int, str]]) -> Iterator[RunRecord]:
        text = "[" + ",".join(line for _, line in lines) + "]"
        try:
            cells = _CELL_LINES.validate_json(text)
        except ValidationError:
            cells = []
        # Each line has at least as many key ends as its cell has keys, so equal sums
        # mean no line repeats a key.
        if len(cells) == len(lines) and _key_ends(text) == sum(map(_keys, cells)):
            self.cells.extend(cells)
            return
        for lineno, line in lines:
            yield from self.line(lineno, line)

    def line(self, lineno: int, line: str) -> Iterator[RunRecord]:
        name = self.name
        if self.header is not None:
            try:
                cell = _CellLine.model_validate_json(line)
            except ValidationError:
                pass  # a run line, a blank line or a bad cell: the slow path says which
            else:
                if _no_repeated_key(line, cell):
                    self.cells.append(cell)
                    return
        if not line.strip():
            return
        obj = strict_loads(name, line, lineno)
        if not isinstance(obj, dict):
            raise InputFormatError(name, "expected a JSON object", line=lineno)
        kind = obj.pop("type", None)
        if kind == "cell":
            if self.header is None:
                raise InputFormatError(
                    name, "a cell line comes before any run line", line=lineno, field="type"
                )
            try:
                self.cells.append(Cell.model_validate(obj))
            except ValidationError as e:
                raise field_error(name, e, line=lineno) from None
        elif kind == "run":
            if self.header is not None:
                yield self.record()
            obj.pop("schema", None)
            try:
                self.header = RunHeader.model_validate({**self.defaults, **obj})
            except ValidationError as e:
                raise field_error(name, e, line=lineno) from None
            self.cells = []
        else:
            raise InputFormatError(
                name, f"must be 'run' or 'cell', not {kind!r}", line=lineno, field="type"
            )

    def record(self) -> RunRecord:
        assert self.header is not None
        return RunRecord(header=self.header, cells=tuple(self.cells))


def parse_lines(name: str, lines: Iterable[str], defaults: dict[str, Any]) -> Iterator[RunRecord]:
    """The runs of a JSONL file given as its lines, each yielded once its cells are read."""
    run = _Lines(name, defaults)
    pending: list[tuple[int, str]] = []
    for lineno, line in enumerate(lines, start=1):
        if run.header is not None and not _RUN_LINE.search(line):
            pending.append((lineno, line))
            if len(pending) >= BULK:
                yield from run.batch(pending)
                pending = []
            continue
        if pending:
            yield from run.batch(pending)
            pending = []
        yield from run.line(lineno, line)
    if pending:
        yield from run.batch(pending)
    if run.header is None:
        raise InputFormatError(name, "no run line found (an empty file?)")
    yield run.record()
