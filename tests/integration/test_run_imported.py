"""An imported run is one `RunImported`; a ledger written before holds it as a start, its
trajectory batches and its finish. Both read the same: every read model, the run, and
what a later file of the same source may add to it."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.adapters.store.importer import Importer
from benchledger.domain import importing, run_rules
from benchledger.domain.signatures import run_id_for
from tests.integration.test_merge import add_turns
from tests.integration.test_orchestrator_stream import many_rows
from tests.unit.test_format_orchestrator import (
    RUN_ID,
    db_row,
    latest_row,
    make_db,
    viewer,
    write,
)

# Where the two ledgers may differ: the positions of their events, and when they were
# written.
WHEN = {"position", "last_position", "recorded_at", "updated_at", "last_heard_at", "recovered_at"}
IMPORT = {"opened_at", "closed_at"}
TABLES = {
    "runs": "run_id",
    "candidates": "run_id",
    "latest_per_agent": "benchmark, agent",
    "quarantine": "benchmark, agent",
    "latest": "benchmark, agent",
    "turns": "run_id, trajectory_file, turn_index",
    # The source's own groups (the import's own group has an id and times of its own).
    "run_groups": "kind = 'import', run_group_id",
    "skips": "run_group_id, benchmark, agent, signature",
}


def rows(db: Path) -> dict[str, list[dict[str, Any]]]:
    """Every row of `TABLES` but for `WHEN`, the import's own group (an id and times of
    its own in each ledger) named `<import>`."""
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        imports = {
            r[0]: "<import>"
            for r in conn.execute("SELECT run_group_id FROM run_groups WHERE kind = 'import'")
        }
        return {
            table: [
                {
                    k: imports.get(row[k], row[k])
                    for k in row.keys()  # noqa: SIM118 (a Row iterates over its values)
                    if k not in WHEN and not (k in IMPORT and row["run_group_id"] in imports)
                }
                for row in conn.execute(f"SELECT * FROM [{table}] ORDER BY {order}")
            ]
            for table, order in TABLES.items()
        }


def topics(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [t.rsplit(":", 1)[1] for (t,) in conn.execute("SELECT topic FROM stored_events")]


def orchestrator_db(path: Path) -> Path:
    recovered = db_row(
        run_id="run_bench0_20260512T101600Z_2_0000ffff",
        benchmark_id="bench0",
        benchmark_directory="bench0",
        status="failed",
        error="Recovered stale running run from interrupted orchestrator process",
        metrics={"reason": "orchestrator_interrupted"},
    )
    source = make_db(path, [db_row(), *many_rows(12), recovered])
    add_turns(source, 3)
    return source


def import_into(db: Path, *paths: Path) -> list[str]:
    with build(Settings(db_path=db)) as services:
        ledger = services.ledger
        group = ledger.new_group("import", "import")
        states = [Importer(ledger).import_file(p, group=group).state for p in paths]
        ledger.close_group(group)
        services.runner.catch_up()
        return states


@pytest.fixture(params=[3, 2], ids=["turns inside", "turns in batches after"])
def cell_batch(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(importing, "CELL_BATCH", request.param)
    return int(request.param)


def test_a_run_imported_whole_reads_as_the_three_events_of_an_earlier_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cell_batch: int
) -> None:
    source = orchestrator_db(tmp_path / "db" / "orchestrator.sqlite")
    whole, legacy = tmp_path / "whole.db", tmp_path / "legacy.db"
    assert import_into(whole, source) == ["imported"]
    with monkeypatch.context() as m:
        m.setattr(run_rules, "imported", lambda *args, **kwargs: None)  # as before
        assert import_into(legacy, source) == ["imported"]

    kinds = topics(whole)
    assert "RunFinished" not in kinds and "RunStarted" in kinds  # the recovered run's
    # Its turns inside when they fit in a batch; after it in batches otherwise.
    assert ("TrajectoryRecorded" in kinds) == (cell_batch < 3)
    assert "RunFinished" in topics(legacy) and "RunImported" not in topics(legacy)
    assert len(kinds) < len(topics(legacy))

    ours, theirs = rows(whole), rows(legacy)
    assert len(ours["runs"]) == 8 and len(ours["turns"]) == 3
    for table in TABLES:
        for mine, earlier in zip(ours[table], theirs[table], strict=True):
            differ = {k: (mine[k], earlier[k]) for k in mine if mine[k] != earlier[k]}
            assert not differ, (table, mine.get("run_key"), differ)

    with build(Settings(db_path=whole)) as a, build(Settings(db_path=legacy)) as b:
        run_id = run_id_for("eliza-orchestrator", RUN_ID)
        mine, earlier = a.ledger.get_run(run_id), b.ledger.get_run(run_id)
        assert (mine.status, mine.score, mine.unit) == (earlier.status, earlier.score, "ratio")

    # The run's later, sparser sources read it back the same from either ledger.
    row = db_row()
    later = [
        write(tmp_path / "latest" / "bfcl__eliza.json", latest_row(row)),
        write(tmp_path / "viewer" / "viewer_data.json", viewer([row])),
    ]
    assert import_into(whole, *later) == import_into(legacy, *later) == ["unchanged"] * 2
    changed = write(tmp_path / "other" / "bfcl__eliza.json", latest_row({**row, "score": 0.1}))
    assert import_into(whole, changed) == import_into(legacy, changed) == ["conflict"]
