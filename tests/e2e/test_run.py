"""`benchledger run` end to end: real subprocess benchmarks, real racing and killed processes.

Each test writes a small benchmark script (`bench.py`) and a `benchledger.toml`
registry into its own directory, runs `benchledger run` as a real subprocess
(the console script next to this interpreter) and then checks the events and
the read models with the read commands, in-process. The script is steered by
environment variables, none of which are part of the work's signature:

    BENCH_SLEEP         seconds to sleep before writing the result
    BENCH_RESULT_FIRST  also write the result before sleeping (a partial result)
    BENCH_EXIT          exit code (after writing the result)
    BENCH_SCORE         the score to report (default 0.75)
    BENCH_PID_FILE      write the benchmark's pid here once it has started
    BENCH_LEAK_FROM     name of an env variable whose value it leaks everywhere it can
    BENCH_ECHO_ARGV     print its arguments (after the output dir)
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from benchledger.adapters.execution.registry import load_registry
from benchledger.adapters.execution.runner import register
from benchledger.adapters.publication.browse import datasette_for
from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.domain.records import RunHeader, RunRecord, RunStatus, SourceFile
from benchledger.domain.signatures import comparison_signature, sha256_hex, signature
from tests.conftest import Invoke
from tests.helpers import legacy_attempt
from tests.unit.test_format_orchestrator import db_row, make_db

BENCHLEDGER = Path(sys.executable).parent / "benchledger"
AGENT, MODEL = "eliza", "m1"
PROCESS_TIMEOUT = 40.0

BENCH_SCRIPT = """
import json, os, sys, time
from pathlib import Path

env = os.environ.get
out = Path(sys.argv[1])
if env("BENCH_PID_FILE"):
    pid_file = Path(env("BENCH_PID_FILE"))
    Path(f"{pid_file}.tmp").write_text(str(os.getpid()))
    os.replace(f"{pid_file}.tmp", pid_file)
if env("BENCH_ECHO_ARGV"):
    print("argv", sys.argv[2:], flush=True)
secret = env(env("BENCH_LEAK_FROM", "-"), "")
if secret:
    print("calling the model with key", secret, flush=True)
    print("debug: key=" + secret, file=sys.stderr, flush=True)
    (out / "notes.txt").write_text(f"api key {secret}\\n")


def write_result():
    doc = {
        "schema": "benchledger/run@1",
        "score": float(env("BENCH_SCORE", "0.75")),
        "unit": "accuracy",
        "cells": [
            {"key": "q1", "outcome": "passed", "score": 1.0},
            {"key": "q2", "outcome": "failed", "score": 0.0},
        ],
    }
    if secret:
        doc["metrics"] = {"api_key": secret}
        doc["cells"][0]["metrics"] = {"api_key": secret}
    if env("BENCH_LONG_STRING"):
        doc["cells"][0]["metrics"] = {"log": "x" * int(env("BENCH_LONG_STRING"))}
    (out / "result.json").write_text(json.dumps(doc))


if env("BENCH_RESULT_FIRST"):
    write_result()
time.sleep(float(env("BENCH_SLEEP", "0")))
write_result()
print("done", flush=True)
sys.exit(int(env("BENCH_EXIT", "0")))
"""

T = TypeVar("T")


def eventually(probe: Callable[[], T | None], what: str, seconds: float = 15.0) -> T:
    """The first truthy value of probe(), polled until a deadline."""
    deadline = time.monotonic() + seconds
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.05)


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def alive(pid: int) -> bool:
    """Running and not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


class Workspace:
    """One test's directory: benchmark script, registry, ledger, and the processes it started."""

    def __init__(self, root: Path, invoke: Invoke) -> None:
        self.root = root
        self.db = root / "ledger.db"
        self.registry = root / "benchledger.toml"
        self.results = root / "results"
        self.invoke = invoke
        self.processes: list[subprocess.Popen[str]] = []
        self.pid_files: list[Path] = []
        (root / "bench.py").write_text(textwrap.dedent(BENCH_SCRIPT))
        command = json.dumps([sys.executable, "bench.py", "{output_dir}"])
        self.registry.write_text(
            textwrap.dedent(
                f"""\
                [benchmarks.quick]
                description = "a benchmark script the test wrote"
                command = {command}
                unit = "accuracy"

                [benchmarks.keyed]
                command = {command}
                required_env = ["BENCH_REQUIRED_TOKEN"]

                [benchmarks.hermes_only]
                command = {command}
                agents = ["hermes"]
                """
            )
        )

    # -- running `benchledger run` as a real process --------------------------------

    def argv(self, *options: str, benchmarks: str = "quick") -> list[str]:
        return [
            str(BENCHLEDGER),
            "--db",
            str(self.db),
            "run",
            "--registry",
            str(self.registry),
            "--benchmarks",
            benchmarks,
            "--agent",
            AGENT,
            "--model",
            MODEL,
            "--json",
            *options,
        ]

    def environ(self, env: dict[str, str] | None) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "BENCHLEDGER_"))}
        return {**base, **(env or {})}

    def start(
        self, *options: str, env: dict[str, str] | None = None, benchmarks: str = "quick"
    ) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            self.argv(*options, benchmarks=benchmarks),
            cwd=self.root,
            env=self.environ(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.processes.append(process)
        return process

    def finish(self, process: subprocess.Popen[str], expect: int | None = 0) -> dict[str, Any]:
        """Wait for a started run; its `run --json` summary."""
        stdout, stderr = process.communicate(timeout=PROCESS_TIMEOUT)
        if expect is not None:
            assert process.returncode == expect, (
                f"exit {process.returncode}\nstdout: {stdout}\nstderr: {stderr}"
            )
        summary: dict[str, Any] = json.loads(stdout)
        summary["stderr"] = stderr
        return summary

    def run(
        self,
        *options: str,
        env: dict[str, str] | None = None,
        benchmarks: str = "quick",
        expect: int | None = 0,
    ) -> dict[str, Any]:
        return self.finish(self.start(*options, env=env, benchmarks=benchmarks), expect)

    def outcome(self, *options: str, **kwargs: Any) -> dict[str, Any]:
        """The single outcome of a run of one benchmark."""
        summary = self.run(*options, **kwargs)
        assert len(summary["outcomes"]) == 1, summary
        outcome: dict[str, Any] = summary["outcomes"][0]
        outcome["run_group"] = summary["run_group"]
        return outcome

    def pid_file(self) -> Path:
        path = self.root / f"bench-{len(self.pid_files)}.pid"
        self.pid_files.append(path)
        return path

    def cleanup(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.communicate(timeout=PROCESS_TIMEOUT)
        pid_dir = self.root / "pids"
        named = [int(p.name) for p in pid_dir.iterdir()] if pid_dir.is_dir() else []
        for path in [*self.pid_files, *named]:
            if isinstance(path, int) or path.exists():
                pid = path if isinstance(path, int) else int(path.read_text())
                cmdline = Path(f"/proc/{pid}/cmdline")
                if alive(pid) and cmdline.exists() and b"bench.py" in cmdline.read_bytes():
                    os.kill(pid, signal.SIGKILL)

    # -- reading, in-process --------------------------------------------------------

    def read_json(self, *args: str) -> Any:
        return json.loads(self.invoke(*args, "--json").stdout)

    def text(self, *args: str) -> str:
        return self.invoke(*args).stdout

    def runs(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.read_json("runs")
        return sorted(rows, key=lambda r: r["attempt"] or 0)

    def run_row(self, run_id: str) -> dict[str, Any]:
        row: dict[str, Any] = self.read_json("show", run_id)["run"]
        return row

    def history(self, ref: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self.read_json("history", ref)
        return events

    def events(self, *types: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self.read_json("events")
        return [e for e in events if not types or e["type"] in types]

    def skips(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.read_json("skips")
        return rows

    def recover(self, *options: str) -> list[dict[str, Any]]:
        recovered: list[dict[str, Any]] = self.read_json("recover-stale", *options)
        return recovered

    def running_run(self) -> dict[str, Any] | None:
        result = self.invoke("runs", "--json", expect=None)
        if result.exit_code != 0:
            assert "no ledger at" in result.stderr  # the run has not created it yet
            return None
        rows = [r for r in json.loads(result.stdout) if r["status"] == "running"]
        return rows[0] if rows else None

    def renewed(self, run_id: str) -> bool:
        return any(e["type"] == "LeaseRenewed" for e in self.history(run_id))


@pytest.fixture
def ws(tmp_path: Path, invoke: Invoke) -> Iterator[Workspace]:
    workspace = Workspace(tmp_path, invoke)
    yield workspace
    workspace.cleanup()


def types_of(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def claims(ws: Workspace) -> list[int]:
    return [e["data"]["attempt"] for e in ws.events("AttemptClaimed")]


class TestFirstRunAndReruns:
    def test_a_first_run_records_attempt_1_with_its_cells_score_and_artifacts(
        self, ws: Workspace
    ) -> None:
        outcome = ws.outcome()
        assert (outcome["state"], outcome["attempt"], outcome["score"]) == ("succeeded", 1, 0.75)

        [run] = ws.runs()
        assert run["run_id"] == outcome["run_id"] and run["run_key"] == outcome["run_key"]
        assert (run["benchmark"], run["agent"], run["model"]) == ("quick", AGENT, MODEL)
        assert (run["status"], run["attempt"], run["source"], run["exit_code"]) == (
            "succeeded",
            1,
            "executed",
            0,
        )
        assert (run["cells"], run["cells_passed"], run["cells_failed"]) == (2, 1, 1)
        assert run["unit"] == "accuracy" and run["lease_expires_at"]
        assert run["command"][1:] == ["bench.py", f"results/{run['run_dir']}/output"]
        names = {Path(a["path"]).name for a in run["artifacts"]}
        assert {"result.json", "stdout.log", "stderr.log"} <= names
        assert (ws.results / run["run_dir"] / "output" / "result.json").is_file()

        history = ws.history(run["run_id"])
        assert types_of(history) == ["AttemptClaimed", "RunStarted", "CellsRecorded", "RunFinished"]
        assert history[0]["data"]["mode"] == "first" and history[0]["data"]["attempt"] == 1
        group = types_of(ws.events("RunGroupOpened", "RunGroupClosed"))
        assert group == ["RunGroupOpened", "RunGroupClosed"]
        assert ws.events("RunGroupClosed")[0]["data"]["summary"] == {"succeeded": 1}
        [registered] = ws.events("BenchmarkRegistered")
        assert registered["data"]["benchmark"] == "quick"
        assert registered["data"]["description"] == "a benchmark script the test wrote"

    def test_a_default_rerun_of_succeeded_work_is_a_skip_never_a_run_or_an_attempt(
        self, ws: Workspace
    ) -> None:
        first = ws.outcome()
        again = ws.outcome()
        assert again["state"] == "skipped"
        assert (again["run_id"], again["attempt"]) == (None, None)
        assert again["reason"] == f"already_succeeded (see run {first['run_id'][:8]})"

        assert [r["run_id"] for r in ws.runs()] == [first["run_id"]]
        assert claims(ws) == [1]
        assert len(ws.events("RunStarted")) == 1
        [skipped] = ws.events("BenchmarkSkipped")
        assert skipped["data"]["reason"] == "already_succeeded"
        assert skipped["data"]["defer_to"] == first["run_id"]
        [skip] = ws.skips()
        assert (skip["outcome"], skip["reason"], skip["defer_to"]) == (
            "skipped",
            "already_succeeded",
            first["run_id"],
        )
        assert skip["run_group_id"] == skipped["stream"] != ws.runs()[0]["run_group_id"]
        closed = [e["data"]["summary"] for e in ws.events("RunGroupClosed")]
        assert closed == [{"succeeded": 1}, {"skipped": 1}]

    def test_force_runs_a_new_attempt_of_succeeded_work(self, ws: Workspace) -> None:
        first = ws.outcome()
        forced = ws.outcome("--force", env={"BENCH_SCORE": "0.5"})
        assert (forced["state"], forced["attempt"], forced["score"]) == ("succeeded", 2, 0.5)
        assert forced["run_id"] != first["run_id"]
        assert [(r["attempt"], r["score"]) for r in ws.runs()] == [(1, 0.75), (2, 0.5)]
        assert [e["data"]["mode"] for e in ws.events("AttemptClaimed")] == ["first", "force"]
        assert ws.skips() == []

    def test_rerun_failed_skips_only_if_the_latest_executed_attempt_succeeded(
        self, ws: Workspace
    ) -> None:
        first = ws.outcome()
        failed = ws.outcome("--force", env={"BENCH_EXIT": "3"}, expect=1)
        assert (failed["state"], failed["attempt"]) == ("failed", 2)

        # Default: some valid attempt succeeded, so it is skipped, deferring to attempt 1.
        default = ws.outcome()
        assert default["state"] == "skipped"
        assert default["reason"] == f"already_succeeded (see run {first['run_id'][:8]})"
        # --rerun-failed: the latest attempt failed, so it runs again.
        rerun = ws.outcome("--rerun-failed")
        assert (rerun["state"], rerun["attempt"]) == ("succeeded", 3)
        # Now the latest attempt succeeded.
        again = ws.outcome("--rerun-failed")
        assert again["state"] == "skipped"
        assert again["reason"] == f"latest_attempt_succeeded (see run {rerun['run_id'][:8]})"

        assert [(r["attempt"], r["status"]) for r in ws.runs()] == [
            (1, "succeeded"),
            (2, "failed"),
            (3, "succeeded"),
        ]
        assert claims(ws) == [1, 2, 3]
        modes = [e["data"]["mode"] for e in ws.events("AttemptClaimed")]
        assert modes == ["first", "force", "rerun_failed"]
        assert [(s["reason"], s["defer_to"]) for s in ws.skips()] == [
            ("already_succeeded", first["run_id"]),
            ("latest_attempt_succeeded", rerun["run_id"]),
        ]

    def test_skips_in_between_leave_attempt_numbers_dense(self, ws: Workspace) -> None:
        ws.outcome(env={"BENCH_EXIT": "1"}, expect=1)
        assert ws.outcome()["attempt"] == 2
        assert ws.outcome()["state"] == "skipped"
        assert ws.outcome("--force")["attempt"] == 3
        assert ws.outcome("--rerun-failed")["state"] == "skipped"
        assert [r["attempt"] for r in ws.runs()] == [1, 2, 3]
        assert claims(ws) == [1, 2, 3]
        assert len(ws.skips()) == 2


class TestFailures:
    def test_a_nonzero_exit_with_a_result_fails_but_keeps_its_score_and_cells(
        self, ws: Workspace
    ) -> None:
        outcome = ws.outcome(env={"BENCH_EXIT": "3"}, expect=1)
        assert (outcome["state"], outcome["attempt"], outcome["score"]) == ("failed", 1, 0.75)
        assert outcome["reason"] == "exited with code 3 (its result was kept)"

        [run] = ws.runs()
        assert (run["status"], run["exit_code"], run["score"], run["cells"]) == (
            "failed",
            3,
            0.75,
            2,
        )
        assert run["error"] == "exited with code 3 (its result was kept)"
        assert run["metrics"]["return_code"] == 3
        finished = ws.history(run["run_id"])[-1]
        assert (finished["type"], finished["data"]["status"]) == ("RunFinished", "failed")
        # A failure is no success: a default run executes the work again.
        retry = ws.outcome()
        assert (retry["state"], retry["attempt"]) == ("succeeded", 2)

    def test_a_result_beyond_the_input_limits_fails_the_run_naming_the_limit(
        self, ws: Workspace
    ) -> None:
        outcome = ws.outcome(env={"BENCH_LONG_STRING": str(2**21)}, expect=1)
        assert outcome["state"] == "failed"
        assert outcome["reason"].startswith("result unreadable: ")
        assert "exceeds the limit" in outcome["reason"] and "string" in outcome["reason"]
        [run] = ws.runs()
        assert (run["status"], run["cells"]) == ("failed", 0)

    def test_a_timeout_kills_the_benchmark_and_records_the_run_as_timed_out(
        self, ws: Workspace
    ) -> None:
        pid_file = ws.pid_file()
        began = time.monotonic()
        outcome = ws.outcome(
            "--timeout",
            "1",
            env={"BENCH_SLEEP": "30", "BENCH_RESULT_FIRST": "1", "BENCH_PID_FILE": str(pid_file)},
            expect=1,
        )
        assert time.monotonic() - began < 15
        assert (outcome["state"], outcome["attempt"]) == ("timed_out", 1)
        assert outcome["reason"] == "killed after the quick timeout"
        assert not alive(int(pid_file.read_text()))

        [run] = ws.runs()
        assert run["status"] == "timed_out" and run["error"] == "killed after the quick timeout"
        assert run["exit_code"] == -signal.SIGTERM
        assert run["score"] == 0.75 and run["cells"] == 2  # the partial result is kept
        assert 1 <= run["duration_seconds"] < 10
        retry = ws.outcome()
        assert (retry["state"], retry["attempt"]) == ("succeeded", 2)

    def test_missing_env_refuses_the_launch_without_a_run_or_an_attempt(
        self, ws: Workspace
    ) -> None:
        refused = ws.outcome(benchmarks="keyed", expect=1)
        assert refused["state"] == "refused" and refused["attempt"] is None
        assert "BENCH_REQUIRED_TOKEN" in refused["reason"]
        assert ws.runs() == [] and ws.events("AttemptClaimed", "RunStarted") == []
        [event] = ws.events("LaunchRefused")
        assert event["data"]["missing_env"] == ["BENCH_REQUIRED_TOKEN"]
        [skip] = ws.skips()
        assert (skip["outcome"], skip["reason"], json.loads(skip["missing_env"])) == (
            "launch_refused",
            "missing_env",
            ["BENCH_REQUIRED_TOKEN"],
        )
        assert ws.events("RunGroupClosed")[0]["data"]["summary"] == {"refused": 1}

        # The refusal was not an attempt: with the variable set, this is attempt 1.
        ran = ws.outcome(benchmarks="keyed", env={"BENCH_REQUIRED_TOKEN": "tok-123456"})
        assert (ran["state"], ran["attempt"]) == ("succeeded", 1)
        assert [e["data"]["mode"] for e in ws.events("AttemptClaimed")] == ["first"]

    def test_an_incompatible_agent_is_skipped_not_run(self, ws: Workspace) -> None:
        outcome = ws.outcome(benchmarks="hermes_only")
        assert outcome["state"] == "skipped" and outcome["run_id"] is None
        assert outcome["reason"].startswith("incompatible_agent")
        assert ws.runs() == [] and claims(ws) == []
        [skip] = ws.skips()
        assert (skip["reason"], skip["defer_to"]) == ("incompatible_agent", None)


class TestRacingProcesses:
    def test_two_processes_racing_on_the_same_work_execute_it_once_unless_forced(
        self, ws: Workspace
    ) -> None:
        # Registered beforehand: racing registrations are the next test's subject.
        ws.invoke("benchmarks", "--registry", str(ws.registry))
        slow = {"BENCH_SLEEP": "2"}
        racers = [ws.start(env=slow), ws.start(env=slow)]
        outcomes = [ws.finish(p)["outcomes"][0] for p in racers]
        [winner] = [o for o in outcomes if o["state"] == "succeeded"]
        [loser] = [o for o in outcomes if o["state"] == "skipped"]
        assert winner["attempt"] == 1
        assert loser["attempt"] is None and loser["run_id"] is None
        reason = loser["reason"].split(" ")[0]
        assert reason in ("attempt_in_progress", "already_succeeded")
        assert loser["reason"].endswith(f"(see run {winner['run_id'][:8]})")
        assert len(ws.events("RunStarted")) == 1 and claims(ws) == [1]
        [skip] = ws.skips()
        assert skip["defer_to"] == winner["run_id"]

        forced = [ws.start("--force", env=slow), ws.start("--force", env=slow)]
        attempts = sorted(ws.finish(p)["outcomes"][0]["attempt"] for p in forced)
        assert attempts == [2, 3]
        assert claims(ws) == [1, 2, 3]
        assert [(r["attempt"], r["status"]) for r in ws.runs()] == [
            (1, "succeeded"),
            (2, "succeeded"),
            (3, "succeeded"),
        ]

    def test_two_processes_registering_the_same_new_benchmark_both_go_on(
        self, ws: Workspace, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # The interleaving two `run` processes hit now and then (about 1 in 7 races on a
        # fresh ledger), made deterministic: the other process registers the benchmark
        # between our read of it and our append.
        spec = load_registry(ws.registry).get("quick")
        with build(Settings(db_path=ws.db)) as ours, build(Settings(db_path=ws.db)) as theirs:
            read = ours.ledger.get_benchmark

            def read_then_lose_the_race(name: str) -> Any:
                found = read(name)
                register(theirs.ledger, [spec])
                return found

            monkeypatch.setattr(ours.ledger, "get_benchmark", read_then_lose_the_race)
            register(ours.ledger, [spec])
        [registered] = ws.events("BenchmarkRegistered")
        assert registered["data"]["benchmark"] == "quick"


class TestLeasesAndRecovery:
    def test_a_live_renewing_run_is_never_recovered_even_with_stale_seconds_0(
        self, ws: Workspace
    ) -> None:
        process = ws.start(
            "--lease-seconds", "30", "--renew-seconds", "0.3", env={"BENCH_SLEEP": "3"}
        )
        running = eventually(ws.running_run, "the run to start")
        run_id = running["run_id"]
        eventually(lambda: ws.renewed(run_id), "a lease renewal")

        assert ws.recover("--stale-seconds", "0") == []
        # Another run of the same work defers to it (and its own sweep leaves it alone).
        rival = ws.outcome()
        assert rival["state"] == "skipped"
        assert rival["reason"] == f"attempt_in_progress (see run {run_id[:8]})"
        assert ws.run_row(run_id)["status"] == "running"

        outcome = ws.finish(process)["outcomes"][0]
        assert (outcome["state"], outcome["run_id"]) == ("succeeded", run_id)
        run = ws.run_row(run_id)
        assert (run["status"], run["recovered_at"]) == ("succeeded", None)
        history = ws.history(run_id)
        assert "StaleRunRecovered" not in types_of(history)
        started = history[1]["data"]
        assert parse_time(run["lease_expires_at"]) > parse_time(started["lease_expires_at"])
        assert claims(ws) == [1]

    def test_kill_9_stops_the_benchmark_and_leaves_a_run_that_recover_stale_recovers(
        self, ws: Workspace
    ) -> None:
        pid_file = ws.pid_file()
        process = ws.start(
            "--lease-seconds",
            "3",
            "--renew-seconds",
            "0.3",
            env={"BENCH_SLEEP": "30", "BENCH_PID_FILE": str(pid_file)},
        )
        run_id = eventually(ws.running_run, "the run to start")["run_id"]
        eventually(pid_file.exists, "the benchmark to start")
        eventually(lambda: ws.renewed(run_id), "a lease renewal")

        process.kill()  # SIGKILL: no cleanup, no RunFinished, no group close
        process.communicate(timeout=PROCESS_TIMEOUT)
        assert process.returncode == -signal.SIGKILL
        benchmark_pid = int(pid_file.read_text())
        # Its supervisor saw the run die and stopped it: no orphan writes a result nobody
        # records.
        eventually(lambda: not alive(benchmark_pid), "the benchmark to be stopped")
        run_dir = ws.results / ws.run_row(run_id)["run_dir"]
        assert not (run_dir / "output" / "result.json").exists()

        # Until its lease expires the run is visible, and counted, as running.
        run = ws.run_row(run_id)
        assert run["status"] == "running"
        lease = parse_time(run["lease_expires_at"])
        assert lease > datetime.now(UTC)
        assert ws.recover() == []
        assert ws.run_row(run_id)["status"] == "running"

        eventually(lambda: datetime.now(UTC) > lease, "the lease to expire", seconds=10)
        assert ws.recover() == [{"run_id": run_id, "policy": "lease_expired"}]
        run = ws.run_row(run_id)
        assert (run["status"], run["recovery_policy"], run["cells"]) == (
            "recovered",
            "lease_expired",
            0,
        )
        assert run["recovered_at"] and run["ended_at"] is None
        recovered = ws.history(run_id)[-1]
        assert recovered["type"] == "StaleRunRecovered"
        assert recovered["data"]["policy"] == "lease_expired"
        assert parse_time(recovered["data"]["lease_expires_at"]) == lease
        assert ws.recover() == []  # recovered once

        retry = ws.outcome()
        assert (retry["state"], retry["attempt"]) == ("succeeded", 2)
        assert [(r["attempt"], r["status"]) for r in ws.runs()] == [
            (1, "recovered"),
            (2, "succeeded"),
        ]
        assert claims(ws) == [1, 2]

    def test_kill_9_of_a_parallel_run_stops_every_benchmark_it_started(self, ws: Workspace) -> None:
        command = json.dumps([sys.executable, "bench.py", "{output_dir}"])
        with ws.registry.open("a") as registry:
            registry.write(f"\n[benchmarks.second]\ncommand = {command}\n")
        pid_dir = ws.root / "pids"
        pid_dir.mkdir()
        script = ws.root / "bench.py"
        script.write_text(
            script.read_text().replace(
                'if env("BENCH_PID_FILE"):',
                'if env("BENCH_PID_DIR"):\n'
                '    Path(env("BENCH_PID_DIR"), str(os.getpid())).write_text("")\n'
                'if env("BENCH_PID_FILE"):',
            )
        )
        process = ws.start(
            "--jobs", "2", env={"BENCH_SLEEP": "30", "BENCH_PID_DIR": str(pid_dir)},
            benchmarks="quick,second",
        )  # fmt: skip
        pids = eventually(
            lambda: found if len(found := list(pid_dir.iterdir())) == 2 else None,
            "both benchmarks to start",
        )
        benchmark_pids = [int(p.name) for p in pids]
        process.kill()
        process.communicate(timeout=PROCESS_TIMEOUT)
        for pid in benchmark_pids:
            eventually(lambda pid=pid: not alive(pid), f"benchmark {pid} to be stopped")

    def test_a_finish_after_recovery_is_recorded_and_is_the_final_truth(
        self, ws: Workspace
    ) -> None:
        process = ws.start(
            "--lease-seconds", "1", "--renew-seconds", "100", env={"BENCH_SLEEP": "3.5"}
        )
        running = eventually(ws.running_run, "the run to start")
        run_id = running["run_id"]
        lease = parse_time(running["lease_expires_at"])
        eventually(lambda: datetime.now(UTC) > lease, "the lease to expire", seconds=10)
        assert ws.recover() == [{"run_id": run_id, "policy": "lease_expired"}]
        assert ws.run_row(run_id)["status"] == "recovered"
        assert process.poll() is None, "the benchmark finished before the recovery"

        outcome = ws.finish(process)["outcomes"][0]
        assert (outcome["state"], outcome["attempt"], outcome["run_id"]) == (
            "succeeded",
            1,
            run_id,
        )
        run = ws.run_row(run_id)
        assert (run["status"], run["score"], run["cells"]) == ("succeeded", 0.75, 2)
        assert run["recovered_at"] and run["recovery_policy"] == "lease_expired"
        assert types_of(ws.history(run_id)) == [
            "AttemptClaimed",
            "RunStarted",
            "StaleRunRecovered",
            "CellsRecorded",
            "RunFinished",
        ]
        # The late success counts: the work is not executed again.
        assert ws.outcome()["reason"].startswith("already_succeeded")
        assert claims(ws) == [1]


class TestCorrections:
    def test_invalidate_reinstate_and_correct_score_of_executed_runs(self, ws: Workspace) -> None:
        first = ws.outcome()["run_id"]
        ws.invoke("invalidate", first, "--reason", "contaminated", "--by", "ana")
        assert ws.run_row(first)["invalidated"] is True
        assert "(invalidated)" in ws.text("runs")
        # An invalidated success does not count: a default run executes attempt 2.
        second = ws.outcome(env={"BENCH_SCORE": "0.5"})
        assert (second["state"], second["attempt"]) == ("succeeded", 2)

        ws.invoke("reinstate", first, "--reason", "false alarm", "--by", "ana")
        receipt = ws.read_json(
            "correct-score", first, "--score", "0.7", "--reason", "grader bug", "--by", "bo"
        )
        assert receipt["old_score"] == 0.75
        run = ws.run_row(first)
        assert (run["invalidated"], run["score"], run["original_score"]) == (False, 0.7, 0.75)
        assert (run["corrections"], run["correction_reason"]) == (1, "grader bug")
        history = ws.history(first)
        assert types_of(history)[-3:] == ["RunInvalidated", "RunReinstated", "ScoreCorrected"]
        assert [e["data"].get("actor") for e in history[-3:]] == ["ana", "ana", "bo"]
        assert ws.run_row(second["run_id"])["score"] == 0.5

        skipped = ws.outcome()
        assert skipped["reason"] == f"already_succeeded (see run {second['run_id'][:8]})"
        assert claims(ws) == [1, 2]


class TestReading:
    def test_runs_show_history_and_skips_display_attempts_leases_skips_and_corrections(
        self, ws: Workspace
    ) -> None:
        first = ws.outcome()["run_id"]
        ws.outcome()  # skipped
        second = ws.outcome("--force")["run_id"]
        ws.invoke("correct-score", first, "--score", "0.7", "--reason", "grader bug")

        listing = ws.text("runs").splitlines()
        assert listing[0].split()[:3] == ["run", "attempt", "benchmark"]
        rows = {line.split()[0]: line.split() for line in listing[2:]}
        assert rows[first[:8]][1] == "1" and rows[second[:8]][1] == "2"
        assert "(corrected)" in " ".join(rows[first[:8]])

        shown = ws.text("show", first)
        for field, value in [
            ("attempt", "1"),
            ("status", "succeeded"),
            ("score", "0.7"),
            ("original_score", "0.75"),
            ("correction_reason", "grader bug"),
        ]:
            assert f"\n{field} " in shown and value in shown.split(f"\n{field} ")[1].split("\n")[0]
        assert "lease_expires_at" in shown and "run_dir" in shown
        assert "passed" in shown and "failed" in shown  # cell outcomes

        history = ws.text("history", first)
        assert "attempt 1 of quick / eliza (first)" in history
        assert "ScoreCorrected" in history and "0.75 -> 0.7: grader bug" in history

        signature = ws.run_row(first)["signature"]
        work = ws.history(signature[:16])
        assert types_of(work).count("AttemptClaimed") == 2
        assert types_of(work).count("BenchmarkSkipped") == 1
        text = ws.text("history", signature[:16])
        assert "attempt 2 of quick / eliza (force)" in text
        assert "quick / eliza: already_succeeded" in text

        skips = ws.text("skips")
        assert "already_succeeded" in skips and first[:8] in skips


class TestDatasette:
    def test_datasette_shows_run_groups_and_skips(self, ws: Workspace) -> None:
        ran = ws.outcome()
        ws.outcome()
        ws.outcome(benchmarks="keyed", expect=1)
        ds = datasette_for(ws.db)

        def get(path: str) -> httpx.Response:
            async def fetch() -> httpx.Response:
                await ds.invoke_startup()
                response: httpx.Response = await ds.client.get(path)
                return response

            response = asyncio.run(fetch())
            assert response.status_code == 200, f"{path}: {response.status_code}"
            return response

        groups = get("/ledger/run_groups.json?_shape=array&_sort=opened_at").json()
        assert [g["label"] for g in groups] == [
            e["data"]["label"] for e in ws.events("RunGroupOpened")
        ]
        assert groups[0]["label"] == ran["run_group"]
        assert [g["kind"] for g in groups] == ["run"] * 3
        assert [g["runs"] for g in groups] == [1, 0, 0]
        assert [json.loads(g["summary"]) for g in groups] == [
            {"succeeded": 1},
            {"skipped": 1},
            {"refused": 1},
        ]
        assert all(g["closed_at"] for g in groups)

        skips = get("/ledger/skips.json?_shape=array&_sort=position").json()
        assert [(s["outcome"], s["reason"], s["defer_to"]) for s in skips] == [
            ("skipped", "already_succeeded", ran["run_id"]),
            ("launch_refused", "missing_env", None),
        ]
        assert [s["run_group_id"] for s in skips] == [g["run_group_id"] for g in groups[1:]]
        page = get("/ledger/skips").text
        assert "already_succeeded" in page and "missing_env" in page


def files_holding(root: Path, needle: bytes) -> list[str]:
    return sorted(
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.is_file() and needle in path.read_bytes()
    )


def ledger_holding(db: Path, needle: str) -> list[str]:
    """Every table (event store and read models alike) with a value holding needle."""
    import sqlite3

    found = []
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in conn.execute(f"SELECT * FROM [{table}]"):
                for value in row:
                    data = value if isinstance(value, bytes) else str(value).encode()
                    if needle.encode() in data or needle.encode("unicode_escape") in data:
                        found.append(table)
                        break
                else:
                    continue
                break
    return found


def sha256_of(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


class TestSecrets:
    def test_a_planted_env_secret_reaches_no_event_table_or_log_and_outputs_stay_intact(
        self, ws: Workspace
    ) -> None:
        secret = f"sk-planted-{uuid.uuid4()}"
        env = {"BENCH_API_KEY": secret, "BENCH_LEAK_FROM": "BENCH_API_KEY"}
        summary = ws.run(env=env)
        failed = ws.run("--force", env={**env, "BENCH_EXIT": "2"}, expect=1)
        for output in (summary, failed):
            assert secret not in json.dumps(output)

        runs = ws.runs()
        assert [r["status"] for r in runs] == ["succeeded", "failed"]
        assert all(r["metrics"]["api_key"] == "[REDACTED]" for r in runs)
        cells = ws.read_json("show", runs[0]["run_id"], "--cells", "5")["cells"]
        assert cells[0]["metrics"] == {"api_key": "[REDACTED]"}
        assert ledger_holding(ws.db, secret) == []

        for run in runs:
            run_dir = ws.results / run["run_dir"]
            assert "[REDACTED]" in (run_dir / "stdout.log").read_text()
            assert "[REDACTED]" in (run_dir / "stderr.log").read_text()
            # The benchmark's own files are never rewritten; the ledger keeps masked copies.
            assert (run_dir / "output" / "notes.txt").read_text() == f"api key {secret}\n"
            assert (run_dir / "masked" / "notes.txt").read_text() == "api key [REDACTED]\n"
            recorded = {a["path"]: a["sha256"] for a in run["artifacts"]}
            for name in ("notes.txt", "result.json"):
                original = run_dir / "output" / name
                assert recorded[str(original.relative_to(ws.results))] == sha256_of(original)
        holding = files_holding(ws.root, secret.encode())
        assert holding and all("/output/" in path for path in holding), holding

    def test_a_secret_the_result_json_escapes_is_still_redacted_from_cells(
        self, ws: Workspace
    ) -> None:
        secret = f"pässwort-{uuid.uuid4()}"
        ws.run(env={"DB_PASSWORD": secret, "BENCH_LEAK_FROM": "DB_PASSWORD"})
        [run] = ws.runs()
        assert run["metrics"]["api_key"] == "[REDACTED]"
        cells = ws.read_json("show", run["run_id"], "--cells", "5")["cells"]
        assert secret not in json.dumps(cells, ensure_ascii=False)
        assert ledger_holding(ws.db, secret) == []
        masked = ws.results / run["run_dir"] / "masked"
        escaped = json.dumps(secret)[1:-1].encode()
        assert files_holding(masked, secret.encode()) == []
        assert files_holding(masked, escaped) == []

    def test_a_secret_looking_name_with_an_ordinary_value_masks_nothing(
        self, ws: Workspace
    ) -> None:
        outcome = ws.outcome(env={"AUTH_MODE": "passed", "BENCH_LEAK_FROM": "AUTH_MODE"})
        assert outcome["state"] == "succeeded"
        [run] = ws.runs()
        cells = ws.read_json("show", run["run_id"], "--cells", "5")["cells"]
        assert [c["outcome"] for c in cells] == ["passed", "failed"]
        run_dir = ws.results / run["run_dir"]
        result = run_dir / "output" / "result.json"
        assert json.loads(result.read_text())["cells"][0]["outcome"] == "passed"
        recorded = {a["path"]: a["sha256"] for a in run["artifacts"]}
        assert recorded[str(result.relative_to(ws.results))] == sha256_of(result)
        assert "[REDACTED]" not in (run_dir / "stdout.log").read_text()
        # The result's `api_key` metric is masked by its name, and only it: the masked
        # copy keeps every outcome, and the notes that quote the word are not copied.
        masked = json.loads((run_dir / "masked" / "result.json").read_text())
        assert masked["metrics"] == {"api_key": "[REDACTED]"}
        assert [c["outcome"] for c in masked["cells"]] == ["passed", "failed"]
        assert not (run_dir / "masked" / "notes.txt").exists()

    def test_a_secret_command_argument_is_masked_in_events_tables_and_logs(
        self, ws: Workspace
    ) -> None:
        secret = f"sk-live-{uuid.uuid4().hex}"
        argv = [
            str(BENCHLEDGER), "--db", str(ws.db), "run", "--registry", str(ws.registry),
            "--benchmark", "adhoc", "--agent", AGENT, "--model", MODEL, "--json", "--",
            sys.executable, "bench.py", "{output_dir}", "--api-key", secret, f"--token={secret}x",
            "Authorization: Bearer abcdefgh12345678",
        ]  # fmt: skip
        done = subprocess.run(
            argv, cwd=ws.root, env=ws.environ({"BENCH_ECHO_ARGV": "1"}), capture_output=True,
            text=True,
            timeout=PROCESS_TIMEOUT,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        [run] = ws.runs()
        assert run["status"] == "succeeded"
        assert run["command"][-4:] == [
            "--api-key", "[REDACTED]", "--token=[REDACTED]", "Authorization: Bearer [REDACTED]",
        ]  # fmt: skip
        assert ledger_holding(ws.db, secret) == []
        assert ledger_holding(ws.db, "abcdefgh12345678") == []
        assert secret not in (ws.results / run["run_dir"] / "stdout.log").read_text()

    def test_a_secret_config_key_is_masked_but_still_tells_work_apart(self, ws: Workspace) -> None:
        first, second = f"k1-{uuid.uuid4()}", f"k2-{uuid.uuid4()}"
        a = ws.outcome("--extra", json.dumps({"api_key": first, "max_tokens": 64}))
        b = ws.outcome("--extra", json.dumps({"api_key": second, "max_tokens": 64}))
        assert (a["state"], b["state"]) == ("succeeded", "succeeded")
        runs = {r["run_id"]: r for r in ws.runs()}
        ra, rb = runs[a["run_id"]], runs[b["run_id"]]
        masked = {"api_key": "[REDACTED]", "max_tokens": 64, "agent": AGENT, "harness": AGENT}
        assert ra["config"] == rb["config"] == masked
        assert ra["signature"] != rb["signature"]
        assert ra["comparison_signature"] != rb["comparison_signature"]
        again = ws.outcome("--extra", json.dumps({"api_key": first, "max_tokens": 64}))
        assert again["reason"].startswith("already_succeeded")
        for secret in (first, second):
            assert ledger_holding(ws.db, secret) == []
            assert files_holding(ws.results, secret.encode()) == []

    def test_no_event_or_table_names_the_working_directory(self, ws: Workspace) -> None:
        ws.outcome()
        ws.run("--force", env={"BENCH_EXIT": "3"}, expect=1)
        (ws.root / "bench.py").unlink()  # a result that is never written: an error naming it
        ws.run("--force", expect=1)
        [*_, missing] = ws.runs()
        assert missing["status"] == "failed"
        assert ledger_holding(ws.db, str(ws.root)) == []
        assert ledger_holding(ws.db, str(ws.root.resolve())) == []


# The work `ws.outcome()` runs: benchmark `quick` (its directory the id), no provider, and
# the effective config the orchestrator's rules give an empty config.
QUICK_CONFIG = {"agent": AGENT, "harness": AGENT}
QUICK_SIGNATURE = signature("quick", AGENT, "", MODEL, QUICK_CONFIG, directory="quick")


def import_orchestrator_attempts(ws: Workspace, *rows: tuple[int, str | None]) -> dict[int, str]:
    """What an importer of an orchestrator.sqlite records for the work: each row that ran
    as an ordinary imported run, and the attempts of every row (skip rows included).
    `rows`: (attempt, status of the run or None for a skip row). Returns the run ids."""
    run_ids: dict[int, str] = {}
    items = []
    with build(Settings(db_path=ws.db)) as services:
        ledger = services.ledger
        for attempt, status in rows:
            key = f"run_quick_20260801T000000Z_{attempt}_abcdef0{attempt}"
            if status is None:
                items.append(
                    {"attempt": attempt, "run_id": None, "outcome": "skip", "source_key": key}
                )
                continue
            header = RunHeader(
                run_key=key,
                benchmark="quick",
                agent=AGENT,
                model=MODEL,
                config=QUICK_CONFIG,
                status=RunStatus(status),
                score=0.25,
            )
            data = RunRecord(header=header).model_dump_json().encode()
            source = SourceFile(
                path=f"{key}.json", sha256=sha256_hex(data), size=len(data), format="native"
            )
            [run] = ledger.import_runs("native", source, [RunRecord(header=header)]).runs
            run_ids[attempt] = str(run.run_id)
            items.append(
                {"attempt": attempt, "run_id": run.run_id, "outcome": "run", "source_key": key}
            )
        ledger.import_attempts(
            signature=QUICK_SIGNATURE, benchmark="quick", agent=AGENT, attempts=items
        )
    return run_ids


class TestContinuingOtherRecords:
    def test_the_run_is_recorded_under_the_orchestrators_signature(self, ws: Workspace) -> None:
        ws.outcome()
        [run] = ws.runs()
        assert run["config"] == QUICK_CONFIG
        assert run["signature"] == QUICK_SIGNATURE
        assert run["comparison_signature"] == comparison_signature(
            "quick", "", MODEL, QUICK_CONFIG, directory="quick", agent=AGENT
        )

    def test_the_registry_directory_is_part_of_the_signature(self, ws: Workspace) -> None:
        text = ws.registry.read_text()
        ws.registry.write_text(
            text.replace("[benchmarks.keyed]", 'directory = "suites/quick"\n\n[benchmarks.keyed]')
        )
        ws.outcome()
        [run] = ws.runs()
        moved = signature("quick", AGENT, "", MODEL, QUICK_CONFIG, directory="suites/quick")
        assert run["signature"] == moved != QUICK_SIGNATURE
        [claim] = ws.events("AttemptClaimed")
        assert claim["data"]["signature"] == moved

    def test_work_the_orchestrator_succeeded_at_is_skipped_as_already_succeeded(
        self, ws: Workspace
    ) -> None:
        runs = import_orchestrator_attempts(ws, (1, "failed"), (2, "succeeded"), (3, None))
        outcome = ws.outcome()
        assert outcome["state"] == "skipped"
        assert outcome["reason"] == f"already_succeeded (see run {runs[2][:8]})"
        assert claims(ws) == []
        [skip] = ws.skips()
        assert (skip["reason"], skip["defer_to"], skip["signature"]) == (
            "already_succeeded",
            runs[2],
            QUICK_SIGNATURE,
        )

    def test_rerun_failed_on_failed_work_runs_one_past_the_orchestrators_last_attempt(
        self, ws: Workspace
    ) -> None:
        import_orchestrator_attempts(ws, (1, "failed"), (2, None), (3, None))
        default = ws.outcome()  # nothing succeeded: the default runs it too...
        assert (default["state"], default["attempt"]) == ("succeeded", 4)
        again = ws.outcome("--rerun-failed")  # ...and now the latest execution succeeded
        assert again["reason"] == f"latest_attempt_succeeded (see run {default['run_id'][:8]})"

    def test_rerun_failed_runs_as_attempt_max_plus_one_counting_skip_rows(
        self, ws: Workspace
    ) -> None:
        import_orchestrator_attempts(ws, (1, "failed"), (2, "failed"), (5, None))
        outcome = ws.outcome("--rerun-failed", env={"BENCH_SCORE": "0.5"})
        assert (outcome["state"], outcome["attempt"], outcome["score"]) == ("succeeded", 6, 0.5)
        assert claims(ws) == [6]
        [claim] = ws.events("AttemptClaimed")
        assert claim["data"]["mode"] == "rerun_failed"
        executed = [r for r in ws.runs() if r["source"] == "executed"]
        assert [(r["attempt"], r["signature"]) for r in executed] == [(6, QUICK_SIGNATURE)]
        # The work's history: the imported runs, the attempts imported, then the claim.
        history = types_of(ws.history(QUICK_SIGNATURE))
        assert history.index("AttemptsImported") < history.index("AttemptClaimed")
        assert (history.count("RunImported"), history.count("RunStarted")) == (2, 1)
        assert ws.outcome("--force")["attempt"] == 7

    def test_a_ledger_recorded_under_legacy_signatures_continues_where_it_was(
        self, ws: Workspace
    ) -> None:
        # `run` of this work before: the config it hashed was the registry's, {}.
        with build(Settings(db_path=ws.db)) as services:
            legacy_ok = legacy_attempt(
                services.ledger,
                benchmark="quick",
                agent=AGENT,
                provider="",
                model=MODEL,
                config={},
                attempt=1,
                status=RunStatus.SUCCEEDED,
                started_at=datetime.now(UTC),
            )
        skipped = ws.outcome()
        assert skipped["reason"] == f"already_succeeded (see run {str(legacy_ok)[:8]})"
        forced = ws.outcome("--force")
        assert (forced["state"], forced["attempt"]) == ("succeeded", 2)
        assert claims(ws) == [1, 2]
        assert ws.run_row(forced["run_id"])["signature"] == QUICK_SIGNATURE


def orchestrator_db(ws: Workspace, *rows: tuple[int, str]) -> Path:
    """An orchestrator.sqlite of the work `quick` (its own columns, its own signature):
    `rows` are (attempt, status), status `skipped` for a skip row."""
    made = []
    for attempt, status in rows:
        kind = "skip" if status == "skipped" else "run"
        made.append(
            db_row(
                run_id=f"{kind}_quick_20260801T00000{attempt}Z_{attempt}_abcdef0{attempt}",
                benchmark_id="quick",
                benchmark_directory="quick",
                agent=AGENT,
                provider="",
                model=MODEL,
                extra_config=QUICK_CONFIG,
                signature=QUICK_SIGNATURE,
                status=status,
                attempt=attempt,
                started_at=f"2026-08-01T00:00:0{attempt}.500000+00:00",
                score=0.25 if status != "skipped" else None,
                metrics={"return_code": 0 if status == "succeeded" else 1}
                if status != "skipped"
                else {"reason": "already_succeeded"},
            )
        )
    return make_db(ws.root / "orch" / "orchestrator.sqlite", made)


class TestAfterImportingTheOrchestratorsDatabase:
    def test_work_it_succeeded_at_is_skipped_as_already_succeeded(self, ws: Workspace) -> None:
        source = orchestrator_db(ws, (1, "failed"), (2, "succeeded"))
        ws.invoke("--db", str(ws.db), "import", str(source))
        [succeeded] = [r for r in ws.runs() if r["status"] == "succeeded"]
        assert succeeded["signature"] == QUICK_SIGNATURE
        outcome = ws.outcome()
        assert outcome["state"] == "skipped"
        assert outcome["reason"] == f"already_succeeded (see run {succeeded['run_id'][:8]})"
        assert claims(ws) == []

    def test_rerun_failed_runs_as_the_attempt_after_its_last(self, ws: Workspace) -> None:
        # The orchestrator counts its skip rows as attempts too: the last one is 3.
        source = orchestrator_db(ws, (1, "failed"), (2, "failed"), (3, "skipped"))
        ws.invoke("--db", str(ws.db), "import", str(source))
        outcome = ws.outcome("--rerun-failed")
        assert (outcome["state"], outcome["attempt"]) == ("succeeded", 4)
        assert claims(ws) == [4]
        # Importing the database again adds no attempt: the next run is still numbered on.
        ws.invoke("--db", str(ws.db), "import", str(source))
        assert ws.outcome("--force")["attempt"] == 5
