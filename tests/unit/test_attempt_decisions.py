from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

from benchledger.domain.records import RunStatus
from benchledger.domain.run import Run
from benchledger.domain.signature import AttemptClaimed, claim, decide, mutate
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
