"""Opening a ledger: a path with no ledger, someone else's file, a missing directory."""

from __future__ import annotations

import fcntl
import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.commands.cli import cli
from tests.helpers import run_json, write_json
from tests.ledgers import build_demo, digest, listing

# Every command that reads an existing ledger, with arguments it needs (DIR: a scratch dir).
READ_COMMANDS = [
    ["runs"],
    ["runs", "--as-of", "1"],
    ["show", "abcd1234"],
    ["history", "abcd1234"],
    ["events"],
    ["skips"],
    ["latest"],
    ["matrix"],
    ["verify"],
    ["rebuild"],
    ["follow", "--polls", "1"],
    ["serve", "--port", "1"],
    ["gate", "comparability"],
    ["validate-latest-readiness"],
    ["gates"],
    ["review", "--no-run", "--out", "DIR/review", "--reviewer", "me", "--note", "n"],
    ["verify-review", "DIR"],
    ["compare", "--a", "p:m", "--b", "p:n"],
    ["view-comparison", "cmp_x"],
    ["export-latest", "DIR/export"],
    ["export-viewer-data", "--out", "DIR/viewer.json"],
    ["invalidate", "abcd1234", "--reason", "r"],
    ["correct-score", "abcd1234", "--score", "0.5", "--reason", "r"],
    ["recover-stale"],
]


def cli_in(tmp: Path, db: Path, *args: str) -> Result:
    scratch = tmp / "scratch"
    scratch.mkdir(exist_ok=True)
    argv = [a.replace("DIR", str(scratch)) for a in args]
    return CliRunner().invoke(cli, ["--db", str(db), *argv])


def foreign_database(path: Path, *, wal: bool) -> Path:
    """A user's own SQLite file with a `runs` table of its own."""
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, note TEXT)")
    conn.execute("INSERT INTO runs (note) VALUES ('my precious row')")
    conn.commit()
    conn.close()
    return path


class TestAPathWithNoLedger:
    @pytest.mark.parametrize("args", READ_COMMANDS, ids=lambda a: " ".join(a))
    def test_a_command_needing_a_ledger_says_there_is_none_and_creates_nothing(
        self, tmp_path: Path, args: list[str]
    ) -> None:
        ledgers = tmp_path / "ledgers"
        ledgers.mkdir()
        db = ledgers / "typo.db"
        result = cli_in(tmp_path, db, *args)
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith(f"Error: no ledger at {db}")
        assert "benchledger import" in result.stderr and "Traceback" not in result.output
        assert listing(ledgers) == []

    def test_a_missing_parent_directory_is_no_ledger_and_is_not_created(
        self, tmp_path: Path
    ) -> None:
        result = cli_in(tmp_path, tmp_path / "no" / "such" / "ledger.db", "runs")
        assert result.exit_code == 1 and "Error: no ledger at" in result.stderr
        assert not (tmp_path / "no").exists()

    def test_an_empty_file_is_no_ledger_to_readers_and_stays_empty(self, tmp_path: Path) -> None:
        db = tmp_path / "empty.db"
        db.touch()
        result = cli_in(tmp_path, db, "runs")
        assert result.exit_code == 1
        assert f"Error: no ledger at {db} (the file is empty)" in result.stderr
        assert db.stat().st_size == 0 and listing(tmp_path) == ["empty.db", "scratch"]


class TestWriteCommandsStartALedger:
    @pytest.mark.parametrize("command", ["import", "demo"])
    def test_but_not_its_missing_directory_which_they_name(
        self, tmp_path: Path, command: str
    ) -> None:
        path = write_json(tmp_path / "run.json", run_json())
        missing = tmp_path / "results" / "2026"
        args = ["import", str(path)] if command == "import" else ["demo"]
        result = cli_in(tmp_path, missing / "ledger.db", *args)
        assert result.exit_code == 1
        assert result.stderr.startswith(f"Error: directory {missing} does not exist")
        assert not (tmp_path / "results").exists()

    def test_import_refuses_an_empty_file_someone_else_made(self, tmp_path: Path) -> None:
        db = tmp_path / "empty.db"
        db.touch()
        path = write_json(tmp_path / "run.json", run_json())
        result = cli_in(tmp_path, db, "import", str(path))
        assert result.exit_code == 1
        assert result.stderr.startswith(f"Error: {db} is an empty file, not a ledger")
        assert db.stat().st_size == 0


class TestSomethingElseAtThePath:
    @pytest.mark.parametrize("wal", [False, True], ids=["rollback-journal", "wal"])
    @pytest.mark.parametrize(
        "args",
        [["runs"], ["latest"], ["verify"], ["rebuild"], ["demo"], ["import", "RUN"], ["serve"]],
        ids=lambda a: a[0],
    )
    def test_a_foreign_sqlite_database_is_refused_and_left_byte_identical(
        self, tmp_path: Path, wal: bool, args: list[str]
    ) -> None:
        home = tmp_path / "home"
        home.mkdir()
        db = foreign_database(home / "other.db", wal=wal)
        before, files = digest(db), listing(home)
        run = write_json(tmp_path / "run.json", run_json())
        result = cli_in(tmp_path, db, *[str(run) if a == "RUN" else a for a in args])
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith(f"Error: {db} is not a benchledger ledger")
        assert digest(db) == before and listing(home) == files
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            assert conn.execute("SELECT note FROM runs").fetchall() == [("my precious row",)]

    @pytest.mark.parametrize("args", [["runs"], ["verify"], ["demo"]], ids=lambda a: a[0])
    def test_a_text_file_is_not_a_sqlite_database_and_is_left_alone(
        self, tmp_path: Path, args: list[str]
    ) -> None:
        notes = tmp_path / "notes.txt"
        notes.write_text("remember the milk\n" * 20)
        before = digest(notes)
        result = cli_in(tmp_path, notes, *args)
        assert result.exit_code == 1 and "Traceback" not in result.output
        assert result.stderr.startswith(f"Error: {notes} is not a SQLite database")
        assert digest(notes) == before

    def test_a_directory_is_refused(self, tmp_path: Path) -> None:
        result = cli_in(tmp_path, tmp_path, "runs")
        assert result.exit_code != 0 and "Error:" in result.stderr
        assert "is a directory" in result.stderr

    def test_a_named_pipe_is_refused_without_waiting_for_a_writer(self, tmp_path: Path) -> None:
        pipe = tmp_path / "ledger.db"
        os.mkfifo(pipe)
        result = cli_in(tmp_path, pipe, "runs")
        assert result.exit_code == 1 and "is not a regular file" in result.stderr


class TestNothingBesideTheLedger:
    def test_building_rebuilding_and_reading_leave_only_the_ledger_file(
        self, tmp_path: Path
    ) -> None:
        home = tmp_path / "home"
        home.mkdir()
        db = build_demo(home / "ledger.db")
        for args in (["rebuild"], ["runs"], ["verify"], ["--read-only", "runs"]):
            assert cli_in(tmp_path, db, *args).exit_code == 0
        assert listing(home) == ["ledger.db"]

    def test_the_rebuild_lock_is_held_on_the_directory_while_rebuilding(
        self, tmp_path: Path
    ) -> None:
        held: list[bool] = []

        def probe(_: int) -> None:
            if held:
                return
            descriptor = os.open(tmp_path, os.O_RDONLY)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held.append(False)
            except BlockingIOError:
                held.append(True)
            finally:
                os.close(descriptor)

        build_demo(tmp_path / "ledger.db")
        with build(Settings(db_path=tmp_path / "ledger.db")) as services:
            services.runner.rebuild(progress=probe)
        assert held == [True]
        assert listing(tmp_path) == ["ledger.db"]
