from __future__ import annotations

from uuid import uuid4

import pytest

from benchledger.domain import run as run_model
from benchledger.domain import run_rules
from benchledger.domain.errors import (
    CellConflictError,
    InvalidationStateError,
    RuleViolationError,
    RunAlreadyFinishedError,
    RunNotFinishedError,
)
from benchledger.domain.records import Cell, RunHeader, RunRecord, RunStatus
from benchledger.domain.run import Run
from tests.helpers import leased_run


def started() -> Run:
    record = RunRecord(
        header=RunHeader(
            benchmark="bfcl", agent="eliza", model="m", status=RunStatus.SUCCEEDED, score=1.0
        )
    )
    event = run_rules.start(uuid4(), record, source="executed")
    run = run_model.mutate(event, None)
    assert run is not None
    return run


def apply(run: Run, *events: run_model.Event) -> Run:
    result = run_model.project_run(run, events)
    assert result is not None
    return result


def cell(key: str, outcome: str = "passed", score: float | None = 1.0) -> Cell:
    return Cell(key=key, outcome=outcome, score=score)  # type: ignore[arg-type]


def record_cells(run: Run, *cells: Cell) -> Run:
    fresh = run_rules.new_cells(run, cells)
    return apply(
        run,
        run_model.CellsRecorded(
            originator_id=run.id, originator_version=run.version + 1, cells=tuple(fresh)
        ),
    )


class TestCells:
    def test_a_repeated_cell_with_the_same_payload_is_a_no_op(self) -> None:
        run = record_cells(started(), cell("a"), cell("b"))
        assert run_rules.new_cells(run, [cell("a"), cell("c")]) == [cell("c")]

    def test_a_repeated_cell_with_a_different_payload_is_refused(self) -> None:
        run = record_cells(started(), cell("a"))
        with pytest.raises(CellConflictError, match="'a'"):
            run_rules.new_cells(run, [cell("a", "failed", 0.0)])

    def test_two_payloads_for_one_key_in_one_batch_are_refused(self) -> None:
        with pytest.raises(CellConflictError):
            run_rules.new_cells(started(), [cell("a"), cell("a", "failed", 0.0)])

    def test_split_cells_keeps_repeats_out_and_sets_disagreements_apart(self) -> None:
        run = record_cells(started(), cell("a"), cell("b"))
        changed, twice = cell("b", "failed", 0.0), cell("c", "error", None)
        fresh, disagreeing = run_rules.split_cells(run, [cell("a"), changed, cell("c"), twice])
        assert fresh == [cell("c")]
        assert disagreeing == [changed, twice]

    def test_a_disagreement_names_each_cell_and_field_with_both_values(self) -> None:
        recorded = Cell(key="a", outcome="passed", score=1.0, metrics={"n": 1})
        stated = Cell(key="a", outcome="passed", score=0.5, metrics={"n": 2})
        message = run_rules.disagreement([(recorded, stated)])
        assert "cell 'a', field 'score': recorded 1.0, then stated 0.5" in message
        assert "cell 'a', field 'metrics': recorded {'n': 1}, then stated {'n': 2}" in message
        assert "outcome" not in message
        many = run_rules.disagreement([(recorded, stated)] * 5, shown=2)
        assert many.endswith("; and 3 more cells")

    def test_an_imported_run_drops_exact_repeats_and_refuses_conflicts(self) -> None:
        assert run_rules.unique_cells([cell("a"), cell("a")], where="f") == [cell("a")]
        with pytest.raises(CellConflictError, match="f: cell 'a'"):
            run_rules.unique_cells([cell("a"), cell("a", "error", None)], where="f")

    def test_no_cells_are_accepted_after_the_run_finished(self) -> None:
        run = started()
        run = apply(run, run_rules.finish(run, status=RunStatus.SUCCEEDED, score=1.0))
        with pytest.raises(RunAlreadyFinishedError):
            run_rules.new_cells(run, [cell("z")])

    def test_finishing_clears_the_cell_fingerprints_from_state(self) -> None:
        run = record_cells(started(), cell("a"))
        run = apply(run, run_rules.finish(run, status=RunStatus.FAILED))
        assert run.cell_digests == {}


class TestFinishing:
    def test_a_run_finishes_once(self) -> None:
        run = started()
        run = apply(run, run_rules.finish(run, status=RunStatus.SUCCEEDED, score=0.5))
        with pytest.raises(RunAlreadyFinishedError):
            run_rules.finish(run, status=RunStatus.FAILED)

    def test_a_score_cannot_be_corrected_before_the_run_finished(self) -> None:
        with pytest.raises(RunNotFinishedError):
            run_rules.correct_score(started(), 0.3, "r", "me")

    def test_a_correction_keeps_the_old_score_on_the_event(self) -> None:
        run = started()
        run = apply(run, run_rules.finish(run, status=RunStatus.SUCCEEDED, score=0.5))
        event = run_rules.correct_score(run, 0.4, "grader bug", "me")
        assert (event.old_score, event.new_score) == (0.5, 0.4)
        assert apply(run, event).score == 0.4


class TestInvalidation:
    def test_invalidate_then_reinstate(self) -> None:
        run = started()
        run = apply(run, run_rules.invalidate(run, "leak", "me"))
        assert run.invalidated
        with pytest.raises(InvalidationStateError):
            run_rules.invalidate(run, "again", "me")
        run = apply(run, run_rules.reinstate(run, "fine", "me"))
        assert not run.invalidated
        with pytest.raises(InvalidationStateError):
            run_rules.reinstate(run, "again", "me")


class TestStaleness:
    def leased(self, lease_left: float) -> Run:
        from datetime import UTC, datetime, timedelta

        now = datetime(2026, 5, 1, tzinfo=UTC)
        run: Run = leased_run(now, now + timedelta(seconds=lease_left))
        return run

    def test_a_run_under_a_live_lease_is_never_stale(self) -> None:
        from datetime import UTC, datetime

        run = self.leased(60)
        assert run_rules.stale_reason(run, datetime(2026, 5, 1, tzinfo=UTC), 0) is None
        with pytest.raises(RuleViolationError):
            run_rules.recover(run, datetime(2026, 5, 1, tzinfo=UTC), 0, "me")

    def test_an_expired_lease_is_stale_after_the_grace(self) -> None:
        from datetime import UTC, datetime, timedelta

        run = self.leased(0)
        later = datetime(2026, 5, 1, tzinfo=UTC) + timedelta(seconds=30)
        assert run_rules.stale_reason(run, later, 0) == "lease_expired"
        assert run_rules.stale_reason(run, later, 60) is None

    def test_a_run_without_a_lease_is_judged_by_age(self) -> None:
        from datetime import timedelta

        record = RunRecord(
            header=RunHeader(benchmark="b", agent="a", model="m", status=RunStatus.SUCCEEDED)
        )
        run = run_model.mutate(run_rules.start(uuid4(), record, source="imported"), None)
        assert run is not None
        now = run.created_on + timedelta(hours=1)
        assert run_rules.stale_reason(run, now, 0, age_cutoff=6 * 3600) is None
        assert run_rules.stale_reason(run, now, 0, age_cutoff=600) == (
            "no_lease_and_older_than_cutoff"
        )

    def test_recovery_keeps_the_run_open_for_a_late_finish(self) -> None:
        from datetime import UTC, datetime, timedelta

        run = self.leased(0)
        later = datetime(2026, 5, 1, tzinfo=UTC) + timedelta(seconds=1)
        run = apply(run, run_rules.recover(run, later, 0, "sweeper"))
        assert run.status is RunStatus.RECOVERED and not run.finished
        run = apply(run, run_rules.finish(run, status=RunStatus.SUCCEEDED, score=1.0))
        assert run.status is RunStatus.SUCCEEDED
