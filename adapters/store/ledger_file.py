"""What is at a ledger path, found without changing a byte of it; read-only connections.

Plain sqlite3 only: a command checks the file before it loads the event store,
and a file that is not a ledger is never opened read-write (opening a SQLite
file read-write can already change it, e.g. by switching its journal mode).
"""

from __future__ import annotations

import enum
import os
import sqlite3
import stat
from pathlib import Path

from benchledger.domain.errors import LedgerError
from benchledger.projections.versions import STATE_TABLE

EVENT_TABLE = "stored_events"
# The stamp of a frozen snapshot written by `publish`: its position and head hash.
SNAPSHOT_TABLE = "snapshot"
# Stored topics name our event modules (see domain.base.Event.TOPIC).
TOPIC_PREFIX = "domain."


class Kind(enum.Enum):
    MISSING = "missing"
    EMPTY = "empty"  # a 0-byte file, or a SQLite database without any table
    LEDGER = "ledger"  # benchledger's event store (and usually its read models)
    SNAPSHOT = "snapshot"  # a frozen ledger written by `publish`: read-only by design
    READ_MODEL = "read model"  # read models only: the events are in PostgreSQL
    FOREIGN = "foreign"  # a SQLite database of something else
    NOT_SQLITE = "not sqlite"
    DIRECTORY = "directory"
    SPECIAL = "special"  # a pipe, device or socket


class LedgerFileError(LedgerError):
    """The ledger path holds no ledger, something else, or cannot be written."""


class NoLedgerError(LedgerFileError):
    pass


class NotALedgerError(LedgerFileError):
    pass


class ReadOnlyLedgerError(LedgerFileError):
    pass


def inspect(path: Path) -> Kind:
    """What `path` holds, read with an immutable or read-only connection."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return Kind.MISSING
    if stat.S_ISDIR(mode):
        return Kind.DIRECTORY
    if not stat.S_ISREG(mode):
        return Kind.SPECIAL  # opening a pipe would block
    if path.stat().st_size == 0:
        return Kind.EMPTY
    try:
        tables, first_topic = _catalogue(path)
    except sqlite3.DatabaseError:
        return Kind.NOT_SQLITE
    if EVENT_TABLE in tables:
        if first_topic is None or first_topic.startswith(TOPIC_PREFIX):
            return Kind.SNAPSHOT if SNAPSHOT_TABLE in tables else Kind.LEDGER
        return Kind.FOREIGN
    if STATE_TABLE in tables:
        return Kind.READ_MODEL
    return Kind.FOREIGN if tables else Kind.EMPTY


def _catalogue(path: Path) -> tuple[set[str], str | None]:
    # Without a -wal file every committed page is in the main file, and an immutable
    # connection reads it creating nothing; with one, only a locking reader sees it all.
    wal = path.with_name(path.name + "-wal").exists()
    attempts = ["mode=ro"] if wal else ["immutable=1", "mode=ro"]
    for i, query in enumerate(attempts):
        try:
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?{query}", uri=True)
            try:
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
                topic = None
                if EVENT_TABLE in tables:
                    row = conn.execute(
                        f"SELECT topic FROM {EVENT_TABLE} ORDER BY rowid LIMIT 1"
                    ).fetchone()
                    topic = row[0] if row else None
                return tables, topic
            finally:
                conn.close()
        except sqlite3.DatabaseError:
            if i == len(attempts) - 1:
                raise
    raise AssertionError("unreachable")


def location_writable(path: Path) -> bool:
    """False on a read-only mount or directory (root included: access() knows EROFS)."""
    parent = path.parent if str(path.parent) else Path(".")
    if not os.access(parent, os.W_OK):
        return False
    return not path.exists() or os.access(path, os.W_OK)


def connect_read_only(path: Path, *, location_writable: bool) -> sqlite3.Connection:
    """A connection that cannot change the ledger.

    Where the location is writable, a read-write connection with `query_only`:
    it refuses every write, and on close SQLite removes the -wal and -shm files
    it made (a `mode=ro` one would leave them behind). Elsewhere `mode=ro`; and
    where that cannot open a WAL file because its -shm cannot be created (a
    read-only mount), `immutable=1`: nothing can change the file there anyway.
    """
    if location_writable:
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=60)
        conn.execute("PRAGMA query_only=ON")
        conn.execute("PRAGMA busy_timeout=60000")
        return conn
    uri = path.resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None, timeout=60)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)


def _how_to_create(path: Path) -> str:
    same = "" if str(path) == "ledger.db" else " with the same --db"
    return f"create one with `benchledger import RESULTS...` or `benchledger demo`{same}"


def require_readable(path: Path, *, event_store: bool) -> Kind:
    """The ledger at `path` exists and is ours, or a LedgerFileError that says what is there."""
    kind = inspect(path)
    _refuse_others(path, kind, event_store=event_store)
    if event_store:
        if kind is Kind.MISSING and not _parent(path).is_dir():
            raise NoLedgerError(f"directory {_parent(path)} does not exist")
        return kind  # events are in PostgreSQL: the read-model file may start empty
    if kind is Kind.MISSING:
        raise NoLedgerError(f"no ledger at {path}: {_how_to_create(path)}")
    if kind is Kind.EMPTY:
        raise NoLedgerError(f"no ledger at {path} (the file is empty): {_how_to_create(path)}")
    return kind


def require_writable(path: Path, *, creates: bool, event_store: bool) -> Kind:
    """As `require_readable`; a command that `creates` may also start a new ledger.
    A snapshot is refused: it is frozen at the position it was published at."""
    kind = inspect(path)
    _refuse_others(path, kind, event_store=event_store)
    if kind is Kind.SNAPSHOT:
        raise ReadOnlyLedgerError(
            f"{path} is a frozen snapshot written by `benchledger publish`: it takes no new "
            "events and its read models never change (publish a new one from the ledger)"
        )
    if kind in (Kind.MISSING, Kind.EMPTY):
        if not (creates or event_store):
            return require_readable(path, event_store=event_store)
        parent = _parent(path)
        if not parent.is_dir():
            raise NoLedgerError(
                f"directory {parent} does not exist (create it first, or choose another --db)"
            )
    return kind


def _parent(path: Path) -> Path:
    return path.parent if str(path.parent) else Path(".")


def _refuse_others(path: Path, kind: Kind, *, event_store: bool) -> None:
    if kind is Kind.DIRECTORY:
        raise NotALedgerError(f"{path} is a directory; --db takes a ledger file")
    if kind is Kind.SPECIAL:
        raise NotALedgerError(f"{path} is not a regular file, so not a benchledger ledger")
    if kind is Kind.NOT_SQLITE:
        raise NotALedgerError(f"{path} is not a SQLite database, so not a benchledger ledger")
    if kind is Kind.FOREIGN:
        raise NotALedgerError(
            f"{path} is not a benchledger ledger (a SQLite database without benchledger's "
            "event store); it was left untouched"
        )
    if kind is Kind.READ_MODEL and not event_store:
        raise NotALedgerError(
            f"{path} holds only the read models of a PostgreSQL event store; "
            "give that store with --event-store URL"
        )
    if kind in (Kind.LEDGER, Kind.SNAPSHOT) and event_store:
        raise NotALedgerError(
            f"{path} is a ledger with its own events; with --event-store, give --db a "
            "separate file for this reader's read models"
        )
