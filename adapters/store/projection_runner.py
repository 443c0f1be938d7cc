"""Keeps the read models current by folding the notification log in pages."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from functools import cache, partial
from typing import TYPE_CHECKING, Any, Protocol, cast
from uuid import UUID

import pydantic_core
from eventsourcing.persistence import Mapper, Notification, StoredEvent
from eventsourcing.utils import TopicError, resolve_topic
from pydantic import ConfigDict, TypeAdapter, ValidationError

from benchledger.adapters.store import hotpath
from benchledger.adapters.store.eventstore import PydanticMapper, decode_event
from benchledger.adapters.store.hotpath import gc_paused
from benchledger.domain.base import Event
from benchledger.domain.topics import CELLS_RECORDED
from benchledger.projections.base import (
    CellBatch,
    CellRow,
    Envelope,
    Head,
    Projection,
    cell_row,
    iso,
)
from benchledger.projections.store import REBUILD_SUFFIX, ReadModelStore

if TYPE_CHECKING:
    from benchledger.adapters.store import fold_ahead

PAGE = 200
REBUILD_COMMIT_EVENTS = 10_000
CELLS_TOPIC = CELLS_RECORDED

Progress = Callable[[int], None]


@cache
def _cells_v1() -> bool:
    """Whether cell batches are stored at the current class version (version 1), so
    decoded in bulk: asked of the class the first time a batch is read, which loads the
    run events (a catch-up of verdicts alone never does)."""
    from benchledger.domain.run import CellsRecorded

    return CellsRecorded.class_version == 1


def bulk_cells(state: bytes) -> CellBatch:
    """A stored `CellsRecorded` (written by this store's own serializer, so every cell
    states every field but an unset cluster) decoded in one call, its cells as rows
    (`CellRow`) with their metrics as the cells read model stores them (`cell_metrics`),
    in one pass."""
    data = pydantic_core.from_json(state)
    rows = [
        (c["key"], c["outcome"], c["score"])
        if not c["metrics"] and c.get("cluster") is None
        else _full_row(c)
        for c in data["cells"]
    ]
    return CellBatch(datetime.fromisoformat(data["timestamp"]), rows)


def _full_row(cell: dict[str, Any]) -> CellRow:
    """The row of a decoded cell that states metrics or a cluster."""
    metrics = cell["metrics"]
    text = pydantic_core.to_json(metrics, inf_nan_mode="strings").decode() if metrics else None
    return cell_row(cell["key"], cell["outcome"], cell["score"], text, cell.get("cluster"))


# How this store's serializer begins every event (`PydanticMapper`): the fields `Event`
# declares first, in their order, then the timestamp as pydantic writes a datetime:
# most are UTC, written to the second (group 1), then the microseconds unless none
# (group 2), then `Z`; any other text is group 3.
STORED_HEAD = re.compile(
    rb'\{"originator_id":"[0-9a-f-]{36}","originator_version":[0-9]+,"timestamp":"'
    rb"(?:([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]{6}))?Z"
    rb'|([^"\\]*))"'
)
# The timestamp's text parsed as the event's own `datetime` field parses it.
TIMESTAMP = TypeAdapter(datetime, config=ConfigDict(defer_build=True))
_UNRESOLVED: Any = object()
# UTC seconds seen, each with what `iso` writes of it; None: `iso` does not write it as
# it is (its events' times are then parsed whole).
_SECONDS: dict[bytes, str | None] = {}
SECONDS_KEPT = 4096


def stored_time(state: bytes) -> str | None:
    """`iso` of the timestamp a stored event's text begins with: what decoding the event
    and taking `iso(event.timestamp)` gives, the same text parsed by the same parser.
    None when the text does not begin as the serializer writes it.

    Many events are stamped in the same UTC second: a second is parsed once, checked
    to be written back as it is, and its events' microseconds are put after it as
    `datetime.isoformat` puts them (six digits, none when zero)."""
    found = STORED_HEAD.match(state)
    if found is None:
        return None
    key = found[1]
    if key is not None:
        if key in _SECONDS:
            second = _SECONDS[key]
        else:
            if len(_SECONDS) >= SECONDS_KEPT:
                _SECONDS.clear()
            second = _SECONDS[key] = _utc_second(key)
        if second is not None:
            micro = found[2]
            if micro is None or micro == b"000000":
                return second + "+00:00"
            return f"{second}.{micro.decode()}+00:00"
    begin = found.start(1 if key is not None else 3) - 1
    try:  # the timestamp with its quotes: a JSON string
        return iso(TIMESTAMP.validate_json(state[begin : found.end()]))
    except ValidationError:
        return None


def _utc_second(text: bytes) -> str | None:
    """The text of a UTC second when `iso` of it parsed is that text, else None."""
    try:
        at = iso(TIMESTAMP.validate_json(b'"' + text + b'Z"'))
    except ValidationError:
        return None
    second = text.decode()
    return second if at == second + "+00:00" else None


class NotificationLog(Protocol):
    """What the read side needs of an event store's recorder."""

    def max_notification_id(self) -> int | None: ...

    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]: ...


class ProjectionRunner:
    def __init__(
        self,
        recorder: NotificationLog,
        mapper: Mapper[Any],
        store: ReadModelStore,
        projections: Sequence[Projection],
    ) -> None:
        self.recorder = recorder
        self.mapper = mapper
        self.store = store
        self.projections = list(projections)
        # Cell batches stored as plain JSON of the current class version are decoded
        # in bulk, without a pydantic model per cell.
        self._bulk = mapper.cipher is None and mapper.compressor is None
        # Events stored as this store's own plain JSON state their class (the topic) and
        # their time (the text's head) without a decode; ciphered or compressed ones,
        # or ones of an older class version (upcast on decode), are decoded.
        self._plain = (
            isinstance(mapper, PydanticMapper)
            and mapper.cipher is None
            and mapper.compressor is None
        )
        self._names: dict[str, str | None] = {}
        # Decoded as `PydanticMapper.to_domain_event` decodes a plain state, without a
        # StoredEvent made for it.
        self._direct = self._plain and type(mapper) is PydanticMapper

    def by_name(self, names: Sequence[str] | None) -> list[Projection]:
        if not names:
            return list(self.projections)
        known = {p.name: p for p in self.projections}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise KeyError(", ".join(unknown))
        return [known[n] for n in names]

    def head_position(self) -> int:
        return self.recorder.max_notification_id() or 0

    def pages(self, after: int, stop: int | None = None) -> Iterator[list[Envelope]]:
        while True:
            notes = self.recorder.select_notifications(
                after, PAGE, stop=stop, inclusive_of_start=False
            )
            if not notes:
                return
            yield [self.envelope(n) for n in notes]
            after = notes[-1].id

    def envelope(self, note: Notification) -> Envelope:
        return self.envelope_of(
            note.id, note.originator_id, note.originator_version, note.topic, note.state
        )

    def envelope_of(
        self, position: int, stream: UUID | str, version: int, topic: str, state: bytes
    ) -> Envelope:
        """A stored event as the log holds it (its stream as a UUID or as stored)."""
        bulk = topic == CELLS_TOPIC and self._bulk and _cells_v1()
        return Envelope(
            position,
            stream,
            version,
            topic,
            state,
            partial(self._decode, stream, version, topic, state),
            partial(bulk_cells, state) if bulk else None,
            partial(self._head, topic, state) if self._plain else None,
        )

    def _decode(self, stream: UUID | str, version: int, topic: str, state: bytes) -> Event:
        if self._direct:
            cls = cast(type[Event], resolve_topic(topic))
            return decode_event(cls, state, self.mapper.transcoder)
        stored = StoredEvent(
            originator_id=stream, originator_version=version, topic=topic, state=state
        )
        return cast(Event, self.mapper.to_domain_event(stored))

    def _head(self, topic: str, state: bytes) -> Head | None:
        """The class name and time of a plain stored event, or None where only a decode
        tells them (see `Envelope.head`)."""
        name = self._names.get(topic, _UNRESOLVED)
        if name is _UNRESOLVED:
            name = self._names[topic] = _class_name(topic)
        if name is None:
            return None
        at = stored_time(state)
        return None if at is None else (name, at)

    def outdated(self) -> list[Projection]:
        states = self.store.states()
        return [
            p
            for p in self.projections
            if states.get(p.name, (None, 0))[0] != p.version or not self.store.has_tables(p)
        ]

    def catch_up(self, progress: Progress | None = None) -> int:
        """Fold every event not yet applied; rebuild projections whose version changed."""
        self.drop_leftovers()
        applied = 0
        if self.outdated():
            with self.store.rebuild_lock():
                # Another process may have rebuilt them while we waited for the lock.
                stale = self.outdated()
                if stale:
                    applied = self._rebuild(stale, progress)
        # One transaction for everything new: a file appended whole is shown whole, even
        # when this process dies halfway through folding it.
        states = self.store.states()
        least = min(states.get(p.name, (0, 0))[1] for p in self.projections)
        with gc_paused(), self._cache_for(least), self.store.write():
            ahead = self._catch_up_ahead(progress)  # a large catch-up: most of it
            applied += ahead
            # What has folds to finish: every projection after a fold ahead, else those
            # that folded an event here (a verdict leaves `latest` as it was, and its
            # settle, whose first run alone costs ~10 ms, with nothing pending).
            folded = set(self.projections) if ahead else set()
            while True:
                states = self.store.states()
                start = min(states[p.name][1] for p in self.projections)
                notes = self.recorder.select_notifications(start, PAGE, inclusive_of_start=False)
                if not notes:
                    self._settle(self.store, {p.name: _live(p) for p in folded})
                    return applied
                envelopes = [self.envelope(n) for n in notes]
                for p in self.projections:
                    seen = states[p.name][1]
                    todo = [e for e in envelopes if e.position > seen]
                    if todo:
                        if self.store.apply(p, _live(p), todo):
                            folded.add(p)
                        self.store.set_state(p.name, p.version, todo[-1].position)
                applied += len(envelopes)
                if progress:
                    progress(len(envelopes))

    def rebuild(self, names: Sequence[str] | None = None, progress: Progress | None = None) -> int:
        """Fold the whole log into fresh tables, then swap them in atomically."""
        targets = self.by_name(names)
        with self.store.rebuild_lock():
            self.store.drop_leftovers()
            count = self._rebuild(targets, progress)
            self.store.reclaim_free_pages()
            return count

    def drop_leftovers(self) -> int:
        """Drop the tables a killed rebuild left aside (`__rebuild`), unless a rebuild is
        running now (it holds the lock, and they are its work): the file then stops
        growing by them at the next command, not at the next rebuild. How many."""
        if not self.store.leftovers():
            return 0
        with self.store.rebuild_lock(wait=False) as held:
            return self.store.drop_leftovers() if held else 0

    def _rebuild(self, targets: list[Projection], progress: Progress | None) -> int:
        # Decoding happens in the page iterator, outside each write.
        with gc_paused(), self._cache_for(0):
            return self._rebuild_pages(targets, progress)

    def _cache_for(self, after: int) -> AbstractContextManager[None]:
        """A large page cache (`ReadModelStore.bulk`) when many events follow `after`:
        a small catch-up keeps SQLite's default, and its memory."""
        many = self.head_position() - after >= hotpath.FOLD_AHEAD_EVENTS
        return self.store.bulk() if many else nullcontext()

    def _rebuild_pages(self, targets: list[Projection], progress: Progress | None) -> int:
        if not any(self.store.has_tables(p) for p in targets):
            return self._build_first(targets, progress)
        with self.store.write():
            fresh = {p.name: self.store.create_tables(p, REBUILD_SUFFIX) for p in targets}
        # Fresh tables, seen by no one: pages are committed a few at a time.
        position, count = self._write_folded_ahead(targets, fresh, progress)
        position, more = self._apply_pages(targets, fresh, position, progress, commit=True)
        count += more
        with self.store.write():
            # Events appended while we were folding: finish them inside the swap.
            position, more = self._apply_pages(targets, fresh, position, progress, commit=False)
            count += more
            for p in targets:
                if type(p.resolved()).settle is not Projection.settle:
                    self.store.index_filled(p, REBUILD_SUFFIX)
            self._settle(self.store, {p.name: fresh[p.name] for p in targets})
            for p in targets:
                self.store.swap_in(p, REBUILD_SUFFIX)
                self.store.set_state(p.name, p.version, position)
        return count

    def _build_first(self, targets: list[Projection], progress: Progress | None) -> int:
        """Read models that have no tables yet (a new ledger's first catch-up, after a
        large import): made, then filled and settled in place, a few thousand events per
        commit as a rebuild is. There is nothing to swap out, so no copies are made and
        renamed, and each index is built once, when its table is full (but those its
        folds look rows up by: `Table.lookups`). Until the state is recorded, with the
        settle, every catch-up sees them as not built and waits for this one's lock;
        one that finds them half filled (this process died) rebuilds them aside."""
        with self.store.write():
            live = {p.name: self.store.create_tables(p, indexed=False) for p in targets}
        position, count = self._write_folded_ahead(targets, live, progress)
        with self.store.write():
            position, more = self._apply_pages(targets, live, position, progress, commit=False)
            count += more
            for p in targets:
                self.store.index_filled(p)
            self._settle(self.store, live)
            for p in targets:
                self.store.set_state(p.name, p.version, position)
        return count

    def _apply_pages(
        self,
        targets: list[Projection],
        names: dict[str, dict[str, str]],
        position: int,
        progress: Progress | None,
        *,
        commit: bool,
    ) -> tuple[int, int]:
        """The events after `position` folded here into tables `names`, a page at a time
        (`commit`: each page in a transaction of its own; else in the caller's); the last
        position folded and how many events."""
        count = 0
        for page in self.pages(position):
            with self.store.write() if commit else nullcontext():
                for p in targets:
                    self.store.apply(p, names[p.name], page)
            position = page[-1].position
            count += len(page)
            if progress:
                progress(len(page))
        return position, count

    def _write_folded_ahead(
        self,
        targets: list[Projection],
        names: dict[str, dict[str, str]],
        progress: Progress | None,
    ) -> tuple[int, int]:
        """The whole log folded into empty tables `names` in a child (when it is worth
        it), committed every `REBUILD_COMMIT_EVENTS` events; the last position folded
        and how many events (0, 0 when nothing was folded ahead)."""
        position = count = 0
        if not self._worth_folding_ahead(0):
            return position, count
        positions = dict.fromkeys((p.name for p in targets), 0)
        pages = iter(self._folded_ahead(targets, names, positions))
        for first in pages:
            # The child folding ahead is forked: a thread may copy the log from now.
            self.store.checkpoint_aside()
            with self.store.write():
                folded: fold_ahead.FoldedPage | None = first
                written = 0
                while folded is not None:
                    for name, _, batches in folded.changes:
                        self.store.run(names[name], batches)
                    position = folded.last
                    count += folded.count
                    written += folded.count
                    if progress:
                        progress(folded.count)
                    folded = next(pages, None) if written < REBUILD_COMMIT_EVENTS else None
        return position, count

    def _catch_up_ahead(self, progress: Progress | None) -> int:
        """Inside the catch-up's transaction: when many events are new, fold them in a
        child (`fold_ahead`) and write what it sends; how many it folded."""
        states = self.store.states()
        positions = {p.name: states[p.name][1] for p in self.projections}
        if not self._worth_folding_ahead(min(positions.values())):
            return 0
        live = {p.name: _live(p) for p in self.projections}
        versions = {p.name: p.version for p in self.projections}
        applied = 0
        for page in self._folded_ahead(self.projections, live, positions):
            for name, last, batches in page.changes:
                self.store.run(live[name], batches)
                self.store.set_state(name, versions[name], last)
            applied += page.count
            if progress:
                progress(page.count)
        return applied

    def _worth_folding_ahead(self, after: int) -> bool:
        events = self.head_position() - after
        if events < hotpath.FOLD_AHEAD_EVENTS:
            return False  # the usual catch-up: the fold-ahead machinery is never imported
        from benchledger.adapters.store import fold_ahead

        return fold_ahead.can_fold_ahead(self.recorder, events)

    def _folded_ahead(
        self,
        projections: Sequence[Projection],
        names: dict[str, dict[str, str]],
        positions: dict[str, int],
    ) -> Iterator[fold_ahead.FoldedPage]:
        """The events after `positions` folded in a child (`fold_ahead`), page by page,
        some projections folded here meanwhile (`fold_ahead.FOLDED_HERE`); up to the
        log's head now: events appended meanwhile are left to fold in process."""
        from benchledger.adapters.store import fold_ahead

        return fold_ahead.fold_ahead(
            self.recorder,
            self.envelope_of,
            PAGE,
            projections,
            names,
            positions,
            str(self.store.path),
            self.head_position(),
            here=fold_ahead.FOLDED_HERE,
            read=self.store.read_one,
        )

    def build_at(self, position: int, store: ReadModelStore) -> int:
        """Fold events up to `position` into an empty store: the read models as they were."""
        with self.store.rebuild_lock() if store is self.store else _nothing(), gc_paused():
            with store.write():
                names = {p.name: store.create_tables(p) for p in self.projections}
            count = 0
            for page in self.pages(0, stop=position):
                with store.write():
                    for p in self.projections:
                        store.apply(p, names[p.name], page)
                count += len(page)
            with store.write():
                self._settle(store, names)
                for p in self.projections:
                    store.set_state(p.name, p.version, position)
        return count

    def _settle(self, store: ReadModelStore, names: dict[str, dict[str, str]]) -> None:
        """Finish the transaction's folds (see `Projection.settle`) before it commits."""
        for p in self.projections:
            if p.name in names:
                store.settle(p, names[p.name])


def _class_name(topic: str) -> str | None:
    """`type(event).__name__` of the events of `topic` when they decode without upcasting
    (class version 1); None for others, and for a topic no class has (the decode then
    refuses it as it always did)."""
    try:
        cls = resolve_topic(topic)
    except TopicError:
        return None
    if isinstance(cls, type) and issubclass(cls, Event) and cls.class_version == 1:
        return cls.__name__
    return None


def _live(projection: Projection) -> dict[str, str]:
    return {name: name for name in projection.table_names()}


@contextmanager
def _nothing() -> Iterator[None]:
    yield
