"""A bulk write's log is copied into the file by a thread, not by the committing connection:
what is committed stays readable and whole, the log ends empty, and a thread that cannot
copy loses nothing."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.store import fold_ahead, hotpath, projection_runner
from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.adapters.store.importer import Importer
from benchledger.projections import checkpointer as checkpointer_module
from benchledger.projections.checkpointer import Checkpointer
from tests.integration.test_fold_ahead import with_rowids
from tests.integration.test_orchestrator_stream import many_rows
from tests.unit.test_format_orchestrator import make_db

PAGE = b"x" * 4000


def wal_file(tmp_path: Path) -> tuple[Path, sqlite3.Connection]:
    path = tmp_path / "wal.db"
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("CREATE TABLE t (i INTEGER PRIMARY KEY, data BLOB)")
    return path, writer


def commit_rows(writer: sqlite3.Connection, start: int, count: int) -> None:
    writer.execute("BEGIN IMMEDIATE")
    writer.executemany(
        "INSERT INTO t VALUES (?, ?)", ((i, PAGE) for i in range(start, start + count))
    )
    writer.execute("COMMIT")


def wal_bytes(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return wal.stat().st_size if wal.exists() else 0


def wait_for(condition: Any, what: str) -> None:
    """A liveness wait for the thread (not a measure of its speed)."""
    for _ in range(400):
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_the_writer_stops_checkpointing_and_the_thread_copies_each_commit(
    tmp_path: Path,
) -> None:
    path, writer = wal_file(tmp_path)
    threads = threading.active_count()
    ck = Checkpointer(path, writer)
    try:
        assert writer.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
        for k in range(5):
            before = ck.checkpoints
            commit_rows(writer, k * 500, 500)
            ck.committed()
            wait_for(lambda b=before: ck.checkpoints > b, "a checkpoint")
        # Copied by the thread, not by the writer's commits (they no longer checkpoint).
        assert ck.emptied == 0
    finally:
        ck.close()
    assert threading.active_count() == threads
    assert writer.execute("PRAGMA wal_autocheckpoint").fetchone() == (1000,)
    assert ck.emptied == 1  # on its way out
    assert wal_bytes(path) == 0
    with sqlite3.connect(path) as reader:
        assert reader.execute("SELECT count(*), sum(length(data)) FROM t").fetchone() == (
            2500,
            2500 * len(PAGE),
        )
    writer.close()


def test_a_log_past_its_bound_is_emptied_while_the_writer_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpointer_module, "WAL_BYTES", 1 << 20)
    path, writer = wal_file(tmp_path)
    ck = Checkpointer(path, writer)
    try:
        for k in range(4):
            before = ck.checkpoints
            commit_rows(writer, k * 500, 500)  # about 2 MiB of log each
            ck.committed()
            wait_for(lambda b=before: ck.checkpoints > b, "a checkpoint")
        assert ck.emptied >= 3  # each commit's pages left the log over its bound
        assert wal_bytes(path) <= 3 << 20
    finally:
        ck.close()
    with sqlite3.connect(path) as reader:
        assert reader.execute("SELECT count(*) FROM t").fetchone() == (2000,)
    writer.close()


def test_a_reader_holding_the_log_makes_it_give_up_emptying_it_and_not_wait_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A TRUNCATE waits for readers and holds the writer back meanwhile: once a reader
    made one give up, the log grows by another bound before the next one waits."""
    monkeypatch.setattr(checkpointer_module, "WAL_BYTES", 1 << 20)
    monkeypatch.setattr(checkpointer_module, "RESTART_WAIT_S", 0.1)
    path, writer = wal_file(tmp_path)
    commit_rows(writer, 0, 10)
    reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (10,)  # a snapshot held
    ck = Checkpointer(path, writer)
    try:
        for k in range(1, 6):
            before = ck.checkpoints
            commit_rows(writer, k * 100, 100)  # 0.4 MiB of log each
            ck.committed()
            wait_for(lambda b=before: ck.checkpoints > b, "a checkpoint")
        # Past 1 MiB at the third commit (1.2 MiB): refused, and the next bound is 2.2
        # MiB, which the fifth (2 MiB) is within.
        assert (ck.refused, ck.emptied) == (1, 0)
        reader.execute("COMMIT")
    finally:
        ck.close()
    assert (ck.refused, ck.emptied) == (1, 1)
    assert wal_bytes(path) == 0
    with sqlite3.connect(path) as other:
        assert other.execute("SELECT count(*) FROM t").fetchone() == (510,)
    reader.close()
    writer.close()


def test_the_last_checkpoint_gives_a_reader_holding_the_log_its_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the bulk ends, a reader still holding the log makes the emptying checkpoint
    give up (after `STOP_WAIT_MS`), not hold the command's end for `RESTART_WAIT_S`;
    what is committed stays whole, in the log."""
    monkeypatch.setattr(checkpointer_module, "RESTART_WAIT_S", 30.0)
    path, writer = wal_file(tmp_path)
    commit_rows(writer, 0, 10)
    reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (10,)
    ck = Checkpointer(path, writer)
    commit_rows(writer, 10, 100)
    ck.committed()
    closing = threading.Thread(target=ck.close, daemon=True)
    closing.start()
    closing.join(10)  # a liveness bound: without the short wait it takes 30 s
    assert not closing.is_alive()
    assert (ck.refused, ck.emptied) == (1, 0)
    assert wal_bytes(path) > 0
    reader.execute("COMMIT")
    with sqlite3.connect(path) as other:
        assert other.execute("SELECT count(*) FROM t").fetchone() == (110,)
    reader.close()
    writer.close()


def test_a_thread_that_cannot_checkpoint_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path, writer = wal_file(tmp_path)

    class Refusing:
        Error = sqlite3.Error

        @staticmethod
        def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(checkpointer_module, "sqlite3", Refusing)
    with caplog.at_level(logging.WARNING, logger=checkpointer_module.__name__):
        ck = Checkpointer(path, writer)
        commit_rows(writer, 0, 500)
        ck.committed()
        ck.close()
    assert "unable to open database file" in caplog.text
    assert ck.checkpoints == 0
    assert wal_bytes(path) > 0  # left in the log, which the next checkpoint copies
    assert writer.execute("PRAGMA wal_autocheckpoint").fetchone() == (1000,)
    with sqlite3.connect(path) as reader:
        assert reader.execute("SELECT count(*) FROM t").fetchone() == (500,)
    writer.close()


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Checkpointer]]:
    """Fold ahead however few the events, and keep every Checkpointer the store makes."""
    monkeypatch.setattr(hotpath, "FOLD_AHEAD_EVENTS", 0)
    monkeypatch.setattr(fold_ahead.forked, "can_fork", lambda: True)
    monkeypatch.setattr(projection_runner, "PAGE", 7)
    monkeypatch.setattr(projection_runner, "REBUILD_COMMIT_EVENTS", 20)
    kept: list[Checkpointer] = []

    class Kept(Checkpointer):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            kept.append(self)

    monkeypatch.setattr(checkpointer_module, "Checkpointer", Kept)
    yield kept


def test_a_first_catch_up_folded_ahead_copies_its_log_aside_and_ends_the_thread(
    db: Path, tmp_path: Path, made: list[Checkpointer]
) -> None:
    source = make_db(tmp_path / "src" / "orchestrator.sqlite", many_rows(60))
    with build(Settings(db_path=db)) as services:
        group = services.ledger.new_group("import", "import")
        Importer(services.ledger).import_file(source, group=group)
        services.ledger.close_group(group)
    copy = tmp_path / "copy.db"
    copy.write_bytes(db.read_bytes())
    threads = threading.active_count()
    with build(Settings(db_path=db)) as services:
        services.runner.catch_up()
        assert threading.active_count() == threads  # joined with the bulk
    assert len(made) == 1
    assert made[0].checkpoints >= 1 and made[0].emptied == 1
    # The same rows as a catch-up whose commits checkpoint themselves.
    with pytest.MonkeyPatch.context() as in_process:
        in_process.setattr(hotpath, "FOLD_AHEAD_EVENTS", 10**9)
        with build(Settings(db_path=copy)) as services:
            services.runner.catch_up()
    assert len(made) == 1
    assert with_rowids(db) == with_rowids(copy)


def test_a_catch_up_of_few_events_makes_no_thread(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[int] = []
    monkeypatch.setattr(checkpointer_module, "Checkpointer", lambda *a: made.append(1))
    source = make_db(tmp_path / "src" / "orchestrator.sqlite", many_rows(20))
    with build(Settings(db_path=db)) as services:
        group = services.ledger.new_group("import", "import")
        Importer(services.ledger).import_file(source, group=group)
        services.ledger.close_group(group)
        services.runner.catch_up()
    assert made == []
