"""Intents of executing runs: claim an attempt, keep its lease, finish or recover it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from benchledger.domain import run as run_model
from benchledger.domain import run_group as group_model
from benchledger.domain import run_rules
from benchledger.domain import signature as signature_model
from benchledger.domain.base import Event
from benchledger.domain.errors import ConcurrencyError
from benchledger.domain.ledger_base import (
    CELL_BATCH,
    GroupHandle,
    LedgerBase,
    Skip,
    StartedAttempt,
    _project,
    _utc_now,
)
from benchledger.domain.records import Cell
from benchledger.domain.run import Run
from benchledger.domain.signature import Mode, Signature
from benchledger.domain.signatures import (
    natural_id,
    signature,
    signature_id_for,
)


class Executing(LedgerBase):
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
                run_rules.begin(
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
        self._save([run_rules.renew_lease(self.get_run(run_id), expires)])
        return expires

    def finish_run(self, run_id: UUID, cells: Sequence[Cell], **outcome: Any) -> None:
        """Record the run's cells in batches and its outcome, in one atomic append."""
        run = self.get_run(run_id)
        fresh = run_rules.new_cells(run, cells)
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
        events.append(run_rules.finish(run, version=version + 1, **outcome))
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
                if run_rules.stale_reason(run, now, stale_seconds, age_cutoff) is None:
                    break
                event = run_rules.recover(run, now, stale_seconds, actor, age_cutoff)
                try:
                    self._save([event])
                except ConcurrencyError:
                    continue  # it renewed or finished meanwhile: look again
                recovered.append((run_id, event.policy))
                break
        return recovered

    def close_stale_groups(
        self,
        candidates: Iterable[tuple[UUID, datetime | None]],
        age_cutoff: float,
        actor: str,
    ) -> list[UUID]:
        """Close as interrupted every open group (with when its runs were last heard of)
        that nothing was heard of for `age_cutoff` seconds; the caller leaves out groups
        with runs still live."""
        closed = []
        for group_id, last_activity in candidates:
            for _ in range(3):
                group = self._get(group_id, _project(group_model.mutate), "run group")
                now = _utc_now()
                if not group_model.is_stale(group, last_activity, now, age_cutoff):
                    break
                try:
                    self._save([group_model.interrupt(group, now, age_cutoff, actor)])
                except ConcurrencyError:
                    continue  # its process wrote to it meanwhile: look again
                closed.append(group_id)
                break
        return closed

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
