"""A large catch-up or rebuild folds its events in a child process: the read models it
writes are the ones an in-process fold writes, and a failed fold writes nothing."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.store import fold_ahead, projection_runner
from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.adapters.store.importer import Importer
from benchledger.domain.errors import LedgerError
from benchledger.projections.runs import RunsProjection
from tests.conftest import Invoke
from tests.integration.test_orchestrator_stream import many_rows
from tests.integration.test_projections import dump, import_record, record
from tests.unit.test_format_orchestrator import make_db


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Fold ahead however few the events (other tests' threads notwithstanding), and
    count the children forked."""
    monkeypatch.setattr(fold_ahead, "FOLD_AHEAD_EVENTS", 0)
    monkeypatch.setattr(fold_ahead.forked, "can_fork", lambda: True)
    monkeypatch.setattr(projection_runner, "PAGE", 7)  # many pages
    made: list[int] = []
    fork = os.fork

    def counted() -> int:
        made.append(1)
        return fork()

    monkeypatch.setattr(os, "fork", counted)
    yield made


def busy_ledger(invoke: Invoke, tmp_path: Path) -> None:
    """Runs of every kind, skips, trajectories, corrections: most folds have work."""
    invoke("demo")
    invoke("import", str(make_db(tmp_path / "src" / "orchestrator.sqlite", many_rows(60))))


class TestFoldedAhead:
    def test_a_rebuild_folded_ahead_writes_what_an_in_process_one_writes(
        self, invoke: Invoke, db: Path, tmp_path: Path, forks: list[int]
    ) -> None:
        with pytest.MonkeyPatch.context() as in_process:
            in_process.setattr(fold_ahead, "FOLD_AHEAD_EVENTS", 10**9)
            busy_ledger(invoke, tmp_path)
            invoke("rebuild")
        expected = dump(db)
        assert forks == []
        invoke("rebuild")
        assert forks == [1]
        assert dump(db) == expected
        assert invoke("verify").stdout.startswith("OK:")

    def test_a_catch_up_folded_ahead_writes_what_an_in_process_one_writes(
        self, invoke: Invoke, db: Path, tmp_path: Path, forks: list[int]
    ) -> None:
        with pytest.MonkeyPatch.context() as in_process:
            in_process.setattr(fold_ahead, "FOLD_AHEAD_EVENTS", 10**9)
            busy_ledger(invoke, tmp_path)
        more = make_db(tmp_path / "more" / "orchestrator.sqlite", many_rows(90)[60:])
        with build(Settings(db_path=db)) as services:  # appended, not folded yet
            group = services.ledger.new_group("import", "import")
            assert Importer(services.ledger).import_file(more, group=group).new_runs == 16
            services.ledger.close_group(group)
        copy = tmp_path / "copy.db"
        shutil.copy(db, copy)  # the same events and read models, the log folded away
        assert forks == []
        with build(Settings(db_path=db)) as services:
            services.runner.catch_up()
        assert forks == [1]
        with pytest.MonkeyPatch.context() as in_process:
            in_process.setattr(fold_ahead, "FOLD_AHEAD_EVENTS", 10**9)
            with build(Settings(db_path=copy)) as services:
                services.runner.catch_up()
        assert forks == [1]
        assert dump(db) == dump(copy)
        assert invoke("verify").stdout.startswith("OK:")

    def test_a_fold_that_fails_in_the_child_writes_nothing(
        self, db: Path, forks: list[int], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        with build(Settings(db_path=db)) as services:
            import_record(services, record(0, 3), "a")
            services.runner.catch_up()
            before = dump(db), services.store.states()
            for i in range(1, 4):
                import_record(services, record(i, 3), f"f{i}")
            fold = RunsProjection.fold

            def failing(self: RunsProjection, envelope: Any) -> Any:
                if envelope.version == 3:  # the third run's end
                    raise ValueError("a fold that breaks")
                return fold(self, envelope)

            monkeypatch.setattr(RunsProjection, "fold", failing)
            forks.clear()
            with pytest.raises(ValueError, match="a fold that breaks"):
                services.runner.catch_up()
            assert forks == [1]
            assert (dump(db), services.store.states()) == before

    def test_a_child_that_dies_without_a_word_fails_the_catch_up(
        self, db: Path, forks: list[int], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        with build(Settings(db_path=db)) as services:
            for i in range(3):
                import_record(services, record(i, 3), f"f{i}")

            def dying(self: RunsProjection, envelope: Any) -> Any:
                os._exit(3)

            monkeypatch.setattr(RunsProjection, "fold", dying)
            with pytest.raises(LedgerError, match="ended before the log did"):
                services.runner.catch_up()
            assert services.store.states() == {}


def test_events_in_postgres_or_memory_are_folded_in_process(tmp_path: Path) -> None:
    with build(Settings(db_path=tmp_path / "ledger.db")) as services:
        assert fold_ahead.events_file(services.ledger.recorder) == str(tmp_path / "ledger.db")
    assert fold_ahead.events_file(object()) is None
    assert not fold_ahead.can_fold_ahead(object(), 10**6)
