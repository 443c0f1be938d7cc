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
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from eventsourcing.sqlite import SQLiteApplicationRecorder

from benchledger.adapters.store import forked
from benchledger.adapters.store.readonly import ReadOnlyRecorder
from benchledger.domain.errors import LedgerError
from benchledger.projections.base import Envelope, Params, Projection, group_changes

# Fewer events than this are folded in process: forking would cost more than it saves.
FOLD_AHEAD_EVENTS = 20_000


@dataclass(frozen=True)
class FoldedPage:
    """A page of events folded: how many, the last one's position, and per projection
    that had events in it, its last event's position and its statements (with table
    placeholders, in order, consecutive equal statements as one batch)."""

    count: int
    last: int
    changes: list[tuple[str, int, list[tuple[str, list[Params]]]]]


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
    envelope: Any,
    page_size: int,
    projections: Sequence[Projection],
    names: dict[str, dict[str, str]],
    positions: dict[str, int],
    read_models: str,
) -> Iterator[FoldedPage]:
    """Every event after each projection's position folded in a child, page by page
    (`envelope`: how the runner wraps a notification). `names`: each projection's
    tables; `read_models`: the file they are in."""
    source = events_file(recorder)
    assert source is not None

    def fold() -> Iterator[FoldedPage]:
        events = ReadOnlyRecorder(sqlite3.connect(f"file:{source}?mode=ro", uri=True))
        models = sqlite3.connect(f"file:{read_models}?mode=ro", uri=True)

        def read(sql: str, params: Sequence[Any] = ()) -> Any:
            return models.execute(sql, params).fetchone()

        prepared: set[str] = set()
        after = min(positions[p.name] for p in projections)
        while notes := events.select_notifications(after, page_size, inclusive_of_start=False):
            envelopes = [envelope(n) for n in notes]
            changes = []
            for p in projections:
                todo = [e for e in envelopes if e.position > positions[p.name]]
                if todo:
                    changes.append(
                        (p.name, todo[-1].position, _folded(p, todo, prepared, read, names))
                    )
            yield FoldedPage(len(envelopes), notes[-1].id, changes)
            after = notes[-1].id

    return forked.forked(
        fold,
        batch=lambda waiting, page: True,
        died=lambda: LedgerError("the process folding the events ended before the log did"),
        unportable=lambda e: LedgerError(f"folding the events failed: {type(e).__name__}: {e}"),
    )


def _folded(
    projection: Projection,
    envelopes: list[Envelope],
    prepared: set[str],
    read: Any,
    names: dict[str, dict[str, str]],
) -> list[tuple[str, list[Params]]]:
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
