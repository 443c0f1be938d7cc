"""The writer's hash chain on PostgreSQL: a table beside the events, in their schema.

Imported only where the event store is PostgreSQL (by topic, from the environment),
so that SQLite ledgers never load psycopg.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.sql import SQL, Identifier

from benchledger.adapters.store.chained import (
    CHAIN_SUFFIX,
    PAGE,
    AlreadyChainedError,
    Entry,
    MissingChainError,
    UpgradeRecord,
    check_follows,
    entries,
)
from benchledger.projections.chain import GENESIS


class ChainedPostgresRecorder(PostgresApplicationRecorder):
    """eventsourcing's PostgreSQL recorder, chaining every event it inserts."""

    def __init__(self, datastore: PostgresDatastore, *, events_table_name: str = "stored_events"):
        # The stored-function insert path returns before `_fetch_ids_after_insert_events`,
        # so it would append unchained events: every insert takes the chaining path.
        datastore.enable_db_functions = False
        super().__init__(datastore, events_table_name=events_table_name)
        self.chain_table_name = events_table_name + CHAIN_SUFFIX
        self.check_identifier_length(self.chain_table_name)
        self.chain_table = SQL("{0}.{1}").format(
            Identifier(datastore.schema), Identifier(self.chain_table_name)
        )
        self.events_table = SQL("{0}.{1}").format(
            Identifier(datastore.schema), Identifier(events_table_name)
        )
        self.sql_create_statements.append(
            SQL(
                "CREATE TABLE IF NOT EXISTS {0} (position bigint PRIMARY KEY, "
                "event_sha256 text NOT NULL, chain_sha256 text NOT NULL)"
            ).format(self.chain_table)
        )

    def _fetch_ids_after_insert_events(
        self, curs: Cursor[DictRow], stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        # `_insert_stored_events` took the table lock, kept until commit: no other writer
        # commits between the head read here and this transaction's end.
        ids = super()._fetch_ids_after_insert_events(curs, stored_events, **kwargs)
        if ids:
            self._chain(curs, ids, stored_events)
        return ids

    def _chain(
        self, curs: Cursor[DictRow], ids: Sequence[int], stored_events: Sequence[StoredEvent]
    ) -> None:
        curs.execute(
            SQL("SELECT position, chain_sha256 FROM {0} ORDER BY position DESC LIMIT 1").format(
                self.chain_table
            )
        )
        row = curs.fetchone()
        curs.execute(
            SQL("SELECT max(notification_id) AS end FROM {0} WHERE notification_id < %s").format(
                self.events_table
            ),
            (ids[0],),
        )
        end = curs.fetchone()
        events_end = int(end["end"] or 0) if end else 0
        chain_end, head = (int(row["position"]), str(row["chain_sha256"])) if row else (0, GENESIS)
        check_follows(events_end, chain_end)
        curs.executemany(
            SQL(
                "INSERT INTO {0} (position, event_sha256, chain_sha256) VALUES (%s, %s, %s)"
            ).format(self.chain_table),
            entries(head, ids, stored_events),
        )

    def select_chain(self, after: int, limit: int, stop: int | None = None) -> list[Entry]:
        try:
            with self.datastore.transaction(commit=False) as curs:
                curs.execute(
                    SQL(
                        "SELECT position, event_sha256, chain_sha256 FROM {0} "
                        "WHERE position > %s AND position <= %s ORDER BY position LIMIT %s"
                    ).format(self.chain_table),
                    (after, 2**63 - 1 if stop is None else stop, limit),
                )
                rows = curs.fetchall()
        except psycopg.errors.UndefinedTable:
            raise MissingChainError(
                f"the event store has no chain table ({self.chain_table_name})"
            ) from None
        return [(int(r["position"]), str(r["event_sha256"]), str(r["chain_sha256"])) for r in rows]

    def upgrade_chain(self, record: UpgradeRecord) -> tuple[int, str] | None:
        """As `ChainedSQLiteRecorder.upgrade_chain`, under the events table's lock."""
        with self.datastore.transaction(commit=True) as curs:
            self._lock_table(curs)
            curs.execute(SQL("SELECT position FROM {0} LIMIT 1").format(self.chain_table))
            if curs.fetchone() is not None:
                raise AlreadyChainedError("the writer keeps this ledger's chain already")
            position, head = 0, GENESIS
            while True:
                curs.execute(
                    SQL(
                        "SELECT notification_id, originator_id, originator_version, topic, state "
                        "FROM {0} WHERE notification_id > %s ORDER BY notification_id LIMIT %s"
                    ).format(self.events_table),
                    (position, PAGE),
                )
                rows = curs.fetchall()
                if not rows:
                    break
                stored = [
                    StoredEvent(
                        r["originator_id"], r["originator_version"], r["topic"], bytes(r["state"])
                    )
                    for r in rows
                ]
                chained = entries(head, [int(r["notification_id"]) for r in rows], stored)
                curs.executemany(
                    SQL(
                        "INSERT INTO {0} (position, event_sha256, chain_sha256) VALUES (%s, %s, %s)"
                    ).format(self.chain_table),
                    chained,
                )
                position, _, head = chained[-1]
            if position == 0:
                return None
            upgraded = [record(position, head)]
            self._insert_stored_events(curs, upgraded)
            self._fetch_ids_after_insert_events(curs, upgraded)
            return position, head
