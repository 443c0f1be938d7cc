"""The served ledger as strangers may see it.

Every connection to the ledger is put under sql_guard's rules (hidden tables, path-naming
pragmas and dangerous functions refused, values and pages of results bounded); the pages
of hidden tables are refused like any forbidden page; Datasette's debug pages are not
served; and a request carrying SQL of its own is marked, so its queries run on the
visitors' threads (browse.LedgerDatabase).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

import datasette.handle_exception as default_error_handler
from datasette.database import QueryInterrupted
from datasette.utils import add_cors_headers
from datasette.utils.asgi import Base400, NotFound, Response
from datasette.views.base import DatasetteError
from markupsafe import Markup

from benchledger.adapters.publication import sql_guard
from benchledger.adapters.publication.browse import VISITOR_SQL, LedgerDatabase
from datasette import hookimpl

Scope = MutableMapping[str, Any]
App = Callable[[Scope, Any, Any], Awaitable[None]]

# Pages that show Datasette's internals (threads, actor, permission checks, messages):
# of use to whoever runs a server on their own machine, to a stranger a map of it.
DEBUG_PAGES = (
    r"/-/threads(\.json)?$",
    r"/-/actor(\.json)?$",
    r"/-/permissions$",
    r"/-/messages$",
    r"/-/allow-debug$",
    r"/-/patterns$",
)
# What a malformed request raises inside Datasette: its own errors about the request (an
# unknown `_sort` column, a bad `_through`), JSON or numbers that do not parse, and row
# keys SQLite cannot bind (too many, too few, too large).
REQUEST_ERRORS = (
    DatasetteError,
    ValueError,
    OverflowError,
    sqlite3.ProgrammingError,
    sqlite3.InterfaceError,
)
# Datasette's own error handler runs on every error, after any plugin's, and prints each
# one's traceback with its local variables through rich where rich is installed: about a
# second of CPU per bad request, which a stranger could ask for as often as they like,
# and the request's locals on the server's console. Without rich it prints a plain
# traceback for a real failure (500) only.
default_error_handler.rich = None
# Query parameters whose value is SQL: the statement itself, or a WHERE clause of a table.
SQL_PARAMETERS = frozenset({"sql", "_where"})


def hidden_tables(datasette: Any, database: str) -> set[str]:
    """The tables the metadata hides in `database`, besides those hidden always."""
    tables = datasette.metadata(database=database).get("tables", {})
    return {name for name, table in tables.items() if table.get("hidden")}


@hookimpl
def prepare_connection(conn: Any, database: str, datasette: Any) -> None:
    if isinstance(datasette.databases.get(database), LedgerDatabase):
        sql_guard.guard(conn, hidden_tables(datasette, database))


@hookimpl
def permission_allowed(datasette: Any, action: str, resource: Any) -> bool | None:
    if action == "view-table" and isinstance(resource, tuple | list) and len(resource) == 2:
        database, table = resource
        if database in datasette.databases and sql_guard.is_hidden(
            table, hidden_tables(datasette, database)
        ):
            return False
    return None


@hookimpl
def handle_exception(datasette: Any, request: Any, exception: Exception) -> Any:
    """Every error a visitor's request causes gets the normal error page, and nothing more.

    A request Datasette cannot make sense of is the visitor's error (400), where Datasette
    answers 500 as if the server had failed. The page is made here, not by Datasette's own
    handler (which also runs, and whose answer comes second), so no visitor's error is
    printed. A real failure of the server (500) is left to Datasette, which prints it."""
    if isinstance(exception, QueryInterrupted):
        # Where a page does not catch it itself (a CSV export): the time limit, not a failure.
        return error_page(
            datasette,
            request,
            400,
            "The query took longer than this server allows; ask for fewer rows",
            title="SQL Interrupted",
        )
    if isinstance(exception, Base400):
        return error_page(datasette, request, exception.status, str(exception.args[0]))
    if isinstance(exception, DatasetteError) and exception.status != 500:
        message = Markup(exception.message) if exception.message_is_html else exception.message
        return error_page(
            datasette,
            request,
            exception.status,
            message,
            title=exception.title,
            info=exception.error_dict,
        )
    if not isinstance(exception, REQUEST_ERRORS):
        return None
    message = exception.message if isinstance(exception, DatasetteError) else str(exception)
    return error_page(datasette, request, 400, message, title="Invalid request")


def error_page(
    datasette: Any,
    request: Any,
    status: int,
    message: str,
    *,
    title: str | None = None,
    info: dict[str, Any] | None = None,
) -> Callable[[], Awaitable[Response]]:
    """Datasette's error page (its `error.html`, or JSON for a `.json` path) for `status`."""

    async def page() -> Response:
        body = {**(info or {}), "ok": False, "error": message, "status": status, "title": title}
        headers: dict[str, str] = {}
        if datasette.cors:
            add_cors_headers(headers)
        if request.path.split("?")[0].endswith(".json"):
            return Response.json(body, status=status, headers=headers)
        template = datasette.jinja_env.select_template([f"{status}.html", "error.html"])
        context = {
            **body,
            "urls": datasette.urls,
            "app_css_hash": datasette.app_css_hash(),
            "menu_links": lambda: [],
        }
        html = await template.render_async(context)
        return Response.html(html, status=status, headers=headers)

    return page


async def not_served() -> None:
    raise NotFound("This page is not served here")


@hookimpl
def register_routes() -> list[tuple[str, Callable[[], Awaitable[None]]]]:
    return [(page, not_served) for page in DEBUG_PAGES]


@hookimpl
def asgi_wrapper() -> Callable[[App], App]:
    def wrap(app: App) -> App:
        async def marked(scope: Scope, receive: Any, send: Any) -> None:
            query = scope.get("query_string", b"").decode("latin-1")
            keys = {key for key, _ in parse_qsl(query, keep_blank_values=True)}
            if scope.get("type") == "http" and keys & SQL_PARAMETERS:
                token = VISITOR_SQL.set(True)
                try:
                    await app(scope, receive, send)
                finally:
                    VISITOR_SQL.reset(token)
            else:
                await app(scope, receive, send)

        return marked

    return wrap
