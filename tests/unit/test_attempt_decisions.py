from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest
from pydantic import ValidationError

from benchledger.domain.records import RunStatus
from benchledger.domain.run import Run
from benchledger.domain.signature import (
    AttemptClaimed,
    AttemptsImported,
    Signature,
    claim,
    decide,
    executions,
    imported_attempts,
    mutate,
)
from tests.helpers import leased_run

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def attempt(status: RunStatus, *, invalidated: bool = False, lease_left: float = -60) -> Run:
    run = leased_run(NOW - timedelta(minutes=10), NOW + timedelta(seconds=lease_left))
    if status is not RunStatus.RUNNING:
        run = run.model_copy(update={"status": status})
    return run.model_copy(update={"invalidated": invalidated})


class TestDefaultMode:
    def test_runs_work_never_attempted(self) -> None:
        assert decide([], "default", NOW).execute

    def test_skips_work_that_already_succeeded_deferring_to_that_run(self) -> None:
        ok = attempt(RunStatus.SUCCEEDED)
        decision = decide([ok, attempt(RunStatus.FAILED)], "default", NOW)
        assert (decision.execute, decision.reason, decision.defer_to) == (
            False,
            "already_succeeded",
            ok.id,
        )

    def test_an_invalidated_success_does_not_count(self) -> None:
        assert decide([attempt(RunStatus.SUCCEEDED, invalidated=True)], "default", NOW).execute

    def test_skips_work_another_process_is_running_under_a_live_lease(self) -> None:
        live = attempt(RunStatus.RUNNING, lease_left=120)
        decision = decide([live], "default", NOW)
        assert (decision.execute, decision.reason) == (False, "attempt_in_progress")

    def test_runs_again_when_the_running_attempt_lost_its_lease(self) -> None:
        assert decide([attempt(RunStatus.RUNNING, lease_left=-1)], "default", NOW).execute

    def test_runs_again_after_a_recovered_attempt(self) -> None:
        assert decide([attempt(RunStatus.RECOVERED)], "default", NOW).execute


class TestRerunFailed:
    def test_skips_only_if_the_latest_attempt_succeeded(self) -> None:
        latest_ok = [attempt(RunStatus.FAILED), attempt(RunStatus.SUCCEEDED)]
        assert not decide(latest_ok, "rerun_failed", NOW).execute
        latest_failed = [attempt(RunStatus.SUCCEEDED), attempt(RunStatus.FAILED)]
        assert decide(latest_failed, "rerun_failed", NOW).execute

    def test_reruns_an_invalidated_latest_success(self) -> None:
        runs = [attempt(RunStatus.SUCCEEDED, invalidated=True)]
        assert decide(runs, "rerun_failed", NOW).execute


class TestForce:
    def test_always_runs_even_over_a_live_attempt(self) -> None:
        runs = [attempt(RunStatus.SUCCEEDED), attempt(RunStatus.RUNNING, lease_left=60)]
        assert decide(runs, "force", NOW).execute


class TestClaims:
    def test_attempts_are_numbered_densely_at_the_next_stream_version(self) -> None:
        sig_id = uuid4()
        first = claim(
            sig_id,
            None,
            signature="s",
            benchmark="b",
            agent="a",
            run_id=uuid4(),
            mode="default",
            run_group_id=None,
        )
        state = mutate(first, None)
        second = claim(
            sig_id,
            state,
            signature="s",
            benchmark="b",
            agent="a",
            run_id=uuid4(),
            mode="force",
            run_group_id=None,
        )
        assert (first.attempt, first.originator_version, first.mode) == (1, 1, "first")
        assert (second.attempt, second.originator_version, second.mode) == (2, 2, "force")
        assert isinstance(second, AttemptClaimed)


SIG_ID = uuid4()


def imported(current: Signature | None, *items: dict[str, Any]) -> AttemptsImported | None:
    return imported_attempts(
        SIG_ID, current, signature="s", benchmark="b", agent="a", attempts=list(items)
    )


def state_of(current: Signature | None, *items: dict[str, Any]) -> Signature:
    event = imported(current, *items)
    assert event is not None
    state = mutate(event, current)
    assert state is not None
    return state


def row(attempt: int, key: str, run_id: UUID | None = None) -> dict[str, Any]:
    outcome = "skip" if run_id is None else "run"
    return {"attempt": attempt, "run_id": run_id, "outcome": outcome, "source_key": key}


class TestImportedAttempts:
    def test_the_next_attempt_counts_every_imported_number_skip_rows_included(self) -> None:
        event = imported(None, row(1, "r1", uuid4()), row(2, "s2"), row(3, "s3"))
        assert event is not None and event.originator_version == 1
        state = mutate(event, None)
        assert state is not None and state.next_attempt == 4
        then = claim(
            SIG_ID,
            state,
            signature="s",
            benchmark="b",
            agent="a",
            run_id=uuid4(),
            mode="default",
            run_group_id=None,
        )
        assert (then.attempt, then.originator_version, then.mode) == (4, 2, "default")

    def test_known_source_keys_are_not_repeated_and_nothing_new_is_none(self) -> None:
        first_run = uuid4()
        state = state_of(None, row(1, "r1", first_run), row(2, "s2"))
        assert imported(state, row(1, "r1", first_run), row(2, "s2")) is None
        again = imported(state, row(2, "s2"), row(3, "r3", uuid4()), row(3, "r3", uuid4()))
        assert again is not None and again.originator_version == 2
        assert [a.source_key for a in again.attempts] == ["r3"]
        assert imported(None) is None

    def test_only_runs_are_executions_in_attempt_order(self) -> None:
        a, b, c = uuid4(), uuid4(), uuid4()
        state = state_of(None, row(3, "r3", c), row(1, "r1", a), row(2, "s2"))
        claimed = claim(
            SIG_ID,
            state,
            signature="s",
            benchmark="b",
            agent="a",
            run_id=b,
            mode="force",
            run_group_id=None,
        )
        state = mutate(claimed, state)
        assert state is not None
        assert executions(state.attempts) == [a, c, b]
        assert [k.claimed for k in state.attempts] == [False, False, False, True]

    def test_an_item_says_consistently_whether_it_ran(self) -> None:
        for bad in (
            {"attempt": 1, "run_id": None, "outcome": "run", "source_key": "k"},
            {"attempt": 1, "run_id": uuid4(), "outcome": "skip", "source_key": "k"},
            {"attempt": 0, "run_id": None, "outcome": "skip", "source_key": "k"},
            {"attempt": 1, "run_id": None, "outcome": "skipped", "source_key": "k"},
            {"attempt": 1, "run_id": None, "outcome": "skip", "source_key": ""},
        ):
            with pytest.raises(ValidationError):
                imported(None, bad)

    def test_another_signatures_stream_is_refused(self) -> None:
        state = state_of(None, row(1, "s1"))
        with pytest.raises(ValueError, match="is not that of"):
            imported_attempts(
                SIG_ID, state, signature="t", benchmark="b", agent="a", attempts=[row(2, "s2")]
            )


class TestDecisionsOverImportedAttempts:
    """`decide` sees the runs of executed attempts, imported or not, in attempt order."""

    def test_an_imported_success_is_already_succeeded(self) -> None:
        ok = attempt(RunStatus.SUCCEEDED)
        decision = decide([attempt(RunStatus.FAILED), ok], "default", NOW)
        assert (decision.execute, decision.reason, decision.defer_to) == (
            False,
            "already_succeeded",
            ok.id,
        )

    def test_rerun_failed_skips_when_the_latest_execution_succeeded_despite_later_skips(
        self,
    ) -> None:
        # The orchestrator re-executes here (its latest row is a skip, ORCHESTRATOR.md 10.4).
        ok = attempt(RunStatus.SUCCEEDED)
        state = state_of(None, row(1, "r1", ok.id), row(2, "s2"), row(3, "s3"))
        assert state is not None
        runs = {ok.id: ok}
        ordered = [runs[i] for i in executions(state.attempts)]
        decision = decide(ordered, "rerun_failed", NOW)
        assert (decision.execute, decision.reason) == (False, "latest_attempt_succeeded")
