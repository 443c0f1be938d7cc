"""The stored events of a SQLite ledger, read through a connection that cannot write.

eventsourcing's SQLite recorder opens its file read-write (and sets WAL mode),
which a read-only mount refuses; verify and `--as-of` only need the
notifications, so they read them here in the recorder's own shape.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from uuid import UUID

from eventsourcing.persistence import Notification

from benchledger.adapters.store.chained import CHAIN_SUFFIX, Entry, sqlite_select_chain
from benchledger.adapters.store.ledger_file import EVENT_TABLE


class ReadOnlyRecorder:
    """The reading half of eventsourcing's SQLite application recorder."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def max_notification_id(self) -> int:
        row = self.conn.execute(f"SELECT max(rowid) FROM {EVENT_TABLE}").fetchone()
        return int(row[0] or 0)

    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        assert not topics, "not needed by the read side"
        first = start or 0
        if start is not None and not inclusive_of_start:
            first += 1
        last = stop if stop is not None else 2**63 - 1
        rows = self.conn.execute(
            "SELECT rowid, originator_id, originator_version, topic, state "
            f"FROM {EVENT_TABLE} WHERE rowid >= ? AND rowid <= ? ORDER BY rowid LIMIT ?",
            (first, last, limit),
        )
        return [
            Notification(
                id=rowid,
                originator_id=UUID(originator_id),
                originator_version=version,
                topic=topic,
                state=state,
            )
            for rowid, originator_id, version, topic, state in rows
        ]

    def select_chain(self, after: int, limit: int, stop: int | None = None) -> list[Entry]:
        """A page of the chain the writer kept beside the events."""
        return sqlite_select_chain(
            self.conn.cursor(), EVENT_TABLE + CHAIN_SUFFIX, after, limit, stop
        )
