"""The context object every command shares: settings, services, errors."""

from __future__ import annotations

import getpass
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from eventsourcing.domain import EventSourcingError
from pydantic import ValidationError

from benchledger.adapters.publication.queries import Queries
from benchledger.adapters.store.bootstrap import Services, Settings, build
from benchledger.domain.errors import LedgerError
from benchledger.projections.store import ReadModelStore


class LedgerContext:
    def __init__(self, db: str | None, event_store: str | None) -> None:
        self.settings = Settings.from_env(
            db_path=Path(db) if db else None, event_store_url=event_store
        )
        self._services: Services | None = None
        self._snapshot_dir: tempfile.TemporaryDirectory[str] | None = None
        self._snapshots: list[ReadModelStore] = []

    @property
    def services(self) -> Services:
        if self._services is None:
            try:
                self._services = build(self.settings)
            except (ValueError, EventSourcingError) as e:
                where = self.settings.event_store_url or self.settings.db_path
                raise click.ClickException(f"cannot open the event store at {where}: {e}") from None
        return self._services

    def queries(self, as_of: str | None = None) -> Queries:
        """Read models, brought up to date with the event log first; or, with `as_of`
        (a position or a timestamp), exactly as they were at that point of the log."""
        self.services.runner.catch_up()
        if as_of is None:
            return Queries(self.services.store.conn)
        position = self.resolve_position(as_of)
        if self._snapshot_dir is None:
            self._snapshot_dir = tempfile.TemporaryDirectory(prefix="benchledger-as-of-")
        store = ReadModelStore(Path(self._snapshot_dir.name) / f"at-{position}.db")
        self._snapshots.append(store)
        self.services.runner.build_at(position, store)
        return Queries(store.conn)

    def resolve_position(self, as_of: str) -> int:
        """A ledger position from a position number or an ISO 8601 timestamp."""
        conn = self.services.store.conn
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
        if self._services is not None:
            self._services.close()


def actor(by: str | None) -> str:
    if by:
        return by
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return os.environ.get("USER", "unknown")


class LedgerGroup(click.Group):
    """Turns the ledger's expected errors into `Error: ...` and exit 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LedgerError as e:
            raise click.ClickException(str(e)) from None
        except EventSourcingError as e:
            raise click.ClickException(f"event store: {e}") from None
        except ValidationError as e:
            first = e.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise click.ClickException(f"field '{field}': {first['msg']}") from None


as_of_option = click.option(
    "--as-of",
    metavar="POSITION|TIMESTAMP",
    help="Show it as it was at this ledger position or time (ISO 8601)",
)
