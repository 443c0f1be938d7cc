"""Runtime gates end to end: a registry's `requires` probed by `gate runtime`, refused
at launch by `run`, blocked by `preflight` and `review`, and part of readiness."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Invoke

MISSING_ENV = "BENCHLEDGER_TEST_NEVER_SET_KEY"
BENCH = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    doc = {"schema": "benchledger/run@1", "score": 0.75, "unit": "accuracy",
           "cells": [{"key": "q1", "outcome": "passed", "score": 1.0}]}
    Path(sys.argv[1], "result.json").write_text(json.dumps(doc))
    """
)


def registry(folder: Path, **requires: list[str]) -> Path:
    """A registry of benchmarks that each write a result, requiring what is given."""
    (folder / "bench.py").write_text(BENCH)
    lines = []
    for benchmark, needs in requires.items():
        lines += [
            f"[benchmarks.{benchmark}]",
            f'command = ["{sys.executable}", "bench.py", "{{output_dir}}"]',
            f"requires = {json.dumps(needs)}",
            "",
        ]
    path = folder / "benchledger.toml"
    path.write_text("\n".join(lines))
    return path


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(MISSING_ENV, raising=False)
    monkeypatch.delenv("BENCHLEDGER_REGISTRY", raising=False)
    return tmp_path


def events(invoke: Invoke, kind: str) -> list[dict[str, Any]]:
    return [e["data"] for e in json.loads(invoke("events", "--json").stdout) if e["type"] == kind]


class TestGateRuntime:
    def test_a_missing_command_and_env_var_fail_the_gate_each_named(
        self, invoke: Invoke, here: Path
    ) -> None:
        registry(
            here,
            swe=["command:benchledger-no-such-program", f"env:{MISSING_ENV}"],
            easy=["command:python3" if os.name != "nt" else "command:python"],
        )
        result = invoke("gate", "runtime", expect=1)
        assert "runtime: 2 findings" in result.stdout
        assert "benchledger-no-such-program" in result.stdout and MISSING_ENV in result.stdout
        verdict = json.loads(invoke("validate-runtime-gates", "--json", expect=1).stdout)
        assert verdict["gate"] == "runtime" and verdict["ok"] is False
        assert [(f["scope"], f["reason"], f["requirement"]) for f in verdict["findings"]] == [
            ("swe", "runtime_gate_blocked", "command:benchledger-no-such-program"),
            ("swe", "runtime_gate_blocked", f"env:{MISSING_ENV}"),
        ]
        assert "is not on PATH" in verdict["findings"][0]["value"]
        assert f"environment variable {MISSING_ENV} is not set" in verdict["findings"][1]["value"]
        recorded = events(invoke, "GateEvaluated")  # the validator's check records nothing
        assert [(e["gate"], e["ok"], e["finding_count"]) for e in recorded] == [
            ("runtime", False, 2)
        ]
        assert recorded[0]["params"]["runtime_gates"]["requires"]["swe"] == [
            "command:benchledger-no-such-program",
            f"env:{MISSING_ENV}",
        ]
        listed = json.loads(invoke("gates", "--gate", "runtime", "--json").stdout)
        assert len(listed) == 1

    def test_met_requirements_pass_and_benchmarks_selects_what_is_probed(
        self, invoke: Invoke, here: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        registry(here, swe=[f"env:{MISSING_ENV}"], easy=["path:bench.py"])
        assert invoke("gate", "runtime", "--benchmarks", "easy", "--json").stdout
        invoke("gate", "runtime", "--exclude-benchmarks", "swe")
        invoke("gate", "runtime", expect=1)
        monkeypatch.setenv(MISSING_ENV, "set")
        verdict = json.loads(invoke("gate", "runtime", "--json").stdout)
        assert verdict["ok"] is True and verdict["findings"] == []

    def test_alternatives_are_met_by_any_one(
        self, invoke: Invoke, here: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        registry(here, sandbox=[f"env:{MISSING_ENV}|command:benchledger-no-such-program"])
        [item] = json.loads(invoke("gate", "runtime", "--json", expect=1).stdout)["findings"]
        assert f"environment variable {MISSING_ENV} is not set; command" in item["value"]
        monkeypatch.setenv(MISSING_ENV, "x")
        invoke("gate", "runtime")

    def test_an_unknown_requirement_is_a_registry_error_naming_entry_and_value(
        self, invoke: Invoke, here: Path
    ) -> None:
        registry(here, swe=["docker", "gpu:a100"])
        result = invoke("gate", "runtime", expect=1)
        assert "benchledger.toml: field 'benchmarks.swe.requires'" in result.stderr
        assert "unknown requirement 'gpu:a100'" in result.stderr

    def test_an_unknown_benchmark_is_named(self, invoke: Invoke, here: Path) -> None:
        registry(here, swe=["docker"])
        result = invoke("gate", "runtime", "--benchmarks", "nope", expect=1)
        assert "unknown benchmarks: nope" in result.stderr

    def test_benchmarks_is_for_the_runtime_gate_only(self, invoke: Invoke, here: Path) -> None:
        registry(here, swe=[])
        result = invoke("gate", "readiness", "--benchmarks", "swe", expect=2)
        assert "--benchmarks selects the runtime gate's benchmarks" in result.stderr


def fake_docker(folder: Path, body: str) -> Path:
    """A `docker` command on PATH that behaves as `body` says (shell)."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    program = bin_dir / "docker"
    program.write_text(f"#!/bin/sh\n{body}\n")
    program.chmod(program.stat().st_mode | stat.S_IEXEC)
    return bin_dir


@pytest.mark.skipif(os.name == "nt", reason="a shell-script docker needs a POSIX shell")
class TestDockerProbe:
    def test_a_daemon_that_answers_passes(
        self, invoke: Invoke, here: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        bin_dir = fake_docker(here, 'echo "27.1.1"; exit 0')
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        registry(here, terminal=["docker"])
        invoke("gate", "runtime")

    def test_a_docker_command_without_a_daemon_fails_with_what_it_said(
        self, invoke: Invoke, here: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        bin_dir = fake_docker(here, 'echo "Cannot connect to the Docker daemon" >&2; exit 1')
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        registry(here, terminal=["docker"])
        [item] = json.loads(invoke("gate", "runtime", "--json", expect=1).stdout)["findings"]
        assert item["value"] == (
            "docker: `docker info` exited 1, no reachable Docker daemon: "
            "Cannot connect to the Docker daemon"
        )

    def test_a_daemon_that_hangs_is_given_up_on_in_bounded_time(
        self, invoke: Invoke, here: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        bin_dir = fake_docker(here, "exec sleep 30")
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setenv("BENCHLEDGER_DOCKER_TIMEOUT", "0.5")
        registry(here, terminal=["docker"], osworld=["docker"])
        began = time.monotonic()
        verdict = json.loads(invoke("gate", "runtime", "--json", expect=1).stdout)
        assert time.monotonic() - began < 10  # asked once, given up on after 0.5 s
        assert [f["scope"] for f in verdict["findings"]] == ["terminal", "osworld"]
        assert "did not answer `docker info` within 0.5s" in verdict["findings"][0]["value"]

    def test_no_docker_command_at_all(
        self, invoke: Invoke, here: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("PATH", str(here / "empty-bin"))
        registry(here, terminal=["docker"])
        [item] = json.loads(invoke("gate", "runtime", "--json", expect=1).stdout)["findings"]
        assert item["value"] == "docker: the docker command is not on PATH"


class TestLaunchAndPreflight:
    def test_run_refuses_the_benchmark_naming_the_requirement_and_runs_the_rest(
        self, invoke: Invoke, here: Path
    ) -> None:
        registry(here, swe=["command:benchledger-no-such-program"], easy=[])
        args = ("--benchmarks", "swe,easy", "--agent", "eliza", "--model", "m")
        result = invoke("run", *args, expect=1)  # a refusal is a failure
        assert result.stderr.endswith(": 1 refused, 1 succeeded\n")
        [refused] = events(invoke, "LaunchRefused")
        assert refused["benchmark"] == "swe" and refused["reason"] == "runtime_gate"
        assert refused["missing_requirements"] == ["command:benchledger-no-such-program"]
        assert "command 'benchledger-no-such-program' is not on PATH" in refused["detail"]
        skips = json.loads(invoke("skips", "--json").stdout)
        assert [(s["benchmark"], s["outcome"], s["reason"]) for s in skips] == [
            ("swe", "launch_refused", "runtime_gate")
        ]
        assert [r["benchmark"] for r in json.loads(invoke("runs", "--json").stdout)] == ["easy"]

    def test_a_missing_env_requirement_is_also_named_as_missing_env(
        self, invoke: Invoke, here: Path
    ) -> None:
        registry(here, hl=[f"env:{MISSING_ENV}"])
        invoke("run", "--benchmarks", "hl", "--agent", "eliza", "--model", "m", expect=1)
        [refused] = events(invoke, "LaunchRefused")
        assert refused["missing_env"] == [MISSING_ENV]
        assert refused["missing_requirements"] == [f"env:{MISSING_ENV}"]

    def test_preflight_blocks_with_the_step_that_unblocks(self, invoke: Invoke, here: Path) -> None:
        registry(here, swe=[f"env:{MISSING_ENV}", "command:benchledger-no-such-program"])
        out = here / "pre"
        args = ("--benchmarks", "swe", "--agent", "eliza", "--model", "m", "--out", str(out))
        invoke("preflight", *args, expect=2)
        report = json.loads((out / "preflight.json").read_text())
        blockers = [(b["check"], b["subject"]) for b in report["blockers"]]
        assert blockers == [
            ("runtime", f"env:{MISSING_ENV}"),
            ("runtime", "command:benchledger-no-such-program"),
        ]
        assert report["unblock"][0].startswith(f"export {MISSING_ENV}=... (needed by swe)")
        assert report["checks"]["runtime"]["required"] == {
            "swe": [f"env:{MISSING_ENV}", "command:benchledger-no-such-program"]
        }

    def test_review_stops_at_preflight_and_runs_nothing(
        self, invoke: Invoke, here: Path, db: Path
    ) -> None:
        registry(here, swe=["command:benchledger-no-such-program"])
        out = here / "review"
        result = invoke(
            "review",
            "--benchmarks",
            "swe",
            "--agent",
            "eliza",
            "--model",
            "m",
            "--reviewer",
            "ana",
            "--note",
            "checked",
            "--out",
            str(out),
            expect=2,
        )
        assert result.stdout.startswith("preflight: blocked (swe: runtime gate command:")
        assert "benchledger-no-such-program is not met" in result.stdout
        assert not (out / "manifest.json").exists()
        assert not db.exists()  # nothing appended: not even a ledger was started

    def test_review_with_skip_runtime_gates_neither_probes_nor_refuses(
        self, invoke: Invoke, here: Path
    ) -> None:
        registry(here, swe=["command:benchledger-no-such-program"])
        out = here / "review"
        result = invoke(
            "review",
            "--benchmarks",
            "swe",
            "--agent",
            "eliza",
            "--model",
            "m",
            "--reviewer",
            "ana",
            "--note",
            "checked",
            "--out",
            str(out),
            "--skip-runtime-gates",
            expect=None,
        )
        assert "preflight: ok" in result.stdout and "run: ok" in result.stdout
        report = json.loads((out / "preflight.json").read_text())
        assert report["checks"]["runtime"] == {"not checked": "--skip-runtime-gates"}
        assert len(events(invoke, "RunStarted")) == 1


class TestReadiness:
    def test_readiness_adds_the_runtime_gates_of_the_benchmarks_in_scope(
        self, invoke: Invoke, here: Path
    ) -> None:
        registry(here, swe=[], easy=[])
        invoke("run", "--benchmarks", "swe,easy", "--agent", "eliza", "--model", "m")
        invoke("gate", "readiness")
        registry(here, swe=["command:benchledger-no-such-program"], easy=[])
        verdict = json.loads(invoke("gate", "readiness", "--json", expect=1).stdout)
        assert [(f["scope"], f["reason"]) for f in verdict["findings"]] == [
            ("runtime_gate:swe", "runtime_gate_blocked")
        ]
        invoke("gate", "readiness", "--exclude-benchmarks", "swe")
        skipped = json.loads(invoke("gate", "readiness", "--skip-runtime-gates", "--json").stdout)
        assert skipped["ok"] is True
        recorded = events(invoke, "GateEvaluated")[-1]
        assert recorded["params"]["runtime_gates"] == {"not checked": "--skip-runtime-gates"}
        alias = invoke("validate-latest-readiness", "--skip-runtime-gates")
        assert alias.stdout.startswith("readiness: ok")
        invoke("validate-latest-readiness", expect=1)
