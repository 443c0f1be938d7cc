"""The composition root: builds the ledger and its read models from settings."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, Self, TypeVar
from urllib.parse import parse_qs, unquote, urlparse

from eventsourcing.utils import get_topic

from benchledger.adapters.store.chained import ChainedSQLiteRecorder
from benchledger.adapters.store.eventstore import PydanticMapper, PydanticTranscoder
from benchledger.adapters.store.projection_runner import NotificationLog, ProjectionRunner
from benchledger.adapters.store.readonly import ReadOnlyRecorder
from benchledger.adapters.store.settings import DEFAULT_DB, Settings
from benchledger.adapters.store.streams import (
    present_streams,
    present_streams_forked,
    sole_events,
    sole_events_forked,
    stream_events,
)
from benchledger.adapters.store.transaction import spanning
from benchledger.domain.ledger_base import LedgerBase
from benchledger.projections.registry import all_projections
from benchledger.projections.store import ReadModelStore, prepare_new_file

if TYPE_CHECKING:
    from benchledger.domain.ledger import Ledger
    from benchledger.domain.publishing import Publishing

POSTGRES_RECORDER_TOPIC = "benchledger.adapters.store.chained_postgres:ChainedPostgresRecorder"

__all__ = [
    "DEFAULT_DB",
    "Opened",
    "Services",
    "Settings",
    "build",
    "build_publisher",
    "build_reader",
    "event_store_env",
]

# The application a command opens: the whole ledger (`Ledger`), or only what records
# publication facts (`Publishing`), which loads no run, import or execution code.
A = TypeVar("A", bound=LedgerBase)
A_co = TypeVar("A_co", bound=LedgerBase, covariant=True)


def shown_url(url: str) -> str:
    """The event store URL as messages may show it: without its password."""
    parsed = urlparse(url)
    if parsed.password is None:
        return url
    netloc = f"{parsed.username or ''}:***@{parsed.hostname or ''}"
    if parsed.port:
        netloc += f":{parsed.port}"
    return parsed._replace(netloc=netloc).geturl()


def event_store_env(settings: Settings) -> dict[str, str]:
    env = {
        "MAPPER_TOPIC": get_topic(PydanticMapper),
        "TRANSCODER_TOPIC": get_topic(PydanticTranscoder),
    }
    url = settings.event_store_url
    if not url:
        env.update(
            PERSISTENCE_MODULE="eventsourcing.sqlite",
            APPLICATION_RECORDER_TOPIC=get_topic(ChainedSQLiteRecorder),
            SQLITE_DBNAME=str(settings.db_path),
            SQLITE_LOCK_TIMEOUT=str(settings.lock_timeout_seconds),
        )
        return env
    parsed = urlparse(url)
    if parsed.scheme not in ("postgresql", "postgres"):
        raise ValueError(f"unsupported event store URL scheme '{parsed.scheme}'")
    query = parse_qs(parsed.query)
    env.update(
        PERSISTENCE_MODULE="eventsourcing.postgres",
        # By name: resolved only here, so a SQLite ledger never loads psycopg.
        APPLICATION_RECORDER_TOPIC=POSTGRES_RECORDER_TOPIC,
        POSTGRES_DBNAME=parsed.path.lstrip("/") or "postgres",
        POSTGRES_HOST=parsed.hostname or "127.0.0.1",
        POSTGRES_PORT=str(parsed.port or 5432),
        POSTGRES_USER=unquote(parsed.username or "postgres"),
        POSTGRES_PASSWORD=unquote(parsed.password or ""),
        POSTGRES_LOCK_TIMEOUT=str(settings.lock_timeout_seconds),
        POSTGRES_CONNECT_TIMEOUT="10",
    )
    if "schema" in query:
        env["POSTGRES_SCHEMA"] = query["schema"][0]
    return env


@contextmanager
def tables_created_one_at_a_time(env: dict[str, str]) -> Iterator[None]:
    """Serialise opening a PostgreSQL event store across processes.

    Opening creates the store's types and tables with `IF NOT EXISTS`, which
    PostgreSQL does not make safe against a concurrent creator (`duplicate key ...
    pg_type_typname_nsp_index`, `tuple concurrently updated`): a session-level
    advisory lock, keyed by database and schema, lets one process create them while
    the others wait, then find them there.
    """
    import psycopg

    schema = env.get("POSTGRES_SCHEMA", "public")
    key = int.from_bytes(
        hashlib.sha256(f"benchledger:create-tables:{schema}".encode()).digest()[:8],
        "big",
        signed=True,
    )
    try:
        conn = psycopg.connect(
            dbname=env["POSTGRES_DBNAME"],
            host=env["POSTGRES_HOST"],
            port=int(env["POSTGRES_PORT"]),
            user=env["POSTGRES_USER"],
            password=env["POSTGRES_PASSWORD"] or None,
            connect_timeout=int(env["POSTGRES_CONNECT_TIMEOUT"]),
            autocommit=True,
        )
    except psycopg.OperationalError as e:
        raise ValueError(str(e).splitlines()[0]) from None
    with conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


@dataclass
class Opened(Generic[A_co]):
    """An application over the event store, and the read models it keeps current."""

    settings: Settings
    ledger: A_co
    store: ReadModelStore
    runner: ProjectionRunner
    _closed: bool = field(default=False, repr=False)

    def close(self) -> None:
        if not self._closed:
            self.store.close()
            self.ledger.close()
            self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Services(Opened["Ledger"]):
    """The whole ledger application and its read models."""


def open_application(settings: Settings, kind: type[A]) -> A:
    env = event_store_env(settings)
    if env["PERSISTENCE_MODULE"] != "eventsourcing.postgres":
        ledger = kind(env=env)
    else:
        with tables_created_one_at_a_time(env):
            ledger = kind(env=env)
    ledger.transaction = spanning(ledger.recorder)
    ledger.streams_present = present_streams(ledger.recorder)
    ledger.stream_events = stream_events(ledger.recorder)
    ledger.streams_present_forked = present_streams_forked(ledger.recorder)
    ledger.sole_events = sole_events(ledger.recorder)
    ledger.sole_events_forked = sole_events_forked(ledger.recorder)
    return ledger


def open_ledger(settings: Settings) -> Ledger:
    from benchledger.domain.ledger import Ledger

    return open_application(settings, Ledger)


def build(settings: Settings) -> Services:
    from benchledger.domain.ledger import Ledger

    ledger, store, runner = _opened(settings, Ledger)
    return Services(settings=settings, ledger=ledger, store=store, runner=runner)


def build_publisher(settings: Settings) -> Opened[Publishing]:
    """`build` for a command that appends only publication records (`Publishing`)."""
    from benchledger.domain.publishing import Publishing

    ledger, store, runner = _opened(settings, Publishing)
    return Opened(settings=settings, ledger=ledger, store=store, runner=runner)


def _opened(settings: Settings, kind: type[A]) -> tuple[A, ReadModelStore, ProjectionRunner]:
    """The application `kind` over the event store, its read models and their runner."""
    if not settings.event_store_url:
        prepare_new_file(settings.db_path)
    ledger = open_application(settings, kind)
    store = ReadModelStore(settings.db_path)
    return ledger, store, ProjectionRunner(ledger.recorder, ledger.mapper, store, all_projections())


@dataclass
class Reader:
    """Folds events without writing the ledger: `as_of` snapshots and verify, read-only."""

    runner: ProjectionRunner
    ledger: Ledger | None = None  # the PostgreSQL application whose recorder it reads

    def close(self) -> None:
        if self.ledger is not None:
            self.ledger.close()


def build_reader(settings: Settings, conn: sqlite3.Connection) -> Reader:
    """Reads events through `conn` (SQLite) or from PostgreSQL; writes nothing to the file."""
    recorder: NotificationLog
    ledger = None
    if settings.event_store_url:
        ledger = open_ledger(settings)
        recorder = ledger.recorder
    else:
        recorder = ReadOnlyRecorder(conn)
    mapper = PydanticMapper(transcoder=PydanticTranscoder())
    store = ReadModelStore(settings.db_path, conn=conn)
    return Reader(ProjectionRunner(recorder, mapper, store, all_projections()), ledger)
