"""Trajectory turns of a run `benchledger run` executes: a benchmark script (`turns.py`)
writes its native JSONL result with a turn line per model call, and the run's turns are
in the `turns` read model, while it runs and when it ends, as an imported orchestrator
run's are; head-to-head backs its token, cache and call figures with them.

Steered by environment variables, none part of the work's signature:

    TURNS_N         how many tasks (a cell and a turn each; default 4)
    TURNS_GAP       seconds between tasks (default 0)
    TURNS_HOLD      seconds to sleep after the tasks (default 0)
    TURNS_PROMPT    input tokens of each turn (default 100)
    TURNS_REWRITE   at the end, replace the result: turn 0 with 7 output tokens
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Invoke
from tests.e2e.test_run import Workspace, eventually

TURNS_SCRIPT = """
import json, os, sys, time
from pathlib import Path

env = os.environ.get
out = Path(sys.argv[1])
n, gap = int(env("TURNS_N", "4")), float(env("TURNS_GAP", "0"))
prompt = int(env("TURNS_PROMPT", "100"))
lines = [{"type": "run", "status": "succeeded", "score": 0.5, "unit": "accuracy"}]
path = out / "result.jsonl"
with path.open("w") as f:
    f.write(json.dumps(lines[0]) + "\\n")
    for i in range(n):
        if i:
            time.sleep(gap)
        task = [
            {"type": "cell", "key": f"q{i}", "outcome": "passed" if i % 2 else "failed"},
            {"type": "turn", "trajectory": "agent.jsonl", "input_tokens": prompt,
             "output_tokens": 20, "cached_tokens": prompt // 2, "latency_ms": 12.5,
             "prompt_chars": 4 * prompt},
        ]
        lines += task
        f.write("".join(json.dumps(x) + "\\n" for x in task))
        f.flush()
    time.sleep(float(env("TURNS_HOLD", "0")))
if env("TURNS_REWRITE"):
    lines[2]["output_tokens"] = 7
    (out / "new.tmp").write_text("".join(json.dumps(x) + "\\n" for x in lines))
    os.replace(out / "new.tmp", path)
"""


class TurnsWorkspace(Workspace):
    def __init__(self, root: Path, invoke: Invoke) -> None:
        super().__init__(root, invoke)
        (root / "turns.py").write_text(textwrap.dedent(TURNS_SCRIPT))
        command = json.dumps([sys.executable, "turns.py", "{output_dir}"])
        with self.registry.open("a") as registry:
            registry.write(
                textwrap.dedent(
                    f"""
                    [benchmarks.agentic]
                    command = {command}
                    result = "result.jsonl"
                    unit = "accuracy"
                    """
                )
            )

    def shown(self, *args: str) -> Any:
        """What a `--read-only` command shows (None while the read models are behind)."""
        result = self.invoke("--read-only", *args, "--json", expect=None)
        return json.loads(result.stdout) if result.exit_code == 0 else None

    def running(self) -> dict[str, Any] | None:
        running = [r for r in self.shown("runs") or [] if r["status"] == "running"]
        return running[0] if running else None

    def turns(self, run_id: str) -> list[tuple[Any, ...]]:
        """The run's rows of the `turns` read model."""
        with closing(sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)) as conn:
            return conn.execute(
                "SELECT trajectory_file, turn_index, prompt_tokens, completion_tokens, "
                "cached_tokens, latency_ms, prompt_chars FROM turns WHERE run_id = ? "
                "ORDER BY trajectory_file, turn_index",
                (run_id,),
            ).fetchall()

    def shown_turns(self, run_id: str) -> int:
        """How many turns `show --read-only` counts for the run."""
        shown = self.shown("show", run_id) or {"trajectories": []}
        return sum(t["turns"] for t in shown["trajectories"])

    def recorded_turns(self, run_id: str) -> int:
        return sum(
            len(e["data"]["turns"])
            for e in self.history(run_id)
            if e["type"] == "TrajectoryRecorded"
        )


@pytest.fixture
def tws(tmp_path: Path, invoke: Invoke) -> Iterator[TurnsWorkspace]:
    workspace = TurnsWorkspace(tmp_path, invoke)
    yield workspace
    workspace.cleanup()


def turn_row(index: int, output: int = 20) -> tuple[Any, ...]:
    return ("agent.jsonl", index, 100, output, 50, 12.5, 400)


class TestTurnsOfAnExecutedRun:
    def test_turn_lines_are_the_runs_turns_while_it_runs_and_when_it_ends(
        self, tws: TurnsWorkspace
    ) -> None:
        process = tws.start(benchmarks="agentic", env={"TURNS_GAP": "1", "TURNS_HOLD": "2"})
        run_id = eventually(tws.running, "the running run", seconds=20)["run_id"]

        def while_running(n: int) -> bool:
            row = tws.running()
            return row is not None and tws.shown_turns(run_id) >= n

        eventually(lambda: while_running(2), "two turns while it runs", seconds=20)
        assert tws.finish(process)["outcomes"][0]["state"] == "succeeded"
        assert tws.turns(run_id) == [turn_row(i) for i in range(4)]
        # Recorded as they arrived, in several batches; the final reading added none twice.
        batches = [e for e in tws.history(run_id) if e["type"] == "TrajectoryRecorded"]
        assert len(batches) >= 2
        assert tws.recorded_turns(run_id) == 4

    def test_a_final_result_stating_a_recorded_turn_differently_is_an_error_of_the_run(
        self, tws: TurnsWorkspace
    ) -> None:
        process = tws.start(benchmarks="agentic", env={"TURNS_HOLD": "3", "TURNS_REWRITE": "1"})
        run_id = eventually(tws.running, "the running run", seconds=20)["run_id"]
        eventually(lambda: tws.shown_turns(run_id) == 4, "its 4 turns", seconds=20)
        assert tws.finish(process, expect=1)["outcomes"][0]["state"] == "failed"
        run = tws.run_row(run_id)
        assert run["status"] == "error"
        assert (
            "turn 0 of trajectory 'agent.jsonl', field 'completion_tokens': recorded 20, "
            "then stated 7" in run["error"]
        )
        assert tws.turns(run_id) == [turn_row(i) for i in range(4)]  # never overwritten


def test_head_to_head_backs_executed_runs_with_their_turns(tws: TurnsWorkspace) -> None:
    """Two agents run through `run`, their results stating turns and no tokens: each
    side's tokens, cache and LLM calls are its turns' sums and count, as for imported
    orchestrator runs, so the trajectory review has its telemetry."""
    for agent, prompt in (("eliza", "100"), ("opencode", "200")):
        argv = tws.argv(benchmarks="agentic")
        argv[argv.index("--agent") + 1] = agent
        tws.processes.append(process := _start(tws, argv, {"TURNS_PROMPT": prompt}))
        assert tws.finish(process)["outcomes"][0]["state"] == "succeeded"
    result = tws.invoke(
        "head-to-head", "--target", "eliza", "--baseline", "opencode", "--json", expect=None
    )
    report = json.loads(result.stdout)
    [row] = report["report_rows"]
    assert (row["target_llm_calls"], row["baseline_llm_calls"]) == (4, 4)
    assert (row["target_input_tokens"], row["baseline_input_tokens"]) == (400, 800)
    assert (row["target_total_tokens"], row["baseline_total_tokens"]) == (480, 880)
    assert row["target_cached_pct"] == pytest.approx(50.0)
    assert row["token_evidence"] is True
    assert row["trajectory_review"] is True
    assert report["gates"]["trajectory_reviews"]["ok"] is True
    assert report["gates"]["token_evidence"]["ok"] is True


def _start(tws: TurnsWorkspace, argv: list[str], env: dict[str, str]) -> Any:
    return subprocess.Popen(
        argv,
        cwd=tws.root,
        env=tws.environ(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
