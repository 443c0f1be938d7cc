"""What every projection is: tables, a version, and a pure fold to row changes.

A fold turns one stored event into SQL statements over *table placeholders*
(`{runs}`, `{cells}`...). The writer fills the placeholders with the live table
names, or with fresh ones during a rebuild, and runs consecutive identical
statements as one `executemany`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar
from uuid import UUID

from benchledger.domain.base import Event

# A statement over table placeholders with one parameter row, or a list of rows.
Params = tuple[Any, ...] | dict[str, Any]
Change = tuple[str, Params | list[Params]]


@dataclass(frozen=True)
class Envelope:
    """One stored event as the log holds it, plus its decoded form."""

    position: int
    stream: UUID
    version: int
    topic: str
    state: bytes
    event: Event


@dataclass(frozen=True)
class Table:
    name: str
    columns: dict[str, type]
    pk: tuple[str, ...] = ()
    indexes: tuple[tuple[str, ...], ...] = ()
    not_null: frozenset[str] = field(default_factory=frozenset)


class Projection:
    """Base class: subclasses name their tables and fold events to changes."""

    name: ClassVar[str]
    version: ClassVar[int]
    tables: ClassVar[tuple[Table, ...]]

    def prepare(self, read: Any, names: dict[str, str]) -> None:
        """Load whatever running state a fold needs before a page (most need none)."""

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        raise NotImplementedError

    def check_rebuilt(self, read: Any, live: dict[str, str], fresh: dict[str, str]) -> None:
        """Refuse to swap in rebuilt tables that contradict the live ones (most never do)."""


def to_json(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=_default)


def _default(value: Any) -> Any:
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    raise TypeError(f"cannot store {type(value).__name__} as JSON")


def iso(value: datetime | None) -> str | None:
    """ISO 8601 in UTC (naive times are taken as UTC), so text order is time order."""
    if value is None:
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC).isoformat()
    return value.astimezone(UTC).isoformat()


def uid(value: UUID | None) -> str | None:
    return str(value) if value is not None else None


def group_changes(changes: Iterable[Change]) -> Iterator[tuple[str, list[Params]]]:
    """Consecutive identical statements become one batch, keeping the order."""
    current: str | None = None
    batch: list[Params] = []
    for sql, rows in changes:
        if sql != current:
            if current is not None:
                yield current, batch
            current, batch = sql, []
        if isinstance(rows, list):
            batch.extend(rows)
        else:
            batch.append(rows)
    if current is not None:
        yield current, batch
