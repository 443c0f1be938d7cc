"""Which of many streams hold events, and what those events are, asked of the event store
in one query per chunk: an import knows ahead which of a batch of runs are new, and reads
the recorded ones it compares with, instead of one lookup each."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder

Present = Callable[[Sequence[UUID]], set[UUID]]
# Every stored event of each given stream that holds any, in stream order.
Read = Callable[[Sequence[UUID]], dict[UUID, list[StoredEvent]]]
# Ids per statement: far below SQLite's limit of bound parameters (999 in old builds).
CHUNK = 500


def present_streams(recorder: Any) -> Present | None:
    """A function giving which of the given streams have a first event, as committed
    (what `events.get(id, lte=1)` sees), or None for a store without one."""
    if isinstance(recorder, SQLiteApplicationRecorder):
        return lambda ids: _sqlite(recorder, ids)
    postgres = sys.modules.get("eventsourcing.postgres")  # loaded only when it is used
    if postgres is not None and isinstance(recorder, postgres.PostgresApplicationRecorder):
        return lambda ids: _postgres(recorder, ids)
    return None


def stream_events(recorder: Any) -> Read | None:
    """A function giving every committed event of the given streams (what
    `events.get(id)` reads for each), as stored, or None for a store without one. Each
    stream is read whole: meant for short ones (runs, a source's run groups, skips'
    notes), not an import group's thousands of skips."""
    if isinstance(recorder, SQLiteApplicationRecorder):
        return lambda ids: _sqlite_events(recorder, ids)
    postgres = sys.modules.get("eventsourcing.postgres")
    if postgres is not None and isinstance(recorder, postgres.PostgresApplicationRecorder):
        return lambda ids: _postgres_events(recorder, ids)
    return None


def _chunks(ids: Sequence[UUID]) -> list[Sequence[UUID]]:
    return [ids[i : i + CHUNK] for i in range(0, len(ids), CHUNK)]


def _sqlite(recorder: SQLiteApplicationRecorder, ids: Sequence[UUID]) -> set[UUID]:
    found: set[UUID] = set()
    with recorder.datastore.transaction(commit=False) as cursor:
        for chunk in _chunks(ids):
            marks = ",".join("?" * len(chunk))
            cursor.execute(
                f"SELECT originator_id FROM {recorder.events_table_name} "
                f"WHERE originator_id IN ({marks}) AND originator_version <= 1",
                [i.hex for i in chunk],  # stored as the recorder stores them
            )
            found.update(UUID(row[0]) for row in cursor.fetchall())
    return found


def _sqlite_events(
    recorder: SQLiteApplicationRecorder, ids: Sequence[UUID]
) -> dict[UUID, list[StoredEvent]]:
    found: dict[UUID, list[StoredEvent]] = {}
    with recorder.datastore.transaction(commit=False) as cursor:
        for chunk in _chunks(ids):
            marks = ",".join("?" * len(chunk))
            cursor.execute(
                "SELECT originator_id, originator_version, topic, state "
                f"FROM {recorder.events_table_name} WHERE originator_id IN ({marks}) "
                "ORDER BY originator_id, originator_version",
                [i.hex for i in chunk],
            )
            _collect(found, cursor.fetchall())
    return found


def _collect(found: dict[UUID, list[StoredEvent]], rows: Sequence[Any]) -> None:
    """Rows with the stored events' columns, sorted by stream and version, into `found`
    (each store's rows are read by column name: sqlite3.Row, psycopg's dict rows)."""
    stream: UUID | None = None
    held = ""
    events: list[StoredEvent] = []
    for row in rows:
        oid, version = row["originator_id"], row["originator_version"]
        topic, state = row["topic"], row["state"]
        if stream is None or str(oid) != held:
            held = str(oid)
            stream = oid if isinstance(oid, UUID) else UUID(held)
            events = found.setdefault(stream, [])
        events.append(
            StoredEvent(
                originator_id=stream,
                originator_version=version,
                topic=topic,
                state=bytes(state),
            )
        )


def _postgres(recorder: Any, ids: Sequence[UUID]) -> set[UUID]:
    from psycopg.sql import SQL, Identifier

    statement = SQL(
        "SELECT originator_id FROM {schema}.{table} "
        "WHERE originator_id = ANY(%s) AND originator_version <= 1"
    ).format(
        schema=Identifier(recorder.datastore.schema),
        table=Identifier(recorder.events_table_name),
    )
    textual = recorder.datastore.originator_id_type != "uuid"
    found: set[UUID] = set()
    with recorder.datastore.transaction(commit=False) as cursor:
        for chunk in _chunks(ids):
            cursor.execute(statement, [[str(i) for i in chunk] if textual else list(chunk)])
            found.update(UUID(str(row["originator_id"])) for row in cursor.fetchall())
    return found


def _postgres_events(recorder: Any, ids: Sequence[UUID]) -> dict[UUID, list[StoredEvent]]:
    from psycopg.sql import SQL, Identifier

    statement = SQL(
        "SELECT originator_id, originator_version, topic, state FROM {schema}.{table} "
        "WHERE originator_id = ANY(%s) ORDER BY originator_id, originator_version"
    ).format(
        schema=Identifier(recorder.datastore.schema),
        table=Identifier(recorder.events_table_name),
    )
    textual = recorder.datastore.originator_id_type != "uuid"
    found: dict[UUID, list[StoredEvent]] = {}
    with recorder.datastore.transaction(commit=False) as cursor:
        for chunk in _chunks(ids):
            cursor.execute(statement, [[str(i) for i in chunk] if textual else list(chunk)])
            _collect(found, cursor.fetchall())
    return found
