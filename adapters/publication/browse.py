"""Datasette over the ledger file: read-only, with the project's metadata."""

from __future__ import annotations

import importlib.util
import socket
from html import escape
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml
from datasette.app import Datasette

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


def datasette_for(db_path: Path, *, immutable: bool = False) -> Datasette:
    """Datasette over the ledger; `immutable` where its location is read-only, as a WAL
    file there cannot be opened by a reader that needs to create its -shm file."""
    plugins = CONFIG_DIR / "plugins"
    templates = CONFIG_DIR / "templates"
    return Datasette(
        [] if immutable else [str(db_path)],
        immutables=[str(db_path)] if immutable else [],
        metadata=metadata_for(db_path),
        plugins_dir=str(plugins) if plugins.is_dir() else None,
        template_dir=str(templates) if templates.is_dir() else None,
        # Suggested facets try a GROUP BY over every column of a page: seconds on a large
        # `cells`. The configured facets read indexes; the limits bound what a user asks.
        settings={"facet_time_limit_ms": 400, "sql_time_limit_ms": 3000, "suggest_facets": False},
    )


def listen(host: str, port: int) -> socket.socket:
    """A socket already listening on host:port (port 0 picks a free one); OSError if not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=128)


def serve(db_path: Path, sock: socket.socket, *, immutable: bool = False) -> None:
    """Serve Datasette on a socket that is already listening, until interrupted."""
    import uvicorn

    app = datasette_for(db_path, immutable=immutable).app()
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])
