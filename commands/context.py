"""The context object every command shares: settings, the ledger's services, errors.

Light on purpose: a read command on current read models needs only sqlite3, so
the event store (eventsourcing, pydantic) is loaded only when a command appends
events or the read models must catch up first.
"""

from __future__ import annotations

import atexit
import functools
import gc
import getpass
import importlib
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from benchledger.adapters.publication.queries import Queries
from benchledger.adapters.store import ledger_file, read_side
from benchledger.adapters.store.hotpath import gc_paused
from benchledger.adapters.store.settings import Settings
from benchledger.domain.errors import LedgerError

if TYPE_CHECKING:
    from tempfile import TemporaryDirectory

    from benchledger.adapters.store.bootstrap import Opened, Reader, Services
    from benchledger.adapters.store.projection_runner import NotificationLog, ProjectionRunner
    from benchledger.domain.ledger_base import LedgerBase
    from benchledger.domain.publishing import Publishing
    from benchledger.projections.store import ReadModelStore


OpenedT = TypeVar("OpenedT", bound="Opened[Any]")


class LedgerContext:
    def __init__(
        self,
        db: str | None,
        event_store: str | None,
        *,
        read_only: bool = False,
        command: str | None = None,
        creates: bool = False,
    ) -> None:
        self.settings = Settings.from_env(
            db_path=Path(db) if db else None,
            event_store_url=event_store,
            read_only=read_only or None,
        )
        self.command = command
        self.creates = creates  # this command may start a new ledger
        # This command appends only publication records (verdicts, reviews, comparisons):
        # it opens `Publishing`, not the whole ledger application (see `publisher`).
        self.publishes = False
        self._services: Services | None = None
        self._publisher: Opened[Publishing] | None = None
        self._conn: sqlite3.Connection | None = None
        self._current: sqlite3.Connection | None = None  # _conn, once its read models are current
        self._event_reader: Reader | None = None
        self._snapshot_dir: TemporaryDirectory[str] | None = None
        self._snapshots: list[ReadModelStore] = []
        self._frozen: bool | None = None

    @property
    def path(self) -> Path:
        return self.settings.db_path

    @property
    def read_only(self) -> bool:
        """--read-only (or BENCHLEDGER_READ_ONLY), a ledger whose location is not writable,
        or a snapshot written by `publish`."""
        return (
            self.settings.read_only or not ledger_file.location_writable(self.path) or self.frozen
        )

    @property
    def frozen(self) -> bool:
        """The ledger is a snapshot written by `publish`: it is never written, not even
        by a catch-up, and is read through connections that cannot change it."""
        if self._frozen is None:
            self._frozen = not self._remote and (
                ledger_file.inspect(self.path) is ledger_file.Kind.SNAPSHOT
            )
        return self._frozen

    @property
    def services(self) -> Services:
        """The ledger for appending events, and its read models; may start a new ledger."""
        if self._services is None:
            if self._publisher is not None:  # opened for a verdict: the whole ledger now
                self._publisher.close()
                self._publisher = None
            self._check_writable()
            with loading():
                from benchledger.adapters.store.bootstrap import build

                importlib.import_module("benchledger.domain.ledger")
            self._services = self._open(build)
        return self._services

    @property
    def publisher(self) -> Opened[Publishing]:
        """`services` for a command that appends only publication records: the same
        ledger, opened as `Publishing`, which loads no run, import or execution code
        (nor, until an event asks for them, the read models of runs)."""
        if self._services is not None:
            return self._services
        if self._publisher is None:
            self._check_writable()
            with loading():
                from benchledger.adapters.store.bootstrap import build_publisher

                importlib.import_module("benchledger.domain.publishing")
            self._publisher = self._open(build_publisher)
        return self._publisher

    def _writer(self) -> Opened[LedgerBase]:
        """What this command appends through: `publisher` or `services`."""
        return self.publisher if self.publishes else self.services

    def _check_writable(self) -> None:
        ledger_file.require_writable(
            self.path, creates=self.creates, event_store=bool(self.settings.event_store_url)
        )
        if self.read_only:
            why = "--read-only" if self.settings.read_only else "its location is not writable"
            what = f"`{self.command}`" if self.command else "this command"
            raise ledger_file.ReadOnlyLedgerError(
                f"{self.path} is open read-only ({why}), and {what} appends to it"
            )

    def _open(self, build: Callable[[Settings], OpenedT]) -> OpenedT:
        """What `build` opens (its modules loaded already, frozen: `loading`), or why
        the event store could not be opened."""
        from eventsourcing.domain import EventSourcingError

        from benchledger.adapters.store.bootstrap import shown_url

        try:
            return build(self.settings)
        except (ValueError, EventSourcingError) as e:
            url = self.settings.event_store_url
            where = shown_url(url) if url else self.path
            raise click.ClickException(f"cannot open the event store at {where}: {e}") from None

    def read_models(self) -> sqlite3.Connection:
        """A connection to read models that are current with the event log.

        Checked with plain sqlite3 first; only when they are behind is the event
        store loaded to bring them current (or, read-only, the lag reported).
        """
        if self._services is not None or self._publisher is not None:
            return self.read_models_after_catch_up()
        if self._current is None:
            kind = ledger_file.require_readable(self.path, event_store=self._remote)
            if self._remote and not self.read_only:
                # PostgreSQL's head costs a connection anyway, and the file may not exist yet.
                return self.read_models_after_catch_up()
            conn = self._connection(kind)
            lag = read_side.lag(conn, self._event_log_head(conn))
            if not lag.current:
                if self.read_only:
                    raise read_side.behind_error(self.path, lag, remote=self._remote)
                return self.read_models_after_catch_up()
            if lag.leftovers and not self.read_only and not read_side.rebuild_running(self.path):
                return self.read_models_after_catch_up()  # drops a killed rebuild's tables
            self._current = conn
        return self._current

    def read_models_after_catch_up(self) -> sqlite3.Connection:
        services = self._writer()
        services.runner.catch_up()
        return services.store.conn

    def event_log(self) -> tuple[NotificationLog, sqlite3.Connection]:
        """The stored events, and the read models as they are now (no catch-up)."""
        if not self.read_only:
            writer = self._writer()
            return writer.ledger.recorder, writer.store.conn
        runner = self._reading_runner()
        return runner.recorder, runner.store.conn

    @property
    def _remote(self) -> bool:
        return bool(self.settings.event_store_url)

    def _connection(self, kind: ledger_file.Kind | None = None) -> sqlite3.Connection:
        """One connection to the ledger file that cannot change it, as the file is."""
        if self._conn is None:
            if kind is None:
                kind = ledger_file.require_readable(self.path, event_store=self._remote)
            if kind in (ledger_file.Kind.MISSING, ledger_file.Kind.EMPTY):
                raise ledger_file.NoLedgerError(
                    f"no read models at {self.path} yet, and it is open read-only: build them "
                    "once without --read-only (e.g. `benchledger follow --polls 1`)"
                )
            self._conn = ledger_file.connect_read_only(
                self.path,
                location_writable=ledger_file.location_writable(self.path) and not self.frozen,
            )
        return self._conn

    def _event_log_head(self, conn: sqlite3.Connection) -> int:
        if self._remote:
            return self._reading_runner().head_position()
        return read_side.event_log_head(conn)

    def _reading_runner(self) -> ProjectionRunner:
        """Events read without writing anything: for a read-only ledger."""
        if self._event_reader is None:
            with loading():
                from benchledger.adapters.store.bootstrap import build_reader

            self._event_reader = build_reader(self.settings, self._connection())
        return self._event_reader.runner

    def _close_reader(self) -> None:
        if self._event_reader is not None:
            self._event_reader.close()
        if self._conn is not None:
            self._conn.close()
        self._conn = self._current = None
        self._event_reader = None

    def queries(self, as_of: str | None = None) -> Queries:
        """Read models, brought up to date with the event log first; or, with `as_of`
        (a position or a timestamp), exactly as they were at that point of the log."""
        if as_of is None:
            return Queries(self.read_models())
        return Queries(self.read_models_at(self.resolve_position(as_of)))

    def read_models_at(self, position: int) -> sqlite3.Connection:
        """The read models as they were at `position`, folded into a temporary file."""
        import tempfile  # (with shutil and random) for --as-of only

        from benchledger.projections.store import ReadModelStore

        if self._snapshot_dir is None:
            self._snapshot_dir = tempfile.TemporaryDirectory(prefix="benchledger-as-of-")
        store = ReadModelStore(Path(self._snapshot_dir.name) / f"at-{position}.db")
        self._snapshots.append(store)
        runner = self._reading_runner() if self.read_only else self._writer().runner
        runner.build_at(position, store)
        return store.conn

    def resolve_position(self, as_of: str) -> int:
        """A ledger position from a position number or an ISO 8601 timestamp."""
        conn = self.read_models()
        head = conn.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()[0]
        if as_of.isdigit():
            position = int(as_of)
            if position > head:
                raise click.BadParameter(
                    f"position {position} is beyond the ledger's head ({head})",
                    param_hint="--as-of",
                )
            return position
        try:
            moment = datetime.fromisoformat(as_of.replace("Z", "+00:00"))
        except ValueError:
            raise click.BadParameter(
                "give a ledger position or an ISO 8601 timestamp", param_hint="--as-of"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        row = conn.execute(
            "SELECT coalesce(max(position), 0) FROM events WHERE time <= ?",
            (moment.astimezone(UTC).isoformat(),),
        ).fetchone()
        return int(row[0])

    def close(self) -> None:
        for store in self._snapshots:
            store.close()
        if self._snapshot_dir is not None:
            self._snapshot_dir.cleanup()
        self._close_reader()
        if self._services is not None:
            self._services.close()
        if self._publisher is not None:
            self._publisher.close()
        # The command is done: what `loading` froze is the collector's again (a process
        # that runs many commands, a test session, keeps no garbage frozen by them).
        gc.unfreeze()


@contextmanager
def loading() -> Iterator[None]:
    """Load modules with the cyclic collector paused, then freeze everything alive.

    What a command loads (its module, the event store: classes, functions; the domain's
    pydantic models build their validators later, on first use) lives as long as the
    process, up to a few hundred thousand objects, and every collection while they load
    and after walks them all. Frozen, the collector skips them (reference counting still
    frees them) and keeps collecting everything made afterwards, until the command is
    done (`LedgerContext.close`)."""
    with gc_paused():
        yield
    gc.freeze()
    _frozen_at_exit()


@functools.cache
def _frozen_at_exit() -> None:
    """Freeze everything alive when the process exits: the interpreter's last collection
    then walks none of it. Once the event store is loaded, that walk was ~30 ms of a
    gate's ~270 ms of CPU, spent after its verdict was committed and every connection
    closed; reference counting still frees what it frees at exit."""
    atexit.register(gc.freeze)


def actor(by: str | None) -> str:
    if by:
        return by
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return os.environ.get("USER", "unknown")


def expected_error(e: Exception, ledger: Path | None) -> str | None:
    """The `Error:` text for a failure the user can act on; None for a bug.

    Library errors are recognised through the modules already loaded: an error
    of a library this process never imported cannot have been raised.
    """
    if isinstance(e, LedgerError):
        return str(e)
    if isinstance(e, sqlite3.DatabaseError):
        return f"{ledger}: {e}" if ledger else str(e)
    events = sys.modules.get("eventsourcing.domain")
    if events is not None and isinstance(e, events.EventSourcingError):
        return f"event store: {e}"
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(e, pydantic.ValidationError):
        first = e.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        return f"field '{field}': {first['msg']}"
    return None


as_of_option = click.option(
    "--as-of",
    metavar="POSITION|TIMESTAMP",
    help="Show it as it was at this ledger position or time (ISO 8601)",
)
