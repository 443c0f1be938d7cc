"""A large file parsed in a child process while the import appends what it has read.

Parsing a file and appending its events are each about half of an import: with the
parse in a forked child (`forked`), sending the records it reads a batch at a time, the
two overlap. The child parses (`formats.read`); this process derives what importing
a run needs of it alone (content hash, signatures, masked config) as it appends them.
Measured on 50k orchestrator rows: with the checks and the derivation in the child,
it was the slower half (12.4 s of CPU against 7.3 here; 13.1 s of wall for the file);
with both here, about 6.7 s there and 8 here, 8.5 to 9.2 s of wall. So the check
against the limits is shared (`forked`'s spare work): the child checks what it sends
while the parent is behind, else the parent checks what it receives. The check
serializes a run's header, which its content hash then reuses (sent with the record
when the child checked it).
Nothing else changes: the records are the ones the format yields (pickled whole), in
order, and the parent appends them inside the file's one transaction.

A format that reads a file as units that parse on their own (an orchestrator.sqlite's
rows) goes further (`units_ahead`): the child sends the units as plain data for the
parent to parse while the parent keeps up, and parses a batch itself (making its new
runs into their stored events, `Importing.prepare`) while the parent is behind. No
record crosses the pipe, whose pickling cost both processes more than parsing the
units again did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from benchledger.adapters.store import forked
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import GroupRecord, RunRecord, SkipRecord

Parsed = RunRecord | SkipRecord | GroupRecord
U = TypeVar("U")

# Files smaller than this are parsed in process: forking would cost more than it saves.
READ_AHEAD_BYTES = 8 << 20
# Records sent at a time: few enough that the parent starts early, and a batch of a
# native file's large runs is cut short by its cells.
BATCH_RECORDS = 50
BATCH_WEIGHT = 5_000


def can_read_ahead() -> bool:
    return forked.can_fork()


def read_ahead(
    produce: Callable[[], Iterable[Parsed]],
    name: str,
    check: Callable[[Parsed, int], None] | None = None,
) -> Iterator[Parsed]:
    """What `produce()` yields, parsed in a child process (in this one when it cannot
    fork), each record passed by `check(record, index)`: in the child when it is ahead,
    else here (`forked`'s spare work). `name`: the file, named by an error the child
    cannot send as it is."""

    def checked(record: Parsed, index: int) -> Parsed:
        if check is not None:
            check(record, index)
        return record

    weight = 0

    def batch(waiting: list[Parsed], record: Parsed) -> bool:
        nonlocal weight
        if isinstance(record, RunRecord):
            weight += len(record.cells) + len(record.turns)
        if len(waiting) < BATCH_RECORDS and weight < BATCH_WEIGHT:
            return False
        weight = 0
        return True

    yield from _ahead(produce, name, batch, checked if check is not None else None)


def units_ahead(
    produce: Callable[[], Iterable[U]],
    name: str,
    finish: Callable[[U, int], Any],
    finish_ahead: Callable[[list[U], int], list[Any]],
    weight: Callable[[U], int],
) -> Iterator[Any]:
    """What `finish(unit, index)` makes of each unit `produce()` yields (None: nothing),
    the units read in a child process as plain data (`marshal`), and finished in
    whichever process has time: here by `finish`, in the child by `finish_ahead` (a
    batch at a time, which may make more of them than `finish`: what saves this process
    the most work). `index`: how many were yielded before."""
    held = 0

    def batch(waiting: list[U], unit: U) -> bool:
        nonlocal held
        held += weight(unit)
        if len(waiting) < BATCH_RECORDS and held < BATCH_WEIGHT:
            return False
        held = 0
        return True

    yield from _ahead(produce, name, batch, finish, finish_ahead, plain=True)


def _ahead(
    produce: Callable[[], Iterable[Any]],
    name: str,
    batch: Callable[[list[Any], Any], bool],
    spare: Callable[[Any, int], Any] | None,
    ahead: Callable[[list[Any], int], list[Any]] | None = None,
    plain: bool = False,
) -> Iterator[Any]:
    if not can_read_ahead():
        count = 0
        for item in produce():
            done = spare(item, count) if spare is not None else item
            if done is not None:
                count += 1
                yield done
        return
    yield from forked.forked(
        produce,
        batch=batch,
        died=lambda: InputFormatError(name, "its reader process ended before the file"),
        unportable=lambda e: InputFormatError(name, f"cannot be read: {type(e).__name__}: {e}"),
        plain=plain,
        spare=spare,
        ahead=ahead,
    )
