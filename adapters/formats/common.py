"""What every format parser needs: bounded reading of a file and of a JSON document,
with errors naming the file (and the line where JSON says so)."""

from __future__ import annotations

import errno
import functools
import itertools
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from operator import itemgetter
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, TypeVar, cast

from benchledger.adapters.formats import limits
from benchledger.domain.errors import InputFormatError, NotRegularFileError

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class Owner(NamedTuple):
    """The result a file is part of: read through `primary`, read whole by importing
    `target` (its folder, or `primary` itself); `what` names it for a reader."""

    primary: Path
    what: str
    target: Path


T = TypeVar("T")

# What an import keeps of the directories and files around the files it reads, while it
# runs (`reads_kept`): by what was read and where.
_KEPT: ContextVar[dict[tuple[str, Path], Any] | None] = ContextVar("kept_reads", default=None)
READS_KEPT = 256


@contextmanager
def reads_kept() -> Iterator[None]:
    """Within the block (one import), what `kept_read` reads around a file is read once:
    a format that asks, for each file of a directory, which of its siblings comes first,
    or which run report lists it, reads the directory or the report once, not once per
    file (N x N for N files). The import found its files by one walk of the tree before
    the block; what is kept for the rest of it is no older than that walk."""
    token = _KEPT.set({})
    try:
        yield
    finally:
        _KEPT.reset(token)


def kept_read(kind: str, path: Path, read: Callable[[], T]) -> T:
    """`read()`, or what it gave for (`kind`, `path`) earlier in this import (at most
    `READS_KEPT` of them); outside an import, `read()` each time."""
    kept = _KEPT.get()
    if kept is None:
        return read()
    key = (kind, path)
    if key in kept:
        return cast(T, kept[key])
    if len(kept) >= READS_KEPT:
        kept.clear()
    value = kept[key] = read()
    return value


def subdirectory_names(directory: Path) -> tuple[str, ...]:
    """The names of the directories in `directory` (links to directories too: what `*/`
    matches in a glob, hidden names included), sorted; none where it cannot be listed.
    Listed once per import (`reads_kept`)."""
    return kept_read("subdirectories", directory, lambda: _subdirectory_names(directory))


def _subdirectory_names(directory: Path) -> tuple[str, ...]:
    try:
        with os.scandir(directory) as entries:
            return tuple(sorted(entry.name for entry in entries if _is_dir(entry)))
    except OSError:  # no such directory, or not one: no entries, as a glob finds none
        return ()


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


class Units(NamedTuple):
    """A file read as units of plain data (rows as the file holds them) that parse each
    into a record on their own: `produce()` yields them, `parse(unit)` reads one (None:
    a unit that states no record), `weight(unit)`: roughly how much its record holds
    besides its header. An import reads the units in one process and parses each in
    whichever of two has time (`read_ahead.units_ahead`)."""

    produce: Callable[[], Iterator[Any]]
    parse: Callable[[Any], Any]
    weight: Callable[[Any], int]
    # Where a unit is one run's row: its run key (`key(unit)`, None for other units) and
    # the digest of everything it states (`digest(unit)`), which its record carries
    # (`RunRecord.source_row_sha256`). An import of the source again skips a unit whose
    # run is recorded from that very row, without parsing it (`Importing.unchanged_rows`),
    # passing an `UnchangedRow` (a pair) in its place: such units are never pairs.
    key: Callable[[Any], str | None] | None = None
    digest: Callable[[Any], str] | None = None


def identity(stat: os.stat_result) -> tuple[int, int, int]:
    """What changes when a file is written or replaced: its size, modification time
    and inode. A file read in a pass whose identity differs after it was changed."""
    return stat.st_size, stat.st_mtime_ns, stat.st_ino


def not_regular(mode: int) -> str | None:
    """What a file of this mode is when it is not a regular file (None when it is one)."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def read_bytes(path: Path) -> bytes:
    """The bytes of a regular file within the file-size limit; a pipe, device or symlink
    loop is refused before anything is read (opened non-blocking, so a pipe cannot hang)."""
    with open_regular(path) as f:
        return read_within(path, f, limits.current().file_size)


def read_within(path: Path, f: BinaryIO, cap: int) -> bytes:
    try:
        data = f.read(cap + 1)
    except OSError as e:
        raise InputFormatError(str(path), f"cannot read ({e.strerror})") from None
    if len(data) > cap:  # it grew while being read
        raise limits.exceeded(str(path), "the file", "file_size")
    return data


def open_regular(path: Path) -> BinaryIO:
    """A regular file within the file-size limit, opened for reading in binary; the same
    refusals as `read_bytes`, for reading it in pieces."""
    name = str(path)
    try:
        kind = not_regular(os.stat(path).st_mode)
        if kind:
            raise NotRegularFileError(name, f"{kind}, not a regular file; not read")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        f = os.fdopen(fd, "rb")
        try:
            info = os.fstat(f.fileno())
            kind = not_regular(info.st_mode)  # replaced between stat and open
            if kind:
                raise NotRegularFileError(name, f"{kind}, not a regular file; not read")
            cap = limits.current().file_size
            if info.st_size > cap:
                raise limits.exceeded(name, f"a file of {info.st_size} bytes", "file_size")
        except BaseException:
            f.close()
            raise
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotRegularFileError(name, "a symbolic link loop; not read") from None
        if e.errno == errno.ENOENT and path.is_symlink():
            raise NotRegularFileError(name, "a broken symbolic link; not read") from None
        raise InputFormatError(name, f"cannot read ({e.strerror})") from None
    except ValueError as e:  # e.g. an embedded NUL in a path taken from a manifest
        raise InputFormatError(name, f"cannot read ({e})") from None
    return f


def read_head(path: Path, size: int = 4096) -> bytes | None:
    """The first bytes of a regular file, for sniffing; None for anything else."""
    try:
        if not_regular(os.stat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as f:
            return f.read(size) if not not_regular(os.fstat(f.fileno()).st_mode) else None
    except (OSError, ValueError):
        return None


def read_json(path: Path, data: bytes | None = None) -> Any:
    """A JSON document (read from `path` unless `data` is given); any failure to read or
    decode it is an InputFormatError naming the file, and the line where JSON says so."""
    return loads(str(path), read_bytes(path) if data is None else data)


class _TooManyDigits(Exception):
    def __init__(self, digits: int) -> None:
        self.digits = digits


class DuplicateKeyError(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _bounded_int(max_digits: int) -> Callable[[str], int]:
    def parse_int(text: str) -> int:
        digits = len(text) - text.startswith("-")
        if digits > max_digits:
            raise _TooManyDigits(digits)
        return int(text)

    return parse_int


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return obj


@functools.lru_cache(maxsize=8)
def _decoder(int_digits: int, unique_keys: bool) -> json.JSONDecoder:
    # One decoder per setting: building one per call costs more than a small line's parse.
    return json.JSONDecoder(
        parse_int=_bounded_int(int_digits),
        object_pairs_hook=_unique_keys if unique_keys else None,
    )


# The plain decoder's scanners (integers read in C, without the digit check: see
# `_decode`), one refusing a key stated twice, and the whitespace JSONDecoder.decode
# allows around the document.
_PLAIN_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_UNIQUE_SCAN = json.JSONDecoder(object_pairs_hook=_unique_keys).scan_once  # type: ignore[attr-defined]
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _space_end(text: str, pos: int = 0) -> int:
    """Where the whitespace JSON allows, from `pos`, ends (the pattern always matches)."""
    match = _JSON_SPACE.match(text, pos)
    return match.end() if match else pos


# ASCII digits to "0" (and every other byte as it is), to find a run of digits by a search.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"0" * 9)
# A long text is searched for a run of digits a piece at a time, so that the copy the
# search makes stays small.
_RUN_PIECE = 1 << 20


def _decode(text: str, int_digits: int, unique_keys: bool) -> Any:
    """`_decoder(int_digits, unique_keys).decode(text)`, with its errors.

    Most documents hold no integer near the digit limit, and the limit's hook (a Python
    call per integer) then cannot refuse anything: an integer of more than `int_digits`
    digits is a run of that many ASCII digits in the text. Without such a run (nor one
    past Python's own limit on converting digits), a plain scanner reads integers in
    C and gives the same document (read as JSONDecoder.decode reads it: whitespace
    around it, nothing else; a key stated twice refused as the checked decoder refuses
    it). Whatever it cannot read is read again by the checked decoder, whose error is
    the one reported.
    """
    if not _digit_run(text, int_digits):
        try:
            start = _space_end(text) if text[:1] in " \t\n\r" else 0
            value, end = (_UNIQUE_SCAN if unique_keys else _PLAIN_SCAN)(text, start)
            if end == len(text) or _space_end(text, end) == len(text):
                return value
        except (StopIteration, ValueError, RecursionError):
            pass
    return _decoder(int_digits, unique_keys).decode(text)


def _digit_run(text: str, int_digits: int) -> bool:
    """Whether `text` holds a run of ASCII digits (in a string too) longer than the limit,
    or than Python converts to an integer (sys.get_int_max_str_digits, 0: no limit)."""
    python = sys.get_int_max_str_digits()
    longest = min(int_digits, python) if python else int_digits
    if len(text) <= longest:
        return False
    run = b"0" * (longest + 1)
    for start in range(0, len(text), _RUN_PIECE):
        piece = text[start : start + _RUN_PIECE + longest]  # overlaps the next piece
        if run in piece.encode("utf-8", "surrogatepass").translate(_DIGITS_AS_ZERO):
            return True
    return False


def refuse_nul(
    name: str, data: bytes, *, what: str = "JSON", line: int | None = None, field: str | None = None
) -> None:
    """Refuse text holding a NUL byte, which no JSON or YAML text holds (a hole in a sparse
    file reads as NULs), before it is decoded into a second copy of itself."""
    at = data.find(b"\x00")
    if at >= 0:
        where = line or data.count(b"\n", 0, at) + 1
        raise InputFormatError(
            name, f"invalid {what}: a NUL byte (at byte {at})", line=where, field=field
        )


def loads_all(name: str, texts: Sequence[str], fields: Sequence[str | None]) -> list[Any]:
    """`loads(name, text, field=field)` of each text in turn (with the first refusal).

    A table row holds several short JSON texts, and what `loads` spends around each
    one's decoding outweighs the decoding, so they are read in one pass of C code when
    that gives the same: when no text holds a backslash (so no escape, none of a
    surrogate), the objects and arrays of all of them together are within the depth
    limit, no run of digits is past the digit limit (see `_decode`), and the scanner
    (which refuses a key stated twice) reads each text whole from its first character.
    Otherwise each is read by `loads`, in order, so the first failure is reported as
    `loads` reports it.
    """
    bounds = limits.current()
    joined = "\x00".join(texts)  # a separator that is no digit, bracket or backslash
    if (
        "\\" not in joined
        and joined.count("[") + joined.count("{") <= bounds.depth
        and not _digit_run(joined, bounds.int_digits)
    ):
        try:
            # A StopIteration (no value at the start of a text) ends the map early: the
            # ends then do not match the lengths.
            found = list(map(_UNIQUE_SCAN, texts, itertools.repeat(0)))
        except (ValueError, RecursionError, DuplicateKeyError):
            found = []
        if list(map(itemgetter(1), found)) == list(map(len, texts)):
            return list(map(itemgetter(0), found))
    return [loads(name, text, field=field) for text, field in zip(texts, fields, strict=True)]


def loads(
    name: str,
    data: bytes | str,
    *,
    line: int | None = None,
    field: str | None = None,
    unique_keys: bool = True,
) -> Any:
    """JSON within the limits (depth, integer digits), as valid Unicode, bare NaN and
    Infinity allowed as Python reads them; a key stated twice in one object is refused
    (naming it), unless `unique_keys` is False: JSON leaves a repeat's meaning open, and
    a reader that kept the last would drop a fact the file states."""
    bounds = limits.current()
    if isinstance(data, bytes):
        refuse_nul(name, data, line=line, field=field)
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
    except UnicodeDecodeError as e:
        raise InputFormatError(
            name, f"not UTF-8 text ({e.reason} at byte {e.start})", line=line, field=field
        ) from None
    try:
        value = _decode(text, bounds.int_digits, unique_keys)
    except json.JSONDecodeError as e:
        raise InputFormatError(
            name, f"invalid JSON: {e.msg} (column {e.colno})", line=line or e.lineno, field=field
        ) from None
    except _TooManyDigits as e:
        where = line or _line_of(text, re.compile(rf"\d{{{bounds.int_digits + 1}}}"))
        raise limits.exceeded(
            name, f"an integer of {e.digits} digits", "int_digits", line=where, field=field
        ) from None
    except DuplicateKeyError as e:
        key = json.dumps(e.key)
        where = line or _line_of(text, re.compile(re.escape(key) + r"\s*:"), nth=2)
        raise InputFormatError(
            name, f"duplicate key {key} in one object", line=where, field=field
        ) from None
    except RecursionError:
        raise limits.exceeded(name, "the nesting", "depth", line=line, field=field) from None
    except ValueError as e:  # integers past Python's own digit limit, when it is raised
        raise InputFormatError(name, f"unreadable JSON: {e}", line=line, field=field) from None
    # Neither check can find anything in a text too short for that many brackets, or
    # without a backslash (an escape).
    if (
        len(text) > bounds.depth
        and text.count("[") + text.count("{") > bounds.depth
        and too_deep(value, bounds.depth)
    ):
        raise limits.exceeded(name, "the nesting", "depth", line=line, field=field)
    # An array of more elements than the limit has as many commas, at least.
    if text.count(",") >= bounds.array_length:
        found = long_array(value, bounds.array_length)
        if found is not None:
            inside, length = found
            if inside:
                field = f"{field}.{inside}" if field else inside
            what = f"an array of {length} elements"
            raise limits.exceeded(name, what, "array_length", line=line, field=field)
    if "\\" in text and _SURROGATE_ESCAPE.search(text):
        reject_lone_surrogates(name, text, value, line=line, field=field)
    return value


def long_array(value: Any, limit: int) -> tuple[str, int] | None:
    """Where the first array of more than `limit` elements is (`a.b[2]`, "" for the
    document itself) and its length; None when there is none."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, list):
            if len(node) > limit:
                return where, len(node)
            stack.extend(
                (v, f"{where}[{i}]") for i, v in enumerate(node) if isinstance(v, dict | list)
            )
        elif isinstance(node, dict):
            stack.extend(
                (v, f"{where}.{k}" if where else str(k))
                for k, v in node.items()
                if isinstance(v, dict | list)
            )
    return None


def too_deep(value: Any, limit: int) -> bool:
    """True when objects and arrays nest more than `limit` levels (without recursion,
    and ending on a cyclic structure too)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_PAIR = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def reject_lone_surrogates(
    name: str, text: str, value: Any, *, line: int | None = None, field: str | None = None
) -> None:
    """An escaped half of a surrogate pair decodes, but no UTF-8 writer can store it."""
    inside = surrogate_at(value)
    if inside is None:
        return
    if inside:
        field = f"{field}.{inside}" if field else inside
    where = line
    if where is None:
        paired = {m.start() for m in _PAIR.finditer(text)}
        paired |= {p + 6 for p in paired}
        lone = next(
            (m.start() for m in _SURROGATE_ESCAPE.finditer(text) if m.start() not in paired), None
        )
        where = None if lone is None else text.count("\n", 0, lone) + 1
    raise InputFormatError(
        name, "text holds an unpaired surrogate escape (not valid Unicode)", line=where, field=field
    )


def surrogate_at(value: Any) -> str | None:
    """Where the first string holding a lone surrogate is (`a.b[2]`, "" for the document
    itself), or None when every string is valid Unicode."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            if not node.isascii() and not _encodable(node):
                return where
        elif isinstance(node, dict):
            for k, v in node.items():
                stack.append((k, where))
                stack.append((v, f"{where}.{k}" if where else str(k)))
        elif isinstance(node, list | tuple):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(node))
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _line_of(text: str, pattern: re.Pattern[str], *, nth: int = 1) -> int | None:
    """The line of the `nth` match of `pattern` (a best guess where JSON gives none)."""
    for i, match in enumerate(pattern.finditer(text), start=1):
        if i == nth:
            return text.count("\n", 0, match.start()) + 1
    return None


class DistinctKeys:
    """Cell keys made unique in document order: a repeat of `k` becomes `k#2`, `k#3`...,
    skipping any such key that the source itself uses."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._repeats: dict[str, int] = {}

    def key(self, base: str) -> str:
        key, n = base, self._repeats.get(base, 1)
        while key in self._used:
            n += 1
            key = f"{base}#{n}"
        self._repeats[base] = n
        self._used.add(key)
        return key

    def repeated(self) -> int:
        """How many base keys occurred more than once."""
        return sum(1 for n in self._repeats.values() if n > 1)
