"""Datasette over the ledger file: read-only, with the project's metadata."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import socket
import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from html import escape
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml
from datasette.app import Datasette
from datasette.database import Database
from datasette.utils import resolve_env_secrets

from benchledger.adapters.publication import sql_guard
from benchledger.adapters.store import ledger_file
from benchledger.adapters.store.snapshot import Stamp, read_stamp

CONFIG_PACKAGE = "benchledger.datasette"
TEMPLATE_NAME = "ledger"


def config_dir() -> Path:
    """The folder of the Datasette configuration, shipped as package data."""
    try:
        # A namespace package's files() is a multiplexed path; a child of it is a real one.
        return Path(str(files(CONFIG_PACKAGE).joinpath("metadata.yml"))).parent
    except NotADirectoryError:
        # setuptools' editable finder lists a placeholder beside the real folder in the
        # namespace path, which importlib.resources cannot multiplex: take the folder.
        spec = importlib.util.find_spec(CONFIG_PACKAGE)
        locations = spec.submodule_search_locations if spec else None
        for location in locations or ():
            if (Path(location) / "metadata.yml").is_file():
                return Path(location)
        raise


CONFIG_DIR = config_dir()


def metadata_for(db_path: Path) -> dict[str, Any]:
    """The metadata file, keyed by the database name this ledger file gets: its
    `databases` key and the database each dashboard chart and filter queries. A
    snapshot's says which position and head hash it was published at."""
    metadata: dict[str, Any] = yaml.safe_load((CONFIG_DIR / "metadata.yml").read_text())
    name = db_path.stem
    databases = metadata.setdefault("databases", {})
    if TEMPLATE_NAME in databases and name != TEMPLATE_NAME:
        databases[name] = databases.pop(TEMPLATE_NAME)
    dashboards = metadata.get("plugins", {}).get("datasette-dashboards", {})
    for dashboard in dashboards.values():
        parts = [*dashboard.get("charts", {}).values(), *dashboard.get("filters", {}).values()]
        for part in parts:
            if part.get("db") == TEMPLATE_NAME:
                part["db"] = name
    stamp = snapshot_stamp(db_path)
    if stamp is not None:
        database = databases.setdefault(name, {})
        database["description"] = (
            f"{database.get('description', '')} A frozen snapshot at ledger position "
            f"{stamp.position} ({stamp.events} events; chain head {stamp.head_sha256}), "
            f"published {stamp.published_at}: `benchledger --db FILE verify` checks it."
        ).strip()
        database["snapshot_position"] = stamp.position
        database["snapshot_head_sha256"] = stamp.head_sha256
    for database in databases.values():
        for table in database.get("tables", {}).values():
            _fold_columns(table)
    return metadata


def _fold_columns(table: dict[str, Any]) -> None:
    """Move a table's column descriptions into its description, collapsed: Datasette
    prints `columns` as a list above the rows, which put the first row of `runs` a
    screen and more down the page."""
    columns: dict[str, str] | None = table.pop("columns", None)
    if not columns:
        return
    items = "".join(
        f"<dt>{escape(name)}</dt><dd>{escape(text)}</dd>" for name, text in columns.items()
    )
    table["description_html"] = (
        f"<p>{escape(table.get('description', ''))}</p>"
        f'<details class="column-descriptions"><summary>What each column holds</summary>'
        f"<dl>{items}</dl></details>"
    )


def snapshot_stamp(db_path: Path) -> Stamp | None:
    """The stamp of a snapshot written by `publish`, read without changing the file."""
    if ledger_file.inspect(db_path) is not ledger_file.Kind.SNAPSHOT:
        return None
    conn = ledger_file.connect_read_only(db_path, location_writable=False)
    try:
        return read_stamp(conn)
    finally:
        conn.close()


SETTINGS = {
    # Suggested facets try a GROUP BY over every column of a page: seconds on a large
    # `cells`. The configured facets read indexes; the limits bound what a user asks.
    "facet_time_limit_ms": 400,
    "sql_time_limit_ms": 3000,
    "suggest_facets": False,
    "max_returned_rows": 1000,
    # Threads for pages; a visitor's own SQL runs on VISITOR_SQL_THREADS others.
    "num_sql_threads": 3,
}
# Requests carrying SQL of their own (`sql=`, `_where=`) queue for these threads, so that
# slow ones keep each other waiting, never the pages of the ledger.
VISITOR_SQL_THREADS = 2

# Set while Datasette reads the schema for itself: its SQL runs trusted.
_INTROSPECTING: ContextVar[bool] = ContextVar("benchledger_introspecting", default=False)
# Set inside Database.execute: the function it runs carries SQL, not Datasette's own code.
_RUNNING_SQL: ContextVar[bool] = ContextVar("benchledger_running_sql", default=False)
# Set for a request that carries SQL of its own (by the guard plugin's asgi_wrapper).
VISITOR_SQL: ContextVar[bool] = ContextVar("benchledger_visitor_sql", default=False)


@contextmanager
def _flag(var: ContextVar[bool]) -> Iterator[None]:
    token = var.set(True)
    try:
        yield
    finally:
        var.reset(token)


class LedgerDatabase(Database):  # type: ignore[misc]
    """The ledger as Datasette reads it: Datasette's schema introspection trusted, every
    other statement under the visitors' rules (sql_guard), and a visitor's own SQL on
    threads of its own."""

    _read_connection: Any  # Datasette's, set in Database.__init__

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Each thread's connection to this database, whichever pool the thread is in.
        self._connections = threading.local()

    async def execute(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        with _flag(_RUNNING_SQL):
            try:
                return await super().execute(sql, *args, **kwargs)
            except MemoryError:
                # SQLite's heap limit (sql_guard.bound_sqlite_heap) reached: the query's fault.
                raise sqlite3.OperationalError(
                    "the query needs more memory than this server gives one query"
                ) from None
            except sqlite3.DatabaseError as e:
                if getattr(e, "sqlite_errorcode", None) != sqlite3.SQLITE_AUTH:
                    raise
                # A refusal of the authorizer is a DatabaseError, which the table page
                # turns into a 500; as an OperationalError every page shows it as the
                # query's error.
                raise sqlite3.OperationalError(*e.args) from None

    async def execute_fn(self, fn: Callable[[Any], Any]) -> Any:
        # A function Datasette passes itself reads the schema; SQL passed to execute() is
        # trusted only inside the introspection methods below.
        trusting = _INTROSPECTING.get() or not _RUNNING_SQL.get()
        pool: ThreadPoolExecutor | None = self.ds.executor
        if VISITOR_SQL.get() and pool is not None:
            pool = self.ds.visitor_executor

        def run(conn: Any) -> Any:
            sql_guard.trust(conn, trusting)
            return fn(conn)

        if pool is None:
            # Datasette's non-threaded mode (num_sql_threads 0): one connection, in the loop.
            connection = self._read_connection
            if connection is None:
                connection = self._read_connection = self.connect()
                self.ds._prepare_connection(connection, self.name)
            return run(connection)

        def in_thread() -> Any:
            conn = getattr(self._connections, self.name, None)
            if conn is None:
                conn = self.connect()
                self.ds._prepare_connection(conn, self.name)
                setattr(self._connections, self.name, conn)
            return run(conn)

        return await asyncio.get_running_loop().run_in_executor(pool, in_thread)

    async def table_exists(self, table: str) -> bool:
        with _flag(_INTROSPECTING):
            return bool(await super().table_exists(table))

    async def table_names(self) -> list[str]:
        with _flag(_INTROSPECTING):
            return list(await super().table_names())

    async def hidden_table_names(self) -> list[str]:
        with _flag(_INTROSPECTING):
            return list(await super().hidden_table_names())

    async def view_names(self) -> list[str]:
        with _flag(_INTROSPECTING):
            return list(await super().view_names())

    async def get_table_definition(self, table: str, type_: str = "table") -> str | None:
        with _flag(_INTROSPECTING):
            definition: str | None = await super().get_table_definition(table, type_)
            return definition

    async def table_counts(self, limit: int = 10) -> dict[str, int | None]:
        with _flag(_INTROSPECTING):
            return dict(await super().table_counts(limit))

    async def attached_databases(self) -> list[Any]:
        with _flag(_INTROSPECTING):
            return list(await super().attached_databases())


class LedgerDatasette(Datasette):  # type: ignore[misc]
    """Datasette for strangers: its schema checks trusted, the visitors' SQL threads, and
    no file path in what it says about its databases."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.visitor_executor = ThreadPoolExecutor(
            max_workers=VISITOR_SQL_THREADS, thread_name_prefix="visitor-sql"
        )
        self._plugins_by_place: dict[tuple[Any, ...], dict[str, Any]] = {}

    async def permission_allowed(self, *args: Any, **kwargs: Any) -> Any:
        with _flag(_INTROSPECTING):
            return await super().permission_allowed(*args, **kwargs)

    async def _refresh_schemas(self) -> None:
        with _flag(_INTROSPECTING):
            await super()._refresh_schemas()

    def plugin_config(
        self,
        plugin_name: str,
        database: str | None = None,
        table: str | None = None,
        fallback: bool = True,
    ) -> Any:
        # Asked by plugins on every page (and, by datasette-render-markdown's render_cell,
        # for every cell of one, 3,000 on a page of runs, until `_without_markdown_hooks`),
        # and each ask merges the whole metadata: the merged plugins are kept per place,
        # and each caller still gets its own copy of its config (datasette-dashboards
        # fills in the one it is given).
        key = (database, table, fallback, id(self._metadata_local))
        plugins = self._plugins_by_place.get(key)
        if plugins is None:
            plugins = self._plugins_by_place[key] = (
                self.metadata("plugins", database=database, table=table, fallback=fallback) or {}
            )
        config = plugins.get(plugin_name)
        return resolve_env_secrets(config, os.environ) if config is not None else None

    def _connected_databases(self) -> list[dict[str, Any]]:
        return [
            {key: value for key, value in database.items() if key != "path"}
            for database in super()._connected_databases()
        ]


def _without_markdown_hooks() -> None:
    """datasette-render-markdown's hooks unregistered: its render_cell ran for every text
    cell of every page (a merge of its config, its secrets resolved, its patterns
    matched) to render one column of one table; the project's plugin renders those
    columns with the package's own renderer and sanitiser (`benchledger_cells`). Its
    other hooks add a template function and tag that no template of the ledger uses."""
    import datasette_render_markdown

    # Looked up by name: to the type checker, `datasette` is also this project's folder.
    pm = importlib.import_module("datasette.plugins").pm
    if pm.is_registered(datasette_render_markdown):
        pm.unregister(datasette_render_markdown)


def datasette_for(db_path: Path, *, immutable: bool = False) -> Datasette:
    """Datasette over the ledger; `immutable` where its location is read-only, as a WAL
    file there cannot be opened by a reader that needs to create its -shm file."""
    plugins = CONFIG_DIR / "plugins"
    templates = CONFIG_DIR / "templates"
    if plugins.is_dir():
        _without_markdown_hooks()
    ds = LedgerDatasette(
        [] if immutable else [str(db_path)],
        immutables=[str(db_path)] if immutable else [],
        metadata=metadata_for(db_path),
        plugins_dir=str(plugins) if plugins.is_dir() else None,
        template_dir=str(templates) if templates.is_dir() else None,
        settings=SETTINGS,
    )
    opened = ds.databases[db_path.stem]
    ds.remove_database(opened.name)
    ledger = LedgerDatabase(ds, opened.path, is_mutable=opened.is_mutable)
    ds.add_database(ledger, name=opened.name, route=opened.route)
    return ds


def listen(host: str, port: int) -> socket.socket:
    """A socket already listening on host:port (port 0 picks a free one); OSError if not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=128)


def serve(db_path: Path, sock: socket.socket, *, immutable: bool = False) -> None:
    """Serve Datasette on a socket that is already listening, until interrupted."""
    import uvicorn

    sql_guard.bound_sqlite_heap()
    app = datasette_for(db_path, immutable=immutable).app()
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])
