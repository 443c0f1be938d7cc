"""The context object every command shares: settings, services, errors."""

from __future__ import annotations

import getpass
import os
from pathlib import Path
from typing import Any

import click
from eventsourcing.domain import EventSourcingError
from pydantic import ValidationError

from adapters.bootstrap import Services, Settings, build
from adapters.queries import Queries
from domain.errors import LedgerError


class LedgerContext:
    def __init__(self, db: str | None, event_store: str | None) -> None:
        self.settings = Settings.from_env(
            db_path=Path(db) if db else None, event_store_url=event_store
        )
        self._services: Services | None = None

    @property
    def services(self) -> Services:
        if self._services is None:
            try:
                self._services = build(self.settings)
            except (ValueError, EventSourcingError) as e:
                where = self.settings.event_store_url or self.settings.db_path
                raise click.ClickException(f"cannot open the event store at {where}: {e}") from None
        return self._services

    def queries(self) -> Queries:
        """Read models, brought up to date with the event log first."""
        self.services.runner.catch_up()
        return Queries(self.services.store.conn)

    def close(self) -> None:
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
