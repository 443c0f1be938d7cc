"""The bounds every parser reads within, so hostile input costs bounded memory and time.

Defaults are generous for real result files (the largest real logs are tens of MiB)
and small enough that one file cannot exhaust a laptop. Each bound can be raised for
one import with `--limit NAME=VALUE` or for every command with the environment
variable `BENCHLEDGER_LIMIT_<NAME>` (NAME upper-cased, `-` as `_`).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields, replace
from typing import Any

from pydantic import BaseModel

from benchledger.domain.errors import InputFormatError, InputLimitError

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
_UNITS = {"": 1, "k": KiB, "kb": KiB, "kib": KiB, "m": MiB, "mb": MiB, "mib": MiB}
_UNITS |= {"g": GiB, "gb": GiB, "gib": GiB}


@dataclass(frozen=True)
class Limits:
    # A file is read whole and parsed into objects several times its size.
    file_size: int = 512 * MiB
    # One .eval entry or zstd frame once decompressed; JSON of that size is ~5x in memory.
    decompressed_size: int = 1 * GiB
    # Decompressed/compressed, checked past the first MiB: JSON logs compress 5-50x,
    # a zip or zstd bomb 1000x and more.
    compression_ratio: int = 200
    yaml_aliases: int = 100
    # Objects and arrays inside one another, in JSON and YAML alike; the ledger's own
    # serializer stops at 255 levels, records wrap what they keep in a few more.
    depth: int = 128
    # int64 has 19 digits and a float's range ends near 1e308; 100 leaves room for ids.
    int_digits: int = 100
    # One string a run or cell keeps; a file-level field may be copied into every run.
    string_length: int = 1 * MiB

    @functools.cached_property
    def biggest_int(self) -> int:
        """The first integer with more digits than allowed."""
        return int(10**self.int_digits)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Limits:
        given = {f.name: env[env_name(f.name)] for f in fields(cls) if env_name(f.name) in env}
        return cls().updated(given, source="environment")

    def updated(self, given: Mapping[str, str], *, source: str = "--limit") -> Limits:
        """These limits with `given` (names with `-` or `_`, values like 64, 2MiB) applied."""
        changes = {}
        known = {f.name for f in fields(self)}
        for raw_name, raw_value in given.items():
            name = raw_name.strip().replace("-", "_").lower()
            if name not in known:
                raise InputFormatError(
                    source, f"unknown limit '{raw_name}' (known: {', '.join(option_names())})"
                )
            what = env_name(name) if source == "environment" else f"--limit {option_name(name)}"
            changes[name] = parse_amount(raw_value, what=what)
        return replace(self, **changes)


def parse_amount(text: str, *, what: str) -> int:
    match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", text)
    unit = _UNITS.get(match[2].lower()) if match else None
    if not match or unit is None:
        raise InputFormatError(
            what, f"'{text}' is not a whole number (optionally with KiB, MiB, GiB)"
        )
    return int(match[1]) * unit


def option_name(name: str) -> str:
    return name.replace("_", "-")


def option_names() -> list[str]:
    return [option_name(f.name) for f in fields(Limits)]


def env_name(name: str) -> str:
    return f"BENCHLEDGER_LIMIT_{name.upper()}"


def exceeded(
    path: str, what: str, name: str, *, line: int | None = None, field: str | None = None
) -> InputLimitError:
    """The refusal of something over the limit `name`, saying how to raise it."""
    limit = getattr(current(), name)
    shown = _size(limit) if name in ("file_size", "decompressed_size") else f"{limit} {_UNIT[name]}"
    how = f"raise it with --limit {option_name(name)}=N or {env_name(name)}"
    return InputLimitError(
        path,
        f"{what} exceeds the limit of {shown} ({how})",
        limit=option_name(name),
        line=line,
        field=field,
    )


_UNIT = {
    "compression_ratio": "times the compressed size",
    "yaml_aliases": "aliases",
    "depth": "levels of nesting",
    "int_digits": "digits",
    "string_length": "characters",
}


def _size(n: int) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes" if n != 1 else "1 byte"


_current: ContextVar[Limits | None] = ContextVar("benchledger_limits", default=None)


def current() -> Limits:
    """The limits in force: those set by `applied`, else the defaults and the environment."""
    limits = _current.get()
    if limits is not None:
        return limits
    return _from_env(tuple(os.environ.get(env_name(f.name)) for f in fields(Limits)))


@functools.lru_cache(maxsize=4)
def _from_env(values: tuple[str | None, ...]) -> Limits:
    env = {
        env_name(f.name): v for f, v in zip(fields(Limits), values, strict=True) if v is not None
    }
    return Limits.from_env(env)


@contextmanager
def applied(limits: Limits) -> Iterator[Limits]:
    token = _current.set(limits)
    try:
        yield limits
    finally:
        _current.reset(token)


def check_kept(path: str, records: Iterable[BaseModel]) -> None:
    """Refuse what a record would keep beyond the limits (a string's length, an integer's
    digits, nesting) or could not store (an unpaired surrogate), naming the field."""
    bounds = current()
    for i, record in enumerate(records):
        # Cells are most of what an import keeps: checked without tracking where.
        cells = getattr(record, "cells", ())
        rest = [v for k, v in record.__dict__.items() if k != "cells"]
        if breaks(rest, bounds, 0) or _cells_break(cells, bounds):
            _refuse_where(path, i, record, bounds)


def _cells_break(cells: Iterable[Any], bounds: Limits) -> bool:
    """`breaks` for cells: their outcome and score are typed, so only key and metrics."""
    longest, biggest = bounds.string_length, bounds.biggest_int
    for cell in cells:
        key = cell.key
        if len(key) > longest or (not key.isascii() and _unstorable(key)):
            return True
        for name, value in cell.metrics.items():  # flat metrics checked in place
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

    def bad(item: Any) -> bool | None:  # None: a container, to look inside
        kind = type(item)
        if kind is str:
            return len(item) > longest or (not item.isascii() and _unstorable(item))
        if kind is int:
            return not -biggest < item < biggest
        if kind is float or kind is bool or item is None:
            return False
        if isinstance(item, str):  # enums of strings
            return bad(str(item))
        return None

    stack = [(value, depth)]
    while stack:
        node, level = stack.pop()
        verdict = bad(node)
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
        for item in items:
            kind = type(item)
            if kind is str:
                if len(item) > longest or (not item.isascii() and _unstorable(item)):
                    return True
            elif kind is int:
                if not -biggest < item < biggest:
                    return True
            elif kind is not float and kind is not bool and item is not None:
                verdict = bad(item)
                if verdict is None:
                    stack.append((item, level + 1))
                elif verdict:
                    return True
    return False


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
        elif isinstance(node, list | tuple):
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
