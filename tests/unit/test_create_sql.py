"""The read models' CREATE statements kept in `projections/create_sql.py` are sqlite-utils'
own, for every table and under a rebuild's name; a table that changed since is written by
sqlite-utils again; and making a new ledger's tables does not import sqlite-utils."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchledger.projections.base import Table
from benchledger.projections.create_sql import CREATE_SQL
from benchledger.projections.registry import all_projections
from benchledger.projections.store import (
    REBUILD_SUFFIX,
    ReadModelStore,
    render_create_sql,
    table_signature,
)
from tests.helpers import run_json, write_json

REGENERATE = "python -m benchledger.projections.store (then ruff format projections/create_sql.py)"
TABLES = [
    table
    for projection in all_projections()
    for table in projection.resolved().tables
    if not table.full_text
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ReadModelStore]:
    made = ReadModelStore(tmp_path / "l.db")
    yield made
    made.close()


@pytest.mark.parametrize("table", TABLES, ids=[t.name for t in TABLES])
def test_each_kept_statement_is_sqlite_utils_own(store: ReadModelStore, table: Table) -> None:
    kept = CREATE_SQL.get(table.name)
    assert kept is not None, f"{table.name} has no kept statement: run {REGENERATE}"
    assert kept[0] == table_signature(table), f"{table.name} changed: run {REGENERATE}"
    for name in (table.name, table.name + REBUILD_SUFFIX):
        assert store._create_sql(table, name) == render_create_sql(store.db, table, name)


def test_no_statement_is_kept_for_a_table_that_is_gone() -> None:
    assert set(CREATE_SQL) == {t.name for t in TABLES}, f"run {REGENERATE}"


def test_a_changed_table_is_written_by_sqlite_utils(store: ReadModelStore) -> None:
    runs = next(t for t in TABLES if t.name == "runs")
    changed = dataclasses.replace(runs, columns={**runs.columns, "added_here": int})
    sql = store._create_sql(changed, "runs")
    assert '"added_here" INTEGER' in sql
    assert sql == render_create_sql(store.db, changed, "runs")
    store.conn.execute(sql)
    assert "added_here" in [r[1] for r in store.conn.execute("PRAGMA table_info(runs)")]


def test_a_new_ledger_s_tables_are_made_without_sqlite_utils(tmp_path: Path) -> None:
    write_json(tmp_path / "result.json", run_json(cells=[{"key": "q1", "outcome": "passed"}]))
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('sqlite_utils' in sys.modules))\n"
        "from benchledger.commands.cli import main\n"
        "main()\n"
    )
    argv = [sys.executable, "-c", code, "--db", "l.db", "import", "result.json"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "False"
    tables = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sqlite3; print(sqlite3.connect('l.db').execute("
            "\"SELECT count(*) FROM sqlite_master WHERE type = 'table'\").fetchone()[0])",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(tables.stdout) >= len(TABLES)
