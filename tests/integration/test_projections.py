from __future__ import annotations

import multiprocessing
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.adapters.store import projection_runner
from benchledger.adapters.store.bootstrap import Services, Settings, build
from benchledger.domain.records import Cell, RunHeader, RunRecord, SourceFile
from benchledger.domain.signatures import sha256_hex
from benchledger.projections.base import index_name
from benchledger.projections.registry import all_projections
from benchledger.projections.store import ReadModelStore

# A table with a primary key is read in key order (its rows' physical order is no fact:
# `latest` re-selects a key once per transaction, so it depends on how events were
# batched); any other table in insertion order, which its folds determine.
ORDER = {
    t.name: ", ".join(f"[{c}]" for c in t.pk) if t.pk else "rowid"
    for p in all_projections()
    for t in p.tables
}


def dump(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    with sqlite3.connect(db) as conn:
        return {
            t: conn.execute(f"SELECT * FROM [{t}] ORDER BY {order}").fetchall()
            for t, order in ORDER.items()
        }


def record(i: int, cells: int, score: float | None = 0.5, bench: str = "bfcl") -> RunRecord:
    return RunRecord(
        header=RunHeader(
            run_key=f"run-{i}",
            benchmark=bench,
            agent=f"agent{i % 3}",
            model="m",
            status="succeeded" if score is not None else "failed",
            score=score,
        ),
        cells=tuple(
            Cell(key=f"k{j}", outcome="passed" if j % 2 else "failed", score=j % 2)
            for j in range(cells)
        ),
    )


def import_record(services: Services, rec: RunRecord, name: str = "f") -> None:
    data = rec.model_dump_json().encode()
    source = SourceFile(
        path=f"{name}.json", sha256=sha256_hex(data), size=len(data), format="native"
    )
    services.ledger.import_runs("native", source, [rec])


@pytest.fixture
def services(db: Path) -> Any:
    with build(Settings(db_path=db)) as s:
        yield s


def test_read_model_commits_are_not_synced_but_event_commits_are(services: Services) -> None:
    # Derived rows may be folded again after a power loss; events may not be lost.
    assert services.store.conn.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
    with services.ledger.recorder.datastore.transaction(commit=False) as cursor:
        cursor.execute("PRAGMA synchronous")
        assert cursor.fetchone()[0] == 2  # FULL


def _indexes(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
    return {name for (name,) in rows}


def test_a_first_build_indexes_each_table_once_it_is_full(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new ledger's first catch-up, folded in this process (too few events to fold
    ahead): while its pages are folded a table has only the indexes its folds look rows
    up by (`Table.lookups`); the others are built once, when it is full."""
    for i in range(3):
        import_record(services, record(i, 50), f"f{i}")
    tables = [t for p in all_projections() for t in p.tables if not t.full_text]
    lookups = {index_name(t.name, c) for t in tables for c in t.lookups}
    every = {index_name(t.name, c) for t in tables for c in t.indexes}
    assert every - lookups  # indexes to build later, or this test would prove nothing
    present: list[set[str]] = []
    apply = ReadModelStore.apply

    def spied(store: ReadModelStore, *args: Any) -> bool:
        present.append(_indexes(store.conn))
        return apply(store, *args)

    monkeypatch.setattr(ReadModelStore, "apply", spied)
    assert not services.store.has_tables(all_projections()[0])
    services.runner.catch_up()
    assert present
    assert all(seen & every <= lookups for seen in present), sorted((present[-1] & every) - lookups)
    assert every <= _indexes(services.store.conn)


def test_a_catch_up_settles_only_the_projections_that_folded_its_events(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`latest` finishes its folds in a settle of its own; a verdict, which it does not
    fold, leaves it nothing to finish, and its tables as they were."""
    import_record(services, record(1, 3), "f1")
    services.runner.catch_up()
    settled: list[str] = []
    settle = ReadModelStore.settle

    def spied(store: ReadModelStore, projection: Any, names: dict[str, str]) -> None:
        settled.append(projection.name)
        settle(store, projection, names)

    monkeypatch.setattr(ReadModelStore, "settle", spied)
    before = dump(services.store.path)
    services.ledger.record_gate(
        gate="publishability", ok=True, findings=[], actor="t", position=1, head_sha256="0" * 64
    )
    services.runner.catch_up()
    assert "latest" not in settled
    assert "verdicts" in settled  # what folded the verdict
    after = dump(services.store.path)
    assert after["gate_verdicts"] != before["gate_verdicts"]
    assert {t: after[t] for t in ("latest", "latest_per_agent", "candidates")} == {
        t: before[t] for t in ("latest", "latest_per_agent", "candidates")
    }

    import_record(services, record(2, 3), "f2")
    services.runner.catch_up()
    assert "latest" in settled


class TestRebuild:
    def test_rebuilding_twice_gives_identical_tables(self, services: Services, db: Path) -> None:
        for i in range(5):
            import_record(services, record(i, 700), f"f{i}")
        services.ledger.invalidate_run(_run_id(db, services, "run-1"), "leak", "me")
        services.runner.catch_up()
        first = dump(db)
        services.runner.rebuild()
        second = dump(db)
        services.runner.rebuild()
        assert first == second == dump(db)
        assert len(first["cells"]) == 3500

    def test_a_changed_projection_version_is_rebuilt_on_the_next_catch_up(
        self, services: Services, db: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import_record(services, record(1, 3))
        services.runner.catch_up()
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE runs SET score = 99")  # a hand edit a rebuild must undo
        runs = next(p for p in services.runner.projections if p.name == "runs")
        monkeypatch.setattr(type(runs), "version", runs.version + 1)
        services.runner.catch_up()
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT score FROM runs").fetchall() == [(0.5,)]
            assert conn.execute(
                "SELECT version FROM _projection_state WHERE projection = 'runs'"
            ).fetchone() == (runs.version,)

    def test_readers_see_the_old_tables_until_the_swap(self, services: Services, db: Path) -> None:
        import_record(services, record(1, 3))
        services.runner.catch_up()
        reader = sqlite3.connect(db)
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM runs").fetchone() == (1,)
        services.runner.rebuild(["cells"])
        assert reader.execute("SELECT count(*) FROM runs").fetchone() == (1,)
        reader.execute("COMMIT")
        reader.close()


def _run_id(db: Path, services: Services, key: str) -> Any:
    from uuid import UUID

    services.runner.catch_up()
    with sqlite3.connect(db) as conn:
        return UUID(conn.execute("SELECT run_id FROM runs WHERE run_key = ?", (key,)).fetchone()[0])


operations = st.lists(
    st.one_of(
        st.tuples(st.just("import"), st.integers(0, 1100), st.sampled_from([None, 0.25, 0.75])),
        st.tuples(st.just("invalidate"), st.integers(0, 20), st.none()),
        st.tuples(st.just("correct"), st.integers(0, 20), st.floats(0, 1)),
        st.tuples(st.just("catch_up"), st.integers(1, 7), st.none()),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=operations)
def test_incremental_catch_up_equals_a_full_rebuild(ops: list[tuple[str, int, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "ledger.db"
        with build(Settings(db_path=db)) as services:
            imported: list[str] = []
            for i, (op, n, value) in enumerate(ops):
                if op == "import":
                    import_record(services, record(i, n, value, bench=f"b{i % 2}"), f"f{i}")
                    imported.append(f"run-{i}")
                elif op == "catch_up":
                    original = projection_runner.PAGE
                    projection_runner.PAGE = n
                    try:
                        services.runner.catch_up()
                    finally:
                        projection_runner.PAGE = original
                elif imported:
                    run_id = _run_id(db, services, imported[n % len(imported)])
                    run = services.ledger.get_run(run_id)
                    if op == "invalidate":
                        if run.invalidated:
                            services.ledger.reinstate_run(run_id, "ok", "me")
                        else:
                            services.ledger.invalidate_run(run_id, "bad", "me")
                    else:
                        services.ledger.correct_score(run_id, value, "fix", "me")
            services.runner.catch_up()
            incremental = dump(db)
            services.runner.rebuild()
            assert dump(db) == incremental


def _catch_up(db: str, barrier: Any) -> None:
    with build(Settings(db_path=Path(db))) as services:
        barrier.wait()
        services.runner.catch_up()


def test_concurrent_catch_ups_apply_each_event_exactly_once(db: Path) -> None:
    with build(Settings(db_path=db)) as services:
        for i in range(20):
            import_record(services, record(i, 600), f"f{i}")
        expected_cells = 20 * 600
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(3)
    procs = [ctx.Process(target=_catch_up, args=(str(db), barrier)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM cells").fetchone() == (expected_cells,)
        assert conn.execute("SELECT sum(cells) FROM runs").fetchone() == (expected_cells,)
        assert (
            conn.execute("SELECT count(*) FROM events").fetchone()
            == conn.execute("SELECT count(*) FROM stored_events").fetchone()
        )


def _rebuild(db: str, barrier: Any) -> None:
    with build(Settings(db_path=Path(db))) as services:
        barrier.wait()
        services.runner.rebuild()


def test_concurrent_rebuilds_take_turns_and_leave_no_lock_file(db: Path) -> None:
    with build(Settings(db_path=db)) as services:
        for i in range(10):
            import_record(services, record(i, 300), f"f{i}")
        services.runner.catch_up()
    before = dump(db)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(3)
    procs = [ctx.Process(target=_rebuild, args=(str(db), barrier)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert dump(db) == before
    # (-wal and -shm belong to SQLite while this test's own connections are open.)
    beside = {p.name for p in db.parent.iterdir()} - {"ledger.db-wal", "ledger.db-shm"}
    assert beside == {"ledger.db"}
