"""A rebuild killed halfway leaves nothing the next command does not clear away."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchledger.commands.cli import cli
from benchledger.projections.store import ReadModelStore
from tests.helpers import run_json, write_json, write_jsonl
from tests.ledgers import copy_ledger

BENCHLEDGER = [sys.executable, "-c", "from benchledger.commands.cli import cli; cli()"]
# After the rebuild's tables appear: kill at once, and later as they fill.
KILL_AFTER_SECONDS = (0.0, 0.05, 0.15)
POLL_SECONDS = 0.005


def invoke(db: Path, *args: str) -> None:
    result = CliRunner().invoke(cli, ["--db", str(db), *args])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def big_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ledger whose rebuild takes a while: 150 runs of 500 cells."""
    tmp = tmp_path_factory.mktemp("big")
    lines = []
    for n in range(150):
        header = run_json(benchmark=f"b{n % 7}", run_key=f"r{n}")
        del header["schema"], header["cells"]
        lines.append({"type": "run", **header})
        lines += [
            {"type": "cell", "key": f"t{i}", "outcome": "passed" if i % 3 else "failed"}
            for i in range(500)
        ]
    db = tmp / "ledger.db"
    invoke(db, "import", str(write_jsonl(tmp / "runs.jsonl", lines)))
    return db


def leftovers(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB '*__rebuild'"
        )
        return [name for (name,) in rows]


def killed_rebuild(db: Path, after: float) -> bool:
    """A `rebuild` of `db` SIGKILLed `after` seconds once its tables appeared; whether
    it died before swapping them in (it left them)."""
    rebuild = subprocess.Popen(
        [*BENCHLEDGER, "--db", str(db), "rebuild"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while rebuild.poll() is None and not leftovers(db):
            time.sleep(POLL_SECONDS)
        time.sleep(after)
        os.kill(rebuild.pid, signal.SIGKILL)
    finally:
        rebuild.wait()
    return rebuild.returncode == -signal.SIGKILL and bool(leftovers(db))


def read_models(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every read-model table's rows, sorted; a full-text index read through its table."""
    with sqlite3.connect(db) as conn:
        schema = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
        tables = dict(schema.fetchall())
        virtual = [n for n, sql in tables.items() if sql.startswith("CREATE VIRTUAL")]
        names = [
            n
            for n in tables
            if n != "stored_events" and not any(n.startswith(f"{v}_") for v in virtual)
        ]
        return {n: sorted(map(repr, conn.execute(f"SELECT * FROM [{n}]"))) for n in names}


def pages(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return int(conn.execute("PRAGMA page_count").fetchone()[0])


class TestAKilledRebuild:
    @pytest.mark.parametrize(
        ("after", "next_command"),
        list(
            zip(
                KILL_AFTER_SECONDS,
                # `verify` writes nothing (it never folds nor chains): not among them.
                [["runs", "--json"], ["rebuild", "--projection", "runs"], ["latest", "--json"]],
                strict=True,
            )
        ),
        ids=["runs", "rebuild-one", "latest"],
    )
    def test_leaves_tables_the_next_command_drops_with_the_live_ones_untouched(
        self, big_ledger: Path, tmp_path: Path, after: float, next_command: list[str]
    ) -> None:
        clean = copy_ledger(big_ledger, tmp_path / "clean.db")
        invoke(clean, "rebuild")
        db = copy_ledger(big_ledger, tmp_path / "ledger.db")
        before = read_models(db)
        if not killed_rebuild(db, after):
            pytest.skip("the rebuild finished before it could be killed")
        invoke(db, *next_command)
        assert leftovers(db) == []
        assert read_models(db) == before == read_models(clean)

    def test_killed_again_and_again_the_file_does_not_keep_growing(
        self, big_ledger: Path, tmp_path: Path
    ) -> None:
        clean = copy_ledger(big_ledger, tmp_path / "clean.db")
        invoke(clean, "rebuild")
        db = copy_ledger(big_ledger, tmp_path / "ledger.db")
        first = pages(db)
        killed = 0
        for after in KILL_AFTER_SECONDS * 2:
            killed += killed_rebuild(db, after)
            invoke(db, "runs", "--json")
            assert leftovers(db) == []
        assert killed >= 3, "too few rebuilds were killed halfway to tell"
        # Within a few pages of the file as it was (the schema's own b-tree splits
        # differently); every leftover kept would add the read models' pages again.
        assert pages(db) <= first + 8, (first, pages(db), pages(clean))
        assert read_models(db) == read_models(clean)

    def test_a_running_rebuild_s_tables_are_its_work_and_stay(
        self, big_ledger: Path, tmp_path: Path
    ) -> None:
        db = copy_ledger(big_ledger, tmp_path / "ledger.db")
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TABLE runs__rebuild (run_id TEXT)")
        store = ReadModelStore(db)
        try:
            with store.rebuild_lock():  # as a rebuild in another process holds it
                invoke(db, "runs", "--json")
                invoke(db, "import", str(write_json(tmp_path / "more.json", run_json(run_key="x"))))
                assert leftovers(db) == ["runs__rebuild"]
        finally:
            store.close()
        invoke(db, "runs", "--json")
        assert leftovers(db) == []


def test_the_read_side_knows_a_rebuild_s_tables_by_the_writer_s_suffix() -> None:
    from benchledger.adapters.store.read_side import REBUILT_ASIDE
    from benchledger.projections.store import REBUILD_SUFFIX

    assert REBUILT_ASIDE == REBUILD_SUFFIX
