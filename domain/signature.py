"""The Signature aggregate: the attempts at one piece of work, and who may run it next.

Claiming appends `AttemptClaimed` at the stream's next version. The event store
refuses a second append at the same version, so two processes that decided to
run the same work at the same moment cannot both claim it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import singledispatch
from typing import Literal
from uuid import UUID

from benchledger.domain.base import Aggregate, Event
from benchledger.domain.records import RunStatus
from benchledger.domain.run import Run

Mode = Literal["first", "default", "rerun_failed", "force"]


class AttemptClaimed(Event):
    signature: str
    benchmark: str
    agent: str
    attempt: int
    run_id: UUID
    mode: Mode
    run_group_id: UUID | None = None


class Signature(Aggregate):
    signature: str
    attempts: tuple[UUID, ...] = ()  # run ids, attempt n at index n - 1


@singledispatch
def mutate(event: Event, sig: Signature | None) -> Signature | None:
    raise TypeError(f"Signature cannot apply {type(event).__name__}")


@mutate.register
def _(event: AttemptClaimed, sig: Signature | None) -> Signature:
    if sig is None:
        return Signature(
            id=event.originator_id,
            version=event.originator_version,
            created_on=event.timestamp,
            modified_on=event.timestamp,
            signature=event.signature,
            attempts=(event.run_id,),
        )
    return sig.advanced(event, attempts=(*sig.attempts, event.run_id))  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Decision:
    execute: bool
    reason: str | None = None
    defer_to: UUID | None = None


def decide(attempts: Sequence[Run], mode: Mode, now: datetime) -> Decision:
    """Whether to execute a signature again, given its attempts in order.

    default: skip if any valid attempt succeeded or one is live (unexpired lease);
    rerun_failed: skip only if the latest attempt succeeded (or one is live);
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
) -> AttemptClaimed:
    attempts = len(current.attempts) if current else 0
    return AttemptClaimed(
        originator_id=signature_id,
        originator_version=(current.version if current else 0) + 1,
        signature=signature,
        benchmark=benchmark,
        agent=agent,
        attempt=attempts + 1,
        run_id=run_id,
        mode="first" if attempts == 0 and mode == "default" else mode,
        run_group_id=run_group_id,
    )
