"""Imports result files: find, read, detect, parse, then append each file atomically.

A file that is not a result (no format reads it, or it is a pipe, device or broken link)
is `ignored` with the same message whether it was named or found in a directory. So is a
file that is part of a result read through another file: it says which run it is a
member of when that file was imported in the same import (`explain_members`), else what
to import instead. Only a result file that cannot be read is `failed`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Literal

from benchledger.adapters import formats
from benchledger.adapters.formats import Parsed, limits
from benchledger.adapters.formats.common import (
    Units,
    identity,
    open_regular,
    read_bytes,
    read_head,
)
from benchledger.adapters.store import read_ahead
from benchledger.adapters.store.hotpath import gc_paused
from benchledger.domain.errors import (
    CellConflictError,
    ImportConflictError,
    InputFormatError,
    LedgerError,
    NotRegularFileError,
    PartOfResultError,
    UnknownFormatError,
)
from benchledger.domain.import_lookups import is_unchanged_row
from benchledger.domain.import_outcomes import run_id_texts, state_counts
from benchledger.domain.ledger import GroupHandle, Ledger
from benchledger.domain.records import SourceFile

FileState = Literal["imported", "amended", "unchanged", "conflict", "failed", "ignored"]

# Why a file was ignored (the import summary counts them).
NOT_A_RESULT = "not a result file"
# Units of a file asked at a time whether they are recorded as they are (one query).
UNCHANGED_BATCH = 500
PART_OF_RESULT = "part of a result"
MEMBER_OF_RUN = "member of an imported run"


@dataclass(frozen=True)
class FileReport:
    path: str
    state: FileState
    format: str | None = None
    runs: int = 0
    new_runs: int = 0
    # Runs recorded already to which the file added facts it states beyond them.
    merged_runs: int = 0
    message: str | None = None
    # The runs the file's content is recorded in: its own, or (a member) its result's.
    run_ids: tuple[str, ...] = field(default=())
    # A part of a result: the file the result is read through.
    member_of: str | None = None
    reason: str | None = None
    # The other files a result read through this file is made of (not reported).
    members: tuple[Path, ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class Found:
    path: Path
    explicit: bool  # named by the user, not found by walking a directory
    name: str  # how the ledger records it: never a host path


def discover(paths: Iterable[Path]) -> Iterator[Found]:
    """Files as given (explicit), and every non-hidden entry under each directory that is
    not a directory itself: pipes, devices and broken links too, so the import can say
    why it skipped them (links to directories are not followed)."""
    for path in paths:
        if path.is_dir():
            bases: list[Path] | None = None  # resolved once per directory, not per file
            folders: dict[Path, Path] = {}  # each folder of the walk resolved once
            for child in sorted(path.rglob("*")):
                rel = child.relative_to(path)
                if not child.is_dir() and not any(p.startswith(".") for p in rel.parts):
                    bases = bases or _bases(path)
                    yield Found(child, False, _display(child, bases, folders))
        elif path.exists() or path.is_symlink():
            yield Found(path, True, display_path(path))
        else:
            raise InputFormatError(shown_name(str(path)), "no such file or directory")


def display_path(path: Path, root: Path | None = None) -> str:
    """No host paths in the ledger: relative to the working directory when under it, else
    to the folder above the directory being imported, else just the file name."""
    return _display(path, _bases(root))


def _bases(root: Path | None) -> list[Path]:
    """What `display_path` names a file relative to, first that applies, resolved."""
    return [Path.cwd().resolve(), *([root.resolve().parent] if root else [])]


def _display(path: Path, bases: list[Path], folders: dict[Path, Path] | None = None) -> str:
    """`folders`: folders resolved already, for the files of a walk (`in_folder`)."""
    try:
        if folders is not None and not path.is_symlink():
            resolved = in_folder(path, folders)
        else:
            # A broken link or a loop is named as itself, not as the file it points to.
            resolved = path.resolve() if path.exists() else path.parent.resolve() / path.name
    except (OSError, RuntimeError):  # a symlink loop: name it as given
        resolved = path.absolute()
    for base in bases:
        try:
            return resolved.relative_to(base).as_posix()
        except ValueError:
            continue
    return path.name


def shown_name(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (held as surrogate escapes, as
    `os.fsdecode` gives them) shown escaped (`\\xff`)."""
    if _valid_name(name):
        return name
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _valid_name(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _undecodable(name: str) -> FileReport:
    """A file whose name is not UTF-8: the ledger could not record where a run came
    from, so it is not read; the import goes on with the other files."""
    shown = shown_name(name)
    message = f"{shown}: the file name is not valid UTF-8 (shown with its bytes escaped); not read"
    return FileReport(shown, "failed", message=message)


def file_sha256(path: Path) -> tuple[hashlib._Hash, int]:
    """The running sha256 of a file's bytes and their count, read in pieces: a streamed
    import knows the file's identity before it appends anything."""
    digest = hashlib.sha256()
    return digest, _hash_into(digest, path)


def _hash_into(digest: hashlib._Hash, path: Path) -> int:
    """Add a file's bytes to `digest`, a MiB at a time, within the file-size limit;
    return their count."""
    size, cap = 0, limits.current().file_size
    with open_regular(path) as f:
        while chunk := f.read(1 << 20):
            size += len(chunk)
            if size > cap:  # it grew while being read
                raise limits.exceeded(str(path), "the file", "file_size")
            digest.update(chunk)
    return size


def in_folder(path: Path, folders: dict[Path, Path]) -> Path:
    """`path.resolve()` for a path that is no symbolic link itself: its name inside its
    folder resolved, each folder resolved once (`folders`). Resolving a path resolves
    every folder above it, a system call each; the files of a walk share their folders."""
    folder = folders.get(path.parent)
    if folder is None:
        folder = folders[path.parent] = path.parent.resolve()
    return folder / path.name


def _resolved(path: Path, folders: dict[Path, Path]) -> Path:
    try:
        if path.name not in ("", ".", "..") and not path.is_symlink():
            return in_folder(path, folders)
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: it is no member of anything
        return path.absolute()


def explain_members(found: Sequence[Found], reports: Sequence[FileReport]) -> list[FileReport]:
    """`reports` (one per found file), where an ignored file is a member of a result read
    through another file of the same import: said to be a member of that file's runs, or,
    when that file was not imported, part of the result it failed to record."""
    owners: dict[Path, FileReport] = {}
    folders: dict[Path, Path] = {}
    for report in reports:
        for member in report.members:
            owners.setdefault(_resolved(member, folders), report)
    explained = []
    for item, report in zip(found, reports, strict=True):
        ignored = report.state == "ignored"
        primary = owners.get(_resolved(item.path, folders)) if ignored else None
        if primary is None or primary is report:
            explained.append(report)
        elif primary.run_ids:
            ids = ", ".join(run_id[:8] for run_id in primary.run_ids)
            runs = "runs" if len(primary.run_ids) > 1 else "run"
            through = f"(read through {primary.path})"
            message = f"{report.path}: member of imported {runs} {ids} {through}"
            explained.append(
                replace(
                    report,
                    message=message,
                    reason=MEMBER_OF_RUN,
                    member_of=primary.path,
                    run_ids=primary.run_ids,
                )
            )
        else:
            why = "conflicts with the ledger" if primary.state == "conflict" else primary.state
            message = f"{report.path}: part of the result read through {primary.path}, which {why}"
            explained.append(
                replace(report, message=message, reason=PART_OF_RESULT, member_of=primary.path)
            )
    return explained


def _part_of_result(
    name: str, e: PartOfResultError, named: dict[tuple[str, str], tuple[str, str]]
) -> FileReport:
    """`named`: the names of the results reported so far (a result read through one file
    has as many parts as its run has instances, each reported with the same names)."""
    key = (e.primary, e.target)
    if key not in named:
        primary, target = Path(e.primary), Path(e.target)
        # Named from the folder that holds the result, as a directory import would name it.
        folder = target.is_dir()
        primary_name = display_path(primary, target if folder else None)
        named[key] = (
            primary_name,
            (f"its folder {display_path(target)}" if folder else display_path(target)),
        )
    primary_name, whole = named[key]
    through = f" (read through {primary_name})" if Path(e.target) != Path(e.primary) else ""
    return FileReport(
        name,
        "ignored",
        message=f"{name}: {e.message}: import {whole}{through}",
        member_of=primary_name,
        reason=PART_OF_RESULT,
    )


class Importer:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        # The names of each result its parts were reported part of (`_part_of_result`).
        self._named: dict[tuple[str, str], tuple[str, str]] = {}

    def _declare(self, fmt: formats.Format, path: Path, name: str, data: bytes) -> FileReport:
        """A file that states rules, not runs: its rules declared in one save (`imported`),
        or `unchanged` when the ledger holds them already; one without any is ignored."""
        found = formats.rules(fmt, path, data)
        if found is None:
            message = f"{name}: {NOT_A_RESULT}: states neither runs nor rules"
            return FileReport(name, "ignored", message=message, reason=NOT_A_RESULT)
        declared = self.ledger.declare_rules(found)
        return FileReport(
            name,
            "imported" if declared else "unchanged",
            fmt.NAME,
            message=f"{name}: declared the required agents of {declared} of "
            f"{len(found)} benchmarks",
        )

    def _units_ahead(
        self,
        fmt: formats.Format,
        path: Path,
        units: Units,
        source: SourceFile,
        group: GroupHandle | None,
    ) -> Iterator[Any]:
        """The records of a file read as units (`formats.units`): read in a child, each
        parsed and checked against the limits in whichever process has time. The child
        also makes the new runs of what it parses into their stored events
        (`Ledger.prepare`), which this process appends as they are: the part of an
        import that a record's trip between processes cost most of."""
        check = formats.checker(fmt, path)
        parse = units.parse
        prepare = self.ledger.prepare(fmt.SYSTEM, source, group)
        # Rows recorded as they are come as `UnchangedRow`s, not read again; not when
        # options fill what the file does not say (each run is then compared again).
        # Told a batch at a time where the units are read (the child, when there is
        # one), through a connection of that process's own; where the store has none
        # (PostgreSQL), only when they are read in this process, through its own.
        produce, weight = units.produce, units.weight
        if not source.options:
            ledger, system, reader = self.ledger, fmt.SYSTEM, os.getpid()
            anywhere = ledger.unchanged_rows(system, units.key, units.digest, forked=True)
            here = anywhere or ledger.unchanged_rows(system, units.key, units.digest)

            def produce() -> Iterator[Any]:
                tell = here if anywhere is not None or os.getpid() == reader else None
                if tell is None:
                    yield from units.produce()
                    return
                batch: list[Any] = []
                for unit in units.produce():
                    batch.append(unit)
                    if len(batch) >= UNCHANGED_BATCH:
                        yield from tell(batch)
                        batch = []
                if batch:
                    yield from tell(batch)

            def weight(unit: Any) -> int:
                return 0 if is_unchanged_row(unit) else units.weight(unit)

        def finish(unit: Any, index: int) -> Any:
            if is_unchanged_row(unit):
                return unit
            record = parse(unit)
            if record is not None:
                check(record, index)
            return record

        def finish_ahead(batch: list[Any], first: int) -> list[Any]:
            records: list[Any] = []
            for unit in batch:
                if is_unchanged_row(unit):
                    records.append(unit)
                elif (record := parse(unit)) is not None:
                    check(record, first + len(records))
                    records.append(record)
            return records if prepare is None else prepare(records)

        return read_ahead.units_ahead(produce, str(path), finish, finish_ahead, weight)

    def import_file(
        self,
        path: Path,
        *,
        group: GroupHandle | None,
        format_name: str | None = None,
        label: str | None = None,
        amend: bool = False,
        defaults: dict[str, str] | None = None,
    ) -> FileReport:
        """One file appended whole, or nothing of it. A file that is not a result, or is
        part of one read through another file, is `ignored` with the reason."""
        name = label or display_path(path)
        if not _valid_name(name):
            return _undecodable(name)
        fmt_label: str | None = None
        parts: list[Path] = []
        try:
            head = read_head(path)
            data = read_bytes(path) if head is None else None  # says why it is not a file
            sniffed = head if head is not None else data or b""
            fmt = formats.by_name(format_name) if format_name else formats.detect(path, sniffed)
            fmt_label = fmt.NAME
            if formats.declares(fmt, path, sniffed):
                return self._declare(fmt, path, name, data or read_bytes(path))
            if data is None and not formats.can_stream(fmt):
                data = read_bytes(path)
            if data is None:
                seen = os.stat(path)
                digest, size = file_sha256(path)
            else:
                digest, size = hashlib.sha256(data), len(data)
            parts = formats.members(fmt, path)
            for member in parts:
                # A multi-file result: any member changing makes it a new version.
                digest.update(b"\0" + member.name.encode() + b"\0")
                _hash_into(digest, member)
            seen_parts = [identity(os.stat(member)) for member in parts]
            given = dict(defaults or {})
            source = SourceFile(
                path=name, sha256=digest.hexdigest(), size=size, format=fmt.NAME, options=given
            )

            def read() -> Iterator[Parsed]:  # afresh for each attempt of the append
                units = formats.units(fmt, path) if size >= read_ahead.READ_AHEAD_BYTES else None
                if units is not None:  # read in a child, parsed in either process
                    yield from self._units_ahead(fmt, path, units, source, group)
                elif size >= read_ahead.READ_AHEAD_BYTES:  # parsed while it is appended
                    # Parsed in a child; checked against the limits there or here, by
                    # which process has time to spare (`read_ahead`).
                    parse = partial(formats.read, fmt, path, given)
                    check = formats.checker(fmt, path)
                    yield from read_ahead.read_ahead(parse, str(path), check)
                else:
                    yield from formats.stream(fmt, path, given)
                # The file was hashed in a first pass and parsed in a second one: a file
                # rewritten in between must not be recorded under the first pass's hash.
                # Raising here, before the file's transaction commits, appends nothing.
                # Its members too, as they are now: a write-ahead log that appeared counts.
                now_parts = formats.members(fmt, path)
                now = [identity(os.stat(p)) for p in (path, *now_parts)]
                if now_parts != parts or now != [identity(seen), *seen_parts]:
                    raise InputFormatError(
                        str(path), "changed while it was being imported; nothing was recorded"
                    )

            with gc_paused():
                records: list[Parsed] | Callable[[], Iterator[Parsed]] = read
                if data is not None:
                    records = formats.parse(fmt, path, data, given)
                    del data  # the records hold what is needed
                outcome = self.ledger.import_runs(
                    fmt.SYSTEM, source, records, group=group, amend=amend
                )
        except (ImportConflictError, CellConflictError) as e:
            return FileReport(name, "conflict", fmt_label, message=str(e), members=tuple(parts))
        except NotRegularFileError as e:
            if e.path != str(path):  # a file the result is made of, not the file itself
                return FileReport(name, "failed", fmt_label, message=str(e), members=tuple(parts))
            message = f"{name}: {NOT_A_RESULT}: {e.message}"
            return FileReport(name, "ignored", message=message, reason=NOT_A_RESULT)
        except PartOfResultError as e:
            return _part_of_result(name, e, self._named)
        except UnknownFormatError as e:
            message = f"{name}: {NOT_A_RESULT}: {e.message}"
            return FileReport(name, "ignored", message=message, reason=NOT_A_RESULT)
        except InputFormatError as e:
            return FileReport(name, "failed", fmt_label, message=str(e), members=tuple(parts))
        except OSError as e:
            message = f"{name}: {e.strerror}"
            return FileReport(name, "failed", fmt_label, message=message, members=tuple(parts))
        except LedgerError as e:
            return FileReport(name, "failed", fmt_label, message=str(e), members=tuple(parts))
        counts = state_counts(outcome.runs)
        return FileReport(
            name,
            "amended" if counts.get("amended") else outcome.state,
            fmt_label,
            runs=len(outcome.runs),
            new_runs=counts.get("imported", 0),
            merged_runs=counts.get("merged", 0),
            run_ids=run_id_texts(outcome.runs),
            members=tuple(parts),
        )
