"""What every projection is: tables, a version, and a pure fold to row changes.

A fold turns one stored event into SQL statements over *table placeholders*
(`{runs}`, `{cells}`...). The writer fills the placeholders with the live table
names, or with fresh ones during a rebuild, and runs consecutive identical
statements as one `executemany`.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar
from uuid import UUID

from benchledger.domain.base import Event

# A statement over table placeholders with one parameter row, or a list of rows.
Params = tuple[Any, ...] | dict[str, Any]
Change = tuple[str, Params | list[Params]]


# One cell as the read models need it: key, outcome, score, metrics.
CellRow = tuple[str, str, float | None, dict[str, Any]]


@dataclass(frozen=True)
class CellBatch:
    """A `CellsRecorded` event's time and cells, without a model per cell."""

    timestamp: datetime
    rows: list[CellRow]


class Envelope:
    """One stored event as the log holds it; decoded only when a fold asks for it."""

    __slots__ = (
        "_batch",
        "_decode",
        "_decode_cells",
        "_event",
        "_memo",
        "position",
        "state",
        "stream",
        "topic",
        "version",
    )

    def __init__(
        self,
        position: int,
        stream: UUID,
        version: int,
        topic: str,
        state: bytes,
        decode: Callable[[], Event],
        decode_cells: Callable[[], CellBatch] | None = None,
    ) -> None:
        self.position = position
        self.stream = stream
        self.version = version
        self.topic = topic
        self.state = state
        self._decode = decode
        self._decode_cells = decode_cells
        self._event: Event | None = None
        self._batch: CellBatch | None = None
        self._memo: dict[str, str | None] | None = None

    @property
    def event(self) -> Event:
        if self._event is None:
            self._event = self._decode()
        return self._event

    @property
    def stream_id(self) -> str:
        """The stream as the read models key it (`str(stream)`), made once for every fold."""
        return self._remembered("", lambda: str(self.stream))  # type: ignore[return-value]

    @property
    def recorded_at(self) -> str | None:
        """`iso(event.timestamp)`, made once for every fold that stores it."""
        return self._remembered("@", lambda: iso(self.event.timestamp))

    def json(self, name: str) -> str | None:
        """`to_json` of the event's field `name`, made once for every fold that stores it."""
        return self._remembered(name, lambda: to_json(getattr(self.event, name)))

    def _remembered(self, key: str, make: Callable[[], str | None]) -> str | None:
        memo = self._memo
        if memo is None:
            memo = self._memo = {}
        elif key in memo:
            return memo[key]
        value = memo[key] = make()
        return value

    def cells(self) -> CellBatch:
        """The cells of a `CellsRecorded` event, decoded in bulk when the store allows;
        the folds that read them share one decode."""
        if self._batch is None:
            if self._decode_cells is None or self._event is not None:
                event: Any = self.event
                rows = [(c.key, c.outcome, c.score, c.metrics) for c in event.cells]
                self._batch = CellBatch(event.timestamp, rows)
            else:
                self._batch = self._decode_cells()
        return self._batch


@dataclass(frozen=True)
class Table:
    name: str
    columns: dict[str, type]
    pk: tuple[str, ...] = ()
    indexes: tuple[tuple[str, ...], ...] = ()
    not_null: frozenset[str] = field(default_factory=frozenset)
    # Bookkeeping of its projection, not a read model to browse (hidden in Datasette).
    internal: bool = False


class Projection:
    """Base class: subclasses name their tables and fold events to changes."""

    name: ClassVar[str]
    version: ClassVar[int]
    tables: ClassVar[tuple[Table, ...]]
    # The topics of the events the fold reads (see `topics_of`); None: every event.
    # Others never reach it, so they are never decoded for it.
    topics: ClassVar[frozenset[str] | None] = None

    def prepare(self, read: Any, names: dict[str, str]) -> None:
        """Load whatever running state a fold needs before a page (most need none). A
        fold read ahead in another process prepares once, from the committed tables,
        before its first page: state a fold changes must be kept in the projection."""

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        raise NotImplementedError

    def settle(self) -> Iterable[Change]:
        """Changes that finish a transaction's folds (most have none): run once after
        the last event folded in it, before it commits."""
        return ()

    def check_rebuilt(self, read: Any, live: dict[str, str], fresh: dict[str, str]) -> None:
        """Refuse to swap in rebuilt tables that contradict the live ones (most never do)."""


def topics_of(*events: type[Event]) -> frozenset[str]:
    return frozenset(e.TOPIC for e in events)


def to_json(value: Any) -> str | None:
    """`json.dumps(value, sort_keys=True, ensure_ascii=False, default=...)`: the text the
    read models hold. Through one C encoder made once: building json.dumps' encoder
    for each of the hundreds of thousands of values an import stores cost a third of
    the encoding. Values come from decoded events, which hold no reference cycles."""
    if value is None:
        return None
    return "".join(_ENCODE(value, 0))


def _default(value: Any) -> Any:
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    raise TypeError(f"cannot store {type(value).__name__} as JSON")


_ENCODE: Callable[[Any, int], Iterable[str]] = (
    json.encoder.c_make_encoder(  # type: ignore[attr-defined]
        None, _default, json.encoder.encode_basestring, None, ": ", ", ", True, False, True
    )
    if json.encoder.c_make_encoder is not None  # type: ignore[attr-defined]
    else lambda value, _: [json.dumps(value, sort_keys=True, ensure_ascii=False, default=_default)]
)


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
