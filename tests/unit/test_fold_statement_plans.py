"""A statement a fold runs once per event must not build a temporary table each time it
runs. SQLite builds one for an `IN` over a list of three values or more (two are coded
as comparisons) and for DISTINCT, GROUP BY or ORDER BY without an index, in generated
columns too: the `candidates` insert of every imported run once built four, which cost
an import of 42k orchestrator runs about 0.6 s of its one writing core. A settle's
statements run once per catch-up and may use them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from benchledger.projections.latest import LatestProjection
from benchledger.projections.store import ReadModelStore
from tests.ledgers import build_demo

TEMPORARY = ("OpenEphemeral", "OpenAutoindex", "SorterOpen")


def temporary_tables(conn: sqlite3.Connection, sql: str, params: Any) -> list[str]:
    return [row[1] for row in conn.execute(f"EXPLAIN {sql}", params) if row[1] in TEMPORARY]


@pytest.fixture
def folded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Every statement the demo's folds ran outside a settle, with its first parameters."""
    seen: dict[str, Any] = {}
    settling = [False]
    run, settle = ReadModelStore.run, ReadModelStore.settle

    def recording_run(
        self: ReadModelStore, names: dict[str, str], batches: Iterable[tuple[str, list[Any]]]
    ) -> None:
        def noted() -> Iterator[tuple[str, list[Any]]]:
            for sql, batch in batches:
                if batch and not settling[0]:
                    seen.setdefault(sql.format(**names), batch[0])
                yield sql, batch

        run(self, names, noted())

    def marked_settle(self: ReadModelStore, projection: Any, names: dict[str, str]) -> None:
        settling[0] = True
        try:
            settle(self, projection, names)
        finally:
            settling[0] = False

    monkeypatch.setattr(ReadModelStore, "run", recording_run)
    monkeypatch.setattr(ReadModelStore, "settle", marked_settle)
    db = build_demo(tmp_path / "ledger.db")
    monkeypatch.undo()
    return {"db": db, "statements": seen}


def test_no_fold_statement_builds_a_temporary_table(folded: dict[str, Any]) -> None:
    statements: dict[str, Any] = folded["statements"]
    assert any(sql.startswith("INSERT INTO [candidates]") for sql in statements)
    conn = sqlite3.connect(folded["db"])
    try:
        building = {
            sql[:120]: found
            for sql, params in statements.items()
            if (found := temporary_tables(conn, sql, params))
        }
    finally:
        conn.close()
    assert building == {}


def test_the_check_sees_a_list_of_three(tmp_path: Path) -> None:
    """What the test above looks for is what SQLite does with such a list."""
    conn = sqlite3.connect(tmp_path / "plain.db")
    conn.execute("CREATE TABLE t (a TEXT)")
    three = "INSERT INTO t (a) SELECT ? WHERE ? IN ('x', 'y', 'z')"
    two = "INSERT INTO t (a) SELECT ? WHERE ? IN ('x', 'y') OR ? = 'z'"
    assert temporary_tables(conn, three, ("x", "x")) == ["OpenEphemeral"]
    assert temporary_tables(conn, two, ("x", "x", "x")) == []


def test_candidates_generated_columns_build_no_temporary_table(tmp_path: Path) -> None:
    store = ReadModelStore(tmp_path / "ledger.db")
    with store.write():
        store.create_tables(LatestProjection())
    sql = (
        "INSERT INTO candidates (run_id, benchmark, agent, status, score, config, metrics, "
        "invalidated, superseded, synthetic, stale, kind) "
        "VALUES (?, 'b', 'eliza', 'succeeded', 1.0, '{}', ?, 0, 0, 0, 0, 'run')"
    )
    assert temporary_tables(store.conn, sql, ("r", '{"avg_net_worth": 0}')) == []
    update = "UPDATE candidates SET metrics = json_patch(metrics, ?) WHERE run_id = ?"
    assert temporary_tables(store.conn, update, ('{"total_revenue": 0}', "r")) == []
    store.close()
