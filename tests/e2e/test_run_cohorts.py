"""`benchledger run --agents` / `--all-agents`: agent cohorts, end to end.

Each test writes a benchmark script that records the agent, config and environment it
saw (`seen.json` in its output dir) and a registry, runs `benchledger run` as a real
subprocess, and reads the ledger back with the read commands, in-process. The script
is steered by environment variables (none part of the work's signature):

    COHORT_FAIL_AGENT   the agent whose run exits 1 (after writing its result)
    COHORT_BARRIER      a directory: each run writes its agent there, then waits
                        until COHORT_BARRIER_SIZE agents have (exit 3 after 20 s)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchledger.domain.signatures import comparison_signature
from tests.conftest import Invoke

BENCHLEDGER = Path(sys.executable).parent / "benchledger"
MODEL = "m1"
TRIO = ("eliza", "hermes", "openclaw")
PROCESS_TIMEOUT = 60.0

SCRIPT = """
import json, os, sys, time
from pathlib import Path

env = os.environ.get
out, agent, config = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
barrier = env("COHORT_BARRIER")
if barrier:
    Path(barrier, agent).write_text("")
    deadline = time.monotonic() + 20
    while len(os.listdir(barrier)) < int(env("COHORT_BARRIER_SIZE", "2")):
        if time.monotonic() > deadline:
            sys.exit(3)
        time.sleep(0.05)
(out / "seen.json").write_text(json.dumps({"agent": agent, "config": config}))
doc = {"schema": "benchledger/run@1", "score": 0.5 + 0.01 * len(agent), "unit": "accuracy",
       "cells": [{"key": "q1", "outcome": "passed", "score": 1.0}]}
(out / "result.json").write_text(json.dumps(doc))
sys.exit(1 if env("COHORT_FAIL_AGENT") == agent else 0)
"""


class Cohort:
    """One test's directory: the script, a registry, the ledger."""

    def __init__(self, root: Path, invoke: Invoke) -> None:
        self.root, self.invoke = root, invoke
        self.db = root / "ledger.db"
        self.registry = root / "benchledger.toml"
        self.results = root / "results"
        (root / "bench.py").write_text(textwrap.dedent(SCRIPT))
        command = json.dumps([sys.executable, "bench.py", "{output_dir}", "{agent}", "{config}"])
        self.registry.write_text(
            textwrap.dedent(
                f"""\
                [benchmarks.pair]
                command = {command}
                config = {{ limit = 4 }}
                agents = ["eliza", "hermes"]
                unit = "accuracy"

                [benchmarks.open]
                command = {command}
                unit = "accuracy"
                """
            )
        )

    def process(self, *options: str, env: dict[str, str] | None = None) -> Any:
        argv = [str(BENCHLEDGER), "--db", str(self.db), "run", "--registry", str(self.registry)]
        argv += ["--model", MODEL, *options]
        base = {k: v for k, v in os.environ.items() if not k.startswith(("COHORT_", "BENCH"))}
        return subprocess.run(
            argv,
            cwd=self.root,
            env={**base, **(env or {})},
            capture_output=True,
            text=True,
            timeout=PROCESS_TIMEOUT,
        )

    def run(self, *options: str, expect: int = 0, env: dict[str, str] | None = None) -> Any:
        """`run --json ...`: its summary, with its stderr."""
        done = self.process(*options, "--json", env=env)
        assert done.returncode == expect, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
        summary = json.loads(done.stdout)
        summary["stderr"] = done.stderr
        return summary

    def read(self, *args: str) -> Any:
        return json.loads(self.invoke(*args, "--json").stdout)

    def runs(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.read("runs")
        return sorted(rows, key=lambda r: (r["benchmark"], r["agent"], r["attempt"]))

    def seen(self, run: dict[str, Any]) -> dict[str, Any]:
        seen: dict[str, Any] = json.loads(
            (self.results / run["run_dir"] / "output" / "seen.json").read_text()
        )
        return seen


@pytest.fixture
def cohort(tmp_path: Path, invoke: Invoke) -> Iterator[Cohort]:
    yield Cohort(tmp_path, invoke)


def states(summary: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(o["benchmark"], o["agent"], o["state"]) for o in summary["outcomes"]]


class TestCohort:
    def test_agents_a_b_c_on_a_benchmark_supporting_a_and_b(self, cohort: Cohort) -> None:
        """Two runs of one comparison signature, one incompatible skip, one quarantine row."""
        summary = cohort.run("--benchmarks", "pair", "--agents", "eliza,hermes,openclaw")
        assert states(summary) == [
            ("pair", "eliza", "succeeded"),
            ("pair", "hermes", "succeeded"),
            ("pair", "openclaw", "skipped"),
        ]
        skipped = summary["outcomes"][2]
        assert (
            skipped["reason"] == "incompatible_agent: agent 'openclaw' is not among eliza, hermes"
        )

        runs = cohort.runs()
        assert [(r["agent"], r["status"], r["attempt"]) for r in runs] == [
            ("eliza", "succeeded", 1),
            ("hermes", "succeeded", 1),
        ]
        assert len({r["signature"] for r in runs}) == 2
        [shared] = {r["comparison_signature"] for r in runs}
        config = {"limit": 4, "agent": "eliza", "harness": "eliza"}
        assert shared == comparison_signature(
            "pair", "", MODEL, config, directory="pair", agent="eliza"
        )
        # One effective config: the agents saw it alike, but for their own names.
        seen = [cohort.seen(r) for r in runs]
        assert [s["config"] for s in seen] == [
            {"limit": 4, "agent": a, "harness": a} for a in ("eliza", "hermes")
        ]
        assert [s["agent"] for s in seen] == ["eliza", "hermes"]
        assert len({r["run_group_id"] for r in runs}) == 1

        [skip] = cohort.read("skips")
        assert (skip["agent"], skip["reason"]) == ("openclaw", "incompatible_agent")
        assert skip["run_group_id"] == runs[0]["run_group_id"]

        [held] = cohort.read("latest", "--quarantine")
        assert (held["benchmark"], held["agent"], held["status"]) == (
            "pair",
            "openclaw",
            "incompatible",
        )
        assert held["quarantine_reason"] == "incompatible_harness"
        assert held["comparison_signature"] == shared
        assert held["config"] == {"limit": 4, "agent": "openclaw", "harness": "openclaw"}
        assert held["metrics"] == {
            "reason": "harness_not_in_compatibility",
            "harness": "openclaw",
            "supported_harnesses": ["eliza", "hermes"],
        }
        latest = cohort.read("latest")
        assert [(r["agent"], r["run_id"]) for r in latest] == [
            (r["agent"], r["run_id"]) for r in runs
        ]

        cohort.invoke("export-latest", str(cohort.root / "out"))
        row = json.loads((cohort.root / "out" / "quarantine" / "pair__openclaw.json").read_text())
        assert (row["status"], row["quarantine_reason"]) == ("incompatible", "incompatible_harness")
        assert row["comparison_signature"] == shared
        assert row["metrics"]["reason"] == "harness_not_in_compatibility"
        index = json.loads((cohort.root / "out" / "latest" / "index.json").read_text())
        comparable = index["benchmark_comparability"]["pair"]
        assert (comparable["agents"], comparable["comparable"]) == (["eliza", "hermes"], True)
        assert sorted(index["latest"]) == ["pair::eliza", "pair::hermes"]
        assert sorted(p.name for p in (cohort.root / "out" / "latest").glob("pair__*.json")) == [
            "pair__eliza.json",
            "pair__hermes.json",
        ]

    def test_the_run_group_records_the_cohort(self, cohort: Cohort) -> None:
        summary = cohort.run("--benchmarks", "pair,open", "--agents", "hermes,eliza")
        [opened] = [e for e in cohort.read("events") if e["type"] == "RunGroupOpened"]
        request = opened["data"]["request"]
        assert request["agents"] == ["hermes", "eliza"] and "agent" not in request
        assert request["cohort"] == {"pair": ["hermes", "eliza"], "open": ["hermes", "eliza"]}
        assert states(summary) == [
            ("pair", "hermes", "succeeded"),
            ("pair", "eliza", "succeeded"),
            ("open", "hermes", "succeeded"),
            ("open", "eliza", "succeeded"),
        ]
        [closed] = [e for e in cohort.read("events") if e["type"] == "RunGroupClosed"]
        assert closed["data"]["summary"] == {"succeeded": 4}

    def test_all_agents_runs_each_benchmarks_compatible_agents(self, cohort: Cohort) -> None:
        summary = cohort.run("--benchmarks", "pair,open", "--all-agents")
        assert states(summary) == [
            ("pair", "eliza", "succeeded"),
            ("pair", "hermes", "succeeded"),
            *(("open", agent, "succeeded") for agent in TRIO),
        ]
        assert cohort.read("skips") == []
        runs = cohort.runs()
        by_benchmark: dict[str, set[str]] = {}
        for r in runs:
            by_benchmark.setdefault(r["benchmark"], set()).add(r["comparison_signature"])
        assert {b: len(s) for b, s in by_benchmark.items()} == {"open": 1, "pair": 1}
        assert cohort.read("latest", "--quarantine") == []
        assert {(r["benchmark"], r["agent"]) for r in cohort.read("latest")} == {
            ("pair", "eliza"),
            ("pair", "hermes"),
            *(("open", agent) for agent in TRIO),
        }

    def test_jobs_2_runs_the_cohorts_agents_at_once(self, cohort: Cohort) -> None:
        """Each run waits until both agents have started: only concurrent runs succeed."""
        barrier = cohort.root / "barrier"
        barrier.mkdir()
        env = {"COHORT_BARRIER": str(barrier), "COHORT_BARRIER_SIZE": "2"}
        summary = cohort.run(
            "--benchmarks", "pair", "--agents", "eliza,hermes,openclaw", "--jobs", "2", env=env
        )
        assert states(summary) == [
            ("pair", "eliza", "succeeded"),
            ("pair", "hermes", "succeeded"),
            ("pair", "openclaw", "skipped"),
        ]
        assert sorted(p.name for p in barrier.iterdir()) == ["eliza", "hermes"]
        runs = cohort.runs()
        assert len({r["comparison_signature"] for r in runs}) == 1
        assert len({r["run_dir"] for r in runs}) == 2
        assert len(cohort.read("latest", "--quarantine")) == 1

    def test_a_second_invocation_skips_the_agents_that_succeeded(self, cohort: Cohort) -> None:
        env = {"COHORT_FAIL_AGENT": "hermes"}
        options = ("--benchmarks", "pair", "--agents", "eliza,hermes,openclaw")
        first = cohort.run(*options, env=env, expect=1)
        assert states(first) == [
            ("pair", "eliza", "succeeded"),
            ("pair", "hermes", "failed"),
            ("pair", "openclaw", "skipped"),
        ]
        again = cohort.run(*options)
        assert states(again) == [
            ("pair", "eliza", "skipped"),
            ("pair", "hermes", "succeeded"),
            ("pair", "openclaw", "skipped"),
        ]
        eliza_run = first["outcomes"][0]["run_id"]
        assert again["outcomes"][0]["reason"] == f"already_succeeded (see run {eliza_run[:8]})"
        assert again["outcomes"][1]["attempt"] == 2
        third = cohort.run(*options)
        assert [o["state"] for o in third["outcomes"]] == ["skipped"] * 3
        assert [(r["agent"], r["attempt"], r["status"]) for r in cohort.runs()] == [
            ("eliza", 1, "succeeded"),
            ("hermes", 1, "failed"),
            ("hermes", 2, "succeeded"),
        ]
        reasons = [(s["agent"], s["reason"]) for s in cohort.read("skips")]
        assert reasons.count(("openclaw", "incompatible_agent")) == 3
        held = {r["agent"]: r["quarantine_reason"] for r in cohort.read("latest", "--quarantine")}
        # (The failed attempt stays its agent's quarantined row: a failure is kept.)
        assert held == {"hermes": "unsucceeded_run", "openclaw": "incompatible_harness"}
        assert {r["agent"] for r in cohort.read("latest")} == {"eliza", "hermes"}

    def test_latest_publishes_the_cohort_as_one_after_an_agent_reruns_another_config(
        self, cohort: Cohort
    ) -> None:
        cohort.run("--benchmarks", "pair", "--agents", "eliza,hermes")
        cohort_runs = {r["agent"]: r["run_id"] for r in cohort.runs()}
        alone = cohort.run("--benchmarks", "pair", "--agent", "eliza", "--extra", '{"limit": 2}')
        newer = alone["outcomes"][0]["run_id"]
        latest = cohort.read("latest")
        assert {r["agent"]: r["run_id"] for r in latest} == cohort_runs
        assert len({r["comparison_signature"] for r in latest}) == 1
        rows = cohort.root / "per-agent"
        cohort.invoke("export-latest", str(rows), "--selection", "newest")
        eliza = json.loads((rows / "latest" / "pair__eliza.json").read_text())
        assert eliza["run_id"] == newer != cohort_runs["eliza"]

        # A new complete cohort of the new config is published together instead.
        cohort.run("--benchmarks", "pair", "--agents", "eliza,hermes", "--extra", '{"limit": 2}')
        latest = cohort.read("latest")
        assert latest[0]["run_id"] == newer and latest[1]["run_id"] != cohort_runs["hermes"]
        assert len({r["comparison_signature"] for r in latest}) == 1

    def test_the_incompatible_skip_masks_the_configs_secrets_but_not_its_signature(
        self, cohort: Cohort
    ) -> None:
        secret = "tok-9f8e7d6c5b4a39281706"
        extra = json.dumps({"api_token": secret})
        cohort.run("--benchmarks", "pair", "--agents", "eliza,openclaw", "--extra", extra)
        [run] = cohort.runs()
        [held] = cohort.read("latest", "--quarantine")
        assert held["comparison_signature"] == run["comparison_signature"]
        assert held["config"]["api_token"] == run["config"]["api_token"] != secret
        [skipped] = [e for e in cohort.read("events") if e["type"] == "BenchmarkSkipped"]
        assert skipped["data"]["supported_agents"] == ["eliza", "hermes"]
        assert skipped["data"]["comparison_signature"] == run["comparison_signature"]
        assert secret not in cohort.invoke("events", "--json").stdout


class TestOutput:
    def test_the_table_has_an_agent_column_for_a_cohort_only(self, cohort: Cohort) -> None:
        done = cohort.process("--benchmarks", "pair", "--agents", "eliza,openclaw")
        assert done.returncode == 0, done.stderr
        header, _rule, *lines = done.stdout.splitlines()
        assert header.split()[:3] == ["benchmark", "agent", "state"]
        assert [line.split()[:3] for line in lines] == [
            ["pair", "eliza", "succeeded"],
            ["pair", "openclaw", "skipped"],
        ]
        assert "1 skipped, 1 succeeded" in done.stderr
        single = cohort.process("--benchmarks", "open", "--agent", "hermes")
        assert single.stdout.split()[:2] == ["benchmark", "state"]

    def test_json_outcomes_name_their_agent(self, cohort: Cohort) -> None:
        summary = cohort.run("--benchmarks", "open", "--agent", "hermes")
        assert [o["agent"] for o in summary["outcomes"]] == ["hermes"]

    def test_an_agent_no_known_harness_is_warned_of(self, cohort: Cohort) -> None:
        summary = cohort.run("--benchmarks", "open", "--agents", "eliza,codex")
        assert "warning: not a known harness: codex" in summary["stderr"]
        signatures = {r["agent"]: r["comparison_signature"] for r in cohort.runs()}
        assert signatures["codex"] != signatures["eliza"]


class TestErrors:
    @pytest.mark.parametrize(
        ("options", "message"),
        [
            (("--agent", "eliza", "--agents", "hermes"), "--agent and --agents exclude each other"),
            (("--agent", "eliza", "--all-agents"), "--agent and --all-agents exclude each other"),
            (("--agents", "eliza", "--all-agents"), "--agents and --all-agents exclude each other"),
            (("--agents", " , "), "Invalid value for --agents: names no agent"),
            ((), "Missing option '--agent' (or --agents A,B,... or --all-agents)."),
        ],
    )
    def test_conflicting_or_missing_agents_are_refused_appending_nothing(
        self, cohort: Cohort, options: tuple[str, ...], message: str
    ) -> None:
        done = cohort.process("--benchmarks", "pair", *options)
        assert done.returncode == 2, done.stdout
        assert f"Error: {message}" in done.stderr
        assert not cohort.db.exists() or cohort.read("events") == []

    def test_an_agent_without_the_account_pool_asked_for_is_named(self, cohort: Cohort) -> None:
        done = cohort.process("--benchmarks", "open", "--agents", "eliza,hermes", "--accounts", "1")
        assert done.returncode == 2
        assert "no account pool for agent 'eliza'" in done.stderr
        assert not cohort.db.exists() or cohort.read("events") == []
