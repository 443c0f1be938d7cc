"""The ledger application: its methods are the intents users have."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal, TypeVar
from uuid import UUID, uuid4

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError

from domain import benchmark as benchmark_model
from domain import result_import, verdicts
from domain import run as run_model
from domain import run_group as group_model
from domain import signature as signature_model
from domain.base import Aggregate, Event
from domain.benchmark import Benchmark
from domain.errors import (
    ConcurrencyError,
    ImportConflictError,
    NotFoundError,
    RuleViolationError,
)
from domain.records import Cell, RunRecord, SkipRecord, SourceFile
from domain.run import Run
from domain.run_group import RunGroup
from domain.signature import Mode, Signature
from domain.signatures import (
    benchmark_id_for,
    import_id_for,
    natural_id,
    run_id_for,
    signature,
    signature_id_for,
)

CELL_BATCH = 500


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
    kind: Literal["run", "import", "demo"]
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
    state: Literal["imported", "unchanged", "amended"]


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
        records: Iterable[RunRecord | SkipRecord],
        *,
        group: GroupHandle | None = None,
        amend: bool = False,
    ) -> ImportOutcome:
        """Record every run a result file states, all in one atomic append.

        A run already recorded with the same content is left alone; with different
        content it is a conflict, unless `amend`: then the recorded version is
        superseded by a new run holding the new content (never overwritten).
        """
        items = list(records)
        for _ in range(3):
            try:
                return self._import_once(system, source, items, group, amend)
            except ConcurrencyError:
                continue  # another writer recorded some of it first: decide again
        raise ConcurrencyError(f"{source.path}: other writers kept changing the same runs")

    def _import_once(
        self,
        system: str,
        source: SourceFile,
        items: Sequence[RunRecord | SkipRecord],
        group: GroupHandle | None,
        amend: bool,
    ) -> ImportOutcome:
        import_id = import_id_for(source.sha256)
        if self._first_event(import_id) is not None:
            return ImportOutcome("unchanged", (), 0)
        events: list[Event] = []
        outcomes: list[RunOutcome] = []
        new_benchmarks: dict[str, RunRecord] = {}
        skips = [item for item in items if isinstance(item, SkipRecord)]
        for record in (item for item in items if isinstance(item, RunRecord)):
            run_key = record.header.natural_key()
            content = record.content_sha256()
            base_id = run_id_for(system, run_key)
            if any(o.run_key == run_key for o in outcomes):
                raise ImportConflictError(
                    f"{source.path}: run '{run_key}' appears twice in one file"
                )
            current = self._current_version(base_id)
            if current is not None and current.content_sha256 == content:
                outcomes.append(RunOutcome(current.id, run_key, "unchanged"))
                continue
            if current is not None and not amend:
                raise ImportConflictError(
                    f"{source.path}: run '{run_key}' is already recorded with different "
                    "content (nothing was appended; `import --amend` records the new "
                    "version as a correction)"
                )
            run_id = base_id
            if current is not None:
                amended_key = f"{run_key}#amended:{content[:16]}"
                run_id = run_id_for(system, amended_key)
                events.append(
                    run_model.supersede(
                        current,
                        run_id,
                        f"amended by {source.path}",
                        "import --amend",
                        source.sha256,
                    )
                )
            events.extend(self._run_events(run_id, record, source, content, group))
            outcomes.append(
                RunOutcome(run_id, run_key, "imported" if current is None else "amended")
            )
            new_benchmarks.setdefault(record.header.benchmark, record)
        if not events and not skips:
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
        if skips and group is None:
            raise RuleViolationError(f"{source.path}: skips are recorded on a run group")
        self._save_with_group(events, group, [self._skip_event(group, s) for s in skips])
        if group is not None:
            for o in outcomes:
                group.count(o.state)
            group.count("skipped", len(skips))
        changed = [o for o in outcomes if o.state != "unchanged"]
        state: Literal["imported", "unchanged"] = "imported" if changed or skips else "unchanged"
        return ImportOutcome(state, tuple(outcomes), len(events) + len(skips))

    def _current_version(self, run_id: UUID) -> Run | None:
        """The run recorded under this key, following amendments to the newest version."""
        if self._first_event(run_id) is None:
            return None
        run = self.get_run(run_id)
        while run.superseded_by is not None:
            run = self.get_run(run.superseded_by)
        return run

    @staticmethod
    def _skip_event(group: GroupHandle | None, skip: SkipRecord) -> Callable[[int], Event]:
        def build(version: int) -> Event:
            assert group is not None
            return group_model.BenchmarkSkipped(
                originator_id=group.id,
                originator_version=version,
                benchmark=skip.benchmark,
                agent=skip.agent,
                provider=skip.provider,
                model=skip.model,
                signature=signature(
                    skip.benchmark, skip.agent, skip.provider, skip.model, skip.config
                ),
                reason=skip.reason,
                detail=skip.detail,
            )

        return build

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
        with group.lock:
            if not group.opened:
                return
            current: RunGroup = self._get(group.id, _project(group_model.mutate), "run group")
            self._save([group_model.close_group(current, dict(sorted(group.counts.items())))])
            group.version = current.version + 1

    # -- executing runs ---------------------------------------------------------

    def attempts(self, signature: str) -> tuple[Signature | None, list[Run]]:
        """The signature's claim stream and the runs of its attempts, in order."""
        try:
            sig: Signature = self.repository.get(
                signature_id_for(signature), projector_func=_project(signature_model.mutate)
            )
        except AggregateNotFoundError:
            return None, []
        return sig, [self.get_run(run_id) for run_id in sig.attempts]

    def start_attempt(
        self,
        group: GroupHandle | None,
        *,
        benchmark: str,
        agent: str,
        provider: str,
        model: str,
        config: dict[str, Any],
        mode: Mode,
        command: list[str],
        cwd: str,
        host: str,
        lease_seconds: float,
        run_key: str,
        run_dir: str,
        now: Callable[[], datetime] = _utc_now,
    ) -> StartedAttempt | Skip:
        """Decide, then claim the next attempt and start its run in one atomic append.

        If another process claims the same signature first, the store refuses our
        append and we decide again with its attempt in view.
        """
        sig_text = signature(benchmark, agent, provider, model, config)
        for _ in range(5):
            current, runs = self.attempts(sig_text)
            at = now()
            decision = signature_model.decide(runs, mode, at)
            if not decision.execute:
                return Skip(decision.reason or "skipped", decision.defer_to)
            attempt = len(runs) + 1
            run_id = natural_id("run", "executed", sig_text, str(attempt))
            events: list[Event] = [
                signature_model.claim(
                    signature_id_for(sig_text),
                    current,
                    signature=sig_text,
                    benchmark=benchmark,
                    agent=agent,
                    run_id=run_id,
                    mode=mode,
                    run_group_id=group.id if group else None,
                ),
                run_model.begin(
                    run_id,
                    run_key=run_key,
                    benchmark=benchmark,
                    agent=agent,
                    provider=provider,
                    model=model,
                    config=config,
                    attempt=attempt,
                    run_group_id=group.id if group else None,
                    command=command,
                    cwd=cwd,
                    host=host,
                    started_at=at,
                    lease_expires_at=at + timedelta(seconds=lease_seconds),
                    run_dir=run_dir,
                ),
            ]
            try:
                self._save_with_group(events, group)
            except ConcurrencyError:
                continue
            return StartedAttempt(run_id, run_key, attempt, sig_text)
        raise ConcurrencyError(f"could not claim an attempt of {benchmark} for {agent}")

    def renew_lease(self, run_id: UUID, lease_seconds: float) -> datetime:
        expires = _utc_now() + timedelta(seconds=lease_seconds)
        self._save([run_model.renew_lease(self.get_run(run_id), expires)])
        return expires

    def finish_run(self, run_id: UUID, cells: Sequence[Cell], **outcome: Any) -> None:
        """Record the run's cells in batches and its outcome, in one atomic append."""
        run = self.get_run(run_id)
        fresh = run_model.new_cells(run, cells)
        events: list[Event] = []
        version = run.version
        for i in range(0, len(fresh), CELL_BATCH):
            version += 1
            events.append(
                run_model.CellsRecorded(
                    originator_id=run_id,
                    originator_version=version,
                    cells=tuple(fresh[i : i + CELL_BATCH]),
                )
            )
        events.append(run_model.finish(run, version=version + 1, **outcome))
        self._save(events)

    def recover_stale(
        self,
        candidates: Iterable[UUID],
        stale_seconds: float,
        actor: str,
        age_cutoff: float | None = None,
    ) -> list[tuple[UUID, str]]:
        """Recover every candidate whose lease expired (or, without one, is too old)."""
        recovered = []
        for run_id in candidates:
            for _ in range(3):
                run = self.get_run(run_id)
                now = _utc_now()
                if run_model.stale_reason(run, now, stale_seconds, age_cutoff) is None:
                    break
                event = run_model.recover(run, now, stale_seconds, actor, age_cutoff)
                try:
                    self._save([event])
                except ConcurrencyError:
                    continue  # it renewed or finished meanwhile: look again
                recovered.append((run_id, event.policy))
                break
        return recovered

    def skip(
        self,
        group: GroupHandle,
        *,
        reason: str,
        defer_to: UUID | None = None,
        detail: str | None = None,
        **work: Any,
    ) -> None:
        """Record that this invocation did not run some work (benchmark, agent, provider,
        model, config), and why: never a run, never an attempt."""
        self._not_run(
            group,
            group_model.BenchmarkSkipped,
            work,
            reason=reason,
            defer_to=defer_to,
            detail=detail,
        )

    def refuse_launch(
        self,
        group: GroupHandle,
        *,
        reason: str,
        missing_env: list[str],
        detail: str | None = None,
        **work: Any,
    ) -> None:
        """Record that some work could not be launched (a failure, but no run)."""
        self._not_run(
            group,
            group_model.LaunchRefused,
            work,
            reason=reason,
            missing_env=missing_env,
            detail=detail,
        )

    def _not_run(
        self, group: GroupHandle, kind: type[Event], work: dict[str, Any], **fields: Any
    ) -> None:
        config = work.pop("config")
        sig_text = signature(
            work["benchmark"], work["agent"], work["provider"], work["model"], config
        )
        self._save_with_group(
            [],
            group,
            [
                lambda version: kind(  # type: ignore[call-arg]
                    originator_id=group.id,
                    originator_version=version,
                    signature=sig_text,
                    **work,
                    **fields,
                )
            ],
        )

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
        """Register or update a benchmark; an unchanged registration appends nothing."""
        for _ in range(5):
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
            try:
                self._save([event])
            except ConcurrencyError:
                continue  # another process registered it meanwhile: look again
            return True
        raise ConcurrencyError(f"could not register benchmark {benchmark}")

    def reference_high_score(
        self,
        benchmark: str,
        *,
        label: str,
        value: float,
        unit: str | None = None,
        source: str | None = None,
        as_of: date | None = None,
    ) -> bool:
        """Reference a high score; repeating the current reference appends nothing."""
        for _ in range(5):
            current = self.get_benchmark(benchmark)
            if current is None:
                self.register_benchmark(benchmark, unit=unit)
                continue
            event = benchmark_model.reference_high_score(
                current, label=label, value=value, unit=unit, source=source, as_of=as_of
            )
            if event is None:
                return False
            try:
                self._save([event])
            except ConcurrencyError:
                continue
            return True
        raise ConcurrencyError(f"could not reference a high score of {benchmark}")

    # -- publication ------------------------------------------------------------

    def record_gate(self, **fields: Any) -> UUID:
        verdict_id = uuid4()
        self._save([verdicts.first_event(verdicts.GateEvaluated, verdict_id, **fields)])
        return verdict_id

    def record_review(self, **fields: Any) -> UUID:
        review_id = uuid4()
        self._save([verdicts.first_event(verdicts.ReviewRecorded, review_id, **fields)])
        return review_id

    def record_comparison(self, comparison_id: str, **fields: Any) -> UUID:
        stream = natural_id("comparison", comparison_id)
        self._save(
            [
                verdicts.first_event(
                    verdicts.ComparisonRecorded, stream, comparison_id=comparison_id, **fields
                )
            ]
        )
        return stream


def _project(mutator: Any) -> Any:
    def project(aggregate: Any, events: Iterable[Event]) -> Any:
        for event in events:
            aggregate = mutator(event, aggregate)
        return aggregate

    return project
