"""The authoritative hash chain: kept by the writer, in the event store, with its events.

Every insert of events also inserts their chain entries (position, event hash, chain
hash) into a table beside the events table, in the same transaction and under the
same write lock, so no event is ever committed without its entry nor an entry without
its event, and every reader of the store checks the one chain. The writer reads the
previous head inside that lock and refuses to extend a chain that does not end where
the events do (a ledger written before the chain was kept: `benchledger upgrade-chain`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, Protocol
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteCursor, SQLiteDatastore

from benchledger.adapters.store.projection_runner import NotificationLog
from benchledger.domain.errors import LedgerError, TamperError, UnchainedLedgerError
from benchledger.projections.chain import GENESIS, link, stored_sha256

CHAIN_SUFFIX = "_chain"
PAGE = 1000
UPGRADE_COMMAND = "benchledger upgrade-chain"

# One chain entry: the event's position, its hash, and the chain hash there.
Entry = tuple[int, str, str]
# Makes the event that records an upgrade, given the position and head it chained up to.
UpgradeRecord = Callable[[int, str], StoredEvent]


class MissingChainError(TamperError):
    """The event store has no chain table at all."""


class AlreadyChainedError(LedgerError):
    """`upgrade-chain` on a ledger whose writer keeps its chain already."""


class ChainedLog(NotificationLog, Protocol):
    """What verify reads of an event store: its events and its chain."""

    def select_chain(self, after: int, limit: int, stop: int | None = None) -> list[Entry]: ...


def entries(head: str, ids: Sequence[int], stored_events: Sequence[StoredEvent]) -> list[Entry]:
    """The chain entries of events just inserted at `ids`, after the chain hash `head`."""
    rows: list[Entry] = []
    for position, s in zip(ids, stored_events, strict=True):
        stream = s.originator_id if isinstance(s.originator_id, UUID) else UUID(s.originator_id)
        digest = stored_sha256(position, stream, s.originator_version, s.topic, s.state)
        head = link(head, digest)
        rows.append((position, digest, head))
    return rows


def check_follows(events_end: int, chain_end: int) -> None:
    """Refuse to chain new events unless the chain ends where the events before them do."""
    if chain_end == events_end:
        return
    if chain_end == 0:
        raise UnchainedLedgerError(
            f"the events of this ledger up to position {events_end} are not in its hash "
            "chain: it was written before its writer kept one; run "
            f"`{UPGRADE_COMMAND}` once, then write to it"
        )
    raise TamperError(
        f"the event store's chain ends at position {chain_end} but its events at "
        f"position {events_end}: refusing to extend it (run `benchledger verify`)"
    )


def sqlite_chain_schema(table: str) -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {table} (position INTEGER PRIMARY KEY, "
        "event_sha256 TEXT NOT NULL, chain_sha256 TEXT NOT NULL)"
    )


def sqlite_select_chain(
    cursor: sqlite3.Cursor | SQLiteCursor, table: str, after: int, limit: int, stop: int | None
) -> list[Entry]:
    """A page of a SQLite chain table, in position order; MissingChainError without one."""
    try:
        cursor.execute(
            f"SELECT position, event_sha256, chain_sha256 FROM {table} "
            "WHERE position > ? AND position <= ? ORDER BY position LIMIT ?",
            (after, 2**63 - 1 if stop is None else stop, limit),
        )
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            raise MissingChainError(f"the event store has no chain table ({table})") from None
        raise
    return [(int(r[0]), str(r[1]), str(r[2])) for r in cursor.fetchall()]


class ChainedSQLiteRecorder(SQLiteApplicationRecorder):
    """eventsourcing's SQLite recorder, chaining every event it inserts."""

    def __init__(self, datastore: SQLiteDatastore, events_table_name: str = "stored_events"):
        # Set first: the parent's constructor asks for the create statements.
        self.chain_table = events_table_name + CHAIN_SUFFIX
        super().__init__(datastore, events_table_name)

    def construct_create_table_statements(self) -> list[str]:
        return [*super().construct_create_table_statements(), sqlite_chain_schema(self.chain_table)]

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        # The insert has taken the write lock: what is read next is the latest commit.
        ids = super()._insert_events(c, stored_events, **kwargs)
        if ids:
            self._chain(c, ids, stored_events)
        return ids

    def _chain(
        self, c: SQLiteCursor, ids: Sequence[int], stored_events: Sequence[StoredEvent]
    ) -> None:
        c.execute(
            f"SELECT position, chain_sha256 FROM {self.chain_table} ORDER BY position DESC LIMIT 1"
        )
        row = c.fetchone()
        c.execute(f"SELECT max(rowid) FROM {self.events_table_name} WHERE rowid < ?", (ids[0],))
        events_end = c.fetchone()[0] or 0
        chain_end, head = (int(row[0]), str(row[1])) if row else (0, GENESIS)
        check_follows(events_end, chain_end)
        c.executemany(
            f"INSERT INTO {self.chain_table} (position, event_sha256, chain_sha256) "
            "VALUES (?, ?, ?)",
            entries(head, ids, stored_events),
        )

    def select_chain(self, after: int, limit: int, stop: int | None = None) -> list[Entry]:
        with self.datastore.transaction(commit=False) as c:
            return sqlite_select_chain(c, self.chain_table, after, limit, stop)

    def upgrade_chain(self, record: UpgradeRecord) -> tuple[int, str] | None:
        """Chain the events of a ledger written before the chain was kept, and record
        that it was done, in one transaction. None when there was nothing to chain."""
        with self.datastore.transaction(commit=True) as c:
            # A write first: it takes the write lock before anything is read.
            c.execute(f"DELETE FROM {self.chain_table} WHERE position < 0")
            c.execute(f"SELECT position FROM {self.chain_table} LIMIT 1")
            if c.fetchone() is not None:
                raise AlreadyChainedError("the writer keeps this ledger's chain already")
            position, head = 0, GENESIS
            while True:
                c.execute(
                    "SELECT rowid, originator_id, originator_version, topic, state "
                    f"FROM {self.events_table_name} WHERE rowid > ? ORDER BY rowid LIMIT ?",
                    (position, PAGE),
                )
                rows = c.fetchall()
                if not rows:
                    break
                stored = [StoredEvent(UUID(r[1]), r[2], r[3], r[4]) for r in rows]
                chained = entries(head, [int(r[0]) for r in rows], stored)
                c.executemany(
                    f"INSERT INTO {self.chain_table} (position, event_sha256, chain_sha256) "
                    "VALUES (?, ?, ?)",
                    chained,
                )
                position, _, head = chained[-1]
            if position == 0:
                return None
            self._insert_events(c, [record(position, head)])
            return position, head
