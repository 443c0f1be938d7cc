"""Cells recorded while a benchmark runs: `benchledger run` follows what it writes.

A benchmark script (`live.py`) writes its native JSONL result a cell at a time, a
gap apart, and the tests read the ledger while it runs: through `--read-only`
commands (which never fold events themselves, so they show only what the runner
brought up to date) and through Datasette over the file. Steered by environment
variables, none part of the work's signature:

    LIVE_CELLS      how many cells to write (default 5)
    LIVE_GAP        seconds between cells (default 1)
    LIVE_PID_FILE   write the benchmark's pid here once it has started
    LIVE_PARTIAL    then write the start of another cell line, without its newline
    LIVE_HOLD       seconds to sleep after the cells (default 0)
    LIVE_REWRITE    at the end, replace the result: cell q1 with score 0.25, plus q9
    LIVE_PROGRESS   write the cells to progress.ndjson (with progress lines between)
                    and the result as result.json at the end
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchledger.adapters.publication.browse import datasette_for
from tests.conftest import Invoke
from tests.e2e.test_run import PROCESS_TIMEOUT, Workspace, alive, eventually, parse_time

LIVE_SCRIPT = """
import json, os, sys, time
from pathlib import Path

env = os.environ.get
out = Path(sys.argv[1])
if env("LIVE_PID_FILE"):
    Path(env("LIVE_PID_FILE") + ".tmp").write_text(str(os.getpid()))
    os.replace(env("LIVE_PID_FILE") + ".tmp", env("LIVE_PID_FILE"))
n, gap = int(env("LIVE_CELLS", "5")), float(env("LIVE_GAP", "1"))
header = {"type": "run", "status": "succeeded", "score": 0.6, "unit": "accuracy"}
cells = [
    {"type": "cell", "key": f"q{i}", "outcome": "passed" if i % 2 else "failed",
     "score": float(i % 2), "metrics": {"i": i}}
    for i in range(1, n + 1)
]
progress = bool(env("LIVE_PROGRESS"))
path = out / ("progress.ndjson" if progress else "result.jsonl")
with path.open("w") as f:
    if not progress:
        f.write(json.dumps(header) + "\\n")
    for i, cell in enumerate(cells):
        if i:
            time.sleep(gap)
        if progress:
            f.write(json.dumps({"type": "progress", "done": i, "of": n}) + "\\n")
        f.write(json.dumps(cell) + "\\n")
        f.flush()
    if env("LIVE_PARTIAL"):
        f.write('{"type": "cell", "key": "half", "outc')
        f.flush()
    time.sleep(float(env("LIVE_HOLD", "0")))
if progress:
    doc = {k: v for k, v in header.items() if k != "type"}
    doc["schema"] = "benchledger/run@1"
    doc["cells"] = [{k: v for k, v in c.items() if k != "type"} for c in cells]
    (out / "result.json").write_text(json.dumps(doc))
if env("LIVE_REWRITE"):
    cells[0]["score"] = 0.25
    cells.append({"type": "cell", "key": "q9", "outcome": "passed", "score": 1.0})
    (out / "new.tmp").write_text("".join(json.dumps(x) + "\\n" for x in [header, *cells]))
    os.replace(out / "new.tmp", path)
"""


class LiveWorkspace(Workspace):
    def __init__(self, root: Path, invoke: Invoke) -> None:
        super().__init__(root, invoke)
        (root / "live.py").write_text(textwrap.dedent(LIVE_SCRIPT))
        command = json.dumps([sys.executable, "live.py", "{output_dir}"])
        with self.registry.open("a") as registry:
            registry.write(
                textwrap.dedent(
                    f"""
                    [benchmarks.live]
                    command = {command}
                    result = "result.jsonl"
                    unit = "accuracy"

                    [benchmarks.live_too]
                    command = {command}
                    result = "result.jsonl"

                    [benchmarks.progressing]
                    command = {command}
                    result = "result.json"
                    progress = "progress.ndjson"
                    """
                )
            )

    def shown(self, *args: str) -> Any:
        """What a `--read-only` command shows (None while the read models are behind)."""
        result = self.invoke("--read-only", *args, "--json", expect=None)
        if result.exit_code != 0:
            not_yet = ("no ledger at", "behind", "must be rebuilt", "no read models")
            assert any(text in result.stderr for text in not_yet), result.stderr
            return None
        return json.loads(result.stdout)

    def running(self) -> dict[str, Any] | None:
        rows = self.shown("runs") or []
        running = [r for r in rows if r["status"] == "running"]
        return running[0] if running else None

    def datasette_cells(self, run_id: str) -> list[str]:
        ds = datasette_for(self.db)

        async def fetch() -> httpx.Response:
            await ds.invoke_startup()
            response: httpx.Response = await ds.client.get(
                f"/ledger/cells.json?_shape=array&run_id={run_id}&_sort=key"
            )
            return response

        response = asyncio.run(fetch())
        assert response.status_code == 200, response.text[:500]
        return [row["key"] for row in response.json()]

    def datasette_run(self, run_id: str) -> dict[str, Any]:
        ds = datasette_for(self.db)

        async def fetch() -> httpx.Response:
            await ds.invoke_startup()
            response: httpx.Response = await ds.client.get(
                f"/ledger/runs.json?_shape=array&run_id={run_id}"
            )
            return response

        [row] = asyncio.run(fetch()).json()
        return dict(row)

    def runner_pid(self) -> int:
        return self.processes[-1].pid


@pytest.fixture
def lws(tmp_path: Path, invoke: Invoke) -> Iterator[LiveWorkspace]:
    workspace = LiveWorkspace(tmp_path, invoke)
    yield workspace
    workspace.cleanup()
    for pid_file in tmp_path.glob("live-*.pid"):
        pid = int(pid_file.read_text())
        if alive(pid) and b"live.py" in Path(f"/proc/{pid}/cmdline").read_bytes():
            os.kill(pid, signal.SIGKILL)


def cell_counts(lws: LiveWorkspace, run_id: str) -> tuple[str, int] | None:
    rows = [r for r in lws.shown("runs") or [] if r["run_id"] == run_id]
    return (rows[0]["status"], rows[0]["cells"]) if rows else None


class TestCellsWhileItRuns:
    def test_runs_and_datasette_show_the_running_run_and_its_growing_cells(
        self, lws: LiveWorkspace
    ) -> None:
        process = lws.start(benchmarks="live")
        run_id = eventually(lws.running, "the running run to be shown", seconds=20)["run_id"]
        # Datasette reads the file as it is: the runner brought the read models current.
        assert lws.datasette_run(run_id)["status"] == "running"

        seen: list[int] = []

        def grown_to(n: int) -> bool:
            shown = cell_counts(lws, run_id)
            if shown is None:
                return False
            status, cells = shown
            if status == "running" and (not seen or cells > seen[-1]):
                seen.append(cells)
            return status == "running" and cells >= n

        eventually(lambda: grown_to(2), "two cells while it runs", seconds=20)
        keys = lws.datasette_cells(run_id)
        assert len(keys) >= 2 and set(keys) <= {"q1", "q2", "q3", "q4", "q5"}
        eventually(lambda: grown_to(4), "four cells while it runs", seconds=20)
        assert len(seen) >= 2 and seen == sorted(seen), seen  # it grew, while running
        assert set(lws.datasette_cells(run_id)) >= {"q1", "q2", "q3", "q4"}

        outcome = lws.finish(process)["outcomes"][0]
        assert (outcome["state"], outcome["run_id"], outcome["score"]) == (
            "succeeded",
            run_id,
            0.6,
        )
        run = lws.shown("show", run_id)["run"]
        assert (run["status"], run["cells"], run["cells_passed"], run["cells_failed"]) == (
            "succeeded",
            5,
            3,
            2,
        )
        assert lws.datasette_cells(run_id) == ["q1", "q2", "q3", "q4", "q5"]
        # Streamed in several batches; the final result's cells were not recorded again.
        batches = [e for e in lws.history(run_id) if e["type"] == "CellsRecorded"]
        assert len(batches) >= 2
        assert sum(b["data"]["cells"]["count"] for b in batches) == 5
        assert lws.history(run_id)[-1]["type"] == "RunFinished"

    def test_cell_lines_of_a_progress_file_are_recorded_while_it_runs(
        self, lws: LiveWorkspace
    ) -> None:
        process = lws.start(
            benchmarks="progressing",
            env={"LIVE_PROGRESS": "1", "LIVE_GAP": "0", "LIVE_CELLS": "3", "LIVE_HOLD": "4"},
        )
        run_id = eventually(lws.running, "the running run", seconds=20)["run_id"]
        eventually(lambda: cell_counts(lws, run_id) == ("running", 3), "its 3 cells", seconds=20)
        assert lws.datasette_cells(run_id) == ["q1", "q2", "q3"]
        # The final result (result.json) states the same cells: none is recorded twice.
        assert lws.finish(process)["outcomes"][0]["state"] == "succeeded"
        assert lws.shown("show", run_id)["run"]["cells"] == 3
        batches = [e for e in lws.history(run_id) if e["type"] == "CellsRecorded"]
        assert sum(b["data"]["cells"]["count"] for b in batches) == 3

    def test_benchmarks_running_in_parallel_each_show_their_cells(self, lws: LiveWorkspace) -> None:
        process = lws.start(
            "--jobs",
            "2",
            benchmarks="live,live_too",
            env={"LIVE_GAP": "0", "LIVE_CELLS": "3", "LIVE_HOLD": "4"},
        )

        def both() -> list[tuple[str, int]] | None:
            rows = lws.shown("runs") or []
            shown = sorted((r["benchmark"], r["cells"]) for r in rows if r["status"] == "running")
            return shown if shown == [("live", 3), ("live_too", 3)] else None

        eventually(both, "both running runs with their cells", seconds=20)
        summary = lws.finish(process)
        assert [o["state"] for o in summary["outcomes"]] == ["succeeded", "succeeded"]
        assert "warning" not in summary["stderr"]  # every catch-up, from either thread, worked


class TestCrashes:
    def test_kill_9_of_the_benchmark_keeps_the_cells_it_wrote(self, lws: LiveWorkspace) -> None:
        pid_file = lws.root / "live-0.pid"
        process = lws.start(
            benchmarks="live",
            env={
                "LIVE_GAP": "0",
                "LIVE_CELLS": "3",
                "LIVE_PARTIAL": "1",
                "LIVE_HOLD": "60",
                "LIVE_PID_FILE": str(pid_file),
            },
        )
        run_id = eventually(lws.running, "the running run", seconds=20)["run_id"]
        eventually(lambda: cell_counts(lws, run_id) == ("running", 3), "3 cells", seconds=20)
        os.kill(int(pid_file.read_text()), signal.SIGKILL)

        outcome = lws.finish(process, expect=1)["outcomes"][0]
        assert outcome["state"] == "failed"
        run = lws.shown("show", run_id)["run"]
        # Marked as any benchmark killed by a signal is; its half-written last line was
        # never read (the result is unreadable), and the cells written before it are kept.
        assert (run["status"], run["exit_code"], run["cells"]) == ("failed", -9, 3)
        assert run["error"] == "exited with code -9"
        assert lws.datasette_cells(run_id) == ["q1", "q2", "q3"]

    def test_kill_9_of_the_runner_keeps_the_cells_and_the_run_is_recovered_as_stale(
        self, lws: LiveWorkspace
    ) -> None:
        process = lws.start(
            "--lease-seconds",
            "2",
            "--renew-seconds",
            "0.5",
            benchmarks="live",
            env={"LIVE_GAP": "0", "LIVE_CELLS": "4", "LIVE_HOLD": "60"},
        )
        run_id = eventually(lws.running, "the running run", seconds=20)["run_id"]
        eventually(lambda: cell_counts(lws, run_id) == ("running", 4), "4 cells", seconds=20)
        process.kill()
        process.communicate(timeout=PROCESS_TIMEOUT)

        # The runner may have died between appending a renewal and catching the read
        # models up to it: a read-only `show` would find them behind for good, so this
        # one catches them up first (as any writing command does).
        shown = json.loads(lws.invoke("show", run_id, "--json").stdout)
        lease = parse_time(shown["run"]["lease_expires_at"])
        eventually(lambda: datetime.now(UTC) > lease, "the lease to expire", seconds=10)
        assert lws.recover() == [{"run_id": run_id, "policy": "lease_expired"}]
        run = lws.shown("show", run_id)["run"]
        assert (run["status"], run["cells"]) == ("recovered", 4)
        assert lws.datasette_cells(run_id) == ["q1", "q2", "q3", "q4"]


class TestTheFinalResult:
    def test_a_final_result_stating_a_recorded_cell_differently_is_an_error_on_the_run(
        self, lws: LiveWorkspace
    ) -> None:
        process = lws.start(
            benchmarks="live",
            env={"LIVE_GAP": "0", "LIVE_CELLS": "3", "LIVE_HOLD": "2", "LIVE_REWRITE": "1"},
        )
        run_id = eventually(lws.running, "the running run", seconds=20)["run_id"]
        eventually(lambda: cell_counts(lws, run_id) == ("running", 3), "3 cells", seconds=20)

        outcome = lws.finish(process, expect=1)["outcomes"][0]
        assert outcome["state"] == "failed"
        run = lws.shown("show", run_id)["run"]
        assert run["status"] == "error"
        assert "cell 'q1', field 'score': recorded 1.0, then stated 0.25" in run["error"]
        assert "q2" not in run["error"] and "q3" not in run["error"]
        # Never an overwrite: q1 keeps what was recorded; q9, only in the result, is added.
        assert run["cells"] == 4
        q1 = [c for c in lws.shown("show", run_id, "--cells", "10")["cells"] if c["key"] == "q1"]
        assert [c["score"] for c in q1] == [1.0]
        assert lws.datasette_cells(run_id) == ["q1", "q2", "q3", "q9"]
