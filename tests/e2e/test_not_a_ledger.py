"""Files that are not ledgers are never adopted, and read-only ledgers get nothing beside them."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from benchledger.commands.cli import cli
from tests.helpers import run_json, write_json
from tests.ledgers import build_demo, digest, listing

WRITERS = [["import", "RUN"], ["demo"], ["rebuild"], ["follow", "--polls", "1"]]
READERS = [["runs", "--json"], ["latest"], ["verify"], ["events", "--limit", "3"]]
NOBODY = 65534


def cli_in(tmp: Path, db: Path, *args: str) -> Result:
    run = write_json(tmp / "run.json", run_json())
    argv = [str(run) if a == "RUN" else a for a in args]
    return CliRunner().invoke(cli, ["--db", str(db), *argv])


def untouched(path: Path) -> tuple[str, int, int]:
    info = path.stat()
    return digest(path), info.st_size, info.st_mtime_ns


def crafted(path: Path, sql: str) -> Path:
    """A SQLite file made by someone else, with `sql` as its schema and rows."""
    conn = sqlite3.connect(path)
    conn.executescript(sql)
    conn.close()
    return path


# Tables named like ours, none of them a ledger.
CRAFTED = {
    "stored-events-other-columns": "CREATE TABLE stored_events (id INTEGER, body TEXT);"
    "INSERT INTO stored_events VALUES (1, 'mine');",
    "stored-events-a-view": "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');"
    "CREATE VIEW stored_events AS SELECT body AS topic FROM notes;",
    "projection-state-other-columns": "CREATE TABLE _projection_state (name TEXT);"
    "CREATE TABLE runs (note TEXT); INSERT INTO runs VALUES ('mine');",
    "read-model-names-only": "CREATE TABLE runs (note TEXT); CREATE TABLE cells (x);"
    "CREATE TABLE latest (y); INSERT INTO runs VALUES ('mine');",
    "a-view-only": "CREATE VIEW answer AS SELECT 42;",
}


class TestAnEmptyFile:
    @pytest.mark.parametrize("args", WRITERS, ids=lambda a: a[0])
    def test_is_refused_by_every_writer_and_left_as_it_was(
        self, tmp_path: Path, args: list[str]
    ) -> None:
        home = tmp_path / "home"
        home.mkdir()
        db = home / "ledger.db"
        db.touch()
        before = untouched(db)
        result = cli_in(tmp_path, db, *args)
        assert result.exit_code == 1, result.output
        if args[0] in ("import", "demo"):  # those that may start a ledger
            assert result.stderr.startswith(f"Error: {db} is an empty file, not a ledger")
        else:
            assert result.stderr.startswith(f"Error: no ledger at {db} (the file is empty)")
        assert "Traceback" not in result.output
        assert untouched(db) == before and listing(home) == ["ledger.db"]

    def test_a_path_where_nothing_exists_still_starts_a_ledger(self, tmp_path: Path) -> None:
        db = tmp_path / "new.db"
        assert cli_in(tmp_path, db, "import", "RUN").exit_code == 0
        assert '"bfcl"' in cli_in(tmp_path, db, "runs", "--json").stdout

    def test_an_event_store_reader_does_not_adopt_it_either(self, tmp_path: Path) -> None:
        db = tmp_path / "reader.db"
        db.touch()
        before = untouched(db)
        result = CliRunner().invoke(
            cli,
            ["--event-store", "postgresql://nobody@127.0.0.1:1/none", "--db", str(db), "runs"],
        )
        assert result.exit_code == 1
        assert "is an empty file, not a ledger" in result.stderr
        assert untouched(db) == before


class TestASQLiteDatabaseNamedLikeALedger:
    @pytest.mark.parametrize("sql", CRAFTED.values(), ids=CRAFTED.keys())
    @pytest.mark.parametrize("args", [*WRITERS, *READERS], ids=lambda a: a[0])
    def test_is_refused_as_sqlite_but_not_a_ledger_and_never_written(
        self, tmp_path: Path, sql: str, args: list[str]
    ) -> None:
        home = tmp_path / "home"
        home.mkdir()
        db = crafted(home / "other.db", sql)
        before = untouched(db)
        result = cli_in(tmp_path, db, *args)
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith(f"Error: {db} is not a benchledger ledger (a SQLite")
        assert "is not a SQLite database" not in result.stderr
        assert untouched(db) == before and listing(home) == ["other.db"]

    def test_the_error_names_what_differs(self, tmp_path: Path) -> None:
        db = crafted(tmp_path / "other.db", CRAFTED["stored-events-other-columns"])
        result = cli_in(tmp_path, db, "runs")
        assert "whose stored_events table has the columns id, body, not originator_id" in (
            result.stderr
        )
        db = crafted(tmp_path / "views.db", CRAFTED["stored-events-a-view"])
        assert "whose stored_events is a view" in cli_in(tmp_path, db, "demo").stderr
        db = crafted(tmp_path / "mine.db", CRAFTED["read-model-names-only"])
        assert "(it holds cells, latest, runs)" in cli_in(tmp_path, db, "import", "RUN").stderr

    def test_an_event_table_of_another_application_is_refused(self, tmp_path: Path) -> None:
        db = crafted(
            tmp_path / "shop.db",
            "CREATE TABLE stored_events (originator_id TEXT, originator_version INTEGER, "
            "topic TEXT, state BLOB); INSERT INTO stored_events VALUES "
            "('x', 1, 'shop.orders:OrderPlaced', '{}');",
        )
        before = untouched(db)
        result = cli_in(tmp_path, db, "import", "RUN")
        assert result.exit_code == 1
        assert "stored_events hold another application's events (topic 'shop.orders" in (
            result.stderr
        )
        assert untouched(db) == before


@pytest.fixture(scope="module")
def demo_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo(tmp_path_factory.mktemp("demo") / "ledger.db")


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory another user can enter (pytest's own are the owner's only)."""
    path = Path(tempfile.mkdtemp(prefix="benchledger-ro-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def as_nobody(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI run by a user the ledger's modes apply to: nobody, where this is root."""
    argv = [sys.executable, "-c", "from benchledger.commands.cli import cli; cli()", *args]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: file modes would not apply")
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
    return subprocess.run(argv, capture_output=True, text=True, check=False, cwd="/")


class TestAReadOnlyLedgerGetsNoFilesBesideIt:
    @pytest.mark.parametrize("folder_writable", [True, False], ids=["folder-rw", "folder-ro"])
    @pytest.mark.parametrize("args", READERS, ids=lambda a: a[0])
    def test_a_ledger_file_the_user_cannot_write(
        self, demo_ledger: Path, shared_dir: Path, folder_writable: bool, args: list[str]
    ) -> None:
        home = shared_dir / "home"
        home.mkdir()
        db = home / "ledger.db"
        shutil.copyfile(demo_ledger, db)
        db.chmod(0o444)
        home.chmod(0o777 if folder_writable else 0o555)
        before = untouched(db)
        result = as_nobody("--db", str(db), *args)
        assert result.returncode == 0, result.stderr
        assert result.stdout
        assert listing(home) == ["ledger.db"] and untouched(db) == before

    @pytest.mark.parametrize("args", READERS, ids=lambda a: a[0])
    def test_the_read_only_option_leaves_nothing_either(
        self, demo_ledger: Path, tmp_path: Path, args: list[str]
    ) -> None:
        home = tmp_path / "home"
        home.mkdir()
        db = home / "ledger.db"
        shutil.copyfile(demo_ledger, db)
        before = untouched(db)
        result = CliRunner().invoke(cli, ["--db", str(db), "--read-only", *args])
        assert result.exit_code == 0, result.output
        assert listing(home) == ["ledger.db"] and untouched(db) == before

    def test_a_ledger_being_written_is_read_through_its_write_ahead_log(
        self, demo_ledger: Path, shared_dir: Path
    ) -> None:
        home = shared_dir / "home"
        home.mkdir()
        db = home / "ledger.db"
        shutil.copyfile(demo_ledger, db)
        home.chmod(0o777)
        writer = sqlite3.connect(db)  # a writer holds -wal and -shm open meanwhile
        try:
            writer.execute("PRAGMA journal_mode=WAL")
            writer.execute("PRAGMA wal_autocheckpoint=0")
            writer.execute("UPDATE runs SET agent = 'renamed-in-the-wal' WHERE rowid = 1")
            writer.commit()
            for name in ("ledger.db-wal", "ledger.db-shm"):
                (home / name).chmod(0o666)
            db.chmod(0o444)
            result = as_nobody("--db", str(db), "runs", "--json")
        finally:
            writer.close()
        assert result.returncode == 0, result.stderr
        assert "renamed-in-the-wal" in result.stdout
