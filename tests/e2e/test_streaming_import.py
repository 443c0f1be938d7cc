"""A streamed import killed at any point shows nothing of the file; importing it again
completes it, once."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

CLI = [sys.executable, "-c", "from benchledger.commands.cli import cli; cli()"]
RUNS, CELLS_PER_RUN = 150, 1000
CELLS = RUNS * CELLS_PER_RUN
MiB = 1 << 20


def write_big_file(path: Path, runs: int = RUNS) -> Path:
    with path.open("w") as f:
        for r in range(runs):
            run = {
                "type": "run",
                "run_key": f"r{r:04d}",
                "benchmark": f"bench_{r % 3}",
                "agent": "eliza",
                "model": "gpt-oss-120b",
                "status": "succeeded",
                "score": 0.5,
            }
            f.write(json.dumps(run) + "\n")
            for i in range(CELLS_PER_RUN):
                cell = {"type": "cell", "key": f"t{i}", "outcome": "passed", "score": 1.0}
                cell["metrics"] = {"latency_ms": i, "note": "x" * (i % 17)}
                f.write(json.dumps(cell) + "\n")
    return path


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_big_file(tmp_path_factory.mktemp("input") / "big.jsonl")


def benchledger(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "--db", str(db), *args], capture_output=True, text=True, timeout=300, check=False
    )


def committed_events(db: Path) -> int:
    """What a reader sees of the event store (uncommitted rows are invisible to it)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
            return int(conn.execute("SELECT count(*) FROM stored_events").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


def wal_size(db: Path) -> int:
    try:
        return (db.parent / (db.name + "-wal")).stat().st_size
    except FileNotFoundError:
        return 0


def rows(db: Path, table: str) -> int:
    """Rows a reader of the read models sees, without catching anything up."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
            return 0
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def kill_when(db: Path, source: Path, reached: Callable[[], bool]) -> bool:
    """Start an import and SIGKILL it as soon as `reached()`; False if it ended first."""
    process = subprocess.Popen(
        [*CLI, "--db", str(db), "import", str(source)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while process.poll() is None:
            if reached():
                os.kill(process.pid, signal.SIGKILL)
                process.wait(timeout=60)
                return True
            time.sleep(0.002)
        return False
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


class TestAKilledImportLeavesNoPartialFile:
    @pytest.mark.parametrize(
        "point",
        ["one MiB appended", "eight MiB appended", "appended, being folded"],
    )
    def test_nothing_of_the_file_shows_and_a_reimport_completes_it_once(
        self, tmp_path: Path, big_file: Path, point: str
    ) -> None:
        db = tmp_path / "ledger.db"
        first = tmp_path / "first.jsonl"
        first.write_text(
            '{"type": "run", "run_key": "first", "benchmark": "bfcl", "agent": "eliza", '
            '"model": "m", "status": "succeeded"}\n'
            '{"type": "cell", "key": "a", "outcome": "passed"}\n'
        )
        assert benchledger(db, "import", str(first)).returncode == 0
        before_wal, before_events = wal_size(db), committed_events(db)

        def reached() -> bool:
            if point == "one MiB appended":
                return wal_size(db) > before_wal + MiB
            if point == "eight MiB appended":
                return wal_size(db) > before_wal + 8 * MiB
            return committed_events(db) > before_events

        killed = kill_when(db, big_file, reached)
        assert killed, f"the import ended before {point}"
        events = committed_events(db)
        if point == "appended, being folded":
            assert events > before_events
        else:
            assert events == before_events, "the kill came after the file was committed"
        cells, runs = rows(db, "cells"), rows(db, "runs")
        assert cells in (1, 1 + CELLS), f"{cells - 1} cells of the file are visible"
        assert runs in (1, 1 + RUNS)
        assert rows(db, "imports") in (1, 2)

        again = benchledger(db, "import", str(big_file))
        assert again.returncode == 0, again.stderr
        with sqlite3.connect(db) as conn:
            total, distinct = conn.execute(
                "SELECT count(*), count(DISTINCT run_id || '/' || key) FROM cells"
            ).fetchone()
            stored = conn.execute("SELECT count(*) FROM stored_events").fetchone()[0]
        assert (total, distinct) == (1 + CELLS, 1 + CELLS)
        assert rows(db, "runs") == 1 + RUNS
        # Each run is the run stated whole and its cell batches, appended once.
        assert stored >= RUNS * (1 + CELLS_PER_RUN // 500)
        verify = benchledger(db, "verify")
        assert verify.returncode == 0, verify.stdout + verify.stderr
        out = tmp_path / "viewer_data.json"
        exported = benchledger(db, "export-viewer-data", "--out", str(out))
        assert exported.returncode == 0, exported.stderr
        assert len(json.loads(out.read_text())["runs"]) == 1 + RUNS

    def test_a_third_import_of_the_file_is_unchanged(self, tmp_path: Path, big_file: Path) -> None:
        db = tmp_path / "ledger.db"
        assert benchledger(db, "import", str(big_file)).returncode == 0
        again = benchledger(db, "import", "--json", str(big_file))
        assert again.returncode == 0, again.stderr
        assert '"unchanged"' in again.stdout
        assert rows(db, "cells") == CELLS


def peak_rss_of_import(db: Path, source: Path) -> int:
    """The peak resident memory (KiB) of an import, measured in a parent of its own."""
    measure = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], check=True, capture_output=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    command = [sys.executable, "-c", measure, *CLI, "--db", str(db), "import", str(source)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True)
    return int(done.stdout.split()[-1])


class TestMemory:
    def test_memory_does_not_grow_with_the_size_of_the_file(
        self, tmp_path: Path, big_file: Path
    ) -> None:
        # Reading the events back holds a page of them (a hundred thousand cells), so
        # memory reaches its plateau by the first file; three times the cells add nothing.
        small_peak = peak_rss_of_import(tmp_path / "small.db", big_file)
        bigger = write_big_file(tmp_path / "bigger.jsonl", runs=3 * RUNS)
        big_peak = peak_rss_of_import(tmp_path / "big.db", bigger)
        assert big_peak < 1.25 * small_peak, (small_peak, big_peak)
