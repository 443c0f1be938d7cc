"""The Signature aggregate: every attempt at one piece of work, and who may run it next.

Its stream holds two kinds of fact:
- `AttemptClaimed`: this ledger claimed the next attempt to execute the work.
  Claiming appends at the stream's next version; the event store refuses a second
  append at the same version, so two processes that decided to run the same work at
  the same moment cannot both claim it.
- `AttemptsImported`: another system's records (the orchestrator's) counted these
  attempts at the work, once per signature per imported file. A source row that ran
  names its run (an ordinary imported Run); a skip row ran nothing but used up its
  attempt number, as the orchestrator counts them.

The next attempt claimed is one more than every attempt number known, skips
included, so numbering continues the source's. Whether to run again is decided from
the runs only: a skip row is not an execution.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import singledispatch
from typing import Any, Literal
from uuid import UUID

from pydantic import Field, model_validator

from benchledger.domain.base import Aggregate, Event, Immutable
from benchledger.domain.records import RunStatus
from benchledger.domain.run import Run

Mode = Literal["first", "default", "rerun_failed", "force"]
Outcome = Literal["run", "skip"]


class AttemptClaimed(Event):
    signature: str
    benchmark: str
    agent: str
    attempt: int
    run_id: UUID
    mode: Mode
    run_group_id: UUID | None = None


class ImportedAttempt(Immutable):
    """One attempt a source counted: a run it executed, or a skip row."""

    attempt: int = Field(strict=True, ge=1)
    run_id: UUID | None
    outcome: Outcome
    source_key: str = Field(min_length=1)  # the source's own key of the row

    @model_validator(mode="after")
    def _run_names_its_run(self) -> ImportedAttempt:
        if self.outcome == "run" and self.run_id is None:
            raise ValueError("an attempt that ran names its run_id")
        if self.outcome == "skip" and self.run_id is not None:
            raise ValueError("a skip row ran nothing: its run_id is None")
        return self


class AttemptsImported(Event):
    signature: str
    benchmark: str
    agent: str
    attempts: tuple[ImportedAttempt, ...]


class KnownAttempt(Immutable):
    """An attempt the aggregate knows of: claimed here (no source_key) or imported."""

    attempt: int
    run_id: UUID | None
    outcome: Outcome = "run"
    source_key: str | None = None

    @property
    def claimed(self) -> bool:
        return self.source_key is None


class Signature(Aggregate):
    signature: str
    attempts: tuple[KnownAttempt, ...] = ()  # in stream order

    @property
    def next_attempt(self) -> int:
        return next_attempt(self.attempts)

    @property
    def source_keys(self) -> frozenset[str]:
        return frozenset(a.source_key for a in self.attempts if a.source_key is not None)


def next_attempt(attempts: Iterable[KnownAttempt]) -> int:
    """One more than every attempt number known (skip rows included), from 1."""
    return max((a.attempt for a in attempts), default=0) + 1


def executions(attempts: Iterable[KnownAttempt]) -> list[UUID]:
    """The run ids of the attempts that ran, by attempt number (ties: in order given)."""
    ran = [a for a in attempts if a.run_id is not None]
    return [a.run_id for a in sorted(ran, key=lambda a: a.attempt) if a.run_id is not None]


@singledispatch
def mutate(event: Event, sig: Signature | None) -> Signature | None:
    raise TypeError(f"Signature cannot apply {type(event).__name__}")


@mutate.register
def _(event: AttemptClaimed, sig: Signature | None) -> Signature:
    return _with(event, sig, (KnownAttempt(attempt=event.attempt, run_id=event.run_id),))


@mutate.register
def _(event: AttemptsImported, sig: Signature | None) -> Signature:
    known = tuple(
        KnownAttempt(attempt=a.attempt, run_id=a.run_id, outcome=a.outcome, source_key=a.source_key)
        for a in event.attempts
    )
    return _with(event, sig, known)


def _with(
    event: AttemptClaimed | AttemptsImported,
    sig: Signature | None,
    known: tuple[KnownAttempt, ...],
) -> Signature:
    if sig is None:
        return Signature(
            id=event.originator_id,
            version=event.originator_version,
            created_on=event.timestamp,
            modified_on=event.timestamp,
            signature=event.signature,
            attempts=known,
        )
    return sig.advanced(event, attempts=(*sig.attempts, *known))  # type: ignore[no-any-return]


def project(sig: Signature | None, events: Iterable[Event]) -> Signature | None:
    """The projector of a signature stream (`repository.get(..., projector_func=project)`)."""
    for event in events:
        sig = mutate(event, sig)
    return sig


@dataclass(frozen=True)
class Decision:
    execute: bool
    reason: str | None = None
    defer_to: UUID | None = None


def decide(attempts: Sequence[Run], mode: Mode, now: datetime) -> Decision:
    """Whether to execute a signature again, given the runs of its executed attempts
    (imported or claimed here) in attempt order; skip rows are not among them.

    default: skip if any valid attempt succeeded or one is live (unexpired lease);
    rerun_failed: skip only if the latest executed attempt succeeded (or one is live);
    force: always execute.
    """
    if mode == "force":
        return Decision(True)
    live = [run for run in attempts if run.is_live(now)]
    if live:
        return Decision(False, "attempt_in_progress", live[-1].id)
    if mode == "rerun_failed":
        latest = attempts[-1] if attempts else None
        if latest is not None and _succeeded(latest):
            return Decision(False, "latest_attempt_succeeded", latest.id)
        return Decision(True)
    succeeded = [run for run in attempts if _succeeded(run)]
    if succeeded:
        return Decision(False, "already_succeeded", succeeded[-1].id)
    return Decision(True)


def _succeeded(run: Run) -> bool:
    return run.status is RunStatus.SUCCEEDED and not run.invalidated


def claim(
    signature_id: UUID,
    current: Signature | None,
    *,
    signature: str,
    benchmark: str,
    agent: str,
    run_id: UUID,
    mode: Mode,
    run_group_id: UUID | None,
    attempt: int | None = None,
) -> AttemptClaimed:
    """The claim of the next attempt, at the stream's next version.

    `attempt`: the number to claim when more is known than this stream holds (a
    legacy stream of the same work); by default the stream's next attempt."""
    number = attempt if attempt is not None else next_attempt(current.attempts if current else ())
    return AttemptClaimed(
        originator_id=signature_id,
        originator_version=(current.version if current else 0) + 1,
        signature=signature,
        benchmark=benchmark,
        agent=agent,
        attempt=number,
        run_id=run_id,
        mode="first" if number == 1 and mode == "default" else mode,
        run_group_id=run_group_id,
    )


def imported_attempts(
    signature_id: UUID,
    current: Signature | None,
    *,
    signature: str,
    benchmark: str,
    agent: str,
    attempts: Iterable[ImportedAttempt | Mapping[str, Any]],
) -> AttemptsImported | None:
    """The attempts an imported file counted at this work that the stream does not know
    yet (by `source_key`; the first of repeated keys wins), at the stream's next version;
    None when there is nothing new. Items are `ImportedAttempt`s or mappings of their
    fields (attempt, run_id, outcome "run" or "skip", source_key)."""
    if current is not None and current.signature != signature:
        raise ValueError(f"signature stream {signature_id} is not that of {signature}")
    known = set(current.source_keys) if current else set()
    fresh: list[ImportedAttempt] = []
    for item in attempts:
        entry = item if isinstance(item, ImportedAttempt) else ImportedAttempt.model_validate(item)
        if entry.source_key not in known:
            known.add(entry.source_key)
            fresh.append(entry)
    if not fresh:
        return None
    return AttemptsImported(
        originator_id=signature_id,
        originator_version=(current.version if current else 0) + 1,
        signature=signature,
        benchmark=benchmark,
        agent=agent,
        attempts=tuple(fresh),
    )
