"""What a record keeps, checked against the limits before anything is appended.

A parser may build strings no single field of its file holds (a model's arguments
joined, a file-level field copied into each of its runs); this is the last check,
on exactly what the ledger would store, and it names the field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import pydantic_core
from pydantic import BaseModel

from benchledger.adapters.formats.limits import Limits, current, exceeded
from benchledger.domain.cells import Cell, CellRows, keys_of, metrics_of
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Record


def check_kept(
    path: str, records: Iterable[BaseModel], *, first: int = 0, cells: bool = True
) -> None:
    """Refuse what a record would keep beyond the limits (a string's length, an integer's
    digits, nesting) or could not store (an unpaired surrogate), naming the field.
    `cells=False`: the parser checked the records' cells itself (`check_cells`)."""
    bounds = current()
    for i, record in enumerate(records, start=first):
        _check_names(path, i, record)
        # Cells are most of what an import keeps: checked without tracking where.
        cells_of = getattr(record, "cells", ()) if cells else ()
        if _rest_within(record, bounds):
            if _cells_break(cells_of, bounds):
                _refuse_where(path, i, record, bounds)
            continue
        rest = [v for k, v in record.__dict__.items() if k != "cells"]
        if breaks(rest, bounds, 0) or _cells_break(cells_of, bounds):
            _refuse_where(path, i, record, bounds)


# The fields that name a run: what it is keyed by and what every listing shows. A control
# character (C0 with tab and newline, DEL, C1) has no place in a name, and would break a
# table row or act on a terminal; free text keeps it (and is shown escaped).
NAMES = ("run_key", "benchmark", "agent", "provider", "model")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _check_names(path: str, i: int, record: BaseModel) -> None:
    header = getattr(record, "header", None)
    named, prefix = (record, "") if header is None else (header, "header.")
    values = [(name, getattr(named, name, None)) for name in NAMES]
    stated = [value for _, value in values if isinstance(value, str)]
    if _CONTROL.search("".join(stated)) is None:  # one search of them all, mostly
        return
    for name, value in values:
        found = _CONTROL.search(value) if isinstance(value, str) else None
        if found is not None:
            raise InputFormatError(
                path,
                f"holds a control character (\\x{ord(found[0]):02x}), which no name may hold",
                field=f"record {i + 1}: {prefix}{name}",
            )


def _rest_within(record: BaseModel, bounds: Limits) -> bool:
    """Whether the JSON of what `record` keeps besides its cells proves, by string
    operations that run in C, that `breaks` would find nothing in it. False only means:
    check the values themselves.

    - No string is longer than the text (its bytes, quotes included).
    - An integer's digits are a run of digits in the text: no run longer than the limit,
      no integer beyond it (a long run inside a string only sends it to the slow check).
    - Objects and arrays nest no deeper than the text has opening brackets; one level of
      margin covers a value JSON writes as a string (a time) that `breaks` counts as a
      level.
    - An unpaired surrogate cannot be written as UTF-8: serializing fails.
    A nested record (a run's header) is written by its own `json_bytes`, which it keeps
    for hashing; the other fields are written in one list, a level deeper than they are.
    """
    parts: list[bytes] = []
    others: list[Any] = []
    try:
        for name, value in record.__dict__.items():
            if name == "cells":
                continue
            if isinstance(value, Record):
                parts.append(value.json_bytes())
            else:
                others.append(value)
        parts.append(pydantic_core.to_json(others))
    except (pydantic_core.PydanticSerializationError, ValueError, TypeError):
        return False
    return all(_json_within(text, bounds) for text in parts)


def _json_within(text: bytes, bounds: Limits) -> bool:
    """`_rest_within`'s proof for one JSON text: no longer than a string may be, fewer
    commas than an array may have elements, fewer opening brackets than the depth allows
    (less one), no run of digits past the limit. In three passes over the text where
    five would do: its commas are counted only when it is long enough to hold that many,
    and one translation turns both its digits into zeros and its braces into brackets."""
    if len(text) > bounds.string_length:
        return False
    if len(text) >= bounds.array_length and text.count(b",") >= bounds.array_length:
        return False
    mapped = text.translate(_DIGITS_AS_ZERO_BRACES_AS_BRACKETS)
    digits = b"0" * (bounds.int_digits + 1)
    return mapped.count(b"[") < bounds.depth - 1 and digits not in mapped


def check_cells(path: str, record: BaseModel, index: int) -> None:
    """The cells half of `check_kept`, for the record at `index` of its file."""
    bounds = current()
    if _cells_break(getattr(record, "cells", ()), bounds):
        _refuse_where(path, index, record, bounds)


def text_within(text: str, longest_line: int, bounds: Limits) -> bool:
    """Whether JSON `text`, whose lines are at most `longest_line` characters and whose
    values nest no deeper than a cell's metrics, provably decodes to nothing beyond the
    limits: no string longer than its line, no integer with more digits than the text
    has in a row, and no unpaired surrogate without a `\\u` escape (decoded UTF-8 never
    holds one). False only means: check the values themselves."""
    return (
        longest_line <= bounds.string_length
        and text.count(",") < bounds.array_length
        and ("\\" not in text or "\\u" not in text)  # a backslash is found by memchr
        and "0" * (bounds.int_digits + 1) not in text.translate(_DIGITS_AS_ZERO)
    )


# Every digit as 0, so a run of digits is a run of zeros: one pass in C, where a regex
# for a run of digits costs twenty times more.
_DIGITS_AS_ZERO = str.maketrans("123456789", "000000000")
_DIGITS_AS_ZERO_BRACES_AS_BRACKETS = bytes.maketrans(b"123456789{", b"000000000[")


def _cells_break(cells: Sequence[Cell], bounds: Limits) -> bool:
    """`breaks` for cells: their outcome and score are typed, so only key and metrics."""
    longest, biggest = bounds.string_length, bounds.biggest_int
    for key, metrics in zip(keys_of(cells), metrics_of(cells), strict=True):
        if len(key) > longest or (not key.isascii() and _unstorable(key)):
            return True
        for name, value in metrics.items():  # flat metrics checked in place
            kind = type(value)
            if kind is float or kind is bool or value is None:
                pass
            elif kind is int:
                if not -biggest < value < biggest:
                    return True
            elif (kind is not str or len(value) > longest or not value.isascii()) and breaks(
                value, bounds, 4
            ):
                return True
            if len(name) > longest or (not name.isascii() and _unstorable(name)):
                return True
    return False


def breaks(value: Any, bounds: Limits, depth: int = 3) -> bool:
    """Whether anything in `value` (at nesting `depth`) is beyond the limits. Scalars are
    checked in place, not stacked: most of what is kept is small flat objects."""
    longest, biggest, deepest = bounds.string_length, bounds.biggest_int, bounds.depth

    stack = [(value, depth)]
    while stack:
        node, level = stack.pop()
        verdict = _bad(node, longest, biggest)
        if verdict is not None:
            if verdict:
                return True
            continue
        if level >= deepest:
            return True
        if isinstance(node, BaseModel):
            node = node.__dict__
        items = [*node.keys(), *node.values()] if isinstance(node, dict) else node
        if not isinstance(items, list | tuple):
            continue
        if len(node) > bounds.array_length:
            return True
        for item in items:
            kind = type(item)
            if kind is str:
                if len(item) > longest or (not item.isascii() and _unstorable(item)):
                    return True
            elif kind is int:
                if not -biggest < item < biggest:
                    return True
            elif kind is not float and kind is not bool and item is not None:
                verdict = _bad(item, longest, biggest)
                if verdict is None:
                    stack.append((item, level + 1))
                elif verdict:
                    return True
    return False


def _bad(item: Any, longest: int, biggest: int) -> bool | None:
    """A scalar beyond the limits (True) or within them (False); None: a container, to
    look inside. A module function, not a closure in `breaks`: a recursive closure is a
    reference cycle, and imports run with the collector paused, so each call leaked one."""
    kind = type(item)
    if kind is str:
        return len(item) > longest or (not item.isascii() and _unstorable(item))
    if kind is int:
        return not -biggest < item < biggest
    if kind is float or kind is bool or item is None:
        return False
    if isinstance(item, str):  # enums of strings
        return _bad(str(item), longest, biggest)
    return None


def _refuse_where(path: str, i: int, record: BaseModel, bounds: Limits) -> None:
    """Find the field `breaks` objected to, and refuse it by name."""
    biggest = bounds.biggest_int
    stack: list[tuple[Any, int, tuple[int, *tuple[str | int, ...]]]] = [(record, 0, (i,))]
    while stack:
        node, depth, where = stack.pop()
        if isinstance(node, str):
            if len(node) > bounds.string_length:
                raise exceeded(
                    path,
                    f"a string of {len(node)} characters",
                    "string_length",
                    field=_field(where),
                )
            if not node.isascii() and _unstorable(node):
                raise InputFormatError(
                    path,
                    "text holds an unpaired surrogate (not valid Unicode)",
                    field=_field(where),
                )
        elif isinstance(node, int):
            if not -biggest < node < biggest:
                what = f"an integer of {_digits(node)} digits"
                raise exceeded(path, what, "int_digits", field=_field(where))
        elif isinstance(node, float | bool) or node is None:
            continue
        elif depth >= bounds.depth:
            raise exceeded(path, "the nesting", "depth", field=_field(where))
        elif isinstance(node, BaseModel):
            stack.extend((v, depth + 1, (*where, k)) for k, v in node.__dict__.items())
        elif isinstance(node, dict):
            for k, v in node.items():
                stack.append((k, depth + 1, (*where, "(a key)")))
                stack.append((v, depth + 1, (*where, str(k)[:40])))
        elif isinstance(node, list | tuple | CellRows):  # rows are named as Cells
            if len(node) > bounds.array_length:
                what = f"an array of {len(node)} elements"
                raise exceeded(path, what, "array_length", field=_field(where))
            stack.extend((v, depth + 1, (*where, j)) for j, v in enumerate(node))
    raise InputFormatError(path, "holds what the ledger cannot keep", field=f"record {i + 1}")


def _digits(number: int) -> str:
    try:
        return str(len(str(abs(number))))
    except ValueError:  # past Python's own limit for printing integers
        return "thousands of"


def _unstorable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _field(where: tuple[int, *tuple[str | int, ...]]) -> str:
    """Where in the file's records: `record 3: cells[1].metrics.x`, shortened when long."""
    parts = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in where[1:])
    if len(parts) > 120:
        parts = f"{parts[:60]}...{parts[-60:]}"
    return f"record {where[0] + 1}: {parts.lstrip('.')}" if parts else f"record {where[0] + 1}"
