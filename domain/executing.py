"""Intents of executing runs: claim an attempt, keep its lease, finish or recover it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import chain
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from benchledger.domain import run as run_model
from benchledger.domain import run_group as group_model
from benchledger.domain import run_rules, turn_rules
from benchledger.domain import signature as signature_model
from benchledger.domain.base import Event
from benchledger.domain.errors import ConcurrencyError, NotFoundError
from benchledger.domain.executing_turns import ExecutingTurns
from benchledger.domain.ledger_base import (
    CELL_BATCH,
    GroupHandle,
    Skip,
    StartedAttempt,
    _project,
    _utc_now,
)
from benchledger.domain.masked_records import masked_cells, masked_values
from benchledger.domain.records import Cell, RunStatus, Turn
from benchledger.domain.run import Run
from benchledger.domain.secrets import mask_config, mask_value
from benchledger.domain.signature import KnownAttempt, Mode, Signature
from benchledger.domain.signatures import (
    comparison_signature,
    legacy_signature,
    natural_id,
    signature,
    signature_id_for,
)


@dataclass(frozen=True)
class Attempts:
    """What is known of one piece of work's attempts: its signature stream's, and those
    of its legacy stream (the signature benchledger recorded before it adopted the
    orchestrator's), so a ledger upgraded in place continues where it was."""

    signature: str
    current: Signature | None  # the stream the next claim appends to
    known: tuple[KnownAttempt, ...] = ()  # legacy stream first, then this stream's
    runs: tuple[Run, ...] = ()  # the runs of the attempts that ran, in attempt order

    @property
    def next_attempt(self) -> int:
        return signature_model.next_attempt(self.known)


@dataclass
class RunningRun:
    """A run this process executes, as it last saw it: each batch of cells it records is
    appended without folding the run's earlier cells again."""

    id: UUID
    run_key: str
    _run: Run = field(repr=False)


class Executing(ExecutingTurns):
    # -- executing runs ---------------------------------------------------------

    def signature_of(self, signature: str) -> Signature | None:
        """The Signature aggregate of this signature, None if nothing was recorded."""
        try:
            sig: Signature = self.repository.get(
                signature_id_for(signature), projector_func=signature_model.project
            )
        except AggregateNotFoundError:
            return None
        return sig

    def attempts(self, signature: str, *, legacy: str | None = None) -> Attempts:
        """Every attempt known at this signature (and at `legacy`, the same work's legacy
        signature) and the runs of those that ran, in attempt order. An imported attempt
        whose run is not in the ledger is counted but has no run to decide on."""
        current = self.signature_of(signature)
        old = self.signature_of(legacy) if legacy and legacy != signature else None
        known = (*(old.attempts if old else ()), *(current.attempts if current else ()))
        runs = []
        for run_id in signature_model.executions(known):
            try:
                runs.append(self.get_run(run_id))
            except NotFoundError:
                continue
        return Attempts(signature, current, known, tuple(runs))

    def work_attempts(
        self,
        *,
        benchmark: str,
        agent: str,
        provider: str,
        model: str,
        config: dict[str, Any],
        directory: str | None = None,
        legacy_config: dict[str, Any] | None = None,
    ) -> Attempts:
        """`attempts` of a piece of work: its signature, and its legacy signature over
        `legacy_config` (the config as benchledger hashed it before; default `config`)."""
        return self.attempts(
            signature(benchmark, agent, provider, model, config, directory=directory),
            legacy=legacy_signature(
                benchmark,
                agent,
                provider,
                model,
                config if legacy_config is None else legacy_config,
            ),
        )

    def import_attempts(
        self,
        *,
        signature: str,
        benchmark: str,
        agent: str,
        attempts: Sequence[signature_model.ImportedAttempt | dict[str, Any]],
    ) -> signature_model.AttemptsImported | None:
        """Record the attempts a source counted at a signature (those not known yet, by
        source key) on its own; an importer appends `imported_attempts` with its runs."""
        for _ in range(5):
            event = signature_model.imported_attempts(
                signature_id_for(signature),
                self.signature_of(signature),
                signature=signature,
                benchmark=benchmark,
                agent=agent,
                attempts=attempts,
            )
            if event is None:
                return None
            try:
                self._save([event])
            except ConcurrencyError:
                continue
            return event
        raise ConcurrencyError(f"could not record the imported attempts of {signature}")

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
        directory: str | None = None,
        legacy_config: dict[str, Any] | None = None,
        account: str | None = None,
        code_versions: dict[str, str] | None = None,
        provenance: dict[str, Any] | None = None,
        now: Callable[[], datetime] = _utc_now,
    ) -> StartedAttempt | Skip:
        """Decide, then claim the next attempt and start its run in one atomic append.

        `config` is the work's effective config; `directory` its benchmark directory
        (default the benchmark id); `legacy_config` the config benchledger hashed before
        it adopted the orchestrator's signatures (see `work_attempts`); `account` the id of
        the pool account the run uses, if any (not part of the work); `code_versions` the
        commits and versions of the code that runs it, and `provenance` what the run is
        tagged with, e.g. a comparison's id and side (neither part of the work either). If
        another process claims the same signature first, the store refuses our append and
        we decide again with its attempt in view.
        """
        sig_text = signature(benchmark, agent, provider, model, config, directory=directory)
        comparison = comparison_signature(
            benchmark, provider, model, config, directory=directory, agent=agent
        )
        for _ in range(5):
            known = self.work_attempts(
                benchmark=benchmark,
                agent=agent,
                provider=provider,
                model=model,
                config=config,
                directory=directory,
                legacy_config=legacy_config,
            )
            at = now()
            decision = signature_model.decide(known.runs, mode, at)
            if not decision.execute:
                return Skip(decision.reason or "skipped", decision.defer_to)
            attempt = known.next_attempt
            run_id = natural_id("run", "executed", sig_text, str(attempt))
            started = run_rules.begin(
                run_id,
                run_key=run_key,
                benchmark=benchmark,
                agent=agent,
                provider=provider,
                model=model,
                config=config,
                attempt=attempt,
                run_group_id=group.id if group else None,
                command=mask_value(command),
                cwd=cwd,
                host=host,
                started_at=at,
                lease_expires_at=at + timedelta(seconds=lease_seconds),
                run_dir=run_dir,
                code_versions=mask_value(code_versions),
                account=account,
                provenance=mask_value(provenance),
            )
            # The run states the signatures of its stream, benchmark directory included.
            started = started.model_copy(
                update={"signature": sig_text, "comparison_signature": comparison}
            )
            events: list[Event] = [
                signature_model.claim(
                    signature_id_for(sig_text),
                    known.current,
                    signature=sig_text,
                    benchmark=benchmark,
                    agent=agent,
                    run_id=run_id,
                    mode=mode,
                    run_group_id=group.id if group else None,
                    attempt=attempt,
                ),
                started,
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

    def running_run(self, run_id: UUID) -> RunningRun:
        run = self.get_run(run_id)
        return RunningRun(run.id, run.run_key, run)

    def record_running_cells(self, running: RunningRun, cells: Sequence[Cell]) -> list[Cell]:
        """Append the cells of a run still running that are not recorded yet, in batches.
        The cells that state a recorded key differently are not recorded, but returned
        (to be named when it finishes, see `finish_run`)."""
        run = running._run
        cells = masked_cells(cells)  # secrets masked before anything is stored
        for _ in range(5):
            fresh, disagreeing = run_rules.split_cells(run, cells)
            events = self._cell_batches(run, fresh)
            try:
                self._save(events)
            except ConcurrencyError:
                run = self.get_run(run.id)  # a lease renewal or a recovery came between
                continue
            for event in events:
                run = run_model.mutate(event, run)  # type: ignore[assignment]
            running._run = run
            return disagreeing
        raise ConcurrencyError(f"could not record the cells of run {run.id}")

    def finish_run(
        self,
        run_id: UUID,
        cells: Sequence[Cell],
        *,
        turns: Sequence[Turn] = (),
        added_facts: dict[str, Any] | None = None,
        **outcome: Any,
    ) -> run_model.RunFinished:
        """Record the run's cells and trajectory turns not recorded yet (some may have been
        while it ran), the facts its result adds (its config flags,
        `facts.result_additions`) and its outcome, in one atomic append. Cells and turns
        that state a recorded one differently are not recorded: the run then finishes as
        an error naming each one's key (place) and fields."""
        run = self.get_run(run_id)
        # Secrets masked before anything is stored (`domain.masked_records`).
        cells = masked_cells(cells)
        added_facts = masked_values(added_facts) if added_facts else added_facts
        outcome = masked_values(outcome)
        fresh, disagreeing = run_rules.split_cells(run, cells)
        fresh_turns, other_turns = turn_rules.split_turns(run, turns)
        errors = []
        if disagreeing:
            recorded = self.recorded_cells(run_id, {c.key for c in disagreeing}, fresh)
            errors.append(run_rules.disagreement([(recorded.get(c.key), c) for c in disagreeing]))
        if other_turns:
            held = self.recorded_turns(run_id, {t.key for t in other_turns}, fresh_turns)
            errors.append(turn_rules.disagreement([(held.get(t.key), t) for t in other_turns]))
        if errors:
            outcome = {**outcome, "status": RunStatus.ERROR, "error": "; ".join(errors)}
        events = self._cell_batches(run, fresh)
        events += self._turn_batches(run, fresh_turns, after=len(events))
        version = run.version + len(events)
        if added_facts:
            version += 1
            events.append(
                run_model.RunFactsAdded(
                    originator_id=run_id, originator_version=version, facts=added_facts
                )
            )
        finished = run_rules.finish(run, version=version + 1, **outcome)
        self._save([*events, finished])
        return finished

    def recorded_cells(
        self, run_id: UUID, keys: set[str], pending: Sequence[Cell] = ()
    ) -> dict[str, Cell]:
        """The first statement of each of these keys among the run's recorded cells (read
        from its events one batch at a time), then among `pending`."""
        recorded = (
            event.cells
            for event in self.events.get(run_id)
            if isinstance(event, run_model.CellsRecorded)
        )
        return run_rules.first_statements(chain(recorded, [pending]), keys)

    def _cell_batches(self, run: Run, cells: Sequence[Cell]) -> list[Event]:
        return [
            run_model.CellsRecorded(
                originator_id=run.id,
                originator_version=run.version + 1 + n,
                cells=tuple(cells[i : i + CELL_BATCH]),
            )
            for n, i in enumerate(range(0, len(cells), CELL_BATCH))
        ]

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
        supported_agents: list[str] | None = None,
        **work: Any,
    ) -> None:
        """Record that this invocation did not run some work (benchmark, agent, provider,
        model, config), and why: never a run, never an attempt. The skip states the
        work's config (secrets masked) and comparison signature, as its run would, and
        for an agent the benchmark does not support, the agents it does."""
        self._not_run(
            group,
            group_model.BenchmarkSkipped,
            work,
            reason=reason,
            defer_to=defer_to,
            detail=detail,
            supported_agents=supported_agents,
            config=mask_config(work["config"]),
            comparison_signature=comparison_signature(
                work["benchmark"],
                work["provider"],
                work["model"],
                work["config"],
                directory=work.get("directory"),
                agent=work["agent"],
            ),
        )

    def refuse_launch(
        self,
        group: GroupHandle,
        *,
        reason: str,
        missing_env: list[str],
        detail: str | None = None,
        missing_requirements: list[str] | None = None,
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
            missing_requirements=list(missing_requirements or []),
        )

    def _not_run(
        self, group: GroupHandle, kind: type[Event], work: dict[str, Any], **fields: Any
    ) -> None:
        config = work.pop("config")
        directory = work.pop("directory", None)
        sig_text = signature(
            work["benchmark"],
            work["agent"],
            work["provider"],
            work["model"],
            config,
            directory=directory,
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
