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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields, replace

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
    # Elements of one array (JSON or YAML, or kept): each costs a pointer and an object in
    # memory, and is copied again by every step a record goes through; real arrays (tests
    # of an instance, samples of a log) hold thousands.
    array_length: int = 1_000_000
    # One value of a source database (a column of one row: text, blob or JSON text), in
    # bytes; SQLite refuses to hand over a larger one, so it is never held in memory.
    value_size: int = 16 * MiB

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
    shown = _size(limit) if name in _BYTES else f"{limit} {_UNIT[name]}"
    how = f"raise it with --limit {option_name(name)}=N or {env_name(name)}"
    return InputLimitError(
        path,
        f"{what} exceeds the limit of {shown} ({how})",
        limit=option_name(name),
        line=line,
        field=field,
    )


_BYTES = ("file_size", "decompressed_size", "value_size")
_UNIT = {
    "compression_ratio": "times the compressed size",
    "yaml_aliases": "aliases",
    "depth": "levels",
    "int_digits": "digits",
    "string_length": "characters",
    "array_length": "elements",
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
    return _from_env(tuple(map(os.environ.get, _ENV_NAMES)))


# Looked up at every check (a large import makes thousands): named once.
_ENV_NAMES = tuple(env_name(f.name) for f in fields(Limits))


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
