"""What every projection is: tables, a version, and a pure fold to row changes.

A fold turns one stored event into SQL statements over *table placeholders*
(`{runs}`, `{cells}`...). The writer fills the placeholders with the live table
names, or with fresh ones during a rebuild, and runs consecutive identical
statements as one `executemany`.
"""

from __future__ import annotations

import json
import json.encoder
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar
from uuid import UUID

import pydantic_core

from benchledger.domain.base import Event

# A statement over table placeholders with one parameter row, or a list of rows.
Params = tuple[Any, ...] | dict[str, Any]
Change = tuple[str, Params | list[Params]]


# One cell as the read models store it: key, outcome, score, then metrics as `cell_metrics`
# writes them and cluster, each only up to the last of them that is set: a cell with
# neither is (key, outcome, score). The cells fold inserts these rows as they are, and a
# NULL it leaves to the columns it does not name costs nothing, where each None bound
# as a parameter costs sqlite3 a failed adapter lookup (most cells state neither).
CellRow = (
    tuple[str, str, float | None]
    | tuple[str, str, float | None, str | None]
    | tuple[str, str, float | None, str | None, str | None]
)


def cell_row(
    key: str, outcome: str, score: float | None, metrics: str | None, cluster: str | None
) -> CellRow:
    """A cell's row (`CellRow`): its metrics and cluster left out from the last one set."""
    if cluster is not None:
        return (key, outcome, score, metrics, cluster)
    if metrics is not None:
        return (key, outcome, score, metrics)
    return (key, outcome, score)


def cell_metrics(metrics: dict[str, Any]) -> str | None:
    """A cell's metrics as the cells read model stores them: compact JSON in their order,
    non-finite numbers as strings (as the events hold them); None when there are none."""
    return pydantic_core.to_json(metrics, inf_nan_mode="strings").decode() if metrics else None


@dataclass(frozen=True)
class CellBatch:
    """A `CellsRecorded` event's time and cells (`CellRow`), without a model per cell."""

    timestamp: datetime
    rows: list[CellRow]


# What a stored event's head says without decoding it: the name of its class and
# `iso` of its timestamp (see `Envelope.head`).
Head = tuple[str, str | None]
_UNSET: Any = object()
# A stream as the SQLite store writes it (`UUID.hex`): what `UUID(text).hex` gives back.
_HEX = re.compile("[0-9a-f]{32}")


class Envelope:
    """One stored event as the log holds it; decoded only when a fold asks for it."""

    __slots__ = (
        "_batch",
        "_decode",
        "_decode_cells",
        "_event",
        "_head",
        "_memo",
        "_read_head",
        "_recorded_at",
        "_stream",
        "_stream_id",
        "position",
        "state",
        "topic",
        "version",
    )

    def __init__(
        self,
        position: int,
        stream: UUID | str,
        version: int,
        topic: str,
        state: bytes,
        decode: Callable[[], Event],
        decode_cells: Callable[[], CellBatch] | None = None,
        read_head: Callable[[], Head | None] | None = None,
    ) -> None:
        """`stream`: a UUID, or its text as stored (made a UUID when a fold asks);
        `read_head`: the event's head read from its stored text without decoding it, or
        None where the text does not allow it (the event is then decoded)."""
        self.position = position
        self._stream = stream
        self.version = version
        self.topic = topic
        self.state = state
        self._decode = decode
        self._decode_cells = decode_cells
        self._read_head = read_head
        self._event: Event | None = None
        self._batch: CellBatch | None = None
        self._head: Head | None = _UNSET
        self._memo: dict[str, str | None] | None = None
        self._stream_id: str | None = None
        self._recorded_at: str | None = _UNSET

    @property
    def event(self) -> Event:
        if self._event is None:
            self._event = self._decode()
        return self._event

    @property
    def stream(self) -> UUID:
        stream = self._stream
        if not isinstance(stream, UUID):
            stream = self._stream = UUID(stream)
        return stream

    @property
    def stream_id(self) -> str:
        """The stream as the read models key it (`str(stream)`), made once for every fold
        (from the stored hex digits themselves: no UUID made for it)."""
        if self._stream_id is None:
            s = self._stream
            if isinstance(s, str) and _HEX.fullmatch(s):
                self._stream_id = f"{s[:8]}-{s[8:12]}-{s[12:16]}-{s[16:20]}-{s[20:]}"
            else:
                self._stream_id = str(self.stream)
        return self._stream_id

    @property
    def stream_hex(self) -> str:
        """`stream.hex`: the stored text itself when it is that."""
        s = self._stream
        return s if isinstance(s, str) and _HEX.fullmatch(s) else self.stream.hex

    @property
    def recorded_at(self) -> str | None:
        """`iso(event.timestamp)`, made once for every fold that stores it; read from
        the stored text when the event is not decoded (see `head`)."""
        if self._recorded_at is _UNSET:
            head = self.head()
            self._recorded_at = iso(self.event.timestamp) if head is None else head[1]
        return self._recorded_at

    @property
    def event_name(self) -> str:
        """`type(event).__name__`, without decoding the event where its head says it."""
        head = self.head()
        return type(self.event).__name__ if head is None else head[0]

    def head(self) -> Head | None:
        """The event's class name and `iso` of its timestamp as its stored text states
        them, when it is not decoded already and the store can read them there (a fold
        that needs nothing else then never decodes it); None: ask the event."""
        if self._head is _UNSET:
            read = self._read_head
            self._head = read() if read is not None and self._event is None else None
        return self._head

    def json(self, name: str) -> str | None:
        """`to_json` of the event's field `name`, made once for every fold that stores it."""
        memo = self._memo
        if memo is None:
            memo = self._memo = {}
        elif name in memo:
            return memo[name]
        value = memo[name] = to_json(getattr(self.event, name))
        return value

    def cells(self) -> CellBatch:
        """The cells of a `CellsRecorded` event, decoded in bulk when the store allows;
        the folds that read them share one decode."""
        if self._batch is None:
            if self._decode_cells is None or self._event is not None:
                event: Any = self.event
                rows = [
                    cell_row(c.key, c.outcome, c.score, cell_metrics(c.metrics), c.cluster)
                    for c in event.cells
                ]
                self._batch = CellBatch(event.timestamp, rows)
            else:
                self._batch = self._decode_cells()
        return self._batch


@dataclass(frozen=True)
class ForeignKey:
    """A column naming a row of another read model, declared so that Datasette links the
    two both ways (it draws links only from SQLite's own foreign keys). Never enforced:
    the projections keep their tables consistent, are rebuilt one at a time, and a
    column may name what is not a row there (an event stream of a group, a skip)."""

    column: str
    table: str
    other: str


# An index column read newest first (`"started_at DESC"`): an index in the order of a
# page sorted descending whose ties Datasette breaks by the key ascending.
DESCENDING = " DESC"


def index_name(table: str, columns: tuple[str, ...]) -> str:
    """`idx_TABLE_COLUMN_COLUMN`: a column's order is not part of the name."""
    return f"idx_{table}_{'_'.join(c.removesuffix(DESCENDING) for c in columns)}"


def index_columns(columns: tuple[str, ...]) -> str:
    """The columns of an index as CREATE INDEX lists them, each with its order."""
    return ", ".join(
        f"[{c.removesuffix(DESCENDING)}]{DESCENDING if c.endswith(DESCENDING) else ''}"
        for c in columns
    )


@dataclass(frozen=True)
class Table:
    name: str
    columns: dict[str, type]
    pk: tuple[str, ...] = ()
    # Column names, each possibly ending in DESCENDING.
    indexes: tuple[tuple[str, ...], ...] = ()
    # Those of `indexes` its folds look rows up by (`... WHERE benchmark = ?`): made
    # with the table. A table filled from empty (a rebuild, a first catch-up) gets the
    # others once it is full: one sort each, instead of an insert per row into each.
    lookups: tuple[tuple[str, ...], ...] = ()
    not_null: frozenset[str] = field(default_factory=frozenset)
    foreign_keys: tuple[ForeignKey, ...] = ()
    # The columns searched by full text: the table is then an FTS5 one, whose other
    # columns are stored but not searched (and have no type, keys or indexes).
    full_text: tuple[str, ...] = ()
    # Bookkeeping of its projection, not a read model to browse (hidden in Datasette).
    internal: bool = False
    # Columns SQLite works out from the row's others when it is written (STORED): (name,
    # type, expression over the row's columns). Never written by a statement.
    generated: tuple[tuple[str, type, str], ...] = ()


class Projection:
    """Base class: subclasses name their tables and fold events to changes."""

    name: ClassVar[str]
    version: ClassVar[int]
    tables: ClassVar[tuple[Table, ...]]
    # The topics of the events the fold reads (see `topics_of`); None: every event.
    # Others never reach it, so they are never decoded for it.
    topics: ClassVar[frozenset[str] | None] = None

    def table_names(self) -> tuple[str, ...]:
        """Its tables' names, in order."""
        return tuple(t.name for t in self.tables)

    def resolved(self) -> Projection:
        """The projection that folds: itself, or what a stand-in loads (`registry`)."""
        return self

    def prepare(self, read: Any, names: dict[str, str]) -> None:
        """Load whatever running state a fold needs before a page (most need none). A
        fold read ahead in another process prepares once, from the committed tables,
        before its first page: state a fold changes must be kept in the projection."""

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        raise NotImplementedError

    def fold_page(self, envelopes: Iterable[Envelope]) -> Iterable[Change]:
        """The changes of a page of events: each event's `fold`, in order. A projection
        may order changes that commute so that more of them run as one batch."""
        for envelope in envelopes:
            yield from self.fold(envelope)

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
    """ISO 8601 in UTC (naive times are taken as UTC), so text order is time order.

    A time already at offset zero (what a decoded event holds: pydantic reads `Z` as a
    zone of its own) is written as it is: converting it to `UTC` first made a copy that
    writes the same text, for each of the several times of every run a catch-up folds."""
    if value is None:
        return None
    offset = value.utcoffset()
    if offset is None:
        return value.replace(tzinfo=UTC).isoformat()
    if not offset:
        return value.isoformat()
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
