"""A running run's cells recorded batch by batch, then checked against its final result,
in a real ledger file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.domain.ledger import Ledger, StartedAttempt
from benchledger.domain.records import Cell, RunStatus
from benchledger.domain.run import CellsRecorded


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with build(Settings(db_path=tmp_path / "ledger.db")) as services:
        yield services.ledger


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


def cell(key: str, score: float = 1.0) -> Cell:
    return Cell(key=key, outcome="passed" if score else "failed", score=score)


def recorded(ledger: Ledger, started: StartedAttempt) -> list[str]:
    return [
        c.key
        for e in ledger.events.get(started.run_id)
        if isinstance(e, CellsRecorded)
        for c in e.cells
    ]


def test_batches_follow_a_lease_renewal_made_in_between(ledger: Ledger) -> None:
    started = start(ledger)
    running = ledger.running_run(started.run_id)
    assert ledger.record_running_cells(running, [cell("a")]) == []
    ledger.renew_lease(started.run_id, 60)  # the handle's view is now one version behind
    assert ledger.record_running_cells(running, [cell("a"), cell("b")]) == []
    assert recorded(ledger, started) == ["a", "b"]


def test_a_final_result_adds_its_new_cells_and_never_overwrites_a_recorded_one(
    ledger: Ledger,
) -> None:
    started = start(ledger)
    running = ledger.running_run(started.run_id)
    ledger.record_running_cells(running, [cell("a"), cell("b")])
    ended = ledger.finish_run(
        started.run_id, [cell("a"), cell("b", 0.0), cell("c")], status=RunStatus.SUCCEEDED
    )
    assert ended.status is RunStatus.ERROR
    assert ended.error is not None
    assert "cell 'b', field 'outcome': recorded 'passed', then stated 'failed'" in ended.error
    assert "field 'score': recorded 1.0, then stated 0.0" in ended.error
    assert "'a'" not in ended.error
    assert recorded(ledger, started) == ["a", "b", "c"]
    assert ledger.recorded_cells(started.run_id, {"b"}) == {"b": cell("b")}


def test_a_final_result_that_agrees_finishes_as_it_says(ledger: Ledger) -> None:
    started = start(ledger)
    ledger.record_running_cells(ledger.running_run(started.run_id), [cell("a")])
    ended = ledger.finish_run(started.run_id, [cell("a"), cell("b")], status=RunStatus.SUCCEEDED)
    assert (ended.status, ended.error) == (RunStatus.SUCCEEDED, None)
    assert recorded(ledger, started) == ["a", "b"]
