"""A large catch-up or rebuild folds its events in a child process (some projections in
this one meanwhile): the read models it writes are the ones an in-process fold writes,
and a failed fold writes nothing."""

from __future__ import annotations

import enum
import os
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.store import fold_ahead, forked, hotpath, projection_runner
from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.adapters.store.importer import Importer
from benchledger.domain.errors import LedgerError
from benchledger.domain.run import RunImported
from benchledger.projections.base import DESCENDING
from benchledger.projections.events import EventsProjection
from benchledger.projections.registry import all_projections
from benchledger.projections.runs import RunsProjection
from benchledger.projections.store import REBUILD_SUFFIX, ReadModelStore
from benchledger.projections.versions import STATE_TABLE
from tests.conftest import Invoke
from tests.integration.test_orchestrator_stream import many_rows
from tests.integration.test_projections import dump, import_record, record
from tests.unit.test_format_orchestrator import make_db


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Fold ahead however few the events (other tests' threads notwithstanding), and
    list the children forked (their pids)."""
    monkeypatch.setattr(hotpath, "FOLD_AHEAD_EVENTS", 0)
    monkeypatch.setattr(fold_ahead.forked, "can_fork", lambda: True)
    monkeypatch.setattr(projection_runner, "PAGE", 7)  # many pages
    made: list[int] = []
    fork = os.fork

    def counted() -> int:
        pid = fork()
        if pid:  # in this process (a child never returns here)
            made.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counted)
    yield made


EVERY = frozenset(p.name for p in all_projections())
# Which projections this process folds itself while the child folds the others.
DEFAULT_HERE = fold_ahead.FOLDED_HERE
SPLITS = [frozenset(), frozenset({"events"}), DEFAULT_HERE, EVERY - {"chain"}, EVERY]


@pytest.fixture(params=SPLITS, ids=lambda here: "+".join(sorted(here)) or "none")
def here(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, claiming: list[bool]
) -> Iterator[frozenset[str]]:
    monkeypatch.setattr(fold_ahead, "FOLDED_HERE", request.param)
    yield frozenset(request.param)
    if fold_ahead.CLAIM_AFTER < 0 and request.param == DEFAULT_HERE:
        assert any(claiming)  # this process folded pages of the child's projections


@pytest.fixture(params=["waits", "claims"])
def claiming(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether this process claims pages of the child's (`claims`: after every page it
    receives, as if it had waited for each; `waits`: never); records what it folded of
    them itself."""
    monkeypatch.setattr(fold_ahead, "CLAIM_AFTER", -1.0 if request.param == "claims" else 1e9)
    folded: list[bool] = []
    ours = fold_ahead._Claims.ours

    def spied(claims: fold_ahead._Claims, page: int) -> bool:
        mine = ours(claims, page)
        folded.append(mine)
        return mine

    monkeypatch.setattr(fold_ahead._Claims, "ours", spied)
    yield folded
    # Claims happen wherever no projection of the child's keeps state from page to
    # page, which every split but those leaving the chain to the child is.
    if request.param == "waits":
        assert not any(folded)
    elif folded:
        assert any(folded)


def schema(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()


def indexes(db: Path) -> list[tuple[str, str, list[str]]]:
    """Every index made by name: its table and columns."""
    with sqlite3.connect(db) as conn:
        named = conn.execute(
            "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
            "ORDER BY name"
        ).fetchall()
        return [
            (name, table, [r[2] for r in conn.execute(f"PRAGMA index_info([{name}])")])
            for name, table in named
        ]


def with_rowids(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every read model's rows with their rowids (what `dump` shows, and where they sit),
    and the positions the projections are at."""
    names = [t.name for p in all_projections() for t in p.tables] + [STATE_TABLE]
    with sqlite3.connect(db) as conn:
        return {
            name: conn.execute(f"SELECT rowid, * FROM [{name}] ORDER BY rowid").fetchall()
            for name in names
        }


def busy_ledger(invoke: Invoke, tmp_path: Path) -> None:
    """Runs of every kind, skips, trajectories, corrections: most folds have work."""
    invoke("demo")
    invoke("import", str(make_db(tmp_path / "src" / "orchestrator.sqlite", many_rows(60))))


class TestFoldedAhead:
    @pytest.mark.parametrize("commit_every", [1, projection_runner.REBUILD_COMMIT_EVENTS])
    def test_a_rebuild_folded_ahead_writes_what_an_in_process_one_writes(
        self,
        invoke: Invoke,
        db: Path,
        tmp_path: Path,
        forks: list[int],
        here: frozenset[str],
        commit_every: int,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        monkeypatch.setattr(projection_runner, "REBUILD_COMMIT_EVENTS", commit_every)
        with pytest.MonkeyPatch.context() as in_process:
            in_process.setattr(hotpath, "FOLD_AHEAD_EVENTS", 10**9)
            busy_ledger(invoke, tmp_path)
            invoke("rebuild")
        expected = dump(db), with_rowids(db), schema(db)
        assert not forks
        invoke("rebuild")
        assert len(forks) == 1
        assert (dump(db), with_rowids(db), schema(db)) == expected
        assert invoke("verify").stdout.startswith("OK:")

    def test_a_fresh_ledger_s_first_catch_up_folded_ahead_writes_what_in_process_writes(
        self, db: Path, tmp_path: Path, forks: list[int], here: frozenset[str]
    ) -> None:
        """An import into a new ledger: its catch-up rebuilds every projection."""
        source = make_db(tmp_path / "src" / "orchestrator.sqlite", many_rows(60))
        with build(Settings(db_path=db)) as services:  # appended, no read models yet
            group = services.ledger.new_group("import", "import")
            Importer(services.ledger).import_file(source, group=group)
            services.ledger.close_group(group)
        copy = tmp_path / "copy.db"
        shutil.copy(db, copy)
        with build(Settings(db_path=db)) as services:
            services.runner.catch_up()
        assert len(forks) == 1
        with pytest.MonkeyPatch.context() as in_process:
            in_process.setattr(hotpath, "FOLD_AHEAD_EVENTS", 10**9)
            with build(Settings(db_path=copy)) as services:
                services.runner.catch_up()
        assert len(forks) == 1
        assert (with_rowids(db), schema(db)) == (with_rowids(copy), schema(copy))

    def test_a_new_ledger_s_first_build_is_made_in_place_as_a_rebuild_makes_it(
        self, db: Path, tmp_path: Path, forks: list[int], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """No copies made and swapped in when there is nothing to swap out; the rows are
        the ones a rebuild (made aside, then swapped in) writes."""
        source = make_db(tmp_path / "src" / "orchestrator.sqlite", many_rows(60))
        with build(Settings(db_path=db)) as services:
            group = services.ledger.new_group("import", "import")
            Importer(services.ledger).import_file(source, group=group)
            services.ledger.close_group(group)
        made: list[str] = []
        create = ReadModelStore.create_tables

        def spied(store: ReadModelStore, projection: Any, suffix: str = "", **kw: Any) -> Any:
            made.append(suffix)
            return create(store, projection, suffix, **kw)

        monkeypatch.setattr(ReadModelStore, "create_tables", spied)
        with build(Settings(db_path=db)) as services:
            services.runner.catch_up()
        assert len(forks) == 1
        assert made == [""] * len(all_projections())
        # Indexed once full: every index a rebuild makes is there, and no other.
        first = with_rowids(db), indexes(db)
        with build(Settings(db_path=db)) as services:
            services.runner.rebuild()
        assert made[len(all_projections()) :] == [REBUILD_SUFFIX] * len(all_projections())
        assert (with_rowids(db), indexes(db)) == first
        declared = {
            (t.name, tuple(c.removesuffix(DESCENDING) for c in columns))
            for p in all_projections()
            for t in p.tables
            for columns in t.indexes
        }
        assert {(table, tuple(columns)) for _, table, columns in first[1]} >= declared

    def test_a_catch_up_folded_ahead_writes_what_an_in_process_one_writes(
        self, invoke: Invoke, db: Path, tmp_path: Path, forks: list[int], here: frozenset[str]
    ) -> None:
        with pytest.MonkeyPatch.context() as in_process:
            in_process.setattr(hotpath, "FOLD_AHEAD_EVENTS", 10**9)
            busy_ledger(invoke, tmp_path)
        more = make_db(tmp_path / "more" / "orchestrator.sqlite", many_rows(90)[60:])
        with build(Settings(db_path=db)) as services:  # appended, not folded yet
            group = services.ledger.new_group("import", "import")
            assert Importer(services.ledger).import_file(more, group=group).new_runs == 16
            services.ledger.close_group(group)
        copy = tmp_path / "copy.db"
        shutil.copy(db, copy)  # the same events and read models, the log folded away
        assert not forks
        with build(Settings(db_path=db)) as services:
            services.runner.catch_up()
        assert len(forks) == 1
        with pytest.MonkeyPatch.context() as in_process:
            in_process.setattr(hotpath, "FOLD_AHEAD_EVENTS", 10**9)
            with build(Settings(db_path=copy)) as services:
                services.runner.catch_up()
        assert len(forks) == 1
        assert dump(db) == dump(copy)
        assert with_rowids(db) == with_rowids(copy)
        assert invoke("verify").stdout.startswith("OK:")

    def test_projections_at_different_positions_each_fold_what_they_have_not(
        self, invoke: Invoke, db: Path, tmp_path: Path, forks: list[int], here: frozenset[str]
    ) -> None:
        """`events` and `runs` rebuilt after more events came: the catch-up folds the
        others' events from where they are, theirs from where they are."""
        with pytest.MonkeyPatch.context() as in_process:
            in_process.setattr(hotpath, "FOLD_AHEAD_EVENTS", 10**9)
            busy_ledger(invoke, tmp_path)
            more = make_db(tmp_path / "more" / "orchestrator.sqlite", many_rows(90)[60:])
            with build(Settings(db_path=db)) as services:
                group = services.ledger.new_group("import", "import")
                Importer(services.ledger).import_file(more, group=group)
                services.ledger.close_group(group)
                services.runner.rebuild(["events", "runs"])
                states = services.store.states()
        assert states["events"][1] == states["runs"][1] > states["chain"][1]
        copy = tmp_path / "copy.db"
        shutil.copy(db, copy)
        with build(Settings(db_path=db)) as services:
            services.runner.catch_up()
            folded = services.store.states()
        assert len(forks) == 1
        with pytest.MonkeyPatch.context() as in_process:
            in_process.setattr(hotpath, "FOLD_AHEAD_EVENTS", 10**9)
            with build(Settings(db_path=copy)) as services:
                services.runner.catch_up()
                assert services.store.states() == folded
        assert with_rowids(db) == with_rowids(copy)

    @pytest.mark.parametrize("where", [RunsProjection, EventsProjection], ids=["child", "here"])
    def test_a_fold_that_fails_writes_nothing(
        self, db: Path, forks: list[int], monkeypatch: pytest.MonkeyPatch, where: type[Any]
    ) -> None:
        """In the child (`runs`) or in this process (`events`): the error is raised as
        it was, the catch-up's transaction rolled back, and the child waited for."""
        with build(Settings(db_path=db)) as services:
            import_record(services, record(0, 3), "a")
            services.runner.catch_up()
            before = dump(db), services.store.states()
            for i in range(1, 6):
                import_record(services, record(i, 3), f"f{i}")
            fold = where.fold
            notes = services.ledger.recorder.select_notifications(0, 1000)
            # The last run's event, past the first page (of 7) of the catch-up.
            late = [n.id for n in notes if n.topic == RunImported.TOPIC][-1] - 1
            assert late > before[1]["events"][1] + 7

            def failing(self: Any, envelope: Any) -> Any:
                if envelope.position > late and envelope.topic == RunImported.TOPIC:
                    raise ValueError("a fold that breaks")
                return fold(self, envelope)

            monkeypatch.setattr(where, "fold", failing)
            forks.clear()
            with pytest.raises(ValueError, match="a fold that breaks"):
                services.runner.catch_up()
            assert len(forks) == 1
            assert (dump(db), services.store.states()) == before
        # The child was waited for: it is no longer this process's child. (Another test's
        # child may still be, so it is asked of this one alone.)
        with pytest.raises(ChildProcessError):
            os.waitpid(forks[0], os.WNOHANG)

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


class Colour(enum.Enum):
    RED = "red"


def test_items_marshal_cannot_write_go_by_pickle_as_they_are() -> None:
    items: list[Any] = [(1, "a", None, 2.5, b"x"), [Colour.RED], {"k": (True, -0.0)}, 10**40]
    got = list(
        forked.forked(
            lambda: iter(items),
            batch=lambda waiting, item: True,
            died=lambda: LedgerError("died"),
            unportable=lambda e: e,
            plain=True,
        )
    )
    assert got == items
    assert got[1][0] is Colour.RED and type(got[2]["k"][0]) is bool


def made_in_a_child(
    count: int, size: int, done: Path | None = None, plain: bool = True
) -> Iterator[Any]:
    def produce() -> Iterator[bytes]:
        for i in range(count):
            yield i.to_bytes(4, "big") * (size // 4)
        if done is not None:
            done.touch()

    return forked.forked(
        produce,
        batch=lambda waiting, item: True,
        died=lambda: LedgerError("died"),
        unportable=lambda e: e,
        plain=plain,
    )


def test_a_child_goes_on_while_its_pipe_is_full(tmp_path: Path) -> None:
    """Five times what the pipe holds: the child makes it all before the parent reads
    more than the first item, then the parent reads it all, in order."""
    done = tmp_path / "done"
    items = made_in_a_child(50, forked.PIPE_BYTES // 10, done)
    first = next(items)
    for _ in range(600):  # a liveness wait, not a measure: the child is not held up
        if done.exists():
            break
        threading.Event().wait(0.05)
    assert done.exists()
    rest = list(items)
    assert [first, *rest] == [i.to_bytes(4, "big") * (forked.PIPE_BYTES // 40) for i in range(50)]


@pytest.mark.parametrize("plain", [True, False])
def test_a_child_that_made_its_most_waits_and_loses_nothing(
    monkeypatch: pytest.MonkeyPatch, plain: bool
) -> None:
    monkeypatch.setattr(forked, "AHEAD_BYTES", 3000)  # the child's copy holds it too
    got = list(made_in_a_child(200, 1000, plain=plain))
    assert got == [i.to_bytes(4, "big") * 250 for i in range(200)]


def test_events_in_postgres_or_memory_are_folded_in_process(tmp_path: Path) -> None:
    with build(Settings(db_path=tmp_path / "ledger.db")) as services:
        assert fold_ahead.events_file(services.ledger.recorder) == str(tmp_path / "ledger.db")
    assert fold_ahead.events_file(object()) is None
    assert not fold_ahead.can_fold_ahead(object(), 10**6)
