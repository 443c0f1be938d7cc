"""The Run aggregate: one execution or one imported result set of one signature."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from functools import singledispatch
from typing import Any, Literal
from uuid import UUID

from pydantic import ConfigDict, Field, PrivateAttr

from benchledger.domain.base import Aggregate, Event, written_when_set
from benchledger.domain.cells import Cells
from benchledger.domain.records import (
    FINISHED_STATUSES,
    FiniteFloat,
    RunStatus,
    Turn,
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
    # Header fields with a default that the source did not state (`domain.facts`).
    unstated: list[str] = Field(default_factory=list)
    # The id of the credential-pool account the run used: never its home, files or tokens.
    account: str | None = None


class CellsRecorded(Event):
    """A batch of cells: hundreds per event keep the write path fast."""

    # Cells kept as rows (`CellRows`) are held as they are.
    model_config = ConfigDict(arbitrary_types_allowed=True)

    cells: Cells
    # The cells as JSON (`cells_json`) when their writer serialized them already
    # to hash them: the store writes these bytes rather than serialize the cells again.
    # Not part of the event's value: equality ignores it.
    _cells_json: bytes | None = PrivateAttr(default=None)

    @classmethod
    def serialized(
        cls, originator_id: UUID, originator_version: int, cells: Cells, data: bytes
    ) -> CellsRecorded:
        """The event of `cells`, whose JSON array is `data`."""
        event = cls(originator_id=originator_id, originator_version=originator_version, cells=cells)
        event._cells_json = data
        return event

    @property
    def cells_json(self) -> bytes | None:
        return self._cells_json

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__


class TrajectoryRecorded(Event):
    """A batch of the run's trajectory turns (tokens, cache, latency per model call)."""

    turns: tuple[Turn, ...]


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


class RunImported(RunStarted):
    """A run a source recorded, stated whole: what its `RunStarted`, its trajectory
    (when its turns fit in one batch; else they follow in `TrajectoryRecorded`
    batches) and its `RunFinished` would state, in one event. Its cells follow in
    `CellsRecorded` batches. One event rather than three: an orchestrator's history
    is tens of thousands of runs, and every event costs its write, its chain link and
    its fold. (Its end repeats `RunFinished`'s fields rather than sharing a base: the
    stored JSON must begin with `Event`'s own fields.)"""

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
    turns: tuple[Turn, ...] = ()
    # The digest of the source row the run was read from, where its format gives one
    # (`formats.Units.digest`: an orchestrator database row with its trajectory rows): a
    # later import of the same source skips a row whose digest this states, while the
    # run's stream holds only this event. Written only when set, so the events of
    # other sources are stored as they always were.
    source_row_sha256: str | None = written_when_set()


class RunFactsAdded(Event):
    """A later source stated facts about the run that no earlier one did.

    Never a changed fact (that is a conflict, or an amendment): only additions,
    header-shaped (`domain.facts`): scalars (started_at, ended_at, score...) and
    objects (config, metrics, tokens, provenance) holding only the added keys. The
    signatures are the run's, recomputed when the added facts change them.

    A fact added where the run's first source left a placeholder (`domain.facts`) takes
    its place: a stated `model` where it said `unknown`. When one of the run's benchmark,
    agent, provider or model is so filled, `identity` holds all four as they now are
    (the read models set them, and re-select its latest rows), with the signatures.
    """

    facts: dict[str, Any]
    signature: str | None = None
    comparison_signature: str | None = None
    identity: dict[str, str] | None = None
    source_format: str | None = None
    source_path: str | None = None
    source_sha256: str | None = None


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
    """Deliberately small: status, counts and cell and turn fingerprints, never values."""

    run_key: str
    benchmark: str
    status: RunStatus
    invalidated: bool = False
    score: float | None = None
    unit: str | None = None
    corrections: int = 0
    lease_expires_at: datetime | None = None
    last_heard_at: datetime | None = None
    source: str = "imported"
    superseded_by: UUID | None = None
    source_sha256: str | None = None
    content_sha256: str | None = None
    cell_digests: dict[str, str] = Field(default_factory=dict)
    # Of an executed run still running: its turns by place (`Turn.key`).
    turn_digests: dict[str, str] = Field(default_factory=dict)

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
def _started(event: RunStarted, run: None) -> Run:
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
def _(event: RunImported, run: None) -> Run:
    # Started, and ended as it states.
    return _started(event, run).model_copy(
        update={"status": event.status, "score": event.score, "unit": event.unit}
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
def _(event: TrajectoryRecorded, run: Run) -> Run:
    if run.source != "executed" or run.finished:
        return run.advanced(event)  # type: ignore[no-any-return]
    digests = dict(run.turn_digests)
    digests.update((t.key, t.digest()) for t in event.turns)
    return run.advanced(event, turn_digests=digests)  # type: ignore[no-any-return]


@mutate.register
def _(event: RunFactsAdded, run: Run) -> Run:
    changes: dict[str, Any] = {}
    if "score" in event.facts and run.score is None:
        changes["score"] = event.facts["score"]
    if "unit" in event.facts and run.unit is None:
        changes["unit"] = event.facts["unit"]
    if event.identity is not None:
        changes["benchmark"] = event.identity["benchmark"]
    return run.advanced(event, **changes)  # type: ignore[no-any-return]


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
    # Cells and turns are closed once a run finishes: their fingerprints are not needed.
    return run.advanced(  # type: ignore[no-any-return]
        event,
        status=event.status,
        score=event.score,
        unit=event.unit,
        cell_digests={},
        turn_digests={},
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
