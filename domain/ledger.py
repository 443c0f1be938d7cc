"""The ledger application: its methods are the intents users have."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal, TypeVar
from uuid import UUID, uuid4

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError

from domain import benchmark as benchmark_model
from domain import result_import
from domain import run as run_model
from domain import run_group as group_model
from domain.base import Aggregate, Event
from domain.benchmark import Benchmark
from domain.errors import ConcurrencyError, ImportConflictError, NotFoundError
from domain.records import Cell, RunRecord, SourceFile
from domain.run import Run, RunStarted
from domain.run_group import RunGroup
from domain.signatures import benchmark_id_for, import_id_for, run_id_for

CELL_BATCH = 500
A = TypeVar("A", bound=Aggregate)


@dataclass
class GroupHandle:
    """A run group that is opened lazily, together with its first write."""

    id: UUID
    label: str
    kind: Literal["run", "import", "demo"]
    request: dict[str, Any] = field(default_factory=dict)
    selection: list[str] = field(default_factory=list)
    opened: bool = False
    counts: dict[str, int] = field(default_factory=dict)

    def count(self, outcome: str, n: int = 1) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + n


@dataclass(frozen=True)
class RunOutcome:
    run_id: UUID
    run_key: str
    state: Literal["imported", "unchanged"]


@dataclass(frozen=True)
class ImportOutcome:
    state: Literal["imported", "unchanged"]
    runs: tuple[RunOutcome, ...]
    events: int


class Ledger(Application[UUID]):
    name = "benchledger"

    # Aggregates are immutable pydantic models: copying them from a cache buys nothing.
    env = {"DEEPCOPY_FROM_AGGREGATE_CACHE": "n"}

    # -- reading aggregates -------------------------------------------------

    def _get(self, aggregate_id: UUID, projector: Any, kind: str) -> Any:
        try:
            return self.repository.get(aggregate_id, projector_func=projector)
        except AggregateNotFoundError:
            raise NotFoundError(f"{kind} {aggregate_id} not found") from None

    def get_run(self, run_id: UUID) -> Run:
        return self._get(run_id, run_model.project_run, "run")  # type: ignore[no-any-return]

    def get_benchmark(self, benchmark: str) -> Benchmark | None:
        try:
            return self._get(  # type: ignore[no-any-return]
                benchmark_id_for(benchmark), _project(benchmark_model.mutate), "benchmark"
            )
        except NotFoundError:
            return None

    def _first_event(self, aggregate_id: UUID) -> Event | None:
        for event in self.events.get(aggregate_id, lte=1):
            return event  # type: ignore[return-value]
        return None

    def _save(self, events: Sequence[Event]) -> None:
        try:
            self.save(*events)
        except IntegrityError as e:
            raise ConcurrencyError(
                "another writer recorded the same events first; try again"
            ) from e

    # -- importing ------------------------------------------------------------

    def import_runs(
        self,
        system: str,
        source: SourceFile,
        records: Iterable[RunRecord],
        *,
        group: GroupHandle | None = None,
    ) -> ImportOutcome:
        """Record every run a result file states, all in one atomic append."""
        import_id = import_id_for(source.sha256)
        if self._first_event(import_id) is not None:
            return ImportOutcome("unchanged", (), 0)
        events: list[Event] = []
        outcomes: list[RunOutcome] = []
        new_benchmarks: dict[str, RunRecord] = {}
        for record in records:
            run_key = record.header.natural_key()
            run_id = run_id_for(system, run_key)
            content = record.content_sha256()
            existing = self._first_event(run_id)
            if existing is not None:
                assert isinstance(existing, RunStarted)
                if existing.content_sha256 != content:
                    raise ImportConflictError(
                        f"{source.path}: run '{run_key}' is already recorded from "
                        f"{existing.source_path or 'another source'} with different content "
                        "(nothing was appended)"
                    )
                outcomes.append(RunOutcome(run_id, run_key, "unchanged"))
                continue
            if any(o.run_id == run_id for o in outcomes):
                raise ImportConflictError(
                    f"{source.path}: run '{run_key}' appears twice in one file"
                )
            events.extend(self._run_events(run_id, record, source, content, group))
            outcomes.append(RunOutcome(run_id, run_key, "imported"))
            new_benchmarks.setdefault(record.header.benchmark, record)
        if not events:
            # Every run is already recorded with this content: the file adds no facts.
            return ImportOutcome("unchanged", tuple(outcomes), 0)
        for name, record in sorted(new_benchmarks.items()):
            if self.get_benchmark(name) is None:
                registered = benchmark_model.register(
                    benchmark_id_for(name),
                    None,
                    name,
                    unit=record.header.unit,
                    higher_is_better=record.header.higher_is_better,
                )
                assert registered is not None
                events.append(registered)
        events.append(
            result_import.imported(
                import_id,
                format=source.format,
                path=source.path,
                sha256=source.sha256,
                size=source.size,
                run_ids=[o.run_id for o in outcomes],
                run_group_id=group.id if group else None,
            )
        )
        self._save_with_group(events, group)
        if group is not None:
            for o in outcomes:
                group.count(o.state)
        state: Literal["imported", "unchanged"] = (
            "imported" if any(o.state == "imported" for o in outcomes) else "unchanged"
        )
        return ImportOutcome(state, tuple(outcomes), len(events))

    def _run_events(
        self,
        run_id: UUID,
        record: RunRecord,
        source: SourceFile,
        content: str,
        group: GroupHandle | None,
    ) -> list[Event]:
        where = f"{source.path}: run '{record.header.natural_key()}'"
        cells = run_model.unique_cells(record.cells, where=where)
        events: list[Event] = [
            run_model.start(
                run_id,
                record,
                source="imported",
                source_file=source,
                run_group_id=group.id if group else None,
                content_sha256=content,
            )
        ]
        for i in range(0, len(cells), CELL_BATCH):
            events.append(
                run_model.CellsRecorded(
                    originator_id=run_id,
                    originator_version=len(events) + 1,
                    cells=tuple(cells[i : i + CELL_BATCH]),
                )
            )
        events.append(run_model.finish_from_record(run_id, len(events) + 1, record))
        return events

    def _save_with_group(self, events: list[Event], group: GroupHandle | None) -> None:
        if group is not None and not group.opened:
            events = [
                group_model.open_group(
                    group.id,
                    group.label,
                    group.kind,
                    request=group.request,
                    selection=group.selection,
                ),
                *events,
            ]
            self._save(events)
            group.opened = True
        else:
            self._save(events)

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
        if not group.opened:
            return
        current: RunGroup = self._get(group.id, _project(group_model.mutate), "run group")
        self._save([group_model.close_group(current, dict(sorted(group.counts.items())))])

    # -- corrections ------------------------------------------------------------

    def invalidate_run(self, run_id: UUID, reason: str, actor: str) -> None:
        self._save([run_model.invalidate(self.get_run(run_id), reason, actor)])

    def reinstate_run(self, run_id: UUID, reason: str, actor: str) -> None:
        self._save([run_model.reinstate(self.get_run(run_id), reason, actor)])

    def correct_score(
        self, run_id: UUID, new_score: float | None, reason: str, actor: str
    ) -> float | None:
        run = self.get_run(run_id)
        self._save([run_model.correct_score(run, new_score, reason, actor)])
        return run.score

    def record_cells(self, run_id: UUID, cells: Sequence[Cell]) -> int:
        run = self.get_run(run_id)
        fresh = run_model.new_cells(run, cells)
        if not fresh:
            return 0
        self._save(
            [
                run_model.CellsRecorded(
                    originator_id=run_id,
                    originator_version=run.version + 1,
                    cells=tuple(fresh),
                )
            ]
        )
        return len(fresh)

    # -- benchmarks ---------------------------------------------------------------

    def register_benchmark(
        self,
        benchmark: str,
        *,
        directory: str | None = None,
        unit: str | None = None,
        higher_is_better: bool = True,
        description: str | None = None,
    ) -> bool:
        event = benchmark_model.register(
            benchmark_id_for(benchmark),
            self.get_benchmark(benchmark),
            benchmark,
            directory=directory,
            unit=unit,
            higher_is_better=higher_is_better,
            description=description,
        )
        if event is None:
            return False
        self._save([event])
        return True

    def reference_high_score(
        self,
        benchmark: str,
        *,
        label: str,
        value: float,
        unit: str | None = None,
        source: str | None = None,
        as_of: date | None = None,
    ) -> None:
        current = self.get_benchmark(benchmark)
        if current is None:
            self.register_benchmark(benchmark, unit=unit)
            current = self.get_benchmark(benchmark)
            assert current is not None
        self._save(
            [
                benchmark_model.reference_high_score(
                    current, label=label, value=value, unit=unit, source=source, as_of=as_of
                )
            ]
        )


def _project(mutator: Any) -> Any:
    def project(aggregate: Any, events: Iterable[Event]) -> Any:
        for event in events:
            aggregate = mutator(event, aggregate)
        return aggregate

    return project
