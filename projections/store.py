"""The thin writer: read-model tables and their tracking positions in one SQLite file.

Rows and the position they were folded up to commit in one transaction, so
each event is applied exactly once. A rebuild folds into fresh tables and
swaps them in with one transaction, so a reader never sees half a table.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import os
import sqlite3
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite_utils

    from benchledger.projections.checkpointer import Checkpointer

from benchledger.projections.base import (
    Change,
    Envelope,
    Params,
    Projection,
    Table,
    group_changes,
    index_columns,
    index_name,
)
from benchledger.projections.create_sql import CREATE_SQL
from benchledger.projections.versions import STATE_TABLE

REBUILD_SUFFIX = "__rebuild"
# The page cache of a catch-up or rebuild (`ReadModelStore.bulk`), in KiB.
BULK_CACHE_KIB = 64 * 1024
# The page cache while `index_filled` builds indexes, in KiB. SQLite sorts an index's
# keys in memory up to the cache's size before it spills them to a temporary file, on top
# of the pages cached: with the bulk cache, building the indexes of a 200k-row
# orchestrator import's tables added 73 MiB to a process already holding 64 MiB of
# pages. At 16 MiB it adds nothing (the cache is trimmed to it) for the same CPU: the
# tables are wider than either cache, so each build reads its table from the file anyway.
INDEX_CACHE_KIB = 16 * 1024
# Formatted statements kept per set of table names (see `ReadModelStore.run`).
STATEMENTS_KEPT = 4096


def connect(path: Path | str, *, readonly: bool = False) -> sqlite3.Connection:
    if readonly:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None, timeout=60)
    else:
        # Any thread may fold, one at a time: `run --jobs` catches up as each benchmark's
        # cells arrive, from the thread that runs it (its caller serialises them).
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=60, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        # Read models are derived: a commit needs no fsync of its own. In WAL mode a power
        # loss can only take the last folds back (never half of one), and the next command
        # folds them again; the event store's own connection keeps syncing every commit.
        conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=60000")
    # The read models' foreign keys are for browsing (see `Table.foreign_keys`): enforced,
    # a rebuild could not drop a live table others point at before renaming its new one.
    conn.execute("PRAGMA foreign_keys=OFF")
    return conn


# Events and read-model rows are mostly 0.5-3 KB: a 16 KiB page holds several, where a
# 4 KiB one (SQLite's default) held one or two and left the rest empty. New ledgers are
# a sixth smaller and an import does fewer page reads and writes.
PAGE_SIZE = 16384


def prepare_new_file(path: Path) -> None:
    """Give a ledger file that does not exist yet (or is empty) incremental auto-vacuum
    and pages of PAGE_SIZE.

    Rebuilds drop whole tables; with this setting their pages can be handed back to
    the file system (`reclaim_free_pages`) instead of only being reused. Both can only
    be chosen before the first table exists: switching later needs a VACUUM, which may
    renumber the event store's rowids (its notification ids), so older ledgers keep
    their pages and reuse freed ones, which bounds their size as well.
    """
    if path.exists() and path.stat().st_size > 0:
        return
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        conn.execute("PRAGMA journal_mode = WAL")  # writes the header, and the setting
    finally:
        conn.close()


# What sqlite-utils imports whenever it is installed, for DataFrame and array values the
# read models never hold: pandas alone takes 0.3-0.4 s, longer than a whole command.
_OPTIONAL = ("pandas", "numpy")


def _sqlite_utils() -> Any:
    """sqlite-utils, imported when tables are first created and without its optional
    pandas and numpy (unless this process imported them already: then they stay)."""
    if "sqlite_utils" in sys.modules:
        return sys.modules["sqlite_utils"]
    hidden = [name for name in _OPTIONAL if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # makes `import name` fail
    try:
        return importlib.import_module("sqlite_utils")
    finally:
        for name in hidden:
            del sys.modules[name]


def table_exists(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


def _quoted(name: str) -> str:
    """A table name quoted as sqlite-utils quotes it in its CREATE statements."""
    return '"' + name.replace('"', '""') + '"'


def table_signature(table: Table) -> str:
    """What a table's CREATE statement is written from (its columns and their types, keys,
    NOT NULL, generated columns and foreign keys), as a short digest."""
    shape = (
        [(column, kind.__name__) for column, kind in table.columns.items()],
        list(table.pk),
        sorted(table.not_null),
        [(column, kind.__name__, expression) for column, kind, expression in table.generated],
        [(fk.column, fk.table, fk.other) for fk in table.foreign_keys],
    )
    return hashlib.sha256(repr(shape).encode()).hexdigest()[:16]


def render_create_sql(db: sqlite_utils.Database, table: Table, name: str) -> str:
    """sqlite-utils' CREATE TABLE for `table` as `name`, with its generated columns and
    its foreign keys added as table constraints. sqlite-utils refuses a key whose table
    does not exist yet, and another projection's table may not (or may be rebuilt after
    this one). A key names the live table, so rebuilt tables renamed into place keep
    pointing at it."""
    sql: str = db.create_table_sql(
        name, table.columns, pk=table.pk if table.pk else None, not_null=table.not_null
    )
    if not table.foreign_keys and not table.generated:
        return sql
    body = sql.rstrip().removesuffix(";").rstrip()
    assert body.endswith(")"), sql
    types = _sqlite_utils().db.COLUMN_TYPE_MAPPING  # as it types the other columns
    generated = "".join(
        f",\n   [{column}] {types[kind]} GENERATED ALWAYS AS ({expression}) STORED"
        for column, kind, expression in table.generated
    )
    keys = "".join(
        f",\n   FOREIGN KEY([{fk.column}]) REFERENCES [{fk.table}]([{fk.other}])"
        for fk in table.foreign_keys
    )
    return f"{body[:-1].rstrip()}{generated}{keys}\n)"


def create_sql_module(projections: Iterable[Projection]) -> str:
    """The text of `projections/create_sql.py`: each table's signature and its CREATE
    statement after the name, as `render_create_sql` writes them today (plain tables;
    full-text ones are written without sqlite-utils)."""
    store = ReadModelStore(":memory:")
    lines = [
        "# ruff: noqa: E501  (statements as sqlite-utils writes them, one line each)",
        '"""Generated by `python -m benchledger.projections.store`, which writes this file',
        "again: each read-model table's CREATE statement as sqlite-utils writes it",
        "(`store.render_create_sql`) after the table's quoted name, and the signature of",
        "the table it was written for (`store.table_signature`). A command making a new",
        "ledger's tables uses these instead of importing sqlite-utils, for each table whose",
        "signature still matches; a test checks each statement is sqlite-utils' own.",
        '"""',
        "",
        "# table name -> (signature, statement after `CREATE TABLE <name> `)",
        "CREATE_SQL: dict[str, tuple[str, str]] = {",
    ]
    for projection in projections:
        for table in projection.resolved().tables:
            if table.full_text:
                continue
            sql = render_create_sql(store.db, table, table.name)
            prefix = f"CREATE TABLE {_quoted(table.name)} "
            assert sql.startswith(prefix), sql
            after = sql.removeprefix(prefix)
            lines.append(f"    {table.name!r}: (")
            lines.append(f"        {table_signature(table)!r},")
            lines.extend(f"        {line!r}" for line in after.splitlines(keepends=True))
            lines[-1] += ","
            lines.append("    ),")
    lines.append("}")
    store.close()
    return "\n".join(lines) + "\n"


class ReadModelStore:
    def __init__(self, path: Path | str, *, conn: sqlite3.Connection | None = None) -> None:
        """The read models in `path`; over `conn` (e.g. a read-only one) if given, as they are."""
        self.path = Path(path)
        self.conn = conn or connect(self.path)
        self._in_transaction = False
        self._checkpointer: Checkpointer | None = None
        self._bulk = False
        self._statements: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
        if conn is None and not table_exists(self.conn, STATE_TABLE):
            self.conn.execute(
                f"CREATE TABLE IF NOT EXISTS [{STATE_TABLE}] "
                "(projection TEXT PRIMARY KEY, version INTEGER NOT NULL, "
                "position INTEGER NOT NULL)"
            )

    @cached_property
    def db(self) -> sqlite_utils.Database:
        """The read models through sqlite-utils, which writes their tables' CREATE
        statements. Over this store's own connection as it is: sqlite-utils' plugins are
        not loaded (finding them scans every installed distribution's entry points, and
        one would run its `prepare_connection` hook on the ledger's connection), nor is
        its `recursive_triggers` pragma set (the read models have no triggers)."""
        database: sqlite_utils.Database = _sqlite_utils().Database(
            self.conn, recursive_triggers=False, execute_plugins=False
        )
        return database

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def write(self) -> Iterator[None]:
        """One IMMEDIATE transaction: concurrent writers queue instead of double-applying."""
        self.conn.execute("BEGIN IMMEDIATE")
        self._in_transaction = True
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")
            if self._checkpointer is not None:
                self._checkpointer.committed()
        finally:
            self._in_transaction = False

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """A page cache of `BULK_CACHE_KIB` while a large catch-up or rebuild writes: the
        tables it updates by key (runs, candidates) outgrow SQLite's default cache of
        2 MiB, and every page evicted was read again from the WAL (most of a rebuild's
        system time). A cache bounds memory, it does not reserve it."""
        (before,) = self.conn.execute("PRAGMA cache_size").fetchone()
        self.conn.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
        self._bulk = True
        try:
            yield
        finally:
            self._bulk = False
            checkpointer, self._checkpointer = self._checkpointer, None
            if checkpointer is not None:
                checkpointer.close()
            self.conn.execute(f"PRAGMA cache_size = {int(before)}")

    def checkpoint_aside(self) -> None:
        """Within `bulk()`, from now to its end: the write-ahead log copied into the file
        after each commit by a thread (`Checkpointer`), not by the committing connection.
        Call it when no process is to be forked before the bulk ends: a fork copies no
        thread, and a process with threads forks none (`forked.can_fork`)."""
        if self._bulk and self._checkpointer is None and self._in_wal_file():
            from benchledger.projections.checkpointer import Checkpointer

            self._checkpointer = Checkpointer(self.path, self.conn)

    def _in_wal_file(self) -> bool:
        (mode,) = self.conn.execute("PRAGMA journal_mode").fetchone()
        return str(mode).lower() == "wal" and str(self.path) not in ("", ":memory:")

    @contextmanager
    def rebuild_lock(self, *, wait: bool = True) -> Iterator[bool]:
        """One rebuild at a time; the OS drops the lock if its holder dies. Yields whether
        it is held: always when `wait`, else only when no one else held it.

        The lock is taken on the ledger's directory, so nothing is left beside the
        ledger; rebuilds of other ledgers in that directory wait too, which is rare
        and short. Not on the ledger file itself: SQLite locks it with POSIX locks,
        and a process loses those when it closes *any* descriptor of the file, so
        opening and closing the file here would release the locks of this process's
        own SQLite connections.
        """
        descriptor = os.open(self.path.parent, os.O_RDONLY)
        try:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(descriptor)  # releases the lock

    def leftovers(self) -> list[str]:
        """Tables a rebuild made aside and never swapped in: its process died."""
        rows = self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB ?",
            (f"*{REBUILD_SUFFIX}",),
        )
        return sorted(name for (name,) in rows)

    def drop_leftovers(self) -> int:
        """Drop a dead rebuild's tables (and with them their indexes), then hand their
        pages back; how many were dropped. Only while holding the rebuild lock: a
        running rebuild's tables are its work, not leftovers."""
        names = self.leftovers()
        if names:
            with self.write():
                for name in self.leftovers():
                    self.conn.execute(f"DROP TABLE IF EXISTS [{name}]")
            self.reclaim_free_pages()
        return len(names)

    def reclaim_free_pages(self) -> None:
        """Return the pages a rebuild freed to the file system (a no-op on files
        without incremental auto-vacuum, which reuse them instead)."""
        assert not self._in_transaction
        # execute() steps a statement once, and this pragma frees one page per step;
        # executescript() runs it to the end.
        self.conn.executescript("PRAGMA incremental_vacuum;")

    def states(self) -> dict[str, tuple[int, int]]:
        rows = self.conn.execute(f"SELECT projection, version, position FROM [{STATE_TABLE}]")
        return {name: (version, position) for name, version, position in rows}

    def set_state(self, name: str, version: int, position: int) -> None:
        self.conn.execute(
            f"INSERT INTO [{STATE_TABLE}] (projection, version, position) VALUES (?, ?, ?) "
            "ON CONFLICT (projection) DO UPDATE SET version = excluded.version, "
            "position = excluded.position",
            (name, version, position),
        )

    def has_tables(self, projection: Projection) -> bool:
        return all(table_exists(self.conn, name) for name in projection.table_names())

    def create_tables(
        self, projection: Projection, suffix: str = "", *, indexed: bool = True
    ) -> dict[str, str]:
        """Make `projection`'s tables (as `name + suffix`), dropping any of those names.
        Live tables that are not `indexed` and rebuilt ones get only the indexes their
        folds look rows up by: `index_filled` makes the others when they are full."""
        names = {}
        for table in projection.tables:
            name = table.name + suffix
            self.conn.execute(f"DROP TABLE IF EXISTS [{name}]")
            self.conn.execute(self._create_sql(table, name))
            whole = indexed and not suffix
            self._create_indexes(table, suffix, table.indexes if whole else table.lookups)
            names[table.name] = name
        return names

    def _create_sql(self, table: Table, name: str) -> str:
        """The CREATE statement of `table` as `name`: as `create_sql` keeps it where the
        table is what it was when that module was written, else as `render_create_sql`
        writes it (which imports sqlite-utils)."""
        if table.full_text:
            columns = ", ".join(
                f"[{c}]" if c in table.full_text else f"[{c}] UNINDEXED" for c in table.columns
            )
            return f"CREATE VIRTUAL TABLE [{name}] USING fts5({columns})"
        kept = CREATE_SQL.get(table.name)
        if kept is not None and kept[0] == table_signature(table):
            return f"CREATE TABLE {_quoted(name)} {kept[1]}"
        return render_create_sql(self.db, table, name)

    def _create_indexes(
        self, table: Table, suffix: str = "", indexes: Iterable[tuple[str, ...]] | None = None
    ) -> None:
        for columns in table.indexes if indexes is None else indexes:
            self.conn.execute(
                f"CREATE INDEX IF NOT EXISTS [{index_name(table.name + suffix, columns)}] "
                f"ON [{table.name}{suffix}] ({index_columns(columns)})"
            )

    def index_filled(self, projection: Projection, suffix: str = "") -> None:
        """Index tables filled from empty before their settle reads them (its statements
        look rows up by key; without indexes that is quadratic in the rows). `swap_in`
        replaces a rebuild's indexes by the live names'. With a page cache of at most
        `INDEX_CACHE_KIB` meanwhile."""
        (before,) = self.conn.execute("PRAGMA cache_size").fetchone()
        smaller = before < 0 and -before > INDEX_CACHE_KIB
        if smaller:
            self.conn.execute(f"PRAGMA cache_size = -{INDEX_CACHE_KIB}")
        try:
            for table in projection.tables:
                self._create_indexes(table, suffix)
        finally:
            if smaller:
                self.conn.execute(f"PRAGMA cache_size = {int(before)}")

    def swap_in(self, projection: Projection, suffix: str) -> None:
        """Replace live tables by rebuilt ones; call inside `write()`."""
        assert self._in_transaction
        projection.check_rebuilt(
            self.read_one,
            {t.name: t.name for t in projection.tables},
            {t.name: t.name + suffix for t in projection.tables},
        )
        for table in projection.tables:
            self.conn.execute(f"DROP TABLE IF EXISTS [{table.name}]")
            self.conn.execute(f"ALTER TABLE [{table.name + suffix}] RENAME TO [{table.name}]")
            for columns in table.indexes:  # made for the settle: renamed with the table
                name = index_name(table.name + suffix, columns)
                self.conn.execute(f"DROP INDEX IF EXISTS [{name}]")
            self._create_indexes(table)

    def apply(
        self, projection: Projection, names: dict[str, str], envelopes: Sequence[Envelope]
    ) -> bool:
        """Fold events into rows; call inside `write()`. Whether any was of the events
        the projection folds (`Projection.topics`)."""
        assert self._in_transaction
        topics = projection.topics
        if topics is not None:
            envelopes = [e for e in envelopes if e.topic in topics]
        if not envelopes:
            return False
        projection.prepare(self.read_one, names)
        self._execute(names, projection.fold_page(envelopes))
        return True

    def settle(self, projection: Projection, names: dict[str, str]) -> None:
        """Run what finishes the transaction's folds (`Projection.settle`); call inside
        `write()`, after the last `apply` of the transaction."""
        assert self._in_transaction
        self._execute(names, projection.settle())

    def run(self, names: dict[str, str], batches: Iterable[tuple[str, list[Params]]]) -> None:
        """Run statements folded already (consecutive equal ones as a batch), over the
        tables `names`; call inside `write()`."""
        assert self._in_transaction
        statements = self._statements_over(names)
        cursor = self.conn.cursor()  # one for all: `conn.execute` makes one per statement
        for sql, batch in batches:
            statement = statements.get(sql)
            if statement is None:
                statement = statements[sql] = sql.format(**names)
            if not batch:
                continue
            if len(batch) == 1:
                cursor.execute(statement, batch[0])
            else:
                cursor.executemany(statement, batch)

    def _statements_over(self, names: dict[str, str]) -> dict[str, str]:
        """Statements over `names` as run so far, each formatted once: a large catch-up
        runs a few dozen statements hundreds of thousands of times. (Bounded: facts make
        statements of their own, of as many kinds as their columns combine.)"""
        key = tuple(names.items())
        statements = self._statements.get(key)
        if statements is None or len(statements) > STATEMENTS_KEPT:
            statements = self._statements[key] = {}
        return statements

    def _execute(self, names: dict[str, str], changes: Iterable[Change]) -> None:
        self.run(names, group_changes(changes))

    def read_one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """One row of a query, through this store's connection (within its transaction)."""
        return self.conn.execute(sql, params).fetchone()


if __name__ == "__main__":
    from benchledger.projections.registry import all_projections

    Path(__file__).with_name("create_sql.py").write_text(create_sql_module(all_projections()))
