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
from dataclasses import dataclass
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
        found = _catalogue(path)
    except sqlite3.DatabaseError:
        return Kind.NOT_SQLITE
    if found.foreign is not None:
        return Kind.FOREIGN
    if EVENT_TABLE in found.tables:
        return Kind.SNAPSHOT if SNAPSHOT_TABLE in found.tables else Kind.LEDGER
    if STATE_TABLE in found.tables:
        return Kind.READ_MODEL
    return Kind.EMPTY


# The columns of eventsourcing's SQLite event table, and of our read models' positions.
EVENT_COLUMNS = ("originator_id", "originator_version", "topic", "state")
STATE_COLUMNS = ("projection", "version", "position")
TABLES_NAMED = 5  # how many of a foreign database's tables an error names


@dataclass(frozen=True)
class Catalogue:
    tables: frozenset[str]
    foreign: str | None  # why this SQLite database is not ours; None: it may be


def foreign_reason(path: Path) -> str:
    """What makes the SQLite database at `path` something else than a ledger."""
    return _catalogue(path).foreign or "a SQLite database without benchledger's event store"


def _catalogue(path: Path) -> Catalogue:
    # Without a -wal file every committed page is in the main file, and an immutable
    # connection reads it creating nothing; with one, only a locking reader sees it all.
    wal = path.with_name(path.name + "-wal").exists()
    attempts = ["mode=ro"] if wal else ["immutable=1", "mode=ro"]
    for i, query in enumerate(attempts):
        try:
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?{query}", uri=True)
            try:
                return _catalogued(conn)
            finally:
                conn.close()
        except sqlite3.DatabaseError:
            if i == len(attempts) - 1:
                raise
    raise AssertionError("unreachable")


def _catalogued(conn: sqlite3.Connection) -> Catalogue:
    """The tables of a database and, when it is not a ledger though it may be named like
    one, why not (a table of ours with other columns, events of another application)."""
    kinds = dict(conn.execute("SELECT name, type FROM sqlite_master").fetchall())
    tables = frozenset(name for name, kind in kinds.items() if kind == "table")
    for name, columns in ((EVENT_TABLE, EVENT_COLUMNS), (STATE_TABLE, STATE_COLUMNS)):
        if name in kinds and kinds[name] != "table":
            return Catalogue(tables, f"a SQLite database whose {name} is a {kinds[name]}")
        if name in tables:
            have = [row[1] for row in conn.execute(f"PRAGMA table_info([{name}])")]
            if not set(columns) <= set(have):
                return Catalogue(
                    tables,
                    f"a SQLite database whose {name} table has the columns "
                    f"{', '.join(have)}, not {', '.join(columns)}",
                )
    if EVENT_TABLE in tables:
        row = conn.execute(f"SELECT topic FROM {EVENT_TABLE} ORDER BY rowid LIMIT 1").fetchone()
        if row is not None and not (isinstance(row[0], str) and row[0].startswith(TOPIC_PREFIX)):
            return Catalogue(
                tables,
                f"a SQLite database whose {EVENT_TABLE} hold another application's "
                f"events (topic {str(row[0])[:80]!r})",
            )
    elif kinds and STATE_TABLE not in tables:
        named = sorted(kinds)
        more = f" and {len(named) - TABLES_NAMED} more" if len(named) > TABLES_NAMED else ""
        return Catalogue(
            tables,
            "a SQLite database without benchledger's event store (it holds "
            f"{', '.join(named[:TABLES_NAMED])}{more})",
        )
    return Catalogue(tables, None)


def location_writable(path: Path) -> bool:
    """False on a read-only mount or directory (root included: access() knows EROFS)."""
    parent = path.parent if str(path.parent) else Path(".")
    if not os.access(parent, os.W_OK):
        return False
    return not path.exists() or os.access(path, os.W_OK)


def connect_read_only(path: Path, *, location_writable: bool) -> sqlite3.Connection:
    """A connection that cannot change the ledger, nor make files beside it.

    Where the location is writable, a read-write connection with `query_only`:
    it refuses every write, and on close SQLite removes the -wal and -shm files
    it made (a `mode=ro` one would leave them behind). Elsewhere, with neither a
    -wal nor a -shm file beside the ledger, no connection has it open and every
    committed page is in the file: `immutable=1` reads it and creates nothing,
    where `mode=ro` would create both files wherever the directory is writable
    and leave them (https://www.sqlite.org/wal.html, read-only databases). With
    them, `mode=ro` reads through them; and where it cannot (a -wal without its
    -shm on a read-only mount), `immutable=1`: nothing can change the file there.
    """
    if location_writable:
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=60)
        conn.execute("PRAGMA query_only=ON")
        conn.execute("PRAGMA busy_timeout=60000")
        return conn
    uri = path.resolve().as_uri()
    if not any(path.with_name(path.name + end).exists() for end in ("-wal", "-shm")):
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)
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
    if kind is Kind.EMPTY and (creates or event_store) and path.stat().st_size == 0:
        # A file someone made for something else (or a typo): never adopted, never written.
        raise NotALedgerError(
            f"{path} is an empty file, not a ledger; it was left untouched (remove it, or "
            "give --db a path where no file exists yet)"
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
            f"{path} is not a benchledger ledger ({foreign_reason(path)}); it was left untouched"
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
