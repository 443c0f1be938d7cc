"""Result-file formats: one pure parser module per harness format.

A format module has `NAME` (what `--format` takes), `SYSTEM` (the source system
whose run keys it reads: the same run arriving through two of that system's
files gets one id), `detect(path, head)` (True only for the primary file of a
result: a multi-file result is claimed through one file), `parse(path, data,
defaults)` yielding `RunRecord`s and `SkipRecord`s or raising
`InputFormatError` naming the file and field, and optionally `members(path)`:
the other files the result is made of, so a change to any of them is a new
version of the result, optionally `owner(path)`: for a member, the result it is part
of (`common.Owner`), so that a member imported alone says what to import instead,
and optionally `stream(path, defaults)`: what `parse` yields,
read from the file in pieces, so that memory holds one run rather than the file.

A format may also read files that state no runs but rules: `declares(path, head)`
(True for such a file) and `rules(path, data)`, each benchmark's `AgentRules` (None
when the file states none), which the importer declares (the orchestrator's
`latest/index.json` and its matrix contract).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol, cast

from benchledger.adapters.formats import kept
from benchledger.adapters.formats.common import Owner, Units
from benchledger.domain.errors import InputFormatError, PartOfResultError, UnknownFormatError
from benchledger.domain.matrix import AgentRules
from benchledger.domain.records import GroupRecord, RunRecord, SkipRecord

Parsed = RunRecord | SkipRecord | GroupRecord


class Format(Protocol):
    NAME: str
    SYSTEM: str

    def detect(self, path: Path, head: bytes) -> bool: ...

    def parse(
        self, path: Path, data: bytes, defaults: dict[str, Any] | None = None
    ) -> Iterator[Parsed]: ...


# Most specific first: the native format names itself; harness formats sniff shapes.
# Each name is its module's name; a module is imported when first needed, so importing
# a native file (or starting any command) does not pay for building every parser.
NAMES = (
    "native",
    # Claims only BFCL's own file names (BFCL_v<N>_<category>_score.json, data_*.csv
    # tables headed Rank,...Model): no other format's file is named so.
    "bfcl",
    "orchestrator",
    # Claims only a file named run_spec.json that states HELM's scenario and adapter specs.
    "helm",
    "alwm",
    # Before swebench: a `tb run` of an adapted SWE-bench dataset names instances by
    # their SWE-bench ids, and a run folder may be called `results`.
    "terminal_bench_harness",
    "swebench",
    "lm_eval",
    "inspect_ai",
    "eee",
    "junit",
    "terminal_bench",
)


def load(name: str) -> Format:
    fmt = cast(Format, importlib.import_module(f"{__name__}.{name}"))
    assert name == fmt.NAME, f"format module {name} names itself {fmt.NAME}"
    return fmt


def all_formats() -> list[Format]:
    return [load(name) for name in NAMES]


def parse(
    fmt: Format, path: Path, data: bytes, defaults: dict[str, Any] | None = None
) -> list[Parsed]:
    """Everything `fmt` reads from the file, refused as a whole when what the records
    would keep goes beyond the limits (see `limits`)."""
    try:
        records = list(fmt.parse(path, data, defaults))
    except InputFormatError:
        raise
    except (ValueError, UnicodeError, RecursionError, OverflowError) as e:
        # A parser that missed a case must fail this file, not a whole directory import.
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputFormatError(str(path), f"cannot be read as {fmt.NAME}: {why}") from e
    kept.check_kept(str(path), records)
    return records


def can_stream(fmt: Format) -> bool:
    return callable(getattr(fmt, "stream", None))


def stream(fmt: Format, path: Path, defaults: dict[str, Any] | None = None) -> Iterator[Parsed]:
    """What `parse` gives, one record at a time as the format reads the file; each is
    refused as `parse` would refuse it (its position in the file named the same way)."""
    return checked(fmt, path, read(fmt, path, defaults))


def read(fmt: Format, path: Path, defaults: dict[str, Any] | None = None) -> Iterator[Parsed]:
    """The records of a streamed file as the format yields them, before `checked`
    checks them against the limits (an import may do the two in two processes)."""
    records: Iterable[Parsed] = getattr(fmt, "stream")(path, defaults)  # noqa: B009
    try:
        yield from records
    except InputFormatError:
        raise
    except (ValueError, UnicodeError, RecursionError, OverflowError) as e:
        raise _unreadable(fmt, path, e) from e


def units(fmt: Format, path: Path) -> Units | None:
    """The file as units parsed one by one (`common.Units`), where its format reads it so
    (an orchestrator.sqlite), each parse failing as `read` fails; else None."""
    finder = getattr(fmt, "units", None)
    found: Units | None = finder(path) if finder else None
    if found is None:
        return None

    def produce() -> Iterator[Any]:
        try:
            yield from found.produce()
        except InputFormatError:
            raise
        except (ValueError, UnicodeError, RecursionError, OverflowError) as e:
            raise _unreadable(fmt, path, e) from e

    def parse(unit: Any) -> Parsed | None:
        try:
            return cast(Parsed | None, found.parse(unit))
        except InputFormatError:
            raise
        except (ValueError, UnicodeError, RecursionError, OverflowError) as e:
            raise _unreadable(fmt, path, e) from e

    return found._replace(produce=produce, parse=parse)


def _unreadable(fmt: Format, path: Path, e: BaseException) -> InputFormatError:
    """A parser that missed a case must fail this file, not a whole directory import."""
    why = str(e).splitlines()[0] if str(e) else type(e).__name__
    return InputFormatError(str(path), f"cannot be read as {fmt.NAME}: {why}")


def checked(fmt: Format, path: Path, records: Iterable[Parsed]) -> Iterator[Parsed]:
    """`records` (read from `path`), each refused as `parse` would refuse it."""
    check = checker(fmt, path)
    for i, record in enumerate(records):
        check(record, i)
        yield record


def checker(fmt: Format, path: Path) -> Callable[[Parsed, int], None]:
    """What `checked` does to the record at an index of the file's records."""
    cells = not getattr(fmt, "STREAM_CHECKS_CELLS", False)
    name = str(path)

    def check(record: Parsed, index: int) -> None:
        kept.check_kept(name, [record], first=index, cells=cells)

    return check


def members(fmt: Format, path: Path) -> list[Path]:
    """The other files a result read through `path` is made of (none for most formats)."""
    finder = getattr(fmt, "members", None)
    return sorted(finder(path)) if finder else []


def owner(path: Path) -> Owner | None:
    """The result a file no format reads alone is part of, when a format knows it."""
    for name in NAMES:
        finder = getattr(load(name), "owner", None)
        found: Owner | None = finder(path) if finder else None
        if found is not None:
            return found
    return None


def declares(fmt: Format, path: Path, head: bytes) -> bool:
    """Whether the file states rules (see the module docstring), not runs."""
    finder = getattr(fmt, "declares", None)
    return bool(finder(path, head[:4096])) if finder else False


def rules(fmt: Format, path: Path, data: bytes) -> dict[str, AgentRules] | None:
    """The rules a file `declares`; a file that cannot be read is an InputFormatError."""
    reader = getattr(fmt, "rules")  # noqa: B009
    try:
        found: dict[str, AgentRules] | None = reader(path, data)
    except InputFormatError:
        raise
    except (ValueError, UnicodeError, RecursionError, OverflowError) as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputFormatError(str(path), f"cannot be read as {fmt.NAME}: {why}") from e
    return found


def detect(path: Path, data: bytes) -> Format:
    head = data[:4096]
    for name in NAMES:
        fmt = load(name)
        if fmt.detect(path, head) or declares(fmt, path, head):
            return fmt
    part = owner(path)
    if part is not None:
        raise PartOfResultError(
            str(path), f"part of {part.what}", primary=str(part.primary), target=str(part.target)
        )
    raise UnknownFormatError(
        str(path), f"not a known result format (known: {', '.join(sorted(NAMES))})"
    )


def by_name(name: str) -> Format:
    if name not in NAMES:
        raise InputFormatError(
            "--format", f"unknown format '{name}' (known: {', '.join(sorted(NAMES))})"
        )
    return load(name)
