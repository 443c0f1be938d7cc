"""The Run aggregate: one execution or one imported result set of one signature."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from functools import singledispatch
from typing import Any, Literal
from uuid import UUID

from pydantic import Field

from domain.base import Aggregate, Event
from domain.errors import (
    CellConflictError,
    InvalidationStateError,
    RuleViolationError,
    RunAlreadyFinishedError,
    RunNotFinishedError,
)
from domain.records import (
    FINISHED_STATUSES,
    Cell,
    FiniteFloat,
    RunRecord,
    RunStatus,
    SourceFile,
)


class RunStarted(Event):
    run_key: str
    benchmark: str
    agent: str
    provider: str
    model: str
    config: dict[str, Any]
    signature: str
    comparison_signature: str
    attempt: int | None = None
    run_group_id: UUID | None = None
    command: list[str] | None = None
    cwd: str | None = None
    host: str | None = None
    code_versions: dict[str, str] = Field(default_factory=dict)
    source: Literal["executed", "imported"]
    source_format: str | None = None
    source_path: str | None = None
    source_sha256: str | None = None
    content_sha256: str | None = None
    started_at: datetime | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)
    lease_expires_at: datetime | None = None
    pid: int | None = None
    run_dir: str | None = None


class CellsRecorded(Event):
    """A batch of cells: hundreds per event keep the write path fast."""

    cells: tuple[Cell, ...]


class RunFinished(Event):
    status: RunStatus
    score: FiniteFloat | None = None
    unit: str | None = None
    higher_is_better: bool = True
    metrics: dict[str, Any] = Field(default_factory=dict)
    tokens: dict[str, int] = Field(default_factory=dict)
    duration_seconds: float | None = None
    exit_code: int | None = None
    error: str | None = None
    ended_at: datetime | None = None
    artifacts: list[dict[str, Any]] = Field(default_factory=list)


class LeaseRenewed(Event):
    """The process executing the run is alive; a coarse heartbeat (about a minute)."""

    expires_at: datetime


class StaleRunRecovered(Event):
    """Its lease expired: the run stops counting as live. Completed cells are kept."""

    policy: str
    stale_seconds: float
    lease_expires_at: datetime | None
    last_heard_at: datetime
    actor: str
    detail: str | None = None


class RunSuperseded(Event):
    """A source re-stated this run with other content; the new version is another run.

    Recorded by `import --amend`: a correction, never an overwrite. The run stops
    counting (like an invalidation) and names the run that replaces it.
    """

    by_run_id: UUID
    reason: str
    actor: str
    source_sha256: str | None = None


class RunInvalidated(Event):
    reason: str
    actor: str


class RunReinstated(Event):
    reason: str
    actor: str


class ScoreCorrected(Event):
    old_score: float | None
    new_score: FiniteFloat | None
    reason: str
    actor: str


class Run(Aggregate):
    """Deliberately small: status, counts and cell fingerprints, never cell values."""

    run_key: str
    benchmark: str
    status: RunStatus
    invalidated: bool = False
    score: float | None = None
    corrections: int = 0
    lease_expires_at: datetime | None = None
    last_heard_at: datetime | None = None
    source: str = "imported"
    superseded_by: UUID | None = None
    source_sha256: str | None = None
    content_sha256: str | None = None
    cell_digests: dict[str, str] = Field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.status in FINISHED_STATUSES

    def is_live(self, now: datetime) -> bool:
        """Running under a lease that has not expired."""
        return (
            self.status is RunStatus.RUNNING
            and self.lease_expires_at is not None
            and self.lease_expires_at > now
        )


@singledispatch
def mutate(event: Event, run: Run | None) -> Run | None:
    raise TypeError(f"Run cannot apply {type(event).__name__}")


@mutate.register
def _(event: RunStarted, run: None) -> Run:
    return Run(
        id=event.originator_id,
        version=event.originator_version,
        created_on=event.timestamp,
        modified_on=event.timestamp,
        run_key=event.run_key,
        benchmark=event.benchmark,
        status=RunStatus.RUNNING,
        lease_expires_at=event.lease_expires_at,
        last_heard_at=event.timestamp,
        source=event.source,
        source_sha256=event.source_sha256,
        content_sha256=event.content_sha256,
    )


@mutate.register
def _(event: CellsRecorded, run: Run) -> Run:
    if run.source != "executed":
        # An imported run is recorded whole, in one append: no later cells to check.
        return run.advanced(event)  # type: ignore[no-any-return]
    digests = dict(run.cell_digests)
    digests.update((c.key, c.digest()) for c in event.cells)
    return run.advanced(event, cell_digests=digests)  # type: ignore[no-any-return]


@mutate.register
def _(event: RunSuperseded, run: Run) -> Run:
    return run.advanced(  # type: ignore[no-any-return]
        event, invalidated=True, superseded_by=event.by_run_id
    )


@mutate.register
def _(event: LeaseRenewed, run: Run) -> Run:
    return run.advanced(  # type: ignore[no-any-return]
        event, lease_expires_at=event.expires_at, last_heard_at=event.timestamp
    )


@mutate.register
def _(event: StaleRunRecovered, run: Run) -> Run:
    return run.advanced(event, status=RunStatus.RECOVERED)  # type: ignore[no-any-return]


@mutate.register
def _(event: RunFinished, run: Run) -> Run:
    # Cells are closed once a run finishes, so their fingerprints are no longer needed.
    return run.advanced(  # type: ignore[no-any-return]
        event, status=event.status, score=event.score, cell_digests={}
    )


@mutate.register
def _(event: RunInvalidated, run: Run) -> Run:
    return run.advanced(event, invalidated=True)  # type: ignore[no-any-return]


@mutate.register
def _(event: RunReinstated, run: Run) -> Run:
    return run.advanced(event, invalidated=False)  # type: ignore[no-any-return]


@mutate.register
def _(event: ScoreCorrected, run: Run) -> Run:
    return run.advanced(  # type: ignore[no-any-return]
        event, score=event.new_score, corrections=run.corrections + 1
    )


def project_run(run: Run | None, events: Iterable[Event]) -> Run | None:
    for event in events:
        run = mutate(event, run)
    return run


def new_cells(run: Run, cells: Sequence[Cell]) -> list[Cell]:
    """Cells not recorded yet; a repeated key must repeat its payload exactly."""
    if run.finished:
        raise RunAlreadyFinishedError(f"run {run.id} has finished; its cells are closed")
    fresh: dict[str, Cell] = {}
    for cell in cells:
        seen = run.cell_digests.get(cell.key)
        if seen is None:
            earlier = fresh.get(cell.key)
            if earlier is not None and earlier != cell:
                raise CellConflictError(
                    f"cell '{cell.key}' appears twice in one batch with different payloads"
                )
            fresh[cell.key] = cell
        elif seen != cell.digest():
            raise CellConflictError(
                f"cell '{cell.key}' of run {run.id} was already recorded with another payload"
            )
    return list(fresh.values())


def unique_cells(cells: Iterable[Cell], *, where: str) -> list[Cell]:
    """Cells of a run being imported whole: repeats are dropped, conflicts refused."""
    by_key: dict[str, Cell] = {}
    for cell in cells:
        earlier = by_key.setdefault(cell.key, cell)
        if earlier is not cell and earlier != cell:
            raise CellConflictError(
                f"{where}: cell '{cell.key}' appears twice with different payloads"
            )
    return list(by_key.values())


def start(
    run_id: UUID,
    record: RunRecord,
    *,
    source: Literal["executed", "imported"],
    source_file: SourceFile | None = None,
    run_group_id: UUID | None = None,
    attempt: int | None = None,
    content_sha256: str | None = None,
) -> RunStarted:
    header = record.header
    return RunStarted(
        originator_id=run_id,
        originator_version=1,
        run_key=header.natural_key(),
        benchmark=header.benchmark,
        agent=header.agent,
        provider=header.provider,
        model=header.model,
        config=header.config,
        signature=header.signature,
        comparison_signature=header.comparison_signature,
        attempt=attempt,
        run_group_id=run_group_id,
        source=source,
        source_format=source_file.format if source_file else None,
        source_path=source_file.path if source_file else None,
        source_sha256=source_file.sha256 if source_file else None,
        content_sha256=content_sha256,
        started_at=header.started_at,
        provenance={**header.provenance, **record.supplement},
    )


def finish_from_record(
    run_id: UUID, version: int, record: RunRecord
) -> RunFinished | StaleRunRecovered:
    """How an imported run ended; a source's interrupted run is recorded as recovered."""
    header = record.header
    if header.status is RunStatus.RECOVERED:
        return StaleRunRecovered(
            originator_id=run_id,
            originator_version=version,
            policy="recovered_by_source",
            stale_seconds=0,
            lease_expires_at=None,
            last_heard_at=header.ended_at or header.started_at or datetime.now(UTC),
            actor="import",
            detail=header.error,
        )
    duration = None
    if header.started_at and header.ended_at:
        duration = (header.ended_at - header.started_at).total_seconds()
    return RunFinished(
        originator_id=run_id,
        originator_version=version,
        status=header.status,
        score=header.score,
        unit=header.unit,
        higher_is_better=header.higher_is_better,
        metrics=header.metrics,
        tokens=header.tokens,
        duration_seconds=duration,
        error=header.error,
        ended_at=header.ended_at,
    )


def invalidate(run: Run, reason: str, actor: str) -> RunInvalidated:
    if run.invalidated:
        raise InvalidationStateError(f"run {run.id} is already invalidated")
    return RunInvalidated(
        originator_id=run.id, originator_version=run.version + 1, reason=reason, actor=actor
    )


def reinstate(run: Run, reason: str, actor: str) -> RunReinstated:
    if run.superseded_by is not None:
        raise InvalidationStateError(
            f"run {run.id} was superseded by {run.superseded_by}; reinstate that run's source"
        )
    if not run.invalidated:
        raise InvalidationStateError(f"run {run.id} is not invalidated")
    return RunReinstated(
        originator_id=run.id, originator_version=run.version + 1, reason=reason, actor=actor
    )


def correct_score(run: Run, new_score: float | None, reason: str, actor: str) -> ScoreCorrected:
    if not run.finished:
        raise RunNotFinishedError(f"run {run.id} has not finished; there is no score to correct")
    return ScoreCorrected(
        originator_id=run.id,
        originator_version=run.version + 1,
        old_score=run.score,
        new_score=new_score,
        reason=reason,
        actor=actor,
    )


def ensure_open(run: Run) -> None:
    """A run finishes once, even after a recovery."""
    if run.finished:
        raise RunAlreadyFinishedError(f"run {run.id} has already finished ({run.status})")


def finish(run: Run, *, version: int | None = None, **outcome: Any) -> RunFinished:
    """Close an open run with its outcome (at `version` when cells precede it)."""
    ensure_open(run)
    return RunFinished(
        originator_id=run.id, originator_version=version or run.version + 1, **outcome
    )


def renew_lease(run: Run, expires_at: datetime) -> LeaseRenewed:
    if run.finished:
        raise RunAlreadyFinishedError(f"run {run.id} has finished; its lease is over")
    return LeaseRenewed(
        originator_id=run.id, originator_version=run.version + 1, expires_at=expires_at
    )


def stale_reason(
    run: Run, now: datetime, stale_seconds: float, age_cutoff: float | None = None
) -> str | None:
    """Why an open run counts as stale now, or None while it may still be alive.

    A leased run is stale once its lease has been expired for `stale_seconds`; a run
    without a lease (imported while running) once nothing was heard of it for
    `age_cutoff` seconds (default: `stale_seconds`).
    """
    if run.status is not RunStatus.RUNNING:
        return None
    if run.lease_expires_at is not None:
        overdue = (now - run.lease_expires_at).total_seconds()
        return "lease_expired" if overdue >= stale_seconds else None
    quiet = (now - (run.last_heard_at or run.created_on)).total_seconds()
    cutoff = stale_seconds if age_cutoff is None else age_cutoff
    return "no_lease_and_older_than_cutoff" if quiet >= cutoff else None


def recover(
    run: Run, now: datetime, stale_seconds: float, actor: str, age_cutoff: float | None = None
) -> StaleRunRecovered:
    policy = stale_reason(run, now, stale_seconds, age_cutoff)
    if policy is None:
        raise RuleViolationError(f"run {run.id} is not stale (status {run.status})")
    return StaleRunRecovered(
        originator_id=run.id,
        originator_version=run.version + 1,
        policy=policy,
        stale_seconds=stale_seconds if run.lease_expires_at else (age_cutoff or stale_seconds),
        lease_expires_at=run.lease_expires_at,
        last_heard_at=run.last_heard_at or run.created_on,
        actor=actor,
    )


def begin(
    run_id: UUID,
    *,
    run_key: str,
    benchmark: str,
    agent: str,
    provider: str,
    model: str,
    config: dict[str, Any],
    attempt: int,
    run_group_id: UUID | None,
    command: list[str],
    cwd: str,
    host: str,
    started_at: datetime,
    lease_expires_at: datetime,
    run_dir: str,
    code_versions: dict[str, str] | None = None,
) -> RunStarted:
    """The start of an executed run, under a lease its process keeps renewing."""
    from domain.signatures import comparison_signature, signature

    return RunStarted(
        originator_id=run_id,
        originator_version=1,
        run_key=run_key,
        benchmark=benchmark,
        agent=agent,
        provider=provider,
        model=model,
        config=config,
        signature=signature(benchmark, agent, provider, model, config),
        comparison_signature=comparison_signature(benchmark, provider, model, config),
        attempt=attempt,
        run_group_id=run_group_id,
        command=command,
        cwd=cwd,
        host=host,
        code_versions=code_versions or {},
        source="executed",
        started_at=started_at,
        lease_expires_at=lease_expires_at,
        run_dir=run_dir,
    )


def supersede(
    run: Run, by_run_id: UUID, reason: str, actor: str, source_sha256: str | None
) -> RunSuperseded:
    if run.superseded_by is not None:
        raise RuleViolationError(f"run {run.id} is already superseded by {run.superseded_by}")
    return RunSuperseded(
        originator_id=run.id,
        originator_version=run.version + 1,
        by_run_id=by_run_id,
        reason=reason,
        actor=actor,
        source_sha256=source_sha256,
    )
