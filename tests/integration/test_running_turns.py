"""A running run's trajectory turns recorded batch by batch, then checked against its
final result, in a real ledger file, and seen by the `turns` read model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchledger.adapters.store.bootstrap import Services, Settings, build
from benchledger.domain.ledger import Ledger, StartedAttempt
from benchledger.domain.records import RunStatus, Turn
from benchledger.domain.run import TrajectoryRecorded


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    with build(Settings(db_path=tmp_path / "ledger.db")) as built:
        yield built


def start(ledger: Ledger) -> StartedAttempt:
    started = ledger.start_attempt(
        None,
        benchmark="b",
        agent="a",
        provider="p",
        model="m",
        config={},
        mode="default",
        command=["bench"],
        cwd=".",
        host="h",
        lease_seconds=60,
        run_key="k",
        run_dir="d",
    )
    assert isinstance(started, StartedAttempt)
    return started


def turn(index: int, prompt: int = 10, trajectory: str = "trajectory") -> Turn:
    return Turn(trajectory_file=trajectory, turn_index=index, prompt_tokens=prompt, cached_tokens=2)


def recorded(ledger: Ledger, started: StartedAttempt) -> list[tuple[int, int | None]]:
    return [
        (t.turn_index, t.prompt_tokens)
        for e in ledger.events.get(started.run_id)
        if isinstance(e, TrajectoryRecorded)
        for t in e.turns
    ]


def test_turns_recorded_while_it_runs_are_not_recorded_again_at_the_end(
    services: Services,
) -> None:
    ledger = services.ledger
    started = start(ledger)
    running = ledger.running_run(started.run_id)
    assert ledger.record_running_turns(running, [turn(0), turn(1)]) == []
    ledger.renew_lease(started.run_id, 60)  # the handle's view is now one version behind
    assert ledger.record_running_turns(running, [turn(1), turn(2)]) == []
    ended = ledger.finish_run(
        started.run_id, [], turns=[turn(0), turn(1), turn(2), turn(3)], status=RunStatus.SUCCEEDED
    )
    assert ended.status is RunStatus.SUCCEEDED
    assert recorded(ledger, started) == [(0, 10), (1, 10), (2, 10), (3, 10)]


def test_a_final_result_stating_a_recorded_turn_differently_is_an_error_of_the_run(
    services: Services,
) -> None:
    ledger = services.ledger
    started = start(ledger)
    running = ledger.running_run(started.run_id)
    ledger.record_running_turns(running, [turn(0), turn(1)])
    ended = ledger.finish_run(
        started.run_id, [], turns=[turn(0), turn(1, prompt=99), turn(2)], status="succeeded"
    )
    assert ended.status is RunStatus.ERROR
    assert ended.error is not None
    assert (
        "turn 1 of trajectory 'trajectory', field 'prompt_tokens': recorded 10, then stated 99"
        in ended.error
    )
    assert "turn 0 " not in ended.error
    assert recorded(ledger, started) == [(0, 10), (1, 10), (2, 10)]


def test_turns_disagreeing_while_it_runs_are_returned_not_recorded(services: Services) -> None:
    ledger = services.ledger
    started = start(ledger)
    running = ledger.running_run(started.run_id)
    ledger.record_running_turns(running, [turn(0)])
    assert ledger.record_running_turns(running, [turn(0, prompt=5), turn(1)]) == [turn(0, 5)]
    assert recorded(ledger, started) == [(0, 10), (1, 10)]


def test_an_executed_runs_turns_are_rows_of_the_turns_read_model(services: Services) -> None:
    ledger = services.ledger
    started = start(ledger)
    ledger.finish_run(
        started.run_id,
        [],
        turns=[turn(0), turn(1), turn(0, trajectory="t2")],
        status=RunStatus.SUCCEEDED,
        score=1.0,
    )
    services.runner.catch_up()
    rows = services.store.conn.execute(
        "SELECT trajectory_file, turn_index, prompt_tokens, cached_tokens FROM turns "
        "WHERE run_id = ? ORDER BY trajectory_file, turn_index",
        [str(started.run_id)],
    ).fetchall()
    assert rows == [("t2", 0, 10, 2), ("trajectory", 0, 10, 2), ("trajectory", 1, 10, 2)]
