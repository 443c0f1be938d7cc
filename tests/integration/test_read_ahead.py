"""A large file is parsed in a child process while the import appends it: the same
records, the same errors, nothing left behind when the import stops early."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters import formats
from benchledger.adapters.store import forked, read_ahead
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunHeader, RunRecord
from tests.conftest import Invoke
from tests.integration.test_orchestrator_stream import many_rows
from tests.unit.test_format_orchestrator import make_db


@pytest.fixture(autouse=True)
def forking(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads other tests left behind (a PostgreSQL pool's) would stop the fork: these
    tests are about the child, so they fork anyway (the test with a thread of its own
    checks that the import does not)."""
    if not any(own in request.node.name for own in ("with_other_threads", "busy_machine")):
        monkeypatch.setattr(read_ahead, "can_read_ahead", lambda: True)


def record(key: str) -> RunRecord:
    header = RunHeader(run_key=key, benchmark="b", agent="a", model="m", status="succeeded")
    return RunRecord(header=header)


def from_pids(n: int) -> Iterator[RunRecord]:
    """Records that say which process made them."""
    for i in range(n):
        yield record(f"{os.getpid()}-{i}")


class TestParsedInAChild:
    def test_records_come_in_order_from_another_process(self) -> None:
        got = list(read_ahead.read_ahead(lambda: from_pids(120), "f"))
        assert [r.header.run_key.split("-")[1] for r in got] == [str(i) for i in range(120)]
        assert {r.header.run_key.split("-")[0] for r in got} != {str(os.getpid())}

    def test_a_database_read_ahead_gives_what_reading_it_in_process_gives(
        self, tmp_path: Path
    ) -> None:
        db = make_db(tmp_path / "orchestrator.sqlite", many_rows(120))
        fmt = formats.load("orchestrator")
        ahead = list(read_ahead.read_ahead(lambda: formats.stream(fmt, db), str(db)))
        assert ahead == list(formats.stream(fmt, db)) and len(ahead) == 120

    def test_an_error_in_the_parse_is_raised_as_it_was(self) -> None:
        def failing() -> Iterator[RunRecord]:
            yield record("a")
            raise InputFormatError("x.sqlite", "bad status", field="benchmark_runs.status")

        got: list[RunRecord] = []
        with pytest.raises(InputFormatError) as e:
            got.extend(read_ahead.read_ahead(failing, "x.sqlite"))
        assert [r.header.run_key for r in got] == ["a"]
        assert (e.value.path, e.value.field, e.value.message) == (
            "x.sqlite",
            "benchmark_runs.status",
            "bad status",
        )
        assert str(e.value) == "x.sqlite: field 'benchmark_runs.status': bad status"

    def test_an_error_that_cannot_travel_is_named_for_the_file(self) -> None:
        class Odd(Exception):
            def __init__(self) -> None:
                super().__init__("odd")
                self.handle = threading.Lock()  # cannot be pickled

        def failing() -> Iterator[RunRecord]:
            raise Odd()
            yield  # a generator

        with pytest.raises(InputFormatError, match=r"x\.sqlite: cannot be read: Odd: odd"):
            list(read_ahead.read_ahead(failing, "x.sqlite"))

    @pytest.mark.parametrize("where", ["child", "parent"])
    def test_the_check_is_done_by_one_process_or_the_other_and_refuses_the_same(
        self, where: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """The child checks what it sends while the parent is the slower half (here:
        always), else the parent checks what it receives (here: always); either way
        every record is checked at its index, and the one refused is raised after the
        records before it. A batch the child refuses is sent unchecked, and the parent
        checks it again: the refusal is the parent's, as in one process."""
        ahead = 0 if where == "child" else 1 << 62
        monkeypatch.setattr(forked, "SPARE_WHEN_WAITING", ahead)
        parent = os.getpid()
        log = tmp_path / "checked"

        def check(r: RunRecord, index: int) -> None:
            assert r.header.run_key is not None
            by = "parent" if os.getpid() == parent else "child"
            with log.open("a") as f:
                f.write(f"{index} {by}\n")
            if int(r.header.run_key.split("-")[1]) != index:
                raise InputFormatError("f", f"checked out of place: {index}")
            if index == 77:
                raise InputFormatError("f", f"record 77 refused by the {by}", field="x")

        got: list[RunRecord] = []
        with pytest.raises(InputFormatError) as e:
            got.extend(read_ahead.read_ahead(lambda: from_pids(120), "f", check))
        assert str(e.value) == "f: field 'x': record 77 refused by the parent"
        assert [int(r.header.run_key.split("-")[1]) for r in got] == list(range(77))
        checked = [line.split() for line in log.read_text().splitlines()]
        assert {int(i) for i, _ in checked} >= set(range(78))
        assert {by for i, by in checked if int(i) < 50} == {where}
        log.unlink()
        passed = list(read_ahead.read_ahead(lambda: from_pids(70), "f", check))
        assert len(passed) == 70
        assert {by for _, by in (line.split() for line in log.read_text().splitlines())} == {where}

    def test_a_child_that_dies_without_a_word_fails_the_file(self) -> None:
        def dying() -> Iterator[RunRecord]:
            yield record("a")
            os._exit(3)

        with pytest.raises(InputFormatError, match="reader process ended before the file"):
            list(read_ahead.read_ahead(dying, "x.sqlite"))

    def test_stopping_early_ends_the_child_and_its_copy_of_the_database(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        scratch = tmp_path / "scratch"
        scratch.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(scratch))
        db = make_db(tmp_path / "orchestrator.sqlite", many_rows(400))
        fmt = formats.load("orchestrator")
        records = read_ahead.read_ahead(lambda: formats.stream(fmt, db), str(db))
        assert next(records) is not None
        records.close()  # as an import that met a conflict does
        assert list(scratch.iterdir()) == []

    def test_with_other_threads_running_the_file_is_parsed_in_process(self) -> None:
        stop = threading.Event()
        helper = threading.Thread(target=stop.wait)
        helper.start()
        try:
            got = list(read_ahead.read_ahead(lambda: from_pids(3), "f"))
        finally:
            stop.set()
            helper.join()
        assert {r.header.run_key.split("-")[0] for r in got} == {str(os.getpid())}

    def test_on_a_busy_machine_the_file_is_parsed_in_process(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
        monkeypatch.setattr(forked, "busy_cores", lambda: 1.9)
        got = list(read_ahead.read_ahead(lambda: from_pids(3), "f"))
        assert {r.header.run_key.split("-")[0] for r in got} == {str(os.getpid())}

    def test_off_a_busy_machine_the_file_is_parsed_in_a_child(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
        monkeypatch.setattr(forked, "busy_cores", lambda: 0.2)
        monkeypatch.setattr(os, "getloadavg", lambda: (2.4, 2.0, 1.5))  # what has just ended
        monkeypatch.setattr(threading, "active_count", lambda: 1)  # other tests' threads
        got = list(read_ahead.read_ahead(lambda: from_pids(3), "f"))
        assert {r.header.run_key.split("-")[0] for r in got} != {str(os.getpid())}


class TestACoreToSpare:
    @pytest.mark.parametrize(
        ("cores", "load", "own", "spare"),
        [
            (1, 0.0, 0.0, False),  # one core: a child only takes turns with this process
            (2, 0.0, 0.0, True),
            (2, 0.4, 0.0, True),  # a little else running
            (2, 1.0, 0.0, False),  # another busy process beside this one
            (2, 1.4, 0.95, True),  # this process (and a child it had) busy a while
            (2, 2.4, 0.95, False),
            (4, 1.9, 0.0, True),  # two busy beside this one, one core idle
            (4, 2.9, 0.0, False),
        ],
    )
    def test_a_child_is_forked_only_with_a_core_it_takes_from_nobody(
        self, cores: int, load: float, own: float, spare: bool
    ) -> None:
        assert forked.spare_core(cores, load, own) is spare

    def test_without_the_cores_own_counts_the_load_average_tells(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
        monkeypatch.setattr(forked, "busy_cores", lambda: None)
        monkeypatch.setattr(forked, "own_load", lambda: 0.0)
        monkeypatch.setattr(os, "getloadavg", lambda: (1.2, 1.0, 1.0))
        assert forked.core_to_spare() is False
        monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 1.0, 1.0))
        assert forked.core_to_spare() is True

    def test_a_busy_process_shows_in_the_cores_busy_now(self) -> None:
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            time.sleep(0.2)  # started and spinning
            measured = forked.busy_cores()
        finally:
            busy.kill()
            busy.wait()
        assert measured is not None, "/proc/stat is read on Linux"
        assert measured >= 0.7, measured  # the spinning process: about a core of its own

    def test_this_process_counts_its_own_part_of_the_load(self) -> None:
        began = time.process_time()
        while time.process_time() - began < 0.2:  # busy, as an import is
            pass
        assert 0 < forked.own_load() < 2  # this process, and a child at most


def stored_events(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM stored_events").fetchone()[0])


class TestImportingALargeFile:
    def test_a_database_read_ahead_imports_as_it_does_in_process(
        self, invoke: Invoke, db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        source = make_db(tmp_path / "src" / "orchestrator.sqlite", many_rows(40))
        invoke("import", str(source))
        in_process = json.loads(invoke("runs", "--json").stdout)
        (db.parent / "ahead").mkdir()
        ahead_db = db.parent / "ahead" / "ledger.db"
        monkeypatch.setattr(read_ahead, "READ_AHEAD_BYTES", 0)
        forks: list[int] = []
        fork = os.fork

        def counted_fork() -> int:
            forks.append(1)
            return fork()

        monkeypatch.setattr(os, "fork", counted_fork)
        invoke("--db", str(ahead_db), "import", str(source))
        assert forks == [1]
        ahead = json.loads(invoke("--db", str(ahead_db), "runs", "--json").stdout)
        drop = {"run_group_id", "recorded_at", "updated_at", "last_heard_at"}

        def same(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [{k: v for k, v in r.items() if k not in drop} for r in rows]

        assert len(ahead) == len(in_process) == 20
        for a, b in zip(same(ahead), same(in_process), strict=True):
            assert {k: v for k, v in a.items() if v != b[k]} == {}

    def test_a_conflict_found_while_reading_ahead_appends_nothing(
        self, invoke: Invoke, db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(read_ahead, "READ_AHEAD_BYTES", 0)
        rows = many_rows(300)
        invoke("import", str(make_db(tmp_path / "a" / "orchestrator.sqlite", rows[:1])))
        before = stored_events(db)
        changed = [{**rows[0], "score": 0.1}, *rows[1:]]
        result = invoke(
            "import", str(make_db(tmp_path / "b" / "orchestrator.sqlite", changed)), expect=1
        )
        assert "already recorded with other facts" in result.stderr
        assert stored_events(db) == before

    @pytest.mark.parametrize("checked_by", ["child", "parent"])
    def test_a_row_beyond_the_limits_is_refused_as_in_process(
        self,
        invoke: Invoke,
        db: Path,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        checked_by: str,
    ) -> None:
        monkeypatch.setattr(forked, "SPARE_WHEN_WAITING", 0 if checked_by == "child" else 1 << 62)
        rows = many_rows(12)
        rows[5] = {**rows[5], "cwd": "/srv/" + "x" * 3000}
        source = make_db(tmp_path / "src" / "orchestrator.sqlite", rows)
        args = ("import", str(source), "--limit", "string-length=2000")
        in_process = invoke(*args, expect=1).stderr
        assert "exceeds the limit of 2000 characters" in in_process
        monkeypatch.setattr(read_ahead, "READ_AHEAD_BYTES", 0)
        assert invoke(*args, expect=1).stderr == in_process
        assert stored_events(db) == 0
