"""Which of many streams hold events, asked of the event store in one query per chunk:
an import knows ahead which of a batch of runs are new, instead of one lookup each."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

from eventsourcing.sqlite import SQLiteApplicationRecorder

Present = Callable[[Sequence[UUID]], set[UUID]]
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
