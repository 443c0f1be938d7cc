"""One event-store transaction spanning many saves: how a file is appended atomically
while it is streamed (see docs/architecture.md, "Streaming imports")."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from eventsourcing.persistence import IntegrityError, StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder

Insert = Callable[..., Sequence[int] | None]


def spanning(recorder: Any) -> Callable[[], AbstractContextManager[None]] | None:
    """A factory of transactions for this recorder: every `save()` inside one goes to a
    single database transaction, committed when the block ends and rolled back (by the
    database itself, when the process dies) otherwise. None for a store without one
    (the ledger then holds a file's events and saves them once)."""
    if isinstance(recorder, SQLiteApplicationRecorder):
        return lambda: _sqlite(recorder)
    # Not imported here: loading psycopg would slow every command's start.
    postgres = sys.modules.get("eventsourcing.postgres")
    if postgres is not None and isinstance(recorder, postgres.PostgresApplicationRecorder):
        return lambda: _postgres(recorder)
    return None


@contextmanager
def _inserting(recorder: Any, insert: Insert) -> Iterator[None]:
    if "insert_events" in vars(recorder):
        raise RuntimeError("an event-store transaction is already open")
    recorder.insert_events = insert
    try:
        yield
    finally:
        del recorder.insert_events


@contextmanager
def _sqlite(recorder: SQLiteApplicationRecorder) -> Iterator[None]:
    # The datastore's own transaction: BEGIN now, COMMIT on success, ROLLBACK on error.
    with recorder.datastore.transaction(commit=True) as cursor:

        def insert(stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
            try:
                return recorder._insert_events(cursor, stored_events, **kwargs)
            except sqlite3.IntegrityError as e:
                raise IntegrityError(e) from e

        with _inserting(recorder, insert):
            yield


@contextmanager
def _postgres(recorder: Any) -> Iterator[None]:
    import psycopg

    with recorder.datastore.get_connection() as conn, conn.transaction():

        def insert(stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
            if not stored_events:
                return []
            try:
                with conn.cursor() as cursor:
                    # Takes the table lock (kept until commit) and notifies listeners.
                    recorder._insert_stored_events(cursor, stored_events, **kwargs)
                    ids: Sequence[int] | None = recorder._fetch_ids_after_insert_events(
                        cursor, stored_events, **kwargs
                    )
                    return ids
            except psycopg.IntegrityError as e:
                raise IntegrityError(e) from e

        with _inserting(recorder, insert):
            yield
