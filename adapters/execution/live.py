"""Follows what a running benchmark writes, so its cells (and turns) are recorded as
they arrive.

Two kinds of file are followed under the run's output directory: its native JSONL
result (the registry's `result`, when its format is native and it names `.jsonl` or
`.ndjson` files), whose `type: cell` lines are its cells and `type: turn` lines the
turns of its trajectory, and the progress file the
registry's `progress` names, whose `type: cell` lines are cells too (its other lines,
progress of any kind, are passed over). Each file is read from where the last look
stopped, complete lines only: a last line still being written is read once its
newline is. A look reads a bounded amount, so memory does not grow with the cells.

What a benchmark writes is only ever read: a file that is replaced or shrinks is no
longer followed (its final result is read whole when the benchmark ends), and a bad
line of the result ends its following (the final reading names the line and field),
while a bad line of the progress file is a problem of the run.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from benchledger.adapters.execution.registry import BenchmarkSpec
from benchledger.adapters.formats.kept import check_kept
from benchledger.adapters.formats.native_common import field_error, strict_loads
from benchledger.adapters.formats.native_turns import RunTurns
from benchledger.domain.errors import InputFormatError, LedgerError
from benchledger.domain.executing import RunningRun
from benchledger.domain.ledger import Ledger
from benchledger.domain.ledger_base import CELL_BATCH
from benchledger.domain.records import Cell, Record, Turn

# How often the runner looks at the followed files while a benchmark runs.
LOOK_SECONDS = 0.5
# Bytes read from one file in one read; a look reads at most LOOK_READS of them.
READ_BYTES = 1 << 20
LOOK_READS = 16
LINES = (".jsonl", ".ndjson")
# Disagreeing cells kept to name in the run's error when it ends.
KEEP_DISAGREEING = 20
R = TypeVar("R", bound=Record)
# Cells handed to `record` at a time: one append (of events of CELL_BATCH cells each)
# and one catch-up, however fast the benchmark writes.
RECORD_CELLS = 10 * CELL_BATCH


@dataclass
class Tail:
    """One file followed by offset: each complete line is read once."""

    path: Path
    name: str  # as errors name it: relative to the run directory
    strict: bool  # a line that is neither a run nor a cell is an error
    offset: int = 0
    lineno: int = 0
    carry: bytes = b""  # the start of a line not ended yet
    identity: tuple[int, int] | None = None
    runs: int = 0  # run lines seen
    ended: bool = False
    turns: RunTurns = field(init=False)  # the result's turns so far (their default indexes)

    def __post_init__(self) -> None:
        self.turns = RunTurns(self.name)

    def lines(self) -> list[tuple[int, bytes]]:
        """The lines completed since the last call (at most READ_BYTES more of the file)."""
        if self.ended:
            return []
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            self.ended = True
            return []
        identity = (info.st_dev, info.st_ino)
        if self.identity is None:
            self.identity = identity
        replaced = identity != self.identity or not stat.S_ISREG(info.st_mode)
        if replaced or info.st_size < self.offset:
            self.ended = True
            return []
        if info.st_size == self.offset:
            return []
        with self.path.open("rb") as file:
            file.seek(self.offset)
            data = file.read(READ_BYTES)
        self.offset += len(data)
        data = self.carry + data
        end = data.rfind(b"\n")
        if end < 0:
            self.carry = data
            return []
        self.carry = data[end + 1 :]
        numbered = []
        for line in data[:end].split(b"\n"):
            self.lineno += 1
            numbered.append((self.lineno, line))
        return numbered

    def cell(self, lineno: int, line: bytes) -> Cell | Turn | None:
        """The cell or (result) turn a line states; None for a blank, run, (progress)
        other line, or a turn stated again."""
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputFormatError(self.name, f"not UTF-8 text ({e.reason})", line=lineno) from None
        if not text.strip():
            return None
        obj = strict_loads(self.name, text, lineno)
        if not isinstance(obj, dict):
            if not self.strict:
                return None
            raise InputFormatError(self.name, "expected a JSON object", line=lineno)
        kind = obj.pop("type", None)
        if kind == "turn" and self.strict:
            if self.runs == 0:
                raise InputFormatError(
                    self.name, "a turn line comes before any run line", line=lineno, field="type"
                )
            return self.turns.add(obj, line=lineno)
        if kind == "run" and self.strict:
            self.runs += 1
            if self.runs > 1:  # more than one run: the final reading refuses the file
                self.ended = True
            return None
        if kind != "cell":
            if not self.strict:
                return None
            raise InputFormatError(
                self.name,
                f"must be 'run', 'cell' or 'turn', not {kind!r}",
                line=lineno,
                field="type",
            )
        if self.strict and self.runs == 0:
            raise InputFormatError(
                self.name, "a cell line comes before any run line", line=lineno, field="type"
            )
        try:
            return Cell.model_validate(obj)
        except ValidationError as e:
            raise field_error(self.name, e, line=lineno) from None


@dataclass
class Follower:
    """The files of one running benchmark that hold its cells, and what became of them.

    `record` appends cells (at most RECORD_CELLS, in events of CELL_BATCH) and brings
    the read models up to date, `record_turns` the same for turns; `warn` reports what
    is not the run's problem but worth saying."""

    spec: BenchmarkSpec
    output_dir: Path
    run_dir: Path
    launched_at: float
    record: Callable[[Sequence[Cell]], None]
    warn: Callable[[str], None]
    record_turns: Callable[[Sequence[Turn]], None] = lambda turns: None
    tails: dict[Path, Tail] = field(default_factory=dict)
    # Bad lines of the progress file: the run's problems (its error when it ends).
    problems: list[str] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return self.spec.progress is not None or follows_result(self.spec)

    def look(self, *, drain: bool = False) -> None:
        """Record the cells written since the last look (everything written, if `drain`)."""
        self._find()
        for tail in self.tails.values():
            reads = 0
            while not tail.ended and (drain or reads < LOOK_READS):
                lines = tail.lines()
                reads += 1
                if not lines and (tail.ended or tail.offset >= _size(tail.path)):
                    break
                self._record(tail, lines)

    def _record(self, tail: Tail, lines: list[tuple[int, bytes]]) -> None:
        batch: list[Cell] = []
        turns: list[Turn] = []
        for lineno, line in lines:
            try:
                cell = tail.cell(lineno, line)
            except InputFormatError as e:
                tail.ended = True
                if tail.strict:
                    self.warn(f"{e}; its cells are read again when it ends")
                else:
                    self.problems.append(str(e))
                break
            if tail.ended:
                break
            if isinstance(cell, Turn):
                turns.append(cell)
                if len(turns) >= RECORD_CELLS:
                    self.record_turns(turns)
                    turns = []
            elif cell is not None:
                batch.append(cell)
                if len(batch) >= RECORD_CELLS:
                    self.record(batch)
                    batch = []
        if batch:
            self.record(batch)
        if turns:
            self.record_turns(turns)

    def _find(self) -> None:
        """Start following the result file (the first to appear) and the progress file."""
        wanted = []
        if follows_result(self.spec) and not any(t.strict for t in self.tails.values()):
            wanted.append((self.spec.result, True))
        if self.spec.progress is not None and not any(not t.strict for t in self.tails.values()):
            wanted.append((self.spec.progress, False))
        for pattern, strict in wanted:
            for path in self._written(pattern, strict):
                if path not in self.tails:
                    name = path.relative_to(self.run_dir).as_posix()
                    self.tails[path] = Tail(path, name, strict)
                break

    def _written(self, pattern: str, strict: bool) -> Iterator[Path]:
        for path in sorted(self.output_dir.glob(pattern)):
            if strict and path.suffix.lower() not in LINES:
                continue
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(info.st_mode) and info.st_mtime >= self.launched_at - 1:
                yield path


class _Cells(Record):
    """A batch of cells as the limits check them (`check_kept`)."""

    cells: tuple[Cell, ...]


class _Turns(Record):
    """A batch of turns as the limits check them (`check_kept`)."""

    turns: tuple[Turn, ...]


@dataclass
class LiveCells:
    """Records the cells a follower finds: scrubbed like the final result (`scrub`),
    within the limits, each append followed by a catch-up of the read models."""

    ledger: Ledger
    running: RunningRun
    scrub: Callable[[Any], Any]
    log: Callable[[str], None]
    caught_up: Callable[[], None]
    # Cells that stated a recorded key differently (the first KEEP_DISAGREEING).
    disagreeing: list[Cell] = field(default_factory=list)
    # Turns that stated a recorded place differently (the first KEEP_DISAGREEING).
    disagreeing_turns: list[Turn] = field(default_factory=list)

    def look(self, follower: Follower, *, drain: bool = False) -> None:
        try:
            follower.look(drain=drain)
        except (LedgerError, OSError, sqlite3.Error) as e:
            # A missed batch must not kill the benchmark: its final result states it again.
            self.log(f"warning: cells of run {self.running.run_key} not recorded: {e}")

    def record(self, cells: Sequence[Cell]) -> None:
        scrubbed = tuple(_scrubbed(c, self.scrub) for c in cells)
        check_kept(f"cells of run {self.running.run_key}", [_Cells(cells=scrubbed)])
        disagreeing = self.ledger.record_running_cells(self.running, scrubbed)
        self.disagreeing.extend(disagreeing[: max(KEEP_DISAGREEING - len(self.disagreeing), 0)])
        self.caught_up()

    def record_turns(self, turns: Sequence[Turn]) -> None:
        scrubbed = tuple(_scrubbed(t, self.scrub) for t in turns)
        check_kept(f"turns of run {self.running.run_key}", [_Turns(turns=scrubbed)])
        disagreeing = self.ledger.record_running_turns(self.running, scrubbed)
        room = max(KEEP_DISAGREEING - len(self.disagreeing_turns), 0)
        self.disagreeing_turns.extend(disagreeing[:room])
        self.caught_up()


def _scrubbed(item: R, scrub: Callable[[Any], Any]) -> R:
    dumped = item.model_dump(mode="json")
    scrubbed = scrub(dumped)
    return item if scrubbed == dumped else type(item).model_validate(scrubbed)


def follows_result(spec: BenchmarkSpec) -> bool:
    """Whether the result can be followed while it is written: native JSON Lines."""
    last = spec.result.rsplit("/", 1)[-1].lower()
    return spec.format == "native" and (last.endswith(LINES) or last.endswith("*"))


def _size(path: Path) -> int:
    try:
        return os.lstat(path).st_size
    except FileNotFoundError:
        return 0
