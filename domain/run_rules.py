"""The rules of a run's life: what may be recorded next, and the event that records it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar
from uuid import UUID

from benchledger.domain import facts
from benchledger.domain.base import Event
from benchledger.domain.cells import keys_of
from benchledger.domain.errors import (
    BlankReasonError,
    CellConflictError,
    InvalidationStateError,
    RuleViolationError,
    RunAlreadyFinishedError,
    RunNotFinishedError,
)
from benchledger.domain.records import Cell, RunRecord, RunStatus, SourceFile, Turn
from benchledger.domain.run import (
    LeaseRenewed,
    Run,
    RunFactsAdded,
    RunFinished,
    RunImported,
    RunInvalidated,
    RunReinstated,
    RunStarted,
    RunSuperseded,
    ScoreCorrected,
    StaleRunRecovered,
)
from benchledger.domain.secrets import mask_config
from benchledger.domain.units import check_score


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


def split_cells(run: Run, cells: Sequence[Cell]) -> tuple[list[Cell], list[Cell]]:
    """The cells not recorded yet, and those that state a key already recorded (or given
    earlier in `cells`) with another payload: a disagreement, never an overwrite."""
    if run.finished:
        raise RunAlreadyFinishedError(f"run {run.id} has finished; its cells are closed")
    return split_statements(run.cell_digests, cells)


Statement = TypeVar("Statement", Cell, Turn)


def first_statements(
    batches: Iterable[Sequence[Statement]], keys: set[str]
) -> dict[str, Statement]:
    """The first statement of each of these keys among batches of cells or turns, in
    order (a run's recorded batches, then what is pending)."""
    found: dict[str, Statement] = {}
    for batch in batches:
        for item in batch:
            if item.key in keys:
                found.setdefault(item.key, item)
    return found


def split_statements(
    digests: Mapping[str, str], items: Sequence[Statement]
) -> tuple[list[Statement], list[Statement]]:
    """Of cells or turns (keyed, with a digest): those whose key `digests` (the recorded
    ones) lacks, each key once, and those that state a recorded key, or one given earlier
    in `items`, otherwise."""
    fresh: dict[str, Statement] = {}
    disagreeing: list[Statement] = []
    for item in items:
        seen = digests.get(item.key)
        if seen is None:
            earlier = fresh.setdefault(item.key, item)
            if earlier is not item and earlier != item:
                disagreeing.append(item)
        elif seen != item.digest():
            disagreeing.append(item)
    return list(fresh.values()), disagreeing


def differing_fields(recorded: Cell, stated: Cell) -> list[str]:
    """The fields in which two statements of one cell differ."""
    return [
        f
        for f in ("outcome", "score", "metrics", "cluster")
        if getattr(recorded, f) != getattr(stated, f)
    ]


def disagreement(pairs: Sequence[tuple[Cell | None, Cell]], *, shown: int = 3) -> str:
    """The error of a run whose result states recorded cells differently: each cell's key
    and the fields that differ, with both values (the first `shown` cells)."""
    parts: list[str] = []
    for recorded, stated in pairs[:shown]:
        fields = differing_fields(recorded, stated) if recorded else []
        parts.extend(
            f"cell '{stated.key}', field '{f}': recorded {getattr(recorded, f)!r}, "
            f"then stated {getattr(stated, f)!r}"
            for f in fields
        )
        if not fields:
            parts.append(f"cell '{stated.key}'")
    more = f"; and {len(pairs) - shown} more cells" if len(pairs) > shown else ""
    return (
        "the result states cells differently from how they were recorded while it ran "
        "(the recorded ones are kept): " + "; ".join(parts) + more
    )


def unique_cells(cells: Sequence[Cell], *, where: str) -> Sequence[Cell]:
    """Cells of a run being imported whole: repeats are dropped, conflicts refused."""
    if len(set(keys_of(cells))) == len(cells):  # most runs: no key repeats
        return cells
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
    return RunStarted(
        **_started(run_id, record, source, source_file, run_group_id, attempt, content_sha256)
    )


def imported(
    run_id: UUID,
    record: RunRecord,
    *,
    source_file: SourceFile,
    run_group_id: UUID | None,
    content_sha256: str,
    turns: tuple[Turn, ...] = (),
) -> RunImported | None:
    """An imported run stated whole (`RunImported`), with these of its turns; None for a
    run its source recovered (see `finish_from_record`), recorded start, recovery and
    facts as before."""
    if record.header.status is RunStatus.RECOVERED:
        return None
    fields = _started(run_id, record, "imported", source_file, run_group_id, None, content_sha256)
    return RunImported(
        **fields,
        **finished_fields(record),
        turns=turns,
        source_row_sha256=record.source_row_sha256,
    )


def _started(
    run_id: UUID,
    record: RunRecord,
    source: Literal["executed", "imported"],
    source_file: SourceFile | None,
    run_group_id: UUID | None,
    attempt: int | None,
    content_sha256: str | None,
) -> dict[str, Any]:
    header = record.header
    provenance = {**header.provenance, **record.supplement}
    if attempt is None and source == "imported":
        attempt = stated_attempt(provenance)
    return {
        "originator_id": run_id,
        "originator_version": 1,
        "run_key": header.natural_key(),
        "benchmark": header.benchmark,
        "agent": header.agent,
        "provider": header.provider,
        "model": header.model,
        "config": header.masked_config,
        "signature": header.signature,
        "comparison_signature": header.comparison_signature,
        "attempt": attempt,
        "run_group_id": run_group_id,
        "source": source,
        "source_format": source_file.format if source_file else None,
        "source_path": source_file.path if source_file else None,
        "source_sha256": source_file.sha256 if source_file else None,
        "content_sha256": content_sha256,
        "started_at": header.started_at,
        "provenance": provenance,
        "unstated": list(facts.unstated(record)),
    }


def finished_fields(record: RunRecord) -> dict[str, Any]:
    """How a run that its source did not recover ended (`RunFinished`'s fields), as an
    import records it."""
    header = record.header
    return {
        "status": header.status,
        "score": header.score,
        "unit": header.unit,
        "higher_is_better": header.higher_is_better,
        "metrics": header.metrics,
        "tokens": header.tokens,
        "duration_seconds": _duration(record),
        "error": header.error,
        "ended_at": header.ended_at,
    }


def _duration(record: RunRecord) -> float | None:
    header = record.header
    if header.duration_seconds is None and header.started_at and header.ended_at:
        return (header.ended_at - header.started_at).total_seconds()
    return header.duration_seconds


def stated_attempt(provenance: dict[str, Any]) -> int | None:
    """The attempt an imported run's source counted (its `attempt`), if it states one."""
    value = provenance.get("attempt")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    return None


# The code versions the read models show in their own columns: the name a run's
# `code_versions` records each under (executed runs), and the orchestrator's column of
# the same fact (an imported orchestrator row's `provenance.source_columns`).
VERSION_COLUMNS: dict[str, tuple[str, str | None]] = {
    "benchmark_version": ("benchmark_version", "benchmark_version"),
    "benchmarks_commit": ("benchmarks_commit", "benchmarks_commit"),
    "benchmarks_dirty": ("benchmarks_dirty", None),
    "agent_version": ("agent_version", "eliza_version"),
    "agent_commit": ("agent_commit", "eliza_commit"),
}


def stated_versions(
    code_versions: dict[str, str], provenance: dict[str, Any]
) -> dict[str, str | int | None]:
    """The run's code versions by column: what it recorded running, else what its
    orchestrator source stated (`benchmark_version`, `benchmarks_commit`, `eliza_version`,
    `eliza_commit`). The recorded facts are read, never rewritten."""
    columns = provenance.get("source_columns")
    stated = columns if isinstance(columns, dict) else {}
    out: dict[str, str | int | None] = {}
    for column, (recorded, orchestrator) in VERSION_COLUMNS.items():
        value: object = code_versions.get(recorded)
        if value is None and orchestrator is not None:
            value = stated.get(orchestrator)
        if column == "benchmarks_dirty":
            out[column] = None if value is None else int(value == "true")
        else:
            out[column] = value if isinstance(value, str) and value else None
    return out


def finish_from_record(run_id: UUID, version: int, record: RunRecord) -> list[Event]:
    """How an imported run ended; a source's interrupted run is recorded as recovered,
    with what its source states of it after the recovery (metrics, end, duration...)."""
    header = record.header
    duration = _duration(record)
    if header.status is RunStatus.RECOVERED:
        recovered = StaleRunRecovered(
            originator_id=run_id,
            originator_version=version,
            policy="recovered_by_source",
            stale_seconds=0,
            lease_expires_at=None,
            last_heard_at=header.ended_at or header.started_at or datetime.now(UTC),
            actor="import",
            detail=header.error,
        )
        stated = {
            "score": header.score,
            "unit": header.unit,
            "metrics": header.metrics,
            "tokens": header.tokens,
            "ended_at": header.ended_at,
            "duration_seconds": duration,
        }
        if "higher_is_better" in header.model_fields_set:
            stated["higher_is_better"] = header.higher_is_better
        after = facts.plain({k: v for k, v in stated.items() if v not in (None, {})})
        if not after:
            return [recovered]
        return [
            recovered,
            RunFactsAdded(originator_id=run_id, originator_version=version + 1, facts=after),
        ]
    return [
        RunFinished(originator_id=run_id, originator_version=version, **finished_fields(record))
    ]


def require_reason(reason: str) -> str:
    """A correction says why: a blank reason explains nothing."""
    if not reason.strip():
        raise BlankReasonError("the reason must not be blank")
    return reason


def invalidate(run: Run, reason: str, actor: str) -> RunInvalidated:
    require_reason(reason)
    if run.invalidated:
        raise InvalidationStateError(f"run {run.id} is already invalidated")
    return RunInvalidated(
        originator_id=run.id, originator_version=run.version + 1, reason=reason, actor=actor
    )


def reinstate(run: Run, reason: str, actor: str) -> RunReinstated:
    require_reason(reason)
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
    require_reason(reason)
    if not run.finished:
        raise RunNotFinishedError(f"run {run.id} has not finished; there is no score to correct")
    check_score(new_score, run.unit)
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
    account: str | None = None,
    provenance: dict[str, Any] | None = None,
) -> RunStarted:
    """The start of an executed run, under a lease its process keeps renewing.

    The signatures are computed from the real config; the event stores it with its
    secrets masked, so different secrets stay different work without being recorded.
    """
    from benchledger.domain.signatures import comparison_signature, signature

    return RunStarted(
        originator_id=run_id,
        originator_version=1,
        run_key=run_key,
        benchmark=benchmark,
        agent=agent,
        provider=provider,
        model=model,
        config=mask_config(config),
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
        account=account,
        provenance=provenance or {},
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
