"""The ledger application's foundation: reading aggregates, saving, run groups."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from uuid import UUID, uuid4

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError

from benchledger.domain.base import Aggregate, Event
from benchledger.domain.errors import (
    ConcurrencyError,
    NotFoundError,
)
from benchledger.domain.signatures import (
    benchmark_id_for,
)

# The run, group, benchmark and attempt modules (their events and aggregates) load where
# a method uses them: a command that records only a verdict, a review or an alias never
# does (`domain.publishing`), and loading them is a good part of such a command's cost.
if TYPE_CHECKING:
    from benchledger.domain import run_group as group_model
    from benchledger.domain.benchmark import Benchmark
    from benchledger.domain.run import Run
    from benchledger.domain.run_group import RunGroup

CELL_BATCH = 500
# Inside a transaction, saves are written together once this many events (or cells and
# turns) are waiting: few inserts, a bounded batch in memory, and one insert stays far
# below the ~5,000 events PostgreSQL's pipeline tolerates.
SAVE_EVENTS = 1_000
SAVE_WEIGHT = 5_000


class PreparedEvent:
    """An event already made into what the store holds (`stored`: the mapper's own
    `StoredEvent` of it), by the process that read its run (`Importing.prepare`): saved
    like any event, written as it is."""

    __slots__ = ("originator_id", "originator_version", "stored", "weight")

    def __init__(self, stored: Any, weight: int) -> None:
        self.originator_id: UUID = stored.originator_id
        self.originator_version: int = stored.originator_version
        self.weight = weight
        self.stored = stored


def _weight(event: Event | PreparedEvent) -> int:
    if type(event) is PreparedEvent:
        return event.weight
    cells, turns, attempts = _weighed()
    if isinstance(event, cells):
        return 1 + len(event.cells)
    if isinstance(event, turns):
        return 1 + len(event.turns)
    if isinstance(event, attempts):
        return 1 + len(event.attempts)
    return 1


@functools.cache
def _weighed() -> tuple[Any, Any, Any]:
    """The event classes `_weight` weighs by their cells, turns or attempts."""
    from benchledger.domain import run as run_model
    from benchledger.domain import signature as signature_model

    return (
        run_model.CellsRecorded,
        run_model.TrajectoryRecorded | run_model.RunImported,
        signature_model.AttemptsImported,
    )


def _utc_now() -> datetime:
    return datetime.now(UTC)


A = TypeVar("A", bound=Aggregate)


@dataclass
class GroupHandle:
    """A run group that is opened lazily, together with its first write.

    Benchmarks of one invocation may run in parallel threads; the lock keeps the
    group's own events in stream order.
    """

    id: UUID
    label: str
    kind: group_model.GroupKind
    request: dict[str, Any] = field(default_factory=dict)
    selection: list[str] = field(default_factory=list)
    opened: bool = False
    version: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def count(self, outcome: str, n: int = 1) -> None:
        with self.lock:
            self.counts[outcome] = self.counts.get(outcome, 0) + n


@dataclass(frozen=True)
class StartedAttempt:
    run_id: UUID
    run_key: str
    attempt: int
    signature: str


@dataclass(frozen=True)
class Skip:
    reason: str
    defer_to: UUID | None


@dataclass(frozen=True)
class RunOutcome:
    run_id: UUID
    run_key: str
    # merged: a run already recorded, to which this source added facts.
    state: Literal["imported", "unchanged", "amended", "merged"]


@dataclass(frozen=True)
class ImportOutcome:
    state: Literal["imported", "unchanged"]
    runs: Sequence[RunOutcome]
    events: int


class LedgerBase(Application[UUID]):
    """What every group of intents shares."""

    name = "benchledger"

    # Aggregates are immutable pydantic models: copying them from a cache buys nothing.
    env = {"DEEPCOPY_FROM_AGGREGATE_CACHE": "n"}

    # Set by the composition root: a transaction of the event store spanning many saves.
    # Without one, `appending_together` holds the events and saves them once at the end.
    transaction: Callable[[], AbstractContextManager[None]] | None = None
    _held: list[Event] | None = None
    # Saved inside the transaction, not written yet (see `_save`), and their weight.
    _buffer: list[Event] | None = None
    _buffered: int = 0
    # Set by the composition root: which of the given streams hold events, in one query.
    streams_present: Callable[[Sequence[UUID]], set[UUID]] | None = None
    # Set by the composition root: every committed event of those of the given streams
    # that fit its byte budget, as stored, in one query per chunk
    # (`adapters.store.streams.stream_events`); the others are read on their own.
    stream_events: Callable[[Sequence[UUID]], dict[UUID, list[Any]]] | None = None
    # Set by the composition root where the store allows: `streams_present` for a process
    # forked from this one (`Importing.prepare`), through a connection of its own.
    streams_present_forked: Callable[[Sequence[UUID]], set[UUID]] | None = None
    # Set by the composition root: of the given streams, those holding one event, with its
    # topic and stored state (`adapters.store.streams.sole_events`), and the same for a
    # process forked from this one, where the store allows (`Importing.unchanged_rows`).
    sole_events: Callable[[Sequence[UUID]], dict[UUID, tuple[str, bytes]]] | None = None
    sole_events_forked: Callable[[Sequence[UUID]], dict[UUID, tuple[str, bytes]]] | None = None
    # Streams a batch lookup found without events (`import_lookups`), while appending
    # together: `_first_event` needs no query for them.
    _absent: set[UUID] | None = None
    # The events of the recorded streams (runs, source groups, skips' notes) a batch
    # lookup read with the batch, while appending together, until this process appends
    # to them: reads of those streams need no query (`_get`, `_first_event`, `_stream`).
    _ahead: dict[UUID, list[Event]] | None = None

    @contextmanager
    def appending_together(self) -> Iterator[None]:
        """Every save inside is committed together or not at all."""
        if self._held is not None or self._buffer is not None:
            raise RuntimeError("already appending together")
        self._absent = self._ahead = None
        try:
            if self.transaction is not None:
                with self.transaction():
                    self._buffer, self._buffered = [], 0
                    try:
                        yield
                        self._write_buffer()
                    finally:
                        self._buffer = None
                return
            held: list[Event] = []
            self._held = held
            try:
                yield
            finally:
                self._held = None
            if held:
                self._save(held)
        finally:
            self._absent = self._ahead = None

    # -- reading aggregates -------------------------------------------------

    def _read_ahead(self, aggregate_id: UUID) -> list[Event] | None:
        """The stream's events as its import's batch read them, if it did (`_ahead`)."""
        return self._ahead.get(aggregate_id) if self._ahead else None

    def _get(self, aggregate_id: UUID, projector: Any, kind: str) -> Any:
        if ahead := self._read_ahead(aggregate_id):  # what the store holds, read ahead
            return projector(None, ahead)
        try:
            return self.repository.get(aggregate_id, projector_func=projector)
        except AggregateNotFoundError:
            raise NotFoundError(f"{kind} {aggregate_id} not found") from None

    def get_run(self, run_id: UUID) -> Run:
        from benchledger.domain import run as run_model

        return self._get(run_id, run_model.project_run, "run")  # type: ignore[no-any-return]

    def _stream(self, aggregate_id: UUID) -> Iterable[Event]:
        """Every event of a stream: read ahead with its import's batch, or from the store."""
        if ahead := self._read_ahead(aggregate_id):
            return ahead
        return self.events.get(aggregate_id)  # type: ignore[return-value]

    def get_benchmark(self, benchmark: str) -> Benchmark | None:
        from benchledger.domain import benchmark as benchmark_model

        try:
            return self._get(  # type: ignore[no-any-return]
                benchmark_id_for(benchmark), _project(benchmark_model.mutate), "benchmark"
            )
        except NotFoundError:
            return None

    def _first_event(self, aggregate_id: UUID) -> Event | None:
        if self._absent is not None and aggregate_id in self._absent:
            return None
        if ahead := self._read_ahead(aggregate_id):
            return ahead[0]
        for event in self.events.get(aggregate_id, lte=1):
            return event  # type: ignore[return-value]
        return None

    def _save(self, events: Sequence[Event]) -> None:
        if self._ahead:  # streams this process appends to are read from the store again
            for event in events:
                self._ahead.pop(event.originator_id, None)
        if self._held is not None:
            self._held.extend(events)
            return
        if self._buffer is not None:
            self._buffer.extend(events)
            self._buffered += sum(_weight(e) for e in events)
            if len(self._buffer) >= SAVE_EVENTS or self._buffered >= SAVE_WEIGHT:
                self._write_buffer()
            return
        try:
            self.save(*events)
        except IntegrityError as e:
            raise ConcurrencyError(
                "another writer recorded the same events first; try again"
            ) from e

    def _write_buffer(self) -> None:
        """Write the events saved inside the transaction so far, in one insert. Not through
        `save()`: its per-object protocol checks cost more than the insert itself here."""
        assert self._buffer is not None
        events, self._buffer, self._buffered = self._buffer, [], 0
        if not events:
            return
        try:
            self.events.put(events)
        except IntegrityError as e:
            raise ConcurrencyError(
                "another writer recorded the same events first; try again"
            ) from e

    def _save_with_group(
        self,
        events: list[Event],
        group: GroupHandle | None,
        group_events: Sequence[Callable[[int], Event]] = (),
    ) -> None:
        """Save events, opening the group first if needed; each `group_events` item
        builds an event of the group itself at the version it is given."""
        if group is None:
            self._save(events)
            return
        if group.opened and not group_events:
            self._save(events)
            return
        from benchledger.domain import run_group as group_model

        with group.lock:
            version = group.version
            lead: list[Event] = []
            if not group.opened:
                version += 1
                lead.append(
                    group_model.open_group(
                        group.id,
                        group.label,
                        group.kind,
                        request=group.request,
                        selection=group.selection,
                    )
                )
            for build in group_events:
                version += 1
                lead.append(build(version))
            self._save([*lead, *events])
            group.opened, group.version = True, version

    # -- run groups -------------------------------------------------------------

    def new_group(
        self,
        label: str,
        kind: Literal["run", "import", "demo"],
        *,
        request: dict[str, Any] | None = None,
        selection: list[str] | None = None,
    ) -> GroupHandle:
        return GroupHandle(
            id=uuid4(), label=label, kind=kind, request=request or {}, selection=selection or []
        )

    def close_group(self, group: GroupHandle) -> None:
        from benchledger.domain import run_group as group_model

        with group.lock:
            if not group.opened:
                return
            summary = dict(sorted(group.counts.items()))
            # Only what others appended after this process's last write is read back (a
            # recovery that interrupted the group): an import's group holds every skip
            # of its files, thousands of events that decide nothing here.
            if next(iter(self.events.get(group.id, gt=group.version)), None) is None:
                closing = group_model.close_own_group(group.id, group.version, summary)
            else:
                current: RunGroup = self._get(group.id, _project(group_model.mutate), "run group")
                closing = group_model.close_group(current, summary)
            self._save([closing])
            group.version = closing.originator_version


def _project(mutator: Any) -> Any:
    def project(aggregate: Any, events: Iterable[Event]) -> Any:
        for event in events:
            aggregate = mutator(event, aggregate)
        return aggregate

    return project
