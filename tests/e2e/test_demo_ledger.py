"""The demo builds into a new ledger or its own, never into a ledger of real results."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from benchledger.commands.cli import cli
from tests.helpers import run_json, write_json
from tests.ledgers import build_demo, copy_ledger, digest


def invoke(db: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db), *args])


def events(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return int(conn.execute("SELECT count(*) FROM stored_events").fetchone()[0])


def import_real_run(db: Path, tmp_path: Path) -> None:
    path = write_json(tmp_path / "run.json", run_json())
    assert invoke(db, "import", str(path)).exit_code == 0


@pytest.fixture(scope="module")
def demo_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo(tmp_path_factory.mktemp("demo") / "ledger.db")


class TestDemoRefusesARealLedger:
    def test_a_ledger_of_real_results_is_refused_naming_it_and_left_as_it_was(
        self, tmp_path: Path
    ) -> None:
        db = tmp_path / "results.db"
        import_real_run(db, tmp_path)
        before, count = digest(db), events(db)
        result = invoke(db, "demo")
        assert result.exit_code == 1
        assert result.stderr.startswith(
            f"Error: {db} holds events that are not the demo's (position 1: RunGroupOpened)"
        )
        assert "Traceback" not in result.output
        assert digest(db) == before and events(db) == count
        runs = json.loads(invoke(db, "runs", "--json").stdout)
        assert [r["benchmark"] for r in runs] == ["bfcl"]

    def test_real_results_appended_to_a_demo_ledger_make_it_a_real_one(
        self, tmp_path: Path, demo_ledger: Path
    ) -> None:
        db = copy_ledger(demo_ledger, tmp_path / "ledger.db")
        demo_events = events(db)
        import_real_run(db, tmp_path)
        count = events(db)
        result = invoke(db, "demo")
        assert result.exit_code == 1
        assert f"(position {demo_events + 1}: RunGroupOpened)" in result.stderr
        assert events(db) == count


class TestDemoOnItsOwnLedger:
    def test_a_new_path_gets_the_demo(self, tmp_path: Path) -> None:
        result = invoke(tmp_path / "demo.db", "demo")
        assert result.exit_code == 0 and "15 of 15 files newly imported" in result.stdout

    def test_running_it_again_appends_nothing_and_works(
        self, tmp_path: Path, demo_ledger: Path
    ) -> None:
        db = copy_ledger(demo_ledger, tmp_path / "ledger.db")
        count = events(db)
        result = invoke(db, "demo")
        assert result.exit_code == 0 and "0 of 15 files newly imported" in result.stdout
        assert events(db) == count

    def test_a_demo_run_a_user_invalidated_is_still_the_demo_s(
        self, tmp_path: Path, demo_ledger: Path
    ) -> None:
        db = copy_ledger(demo_ledger, tmp_path / "ledger.db")
        run = json.loads(invoke(db, "runs", "--json").stdout)[0]["run_id"]
        assert invoke(db, "invalidate", run, "--reason", "trying it out").exit_code == 0
        assert invoke(db, "demo").exit_code == 0
