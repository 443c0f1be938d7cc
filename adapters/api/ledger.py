"""A ledger opened from Python code: runs recorded as `benchledger run` records them,
and read back as `runs`, `show` and `latest` list them.

A SQLite path holds events and read models in one file; a PostgreSQL URL keeps the
events there and the read models in a local SQLite file (`db`), as the CLI's
`--event-store` and `--db` do. Reads bring the read models up to date first.
"""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import sys
import threading
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal
from uuid import uuid4

from eventsourcing.domain import EventSourcingError

from benchledger.adapters.api.recording import LEASE_SECONDS, Run
from benchledger.adapters.api.records import CellResult, RunSummary
from benchledger.adapters.execution.secrets import HostPaths, Redactor, mask_argv, secret_values
from benchledger.adapters.publication.queries import Queries
from benchledger.adapters.store import ledger_file
from benchledger.adapters.store.bootstrap import Services, build, shown_url
from benchledger.adapters.store.settings import Settings
from benchledger.domain.errors import LedgerError
from benchledger.domain.ledger_base import Skip
from benchledger.domain.secrets import config_secrets, mask_config

Mode = Literal["default", "rerun_failed", "force"]
MODES: tuple[Mode, ...] = ("default", "rerun_failed", "force")


class RunSkipped(LedgerError):
    """The attempts rules skip this work: it already succeeded, or an attempt of it is
    running (`mode="rerun_failed"` or `"force"` run it again). The skip is recorded."""

    def __init__(self, message: str, reason: str, defer_to: str | None) -> None:
        super().__init__(message)
        self.reason = reason
        self.defer_to = defer_to


class Ledger:
    """An open ledger. Close it (or use it as a context manager) when done: closing
    ends the runs still open as their cells say.

    One Ledger may be shared by threads: its reads and catch-ups take its lock, and its
    appends are safe from several threads, as `benchledger run --jobs` makes them. Each
    `Run` is used from one thread.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.RLock()
        self._services: Services | None = _services(settings)
        self._open_runs: list[Run] = []
        self._paths = HostPaths(Path.cwd())

    @property
    def path(self) -> Path:
        """The SQLite file of the read models (and, without PostgreSQL, of the events)."""
        return self.settings.db_path

    # -- recording ------------------------------------------------------------------

    def run(
        self,
        *,
        benchmark: str,
        agent: str,
        model: str,
        provider: str = "",
        config: dict[str, Any] | None = None,
        run_key: str | None = None,
        mode: Mode = "default",
    ) -> Run:
        """Start a run of this work (benchmark, agent, provider, model, config): its next
        attempt, unless the attempts rules skip it (`RunSkipped`, see `mode`). Use it as a
        context manager, or call `Run.finish`."""
        if mode not in MODES:
            raise LedgerError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        config = dict(config or {})
        services = self._require_open()
        redactor = Redactor([*secret_values(dict(os.environ)), *config_secrets(config)])

        def scrub(value: Any) -> Any:
            return self._paths.scrub_obj(redactor.redact_obj(value))

        who: dict[str, Any] = {
            "benchmark": benchmark,
            "agent": agent,
            "provider": provider,
            "model": model,
            "config": config,
        }
        now = datetime.now(UTC)
        key = run_key or f"run_{benchmark}_{now:%Y%m%dT%H%M%SZ}_{uuid4().hex[:8]}"
        with self._lock:
            self._refuse_known_key(key)
            ledger = services.ledger
            group = ledger.new_group(
                f"rg_{now:%Y%m%dT%H%M%SZ}_{os.urandom(4).hex()}",
                "run",
                request={
                    "agent": agent,
                    "provider": provider,
                    "model": model,
                    "extra": [mask_config(config)],
                    "mode": mode,
                    "benchmarks": [benchmark],
                    "via": "python",
                },
                selection=[benchmark],
            )
            started = ledger.start_attempt(
                group,
                mode=mode,
                command=scrub(mask_argv(["python", *sys.argv])[0]),
                cwd=scrub(str(Path.cwd())),
                host=socket.gethostname(),
                lease_seconds=LEASE_SECONDS,
                run_key=key,
                run_dir="",
                **who,
            )
            if isinstance(started, Skip):
                ledger.skip(group, reason=started.reason, defer_to=started.defer_to, **who)
                group.count("skipped")
                ledger.close_group(group)
                self._catch_up()
                defer = str(started.defer_to) if started.defer_to else None
                see = f" (see run {defer[:8]})" if defer else ""
                raise RunSkipped(
                    f"{benchmark} for {agent} skipped: {started.reason}{see}",
                    started.reason,
                    defer,
                )
            self._catch_up()
            run = Run(ledger, group, started, scrub, self._catch_up, self._ended)
            self._open_runs.append(run)
        return run

    def _ended(self, run: Run) -> None:
        with self._lock:
            if run in self._open_runs:
                self._open_runs.remove(run)

    def _refuse_known_key(self, run_key: str) -> None:
        row = (
            self._read()
            .conn.execute("SELECT run_id FROM runs WHERE run_key = ? LIMIT 1", (run_key,))
            .fetchone()
        )
        if row is not None:
            raise LedgerError(f"run key {run_key!r} already names run {row[0]}")

    # -- reading --------------------------------------------------------------------

    def runs(
        self,
        *,
        benchmark: str | None = None,
        agent: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        status: str | None = None,
    ) -> list[RunSummary]:
        """Runs, oldest first, as `benchledger runs` lists them (same filters)."""
        rows = self._read().runs(
            benchmark=benchmark, agent=agent, provider=provider, model=model, status=status
        )
        return [RunSummary.from_row(r) for r in rows]

    def show(self, run: str) -> RunSummary:
        """One run by id, unique id prefix (4+ characters) or run key, as `show` finds it."""
        return RunSummary.from_row(self._read().find_run(run))

    def cells(self, run: str, limit: int | None = None) -> list[CellResult]:
        """The cells of a run (id, prefix or key), in the order they were recorded."""
        queries = self._read()
        row = queries.find_run(run)
        return [CellResult.from_row(c) for c in queries.cells(row["run_id"], limit=limit)]

    def latest(self) -> list[RunSummary]:
        """The newest publishable run per benchmark and agent, as `benchledger latest`."""
        queries = self._read()
        return [
            RunSummary.from_row(queries.find_run(r["run_id"]))
            for r in queries.publication("latest")
        ]

    def catch_up(self) -> None:
        """Bring the read models up to date with the events (reads do it themselves)."""
        with self._lock:
            self._require_open().runner.catch_up()

    def _read(self) -> Queries:
        with self._lock:
            services = self._require_open()
            services.runner.catch_up()
            return Queries(services.store.conn)

    def _catch_up(self) -> None:
        """As `catch_up`, for writers: the events are recorded, a later read redoes it."""
        try:
            self.catch_up()
        except (LedgerError, sqlite3.Error) as e:
            logging.getLogger("benchledger").warning("the read models could not catch up: %s", e)

    # -- closing --------------------------------------------------------------------

    def close(self) -> None:
        """End the runs still open (as their cells say), then close the stores. A run
        that cannot be ended is named in the error raised once the stores are closed."""
        failed: Exception | None = None
        for run in list(self._open_runs):
            try:
                run.finish()
            except Exception as e:
                failed = failed or e
        with self._lock:
            if self._services is not None:
                self._services.close()
                self._services = None
        if failed is not None:
            raise failed

    def _require_open(self) -> Services:
        if self._services is None:
            raise LedgerError(f"the ledger at {self.path} is closed")
        return self._services

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self.settings.event_store_url
        return f"<benchledger.Ledger {shown_url(where) if where else self.path}>"


def open_ledger(target: str | os.PathLike[str] | None = None, *, db: str | None = None) -> Ledger:
    """Open (or start) a ledger: a SQLite file path, or a PostgreSQL URL whose read
    models live in the SQLite file `db`. Without a target, where the CLI would look:
    BENCHLEDGER_EVENT_STORE and BENCHLEDGER_DB, else ledger.db."""
    text = os.fspath(target) if target is not None else None
    if text is None:
        settings = Settings.from_env(db_path=Path(db) if db else None)
    elif text.startswith(("postgresql://", "postgres://")):
        settings = Settings.from_env(event_store_url=text, db_path=Path(db) if db else None)
    elif db is not None:
        raise LedgerError("db names the read models of a PostgreSQL ledger only")
    else:
        settings = Settings(db_path=Path(text))
    return Ledger(replace(settings, read_only=False))


def _services(settings: Settings) -> Services:
    url = settings.event_store_url
    ledger_file.require_writable(settings.db_path, creates=True, event_store=bool(url))
    try:
        return build(settings)
    except (ValueError, EventSourcingError) as e:
        where = shown_url(url) if url else settings.db_path
        raise LedgerError(f"cannot open the event store at {where}: {e}") from None
