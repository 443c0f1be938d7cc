"""What SQL a stranger's request may run against a served ledger, enforced by SQLite itself.

Datasette lets any visitor run read-only SQL. Its own checks stop writes, not reads: left
alone, a visitor reads the event store, the ledger's path (`pragma_database_list`) and
pointers (`fts3_tokenizer`), or asks for a value of a gigabyte. An authorizer on every
connection refuses those while a statement is prepared, whatever its spelling (quoted
names, `main.`, subqueries, CTEs, views), and limits bound the size of every value and
of every page of results.

Datasette's own schema introspection reads `sqlite_master` and PRAGMAs of every table;
while it runs, the connection's guard is `trusting`: it allows reads, and still no write.
"""

from __future__ import annotations

import ctypes
import sqlite3
import weakref
from collections.abc import Callable, Iterable
from typing import Any

# The event store (eventsourcing's tables, the writer's hash chain) and the projections'
# bookkeeping: never shown.
ALWAYS_HIDDEN = frozenset(
    {
        "stored_events",
        "stored_events_chain",
        "snapshots",
        "notification_tracking",
        "tracking",
        "_projection_state",
    }
)
# Pragmas a visitor's SQL may run: those describing tables and indexes (as table-valued
# functions), and `data_version`, which FTS5 asks before it searches. `database_list`
# names the file, and the others say nothing a reader needs.
ALLOWED_PRAGMAS = frozenset(
    {
        "table_info",
        "table_xinfo",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "data_version",
    }
)
# Functions that hand out pointers, load code or touch files, where they are compiled in.
REFUSED_FUNCTIONS = frozenset(
    {"fts3_tokenizer", "fts5", "load_extension", "readfile", "writefile", "edit"}
)
SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_temp_master", "sqlite_schema"})
# A visitor may read these; every other action (writes, ATTACH, schema changes) is refused.
READING_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_RECURSIVE, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}
)

# SQLite refuses to make, or to read, a value longer than this. The largest value the
# corpus ledger shows is under 10 KB and its largest stored event 120 KB: room to spare, and
# `randomblob(900000000)` is an error, not a gigabyte.
MAX_VALUE_BYTES = 16 * 1024 * 1024
# A page of results (at most max_returned_rows rows) past this many bytes is refused as it
# is read, before Datasette renders it: room for two values of the largest size.
MAX_RESULT_BYTES = 2 * MAX_VALUE_BYTES
# What SQLite may hold at once in a serving process, whatever the statements: a row of many
# large values fails with "out of memory" here instead of growing the process.
MAX_SQLITE_HEAP_BYTES = 128 * 1024 * 1024

_OK = sqlite3.SQLITE_OK
_DENY = sqlite3.SQLITE_DENY


def is_hidden(table: str, hidden: Iterable[str]) -> bool:
    """Whether `table` is one a visitor may not read: the event store, bookkeeping, a
    table the metadata hides, or one of SQLite's own (compared as SQLite does, ignoring
    ASCII case)."""
    name = table.lower()
    return name.startswith("sqlite_") or name in {h.lower() for h in (*ALWAYS_HIDDEN, *hidden)}


class Guard:
    """The authorizer of one connection. A visitor's SQL may read shown tables and call
    harmless functions; while `trusting` (Datasette's own introspection) it may read
    anything. Nothing may write."""

    def __init__(self, hidden: Iterable[str]) -> None:
        self.refused = frozenset(h.lower() for h in (*ALWAYS_HIDDEN, *hidden))
        self.trusting = False

    def __call__(
        self, action: int, arg1: str | None, arg2: str | None, _db: str | None, _in: str | None
    ) -> int:
        if action == sqlite3.SQLITE_UPDATE and (arg1 or "").lower() in SCHEMA_TABLES:
            # How SQLite registers a table-valued pragma on its first use; no statement
            # Datasette runs updates the schema (it prepares SELECTs only).
            return _OK
        if self.trusting:
            return _OK if action in READING_ACTIONS or action == sqlite3.SQLITE_PRAGMA else _DENY
        if action == sqlite3.SQLITE_READ:
            return self._read((arg1 or "").lower(), (arg2 or "").lower())
        if action == sqlite3.SQLITE_FUNCTION:
            return _DENY if (arg2 or "").lower() in REFUSED_FUNCTIONS else _OK
        if action == sqlite3.SQLITE_PRAGMA:
            described = (arg2 or "").lower()
            shown = described not in self.refused and not described.startswith("sqlite_")
            return _OK if (arg1 or "").lower() in ALLOWED_PRAGMAS and shown else _DENY
        return _OK if action in READING_ACTIONS else _DENY

    def _read(self, table: str, column: str) -> int:
        if table in SCHEMA_TABLES:
            # Registering a table-valued pragma reads the schema's rowid, and nothing else.
            return _OK if column == "rowid" else _DENY
        refused = table == "pragma_database_list" or table.startswith("sqlite_")
        return _DENY if refused or table in self.refused else _OK


# Each guarded connection's guard, by id: a connection takes no weak reference, and one
# whose id is reused by a later connection is guarded afresh when that one is prepared.
_GUARDS: dict[int, Guard] = {}


def guard(conn: sqlite3.Connection, hidden: Iterable[str]) -> None:
    """Put a connection under the visitors' rules: the authorizer, the value length limit
    and the bound on a page of results."""
    _GUARDS[id(conn)] = Guard(hidden)
    conn.set_authorizer(_GUARDS[id(conn)])
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    conn.row_factory = bounded_rows(conn.row_factory)


def trust(conn: sqlite3.Connection, trusting: bool) -> None:
    """Switch a guarded connection between Datasette's introspection and a visitor's SQL.
    Setting the authorizer again expires every statement prepared under the other rules,
    so a cached statement is authorized afresh before it runs."""
    current = _GUARDS.get(id(conn))
    if current is not None and current.trusting is not trusting:
        current.trusting = trusting
        conn.set_authorizer(current)


def bounded_rows(make_row: Any) -> Callable[[sqlite3.Cursor, tuple[Any, ...]], Any]:
    """A row factory that counts the bytes each statement has returned and stops it past
    MAX_RESULT_BYTES, with an error Datasette shows as a query error."""
    returned: weakref.WeakKeyDictionary[sqlite3.Cursor, int] = weakref.WeakKeyDictionary()

    def row(cursor: sqlite3.Cursor, values: tuple[Any, ...]) -> Any:
        size = returned.get(cursor, 0) + sum(_size(value) for value in values)
        if size > MAX_RESULT_BYTES:
            returned.pop(cursor, None)
            raise sqlite3.OperationalError(
                f"results larger than {MAX_RESULT_BYTES // (1024 * 1024)} MiB: "
                "ask for fewer rows or smaller values"
            )
        returned[cursor] = size
        return make_row(cursor, values) if make_row is not None else values

    return row


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str | bytes) else 8


def bound_sqlite_heap(limit: int = MAX_SQLITE_HEAP_BYTES) -> bool:
    """Cap what SQLite may allocate in this process (sqlite3_hard_heap_limit64): beyond it a
    statement fails with "out of memory" instead of the process growing. Process-wide, so
    only a serving process calls it. False where the library does not offer it."""
    import _sqlite3

    try:
        function = ctypes.CDLL(_sqlite3.__file__).sqlite3_hard_heap_limit64
    except (OSError, AttributeError):
        return False
    function.argtypes = [ctypes.c_int64]
    function.restype = ctypes.c_int64
    function(limit)
    return True
