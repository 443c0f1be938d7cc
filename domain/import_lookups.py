"""An import asks the event store which of a batch of runs are new in one query, and reads
the events of those recorded already (to compare with them) in another, instead of
lookups per run (group, skip) against a table that grows with every file."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple, cast
from uuid import UUID

from benchledger.domain.base import Event
from benchledger.domain.ledger_base import LedgerBase
from benchledger.domain.records import GroupRecord, RunRecord, SkipRecord
from benchledger.domain.run_group import source_group_id
from benchledger.domain.signatures import natural_id, run_id_for

Parsed = RunRecord | SkipRecord | GroupRecord

# Records read ahead at a time; fewer when their cells are many (memory holds a batch).
LOOKAHEAD = 500
LOOKAHEAD_CELLS = 5_000


class UnchangedRow(NamedTuple):
    """A source row the ledger holds as it is, not read again: the run its key names
    holds one event, made of this very row, or (`run_id` empty) the skip it states was
    noted from this very row (`Importing.unchanged_rows`). Two plain values, so that it
    crosses between processes as a run made into its events does (`PreparedRun`, a
    longer tuple)."""

    run_key: str
    run_id: bytes


def is_unchanged_row(item: object) -> bool:
    return isinstance(item, tuple) and len(item) == len(UnchangedRow._fields)


def stream_id(system: str, item: Parsed | tuple[Any, ...]) -> UUID | None:
    """The stream whose first event says whether the item is recorded already (None: an
    item that needs no lookup)."""
    if isinstance(item, tuple):
        if is_unchanged_row(item):
            return None
        return UUID(bytes=item[1])  # a run made into its events: `PreparedRun.run_id`
    if isinstance(item, RunRecord):
        return run_id_for(system, item.header.natural_key())
    if isinstance(item, GroupRecord):
        return source_group_id(system, item.group_key)
    if item.skip_key is not None:
        return natural_id("skip", system, item.skip_key)
    return None


# `str(uuid)`'s length: what no other key can be equal to.
UUID_TEXT_LENGTH = 36


def own_run_id(run_key: str) -> UUID | None:
    """The id of a run of this ledger that a key may be: the key of a row this ledger
    exported is its run's id (`Importing._own_run`)."""
    if len(run_key) != UUID_TEXT_LENGTH:  # most keys: not one, told without parsing
        return None
    try:
        run_id = UUID(run_key)
    except ValueError:
        return None
    return run_id if str(run_id) == run_key else None


class LookupsAhead(LedgerBase):
    def _looked_up(self, system: str, items: Iterable[Parsed]) -> Iterator[Parsed]:
        """`items`, read a batch ahead: the batch's streams that hold no events are known
        before the first of them is yielded, and the events of those of its runs, source
        groups and skips that are recorded already are read (`_ahead`). Like one lookup
        each, this sees what is committed (an append of this import is not, until it
        commits; a stream it appends to is read from the store again). Only while
        appending together, which forgets what it learnt when it ends."""
        present = self.streams_present
        if present is None:
            yield from items
            return
        read = self.stream_events
        for batch in _batches(items):
            # The streams whose first event says whether an item is recorded: runs,
            # source groups and skips' notes, all short (`streams.stream_events`).
            ids = {i for i in (stream_id(system, item) for item in batch) if i is not None}
            # Keys that may name runs of this ledger: looked up with the batch, not one
            # each (their streams, executed here, are read as they were).
            owned = {
                i
                for item in batch
                if isinstance(item, RunRecord)
                and (i := own_run_id(item.header.natural_key())) is not None
            }
            found = present(list(ids | owned))
            self._absent = (ids | owned) - found
            recorded = sorted(ids & found)
            if read is not None and recorded:
                decode = self.mapper.to_domain_event
                self._ahead = {
                    stream: [cast(Event, decode(stored)) for stored in held]
                    for stream, held in read(recorded).items()
                }
            else:
                self._ahead = None
            yield from batch


def _batches(items: Iterable[Parsed]) -> Iterator[list[Parsed]]:
    batch: list[Parsed] = []
    cells = 0
    for item in items:
        batch.append(item)
        cells += len(item.cells) if isinstance(item, RunRecord) else 0
        if len(batch) >= LOOKAHEAD or cells >= LOOKAHEAD_CELLS:
            yield batch
            batch, cells = [], 0
    if batch:
        yield batch
