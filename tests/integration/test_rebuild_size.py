"""Rebuilds drop and recreate read-model tables without growing the ledger file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from benchledger.projections.store import PAGE_SIZE
from tests.conftest import Invoke
from tests.helpers import run_json, write_jsonl


def pages(db: Path) -> tuple[int, int]:
    """(pages in the database, of them free), after folding the WAL into the file."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return (
            conn.execute("PRAGMA page_count").fetchone()[0],
            conn.execute("PRAGMA freelist_count").fetchone()[0],
        )


def notification_ids(db: Path) -> list[tuple[int, str, int]]:
    with sqlite3.connect(db) as conn:
        query = "SELECT rowid, originator_id, originator_version FROM stored_events ORDER BY rowid"
        return list(conn.execute(query))


def import_runs(invoke: Invoke, tmp_path: Path) -> None:
    lines = []
    for n in range(20):
        header = run_json(benchmark=f"b{n}", run_key=f"r{n}")
        del header["schema"], header["cells"]
        lines.append({"type": "run", **header})
        lines += [{"type": "cell", "key": f"t{i}", "outcome": "passed"} for i in range(300)]
    invoke("import", str(write_jsonl(tmp_path / "runs.jsonl", lines)))


class TestRebuildSize:
    def test_a_new_ledger_hands_the_pages_a_rebuild_frees_back(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        import_runs(invoke, tmp_path)
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA auto_vacuum").fetchone() == (2,)  # incremental
            assert conn.execute("PRAGMA page_size").fetchone() == (PAGE_SIZE,)
        ids = notification_ids(db)
        before, _ = pages(db)
        sizes = []
        for _ in range(3):
            invoke("rebuild")
            sizes.append(pages(db))
        assert all(free == 0 for _, free in sizes), sizes
        assert max(count for count, _ in sizes) <= before * 1.05, (before, sizes)
        # Reclaiming pages never renumbers the event store's rows (its notification ids).
        assert notification_ids(db) == ids
        assert invoke("verify").stdout.startswith("OK:")

    def test_an_older_ledger_reuses_freed_pages_so_later_rebuilds_do_not_grow_it(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        # A ledger file made before incremental auto-vacuum: the setting stays off.
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE placeholder (x)")
            conn.execute("DROP TABLE placeholder")
        import_runs(invoke, tmp_path)
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA auto_vacuum").fetchone() == (0,)
            assert conn.execute("PRAGMA page_size").fetchone() == (4096,)  # as it was made
        invoke("rebuild")
        first, _ = pages(db)
        for _ in range(4):
            invoke("rebuild")
            # Reusing the freed pages keeps the file within a few pages (the schema
            # table's own b-tree splits differently from one rebuild to the next);
            # not reusing them would add every read-model page again (hundreds).
            assert pages(db)[0] <= first + 4


def test_a_rebuild_settles_on_indexed_tables_and_leaves_only_the_live_indexes(
    invoke: Invoke, tmp_path: Path, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The settle's statements look candidates up by key: on unindexed rebuilt tables
    # they were quadratic in the runs (an orchestrator import of 50k rows took minutes).
    from benchledger.projections.latest import LatestProjection
    from benchledger.projections.store import ReadModelStore

    import_runs(invoke, tmp_path)
    seen: dict[str, set[str]] = {}
    settle = ReadModelStore.settle

    def spy(self: ReadModelStore, projection: object, names: dict[str, str]) -> None:
        for table in names.values():
            found = self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
                "AND name NOT LIKE 'sqlite_autoindex%'",
                (table,),
            )
            seen[table] = {r[0] for r in found}
        settle(self, projection, names)  # type: ignore[arg-type]

    monkeypatch.setattr(ReadModelStore, "settle", spy)
    invoke("rebuild")
    [candidates] = [t for t in LatestProjection.tables if t.name == "candidates"]
    indexed = {f"idx_candidates__rebuild_{'_'.join(c)}" for c in candidates.indexes}
    assert seen["candidates__rebuild"] == indexed
    lookup, by_key = (
        "idx_candidates__rebuild_benchmark_agent_run_id_status",
        "idx_candidates__rebuild_run_key",
    )
    assert {lookup, by_key} <= indexed
    with sqlite3.connect(db) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert not [n for n in names if "__rebuild" in n]
    assert {"idx_candidates_benchmark_agent_run_id_status", "idx_candidates_run_key"} <= names
