"""A catch-up of many events folded in a child process while this one writes the rows.

Folding events (reading, decoding, turning them into statements) and running the
statements are each about half of a catch-up. For a large one (a file of tens of
thousands of runs just imported, a rebuild) the folds run in a forked child (`forked`)
that reads the committed events through a connection of its own and sends each page's
statements; this process runs them in its transaction(s) as it would have, in the
same order, and records the same positions. The rows are the ones an in-process fold
writes: a projection's fold is pure, and the running state one keeps across pages
(the chain's head) lives in the projection, which the child prepares once, before its
first page, from the committed tables, as this process's transaction has written
nothing yet.

Running the statements leaves this process idle part of the time, so it folds a few
projections itself (`FOLDED_HERE`): it reads the events of each page the child sends
through a connection of its own (the same committed events), folds them as the child
would have and puts their statements where the child's would have been.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from eventsourcing.sqlite import SQLiteApplicationRecorder

from benchledger.adapters.store import forked
from benchledger.adapters.store.ledger_file import EVENT_TABLE
from benchledger.domain.errors import LedgerError
from benchledger.projections.base import Envelope, Params, Projection, group_changes

# Fewer events than this are folded in process: forking would cost more than it saves.
FOLD_AHEAD_EVENTS = 20_000

# The projections this process folds itself while the child folds the others. `events`
# needs no decode (`Envelope.head`), so a decode made for it alone is saved as well, and
# its rows, the largest (the events' text), are not sent through the pipe. Measured on a
# rebuild of 147k events (50k orchestrator rows): this process then spends about as
# much time folding and writing as the child spends folding, where before the child
# took a third longer than this process.
FOLDED_HERE = frozenset({"events", "chain"})

# A page of stored events as they are stored: position, stream (hex), version, topic, state.
Row = tuple[int, str, int, str, bytes]
Batches = list[tuple[str, list[Params]]]
Changes = list[tuple[str, int, Batches]]

ROWS = (
    "SELECT rowid, originator_id, originator_version, topic, state "
    f"FROM {EVENT_TABLE} WHERE rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?"
)
LAST_ROWID = 2**63 - 1


@dataclass(frozen=True)
class FoldedPage:
    """A page of events folded: how many, the last one's position, and per projection
    that had events in it, its last event's position and its statements (with table
    placeholders, in order, consecutive equal statements as one batch)."""

    count: int
    last: int
    changes: Changes


def events_file(recorder: Any) -> str | None:
    """The SQLite file holding the events, which a child can open on its own."""
    if isinstance(recorder, SQLiteApplicationRecorder):
        pool = recorder.datastore.pool
        if not pool.is_sqlite_memory_mode:
            return str(pool.db_name)
    return None


def can_fold_ahead(recorder: Any, events: int) -> bool:
    return (
        events > 0
        and events >= FOLD_AHEAD_EVENTS
        and events_file(recorder) is not None
        and forked.can_fork()
    )


def fold_ahead(
    recorder: Any,
    envelope: Callable[[int, str, int, str, bytes], Envelope],
    page_size: int,
    projections: Sequence[Projection],
    names: dict[str, dict[str, str]],
    positions: dict[str, int],
    read_models: str,
    *,
    here: Collection[str] = (),
    read: Any = None,
) -> Iterator[FoldedPage]:
    """Every event after each projection's position folded, page by page: the
    projections named in `here` in this process (prepared through `read`), the others
    in a child. `envelope`: how the runner wraps a stored row; `names`: each
    projection's tables; `read_models`: the file they are in."""
    source = events_file(recorder)
    assert source is not None
    ahead = [p for p in projections if p.name not in here]
    local = [p for p in projections if p.name in here]
    start = min(positions[p.name] for p in projections)

    def fold() -> Iterator[tuple[int, int, Changes]]:
        events = _events(source)
        models = sqlite3.connect(f"file:{read_models}?mode=ro", uri=True)

        def read_committed(sql: str, params: Sequence[Any] = ()) -> Any:
            return models.execute(sql, params).fetchone()

        prepared: set[str] = set()
        after = start
        while rows := events.execute(ROWS, (after, LAST_ROWID, page_size)).fetchall():
            envelopes = [envelope(*row) for row in rows]
            changes = _page(ahead, envelopes, positions, prepared, read_committed, names)
            yield len(rows), rows[-1][0], changes
            after = rows[-1][0]

    pages = forked.forked(
        fold,
        batch=lambda waiting, page: True,
        died=lambda: LedgerError("the process folding the events ended before the log did"),
        unportable=lambda e: LedgerError(f"folding the events failed: {type(e).__name__}: {e}"),
        plain=True,  # statements' parameters: tuples of text, numbers and None
    )
    if not local:
        return (FoldedPage(*page) for page in pages)
    return _folded_here(
        pages, source, envelope, page_size, projections, local, start, names, positions, read
    )


def _folded_here(
    pages: Iterator[tuple[int, int, Changes]],
    source: str,
    envelope: Callable[[int, str, int, str, bytes], Envelope],
    page_size: int,
    projections: Sequence[Projection],
    local: list[Projection],
    start: int,
    names: dict[str, dict[str, str]],
    positions: dict[str, int],
    read: Any,
) -> Iterator[FoldedPage]:
    """The child's pages with the `local` projections' changes folded here, from the
    same events (the child's page says which), each in its projection's place."""
    order = {p.name: i for i, p in enumerate(projections)}
    prepared: set[str] = set()
    after = start
    with closing(_events(source)) as events:
        try:
            for count, last, changes in pages:
                if any(positions[p.name] < last for p in local):
                    rows = events.execute(ROWS, (after, last, page_size)).fetchall()
                    if len(rows) != count or rows[-1][0] != last:  # committed: cannot change
                        raise LedgerError("the events folded ahead changed while being folded")
                    envelopes = [envelope(*row) for row in rows]
                    ours = _page(local, envelopes, positions, prepared, read, names)
                    if ours:
                        changes = sorted(changes + ours, key=lambda c: order[c[0]])
                yield FoldedPage(count, last, changes)
                after = last
        finally:
            close = getattr(pages, "close", None)
            if close is not None:
                close()  # the child stops, and is waited for


def _events(source: str) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{source}?mode=ro", uri=True)


def _page(
    projections: Sequence[Projection],
    envelopes: list[Envelope],
    positions: dict[str, int],
    prepared: set[str],
    read: Any,
    names: dict[str, dict[str, str]],
) -> Changes:
    """A page's changes for each projection that has events in it past its position."""
    changes = []
    for p in projections:
        todo = [e for e in envelopes if e.position > positions[p.name]]
        if todo:
            changes.append((p.name, todo[-1].position, _folded(p, todo, prepared, read, names)))
    return changes


def _folded(
    projection: Projection,
    envelopes: list[Envelope],
    prepared: set[str],
    read: Any,
    names: dict[str, dict[str, str]],
) -> Batches:
    """What `ReadModelStore.apply` would run for these events."""
    topics = projection.topics
    if topics is not None:
        envelopes = [e for e in envelopes if e.topic in topics]
    if not envelopes:
        return []
    if projection.name not in prepared:
        projection.prepare(read, names[projection.name])
        prepared.add(projection.name)
    folds = (c for envelope in envelopes for c in projection.fold(envelope))
    return [(sql, batch) for sql, batch in group_changes(folds) if batch]
