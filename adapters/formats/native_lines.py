"""The JSONL form of the native format, read a line at a time.

Cell lines between two run lines are validated in bulk, a few thousand in one call,
into rows (`native_cells`); any line the bulk call cannot take goes through the exact
per-line path, so errors name the same line and field as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import repeat
from typing import Any, BinaryIO

from pydantic import ValidationError

from benchledger.adapters.formats import kept
from benchledger.adapters.formats.limits import current
from benchledger.adapters.formats.native_cells import row_of, untagged, validators
from benchledger.adapters.formats.native_common import field_error, strict_loads
from benchledger.adapters.formats.native_turns import RunTurns
from benchledger.domain.cells import CellRows, Row
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell, RunHeader, RunRecord

# Cell lines validated in one call: large enough to amortise the call, small enough
# that a batch's lines and cells are a few MiB at most.
BULK = 2000


# Ends every key, and possibly some text inside strings: never fewer than the keys.
_KEY_END = re.compile(r'"\s*:')
_SPACED_KEY_END = re.compile(r'"\s+:')


def _keys(row: Row) -> int:
    """How many keys the line of `row` states (its row holds those), nested metrics
    included."""
    metrics = row.get("metrics") or {}
    keys = len(row) + len(metrics)
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
    ends = text.count('":')
    # Every colon right after a quote (most texts: colons only end keys) leaves no room
    # for a key end with spaces; else the regex looks for them, and they are counted.
    if text.count(":") != ends and _SPACED_KEY_END.search(text):
        return len(_KEY_END.findall(text))
    return ends


def _as_many_key_ends(text: str, keys: int) -> bool:
    """Whether `text` has no more key ends than `keys`, the keys parsed from it (so none
    of its objects repeats a key). Every key end is followed by a colon: when there are
    no more colons than keys (no string holds one), one count in C says so."""
    return text.count(":") == keys or _key_ends(text) == keys


def _no_repeated_key(line: str, row: Row) -> bool:
    """True when the line states no key twice: as many key ends as its row has keys (a
    one-pass parse keeps the last of repeated keys, so a repeat leaves fewer keys)."""
    return _key_ends(line) == _keys(row)


_METRICS = repeat("metrics")


def _flat_keys(text: str, rows: list[Row]) -> int | None:
    """How many keys the rows of `text` (their lines as one JSON array) hold, counted
    without walking them when no row nests an object or array in its metrics; None when
    one may. Each container opens with a `{` or `[` (strings may hold more), and the
    text holds at least its array, the rows and their non-empty metrics: as many
    brackets as that proves there is nothing more."""
    metrics = list(filter(None, map(dict.get, rows, _METRICS)))
    containers = 1 + len(rows) + len(metrics)
    if text.count("{") + text.count("[") != containers:
        return None
    return sum(map(len, rows)) + sum(map(len, metrics))


# Ends a batch of cell lines. A guess: a line it misses fails the bulk call and takes
# the per-line path, a cell line it catches takes the per-line path; only time is lost.
_RUN_LINE = re.compile(r'"type"\s*:\s*"run"')
# May be a turn line: taken out of a batch of cell lines when it is one.
_TURN_LINE = re.compile(r'"type"\s*:\s*"turn"')
# Line breaks str.splitlines() knows besides \n.
_OTHER_BREAK = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_ASCII_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e"


# Bytes read at a time: a block of whole lines is decoded and split in one call each.
BLOCK = 1 << 20


def decoded_blocks(name: str, f: BinaryIO) -> Iterator[list[str]]:
    """The file's lines as str.splitlines() gives them when the file is read whole, in
    blocks: each block of whole lines is decoded and split in one call (a block ends at
    a newline, so no character and no line break is cut in two)."""
    offset = 0  # of the first byte not yet decoded
    carry: list[bytes] = []  # the start of a line that has not ended yet
    while True:
        chunk = f.read(BLOCK)
        if not chunk:
            break
        end = chunk.rfind(b"\n")
        if end < 0:  # a line longer than a block: keep reading it
            carry.append(chunk)
            continue
        block = b"".join([*carry, chunk[: end + 1]])
        carry = [chunk[end + 1 :]]
        yield _split(name, block, offset)
        offset += len(block)
    rest = b"".join(carry)
    if rest:
        yield _split(name, rest, offset)


def _split(name: str, block: bytes, offset: int) -> list[str]:
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError as e:
        where = offset + e.start
        raise InputFormatError(name, f"not UTF-8 text ({e.reason} at byte {where})") from None
    # ASCII text is searched for its few break characters one at a time: a search for a
    # single character is many times faster than a regex over a character class.
    maybe = not text.isascii() or any(c in text for c in _ASCII_BREAKS)
    if maybe and _OTHER_BREAK.search(text):
        return text.splitlines()
    lines = text.split("\n")
    if not lines[-1]:
        lines.pop()  # the block's final newline ends its last line
    return lines


class _Lines:
    """A run being read: its header and the cells and turns read so far."""

    def __init__(self, name: str, defaults: dict[str, Any]) -> None:
        self.name = name
        self.defaults = defaults
        self.header: RunHeader | None = None
        self.rows: list[Row] = []  # the cells read so far
        self.turns = RunTurns(name)
        self.runs = 0  # records yielded so far
        # Whether every cell so far is proved within the limits by its line's text.
        self.proved = True

    def batch(self, first: int, texts: list[str]) -> Iterator[RunRecord]:
        """Cell (and turn) lines `texts`, the first of them line `first` of the file."""
        turns = self._turn_lines(first, texts)
        if turns is None:
            yield from self._each(first, texts)
            return
        cell_texts = [t for i, t in enumerate(texts) if i not in turns] if turns else texts
        if cell_texts and not self._bulk(cell_texts):
            yield from self._each(first, texts)
            return
        for i, obj in turns.items():
            self.turn(first + i, obj)

    def _turn_lines(self, first: int, texts: list[str]) -> dict[int, dict[str, Any]] | None:
        """The turn lines among `texts` (by position), read; None when one of the lines
        that may be a turn is not valid JSON (the per-line path then names it in order)."""
        found: dict[int, dict[str, Any]] = {}
        for i, text in enumerate(texts):
            if '"turn"' in text and _TURN_LINE.search(text):
                try:
                    obj = strict_loads(self.name, text, first + i)
                except InputFormatError:
                    return None
                if isinstance(obj, dict) and obj.get("type") == "turn":
                    found[i] = obj
        return found

    def _each(self, first: int, texts: list[str]) -> Iterator[RunRecord]:
        for lineno, line in enumerate(texts, start=first):
            yield from self.line(lineno, line)

    def _bulk(self, texts: list[str]) -> bool:
        """Cell lines `texts` validated in one call; False when it cannot take them."""
        text = "[" + ",".join(texts) + "]"
        try:
            rows = validators()[1].validate_json(text)
        except ValidationError:
            rows = []
        if len(rows) == len(texts):
            # Each line has at least as many key ends as its row has keys, so equal
            # sums mean no line repeats a key.
            flat = _flat_keys(text, rows)
            keys = sum(map(_keys, rows)) if flat is None else flat
            if _as_many_key_ends(text, keys):
                self.rows.extend(untagged(rows))
                bounds = current()
                if flat is None or not kept.text_within(text, max(map(len, texts)), bounds):
                    self.proved = False
                return True
        return False

    def turn(self, lineno: int, obj: dict[str, Any]) -> None:
        """A turn line, read (its `type` tag still in it), of the current run."""
        if self.header is None:
            raise InputFormatError(
                self.name, "a turn line comes before any run line", line=lineno, field="type"
            )
        self.turns.add({k: v for k, v in obj.items() if k != "type"}, line=lineno)

    def line(self, lineno: int, line: str, *, maybe_cell: bool = True) -> Iterator[RunRecord]:
        """One line of the file; `maybe_cell=False` for a line that looks like a run line: it
        is not tried as a cell line first (that attempt fails, at the cost of an error)."""
        name = self.name
        if maybe_cell and self.header is not None:
            try:
                row = validators()[0].validate_json(line)
            except ValidationError:
                pass  # a run line, a blank line or a bad cell: the slow path says which
            else:
                if _no_repeated_key(line, row):
                    del row["type"]
                    self.rows.append(row)
                    self.proved = False
                    return
        if not line.strip():
            return
        obj = strict_loads(name, line, lineno)
        if not isinstance(obj, dict):
            raise InputFormatError(name, "expected a JSON object", line=lineno)
        kind = obj.get("type")
        if kind == "turn":
            self.turn(lineno, obj)
            return
        obj.pop("type", None)
        if kind == "cell":
            if self.header is None:
                raise InputFormatError(
                    name, "a cell line comes before any run line", line=lineno, field="type"
                )
            try:
                cell = Cell.model_validate(obj)
            except ValidationError as e:
                raise field_error(name, e, line=lineno) from None
            self.rows.append(row_of(cell))
            self.proved = False
        elif kind == "run":
            if self.header is not None:
                yield self.record()
            obj.pop("schema", None)
            try:
                self.header = RunHeader.model_validate({**self.defaults, **obj})
            except ValidationError as e:
                raise field_error(name, e, line=lineno) from None
            self.rows = []
            self.turns = RunTurns(name)
            self.proved = True
        else:
            raise InputFormatError(
                name, f"must be 'run', 'cell' or 'turn', not {kind!r}", line=lineno, field="type"
            )

    def record(self) -> RunRecord:
        """The run read so far, its cells checked against the limits unless their text
        proved them within (`stream` checks the rest of the record)."""
        assert self.header is not None
        cells = CellRows.completed(self.rows)
        record = RunRecord(header=self.header, cells=cells, turns=self.turns.turns)
        if not self.proved:
            kept.check_cells(self.name, record, self.runs)
        self.runs += 1
        return record


def parse_lines(
    name: str, blocks: Iterable[list[str]], defaults: dict[str, Any]
) -> Iterator[RunRecord]:
    """The runs of a JSONL file given as blocks of its lines, each run yielded once its
    cells are read. The cell lines between two run lines go to `batch` as slices."""
    run = _Lines(name, defaults)
    pending: list[str] = []
    pending_first = 0  # the line number of pending[0]
    lineno = 1  # of the block's first line
    for block in blocks:
        runs = [i for i, line in enumerate(block) if '"run"' in line and _RUN_LINE.search(line)]
        start = 0
        for end in [*runs, len(block)]:
            if run.header is None:  # nothing is a cell yet: every line is looked at
                for k in range(start, end):
                    yield from run.line(lineno + k, block[k])
            else:
                while start < end:
                    if not pending:
                        pending_first = lineno + start
                    take = min(end, start + BULK - len(pending))
                    pending.extend(block[start:take])
                    start = take
                    if len(pending) >= BULK:
                        yield from run.batch(pending_first, pending)
                        pending = []
            if end < len(block):  # a run line
                if pending:
                    yield from run.batch(pending_first, pending)
                    pending = []
                yield from run.line(lineno + end, block[end], maybe_cell=False)
            start = end + 1
        lineno += len(block)
    if pending:
        yield from run.batch(pending_first, pending)
    if run.header is None:
        raise InputFormatError(name, "no run line found (an empty file?)")
    yield run.record()
