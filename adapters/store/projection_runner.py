"""Keeps the read models current by folding the notification log in pages."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from typing import Any, Protocol, cast
from uuid import UUID

import pydantic_core
from eventsourcing.persistence import Mapper, Notification

from benchledger.adapters.store import fold_ahead
from benchledger.adapters.store.hotpath import gc_paused
from benchledger.domain.base import Event
from benchledger.domain.run import CellsRecorded
from benchledger.projections.base import CellBatch, Envelope, Projection
from benchledger.projections.store import REBUILD_SUFFIX, ReadModelStore

PAGE = 200
CELLS_TOPIC = CellsRecorded.TOPIC

Progress = Callable[[int], None]


def bulk_cells(state: bytes) -> CellBatch:
    """A stored `CellsRecorded` (written by this store's own serializer, so every cell
    states every field) decoded in one call, its cells as rows."""
    data = pydantic_core.from_json(state)
    rows = [(c["key"], c["outcome"], c["score"], c["metrics"]) for c in data["cells"]]
    return CellBatch(datetime.fromisoformat(data["timestamp"]), rows)


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
        self._bulk = (
            mapper.cipher is None and mapper.compressor is None and CellsRecorded.class_version == 1
        )

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
        stream = note.originator_id
        state = note.state
        bulk = self._bulk and note.topic == CELLS_TOPIC
        return Envelope(
            position=note.id,
            stream=stream if isinstance(stream, UUID) else UUID(stream),
            version=note.originator_version,
            topic=note.topic,
            state=state,
            decode=partial(self._decode, note),
            decode_cells=partial(bulk_cells, state) if bulk else None,
        )

    def _decode(self, note: Notification) -> Event:
        return cast(Event, self.mapper.to_domain_event(note))

    def outdated(self) -> list[Projection]:
        states = self.store.states()
        return [
            p
            for p in self.projections
            if states.get(p.name, (None, 0))[0] != p.version or not self.store.has_tables(p)
        ]

    def catch_up(self, progress: Progress | None = None) -> int:
        """Fold every event not yet applied; rebuild projections whose version changed."""
        applied = 0
        if self.outdated():
            with self.store.rebuild_lock():
                # Another process may have rebuilt them while we waited for the lock.
                stale = self.outdated()
                if stale:
                    applied = self._rebuild(stale, progress)
        # One transaction for everything new: a file appended whole is shown whole, even
        # when this process dies halfway through folding it.
        with gc_paused(), self.store.write():
            ahead = self._catch_up_ahead(progress)  # a large catch-up: most of it
            applied += ahead
            folded = ahead > 0
            while True:
                states = self.store.states()
                start = min(states[p.name][1] for p in self.projections)
                notes = self.recorder.select_notifications(start, PAGE, inclusive_of_start=False)
                if not notes:
                    if folded:  # nothing to finish when nothing was folded
                        self._settle(self.store, {p.name: _live(p) for p in self.projections})
                    return applied
                envelopes = [self.envelope(n) for n in notes]
                for p in self.projections:
                    seen = states[p.name][1]
                    todo = [e for e in envelopes if e.position > seen]
                    if todo:
                        self.store.apply(p, _live(p), todo)
                        self.store.set_state(p.name, p.version, todo[-1].position)
                applied += len(envelopes)
                folded = True
                if progress:
                    progress(len(envelopes))

    def rebuild(self, names: Sequence[str] | None = None, progress: Progress | None = None) -> int:
        """Fold the whole log into fresh tables, then swap them in atomically."""
        targets = self.by_name(names)
        with self.store.rebuild_lock():
            count = self._rebuild(targets, progress)
            self.store.reclaim_free_pages()
            return count

    def _rebuild(self, targets: list[Projection], progress: Progress | None) -> int:
        with gc_paused():  # decoding happens in the page iterator, outside each write
            return self._rebuild_pages(targets, progress)

    def _rebuild_pages(self, targets: list[Projection], progress: Progress | None) -> int:
        with self.store.write():
            fresh = {p.name: self.store.create_tables(p, REBUILD_SUFFIX) for p in targets}
        position = 0
        count = 0
        if self._worth_folding_ahead(0):
            positions = dict.fromkeys((p.name for p in targets), 0)
            for folded in self._folded_ahead(targets, fresh, positions):
                with self.store.write():
                    for name, _, batches in folded.changes:
                        self.store.run(fresh[name], batches)
                position = folded.last
                count += folded.count
                if progress:
                    progress(folded.count)
        for page in self.pages(position):
            with self.store.write():
                for p in targets:
                    self.store.apply(p, fresh[p.name], page)
            position = page[-1].position
            count += len(page)
            if progress:
                progress(len(page))
        with self.store.write():
            # Events appended while we were folding: finish them inside the swap.
            for page in self.pages(position):
                for p in targets:
                    self.store.apply(p, fresh[p.name], page)
                position = page[-1].position
                count += len(page)
            for p in targets:
                if type(p).settle is not Projection.settle:
                    self.store.index_rebuilt(p, REBUILD_SUFFIX)
            self._settle(self.store, {p.name: fresh[p.name] for p in targets})
            for p in targets:
                self.store.swap_in(p, REBUILD_SUFFIX)
                self.store.set_state(p.name, p.version, position)
        return count

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
        return fold_ahead.can_fold_ahead(self.recorder, self.head_position() - after)

    def _folded_ahead(
        self,
        projections: Sequence[Projection],
        names: dict[str, dict[str, str]],
        positions: dict[str, int],
    ) -> Iterator[fold_ahead.FoldedPage]:
        """The events after `positions` folded in a child (`fold_ahead`), page by page."""
        return fold_ahead.fold_ahead(
            self.recorder,
            self.envelope,
            PAGE,
            projections,
            names,
            positions,
            str(self.store.path),
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


def _live(projection: Projection) -> dict[str, str]:
    return {t.name: t.name for t in projection.tables}


@contextmanager
def _nothing() -> Iterator[None]:
    yield
