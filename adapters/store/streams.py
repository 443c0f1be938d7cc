"""Which of many streams hold events, and what those events are, asked of the event store
in one query per chunk: an import knows ahead which of a batch of runs are new, and reads
the recorded ones it compares with, instead of one lookup each (within a byte budget:
what a batch reads ahead never grows with what the ledger holds)."""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder

Present = Callable[[Sequence[UUID]], set[UUID]]
# Every stored event of those given streams that fit the budget, in stream order.
Read = Callable[[Sequence[UUID]], dict[UUID, list[StoredEvent]]]
# Ids per statement: far below SQLite's limit of bound parameters (999 in old builds).
CHUNK = 500
# The stored bytes one read returns at most (decoded, they take a few times that). The
# batch is bounded by what the file states; a recorded run may hold far more (a file of
# run lines restating runs recorded with thousands of cells each): such streams are left
# to be read one by one, as a read run by run does.
READ_BYTES = 16 << 20


def present_streams(recorder: Any) -> Present | None:
    """A function giving which of the given streams have a first event, as committed
    (what `events.get(id, lte=1)` sees), or None for a store without one."""
    select = _selector(recorder)
    return None if select is None else partial(_present, select)


def present_streams_forked(recorder: Any) -> Present | None:
    """`present_streams` for a process forked from this one (`Importing.prepare`): it
    asks through a read-only connection of its own, opened in the process that first
    asks (a connection is never shared across a fork), and sees what is committed.
    None where there is none to open: a store in memory, or PostgreSQL (whose lookups
    stay in the importing process)."""
    select = _forked_selector(recorder)
    return None if select is None else partial(_present, select)


def _forked_selector(recorder: Any) -> Select | None:
    """A `Select` for a process forked from this one (see `present_streams_forked`)."""
    if not isinstance(recorder, SQLiteApplicationRecorder):
        return None
    pool = recorder.datastore.pool
    if pool.is_sqlite_memory_mode:
        return None
    uri, table = f"{Path(pool.db_name).resolve().as_uri()}?mode=ro", recorder.events_table_name
    opened: dict[int, sqlite3.Connection] = {}

    def select(ids: Sequence[UUID], columns: str, rest: str) -> Iterator[Sequence[Any]]:
        conn = opened.get(os.getpid())
        if conn is None:
            opened.clear()  # another process's: left as it is
            conn = opened[os.getpid()] = sqlite3.connect(uri, uri=True, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA busy_timeout=60000")
        with closing(conn.cursor()) as cursor:
            yield from _sqlite_chunks(cursor, table, ids, columns, rest)

    return select


# The streams of those given that hold one event, with its topic and the last
# `STATE_TAIL` bytes of its stored state.
Sole = Callable[[Sequence[UUID]], dict[UUID, tuple[str, bytes]]]
# What `Sole` reads of an event's stored state: its end, where an import finds the digest
# of the row the event was read from (`Importing.unchanged_rows`: at most 87 bytes). Not
# the whole text: a run's event holds its trajectory turns, and a re-import of a grown
# 50,000-row orchestrator database read 200 MiB of them to compare 87 bytes each.
STATE_TAIL = 128
# That end as each store's SQL takes it from the stored bytes (its whole text when
# shorter): SQLite's `substr` counts a negative start from the end, PostgreSQL's from 1.
_SQLITE_TAIL = f"substr(state, -{STATE_TAIL})"
_POSTGRES_TAIL = f"substring(state FROM greatest(octet_length(state) - {STATE_TAIL - 1}, 1))"


def sole_events(recorder: Any) -> Sole | None:
    """A function giving, of the given streams, those whose only committed event is their
    first, each with that event's topic and the end of its stored state (`STATE_TAIL`
    bytes: what an import needs to tell a source row recorded as it is,
    `Importing.unchanged_rows`), in one query per chunk; None for a store without one."""
    select = _selector(recorder)
    if select is None:
        return None
    tail = _SQLITE_TAIL if isinstance(recorder, SQLiteApplicationRecorder) else _POSTGRES_TAIL
    return partial(_sole, select, tail)


def sole_events_forked(recorder: Any) -> Sole | None:
    """`sole_events` for a process forked from this one, through a read-only connection of
    its own (`present_streams_forked`); None where there is none to open."""
    select = _forked_selector(recorder)
    if select is None:
        return None

    def sole(ids: Sequence[UUID]) -> dict[UUID, tuple[str, bytes]]:
        try:
            return _sole(select, _SQLITE_TAIL, ids)
        except sqlite3.Error:  # busy past its timeout: those rows are read, as before
            return {}

    return sole


def _sole(select: Select, tail: str, ids: Sequence[UUID]) -> dict[UUID, tuple[str, bytes]]:
    """`Sole`, `tail` the store's SQL for the end of an event's state (`STATE_TAIL`)."""
    first: dict[UUID, tuple[str, bytes]] = {}
    later: set[UUID] = set()
    columns = (
        "originator_id, originator_version, topic, "
        f"CASE WHEN originator_version = 1 THEN {tail} END AS state"
    )
    for rows in select(ids, columns, "AND originator_version <= 2"):
        for row in rows:
            oid = row["originator_id"]
            stream = oid if isinstance(oid, UUID) else UUID(str(oid))
            if row["originator_version"] == 1:
                state = row["state"]  # SQLite's substr of an empty blob is NULL
                first[stream] = (row["topic"], b"" if state is None else bytes(state))
            else:
                later.add(stream)
    return {stream: event for stream, event in first.items() if stream not in later}


def _present(select: Select, ids: Sequence[UUID]) -> set[UUID]:
    found: set[UUID] = set()
    for rows in select(ids, "originator_id", "AND originator_version <= 1"):
        found.update(UUID(str(row["originator_id"])) for row in rows)
    return found


def stream_events(recorder: Any) -> Read | None:
    """A function giving every committed event of the given streams (what
    `events.get(id)` reads for each), as stored, or None for a store without one. Each
    stream is read whole, and only streams that fit `READ_BYTES` together are (in the
    order given); the others are left out, for the caller to read on its own. Meant for
    short streams (runs, a source's run groups, skips' notes), not an import group's
    thousands of skips."""
    select = _selector(recorder)
    if select is None:
        return None

    def read(ids: Sequence[UUID]) -> dict[UUID, list[StoredEvent]]:
        found: dict[UUID, list[StoredEvent]] = {}
        within = _within(select, ids, READ_BYTES)
        columns = "originator_id, originator_version, topic, state"
        for rows in select(within, columns, "ORDER BY originator_id, originator_version"):
            _collect(found, rows)
        return found

    return read


def _within(select: Select, ids: Sequence[UUID], budget: int) -> list[UUID]:
    """Those of `ids` whose stored events fit `budget` bytes together, in order (a stream
    too large is passed over, and smaller ones after it may still fit)."""
    sizes: dict[UUID, int] = {}
    for rows in select(ids, "originator_id, sum(length(state)) AS size", "GROUP BY 1"):
        sizes.update((UUID(str(row["originator_id"])), int(row["size"])) for row in rows)
    within: list[UUID] = []
    for stream in ids:
        size = sizes.get(stream)
        if size is not None and size <= budget:
            within.append(stream)
            budget -= size
    return within


# `select(ids, columns, rest)`: per chunk of ids, the rows of `SELECT columns FROM
# <events> WHERE originator_id IN <chunk> rest`, read by column name (sqlite3.Row,
# psycopg's dict rows), in one read transaction.
Select = Callable[[Sequence[UUID], str, str], Iterator[Sequence[Any]]]


def _selector(recorder: Any) -> Select | None:
    if isinstance(recorder, SQLiteApplicationRecorder):
        return partial(_sqlite, recorder)
    postgres = sys.modules.get("eventsourcing.postgres")  # loaded only when it is used
    if postgres is not None and isinstance(recorder, postgres.PostgresApplicationRecorder):
        return partial(_postgres, recorder)
    return None


def _chunks(ids: Sequence[UUID]) -> list[Sequence[UUID]]:
    return [ids[i : i + CHUNK] for i in range(0, len(ids), CHUNK)]


def _sqlite(
    recorder: SQLiteApplicationRecorder, ids: Sequence[UUID], columns: str, rest: str
) -> Iterator[Sequence[Any]]:
    with recorder.datastore.transaction(commit=False) as cursor:
        yield from _sqlite_chunks(cursor, recorder.events_table_name, ids, columns, rest)


def _sqlite_chunks(
    cursor: Any, table: str, ids: Sequence[UUID], columns: str, rest: str
) -> Iterator[Sequence[Any]]:
    for chunk in _chunks(ids):
        marks = ",".join("?" * len(chunk))
        cursor.execute(
            f"SELECT {columns} FROM {table} WHERE originator_id IN ({marks}) {rest}",
            [i.hex for i in chunk],  # stored as the recorder stores them
        )
        yield cursor.fetchall()


def _postgres(recorder: Any, ids: Sequence[UUID], columns: str, rest: str) -> Iterator[Any]:
    from psycopg.sql import SQL, Identifier

    statement = SQL(
        f"SELECT {columns} FROM {{schema}}.{{table}} WHERE originator_id = ANY(%s) {rest}"
    ).format(
        schema=Identifier(recorder.datastore.schema),
        table=Identifier(recorder.events_table_name),
    )
    textual = recorder.datastore.originator_id_type != "uuid"
    with recorder.datastore.transaction(commit=False) as cursor:
        for chunk in _chunks(ids):
            cursor.execute(statement, [[str(i) for i in chunk] if textual else list(chunk)])
            yield cursor.fetchall()


def _collect(found: dict[UUID, list[StoredEvent]], rows: Sequence[Any]) -> None:
    """Rows of stored events, sorted by stream and version, into `found`."""
    held, stream = "", UUID(int=0)
    events: list[StoredEvent] = []
    for row in rows:
        oid = row["originator_id"]
        if str(oid) != held:
            held = str(oid)
            stream = oid if isinstance(oid, UUID) else UUID(held)
            events = found.setdefault(stream, [])
        events.append(
            StoredEvent(
                originator_id=stream,
                originator_version=row["originator_version"],
                topic=row["topic"],
                state=bytes(row["state"]),
            )
        )
