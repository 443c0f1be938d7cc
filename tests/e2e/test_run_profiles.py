"""`run --model-profile` with the orchestrator's JSON profiles, by path and by name, and the
reasoning effort a profile or --extra gives, exported to the benchmark's environment.

The benchmark prints the reasoning-effort variables of its environment as a JSON line
on stdout (kept in the run's `stdout.log`) and writes a native result."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.execution.providers import REASONING_EFFORT_ENV
from tests.conftest import Invoke

BENCH = textwrap.dedent(
    f"""
    import json, os, sys
    from pathlib import Path
    names = {list(REASONING_EFFORT_ENV)!r}
    print(json.dumps({{n: os.environ.get(n) for n in names}}), flush=True)
    doc = {{"schema": "benchledger/run@1", "score": 1.0, "unit": "accuracy",
           "cells": [{{"key": "q1", "outcome": "passed", "score": 1.0}}]}}
    Path(sys.argv[1], "result.json").write_text(json.dumps(doc))
    """
)
CHECKOUT = os.environ.get("BENCHLEDGER_ORCHESTRATOR_CHECKOUT", "")
GPT = {"provider": "openai", "model": "gpt-x", "extra": {"reasoning_effort": "Medium "}}


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in (*REASONING_EFFORT_ENV, "BENCHLEDGER_REGISTRY", "BENCHLEDGER_PROFILES"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "bench.py").write_text(BENCH)
    command = json.dumps([sys.executable, "bench.py", "{output_dir}"])
    (tmp_path / "benchledger.toml").write_text(
        f"[benchmarks.bfcl]\ncommand = {command}\n\n[benchmarks.mint]\ncommand = {command}\n"
    )
    return tmp_path


def profile(folder: Path, name: str, data: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(data, indent=2))
    return path


def run(invoke: Invoke, *options: str, expect: int = 0) -> Any:
    return invoke("run", "--agent", "eliza", "--force", *options, expect=expect)


def seen(here: Path, benchmark: str) -> list[dict[str, str | None]]:
    """What each run of the benchmark saw, oldest first."""
    logs = sorted(
        here.glob(f"results/*/{benchmark}__eliza/*/stdout.log"), key=lambda p: p.stat().st_mtime_ns
    )
    return [json.loads(log.read_text().splitlines()[0]) for log in logs]


def recorded(invoke: Invoke) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = json.loads(invoke("runs", "--json").stdout)
    return sorted(runs, key=lambda r: r["started_at"])


class TestOrchestratorProfiles:
    def test_a_profile_file_by_path_gives_provider_model_and_reasoning_effort(
        self, invoke: Invoke, here: Path
    ) -> None:
        path = profile(here / "elsewhere", "gpt-x", GPT)
        run(invoke, "--benchmarks", "bfcl", "--model-profile", str(path))
        [env] = seen(here, "bfcl")
        assert env["OPENAI_REASONING_EFFORT"] == env["CEREBRAS_REASONING_EFFORT"] == "medium"
        assert set(env.values()) == {"medium"}
        [row] = recorded(invoke)
        assert (row["provider"], row["model"]) == ("openai", "gpt-x")
        assert (
            json.loads(invoke("show", row["run_id"], "--json").stdout)["run"]["config"][
                "reasoning_effort"
            ]
            == "Medium "
        )

    def test_a_profile_by_name_comes_from_the_profiles_folder_or_the_env_folder(
        self, invoke: Invoke, here: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        profile(here / "profiles", "gpt-x", GPT)
        run(invoke, "--benchmarks", "bfcl", "--model-profile", "gpt-x")
        profile(here / "shared", "cheap", {**GPT, "extra": {"reasoning_effort": "none"}})
        monkeypatch.setenv("BENCHLEDGER_PROFILES", str(here / "shared"))
        run(invoke, "--benchmarks", "bfcl", "--model-profile", "cheap")
        assert [e["CEREBRAS_REASONING_EFFORT"] for e in seen(here, "bfcl")] == ["medium", "none"]

    def test_extra_overrides_the_profile_and_per_benchmark_applies_to_its_benchmark(
        self, invoke: Invoke, here: Path
    ) -> None:
        path = profile(here, "gpt-x", GPT)
        extra = {"reasoning_effort": "high", "per_benchmark": {"mint": {"reasoning_effort": "low"}}}
        run(invoke, "--benchmarks", "bfcl", "--model-profile", str(path))
        run(invoke, "--benchmarks", "bfcl", "--model-profile", str(path), "--extra", '{"t": 1}')
        extra_only = json.dumps({"per_benchmark": extra["per_benchmark"]})
        run(invoke, "--benchmarks", "bfcl,mint", "--model", "m", "--extra", extra_only)
        assert [e["OPENAI_REASONING_EFFORT"] for e in seen(here, "bfcl")] == [
            "medium",
            "medium",
            None,
        ]
        assert [e["OPENAI_REASONING_EFFORT"] for e in seen(here, "mint")] == ["low"]
        run(
            invoke,
            "--benchmarks",
            "bfcl",
            "--model-profile",
            str(path),
            "--extra",
            '{"reasoning_effort": "high"}',
        )
        assert seen(here, "bfcl")[-1]["OPENAI_REASONING_EFFORT"] == "high"

    def test_the_effort_replaces_an_ambient_value_and_without_one_the_ambient_stays(
        self, invoke: Invoke, here: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("OPENAI_REASONING_EFFORT", "ambient")
        run(invoke, "--benchmarks", "bfcl", "--model", "m")
        run(
            invoke, "--benchmarks", "bfcl", "--model", "m", "--extra", '{"reasoning_effort": "low"}'
        )
        assert [e["OPENAI_REASONING_EFFORT"] for e in seen(here, "bfcl")] == ["ambient", "low"]

    def test_provider_and_model_given_win_over_the_profiles_with_a_warning(
        self, invoke: Invoke, here: Path
    ) -> None:
        path = profile(here, "gpt-x", GPT)
        result = run(invoke, "--benchmarks", "bfcl", "--model-profile", str(path), "--model", "y")
        assert "warning: --model y overrides model profile 'gpt-x' (gpt-x)" in result.stderr
        [row] = recorded(invoke)
        assert (row["provider"], row["model"]) == ("openai", "y")

    def test_a_bad_profile_file_is_an_error_naming_file_and_field_and_runs_nothing(
        self, invoke: Invoke, here: Path, db: Path
    ) -> None:
        path = profile(here, "bad", {"provider": "openai", "model": "m", "extra": "high"})
        result = run(invoke, "--benchmarks", "bfcl", "--model-profile", str(path), expect=1)
        assert result.stderr == f"Error: {path}: field 'extra': must be an object\n"
        assert not list(here.glob("results/*"))

    def test_an_unknown_profile_name_says_where_it_looked(self, invoke: Invoke, here: Path) -> None:
        result = run(invoke, "--benchmarks", "bfcl", "--model-profile", "gpt-x", expect=1)
        assert "unknown model profile 'gpt-x'" in result.stderr
        assert f"no gpt-x.json in {here / 'profiles'}" in result.stderr

    def test_a_profile_without_a_model_needs_model(self, invoke: Invoke, here: Path) -> None:
        path = profile(here, "sample", {"per_benchmark": {"bfcl": {"sample": 3}}})
        result = run(invoke, "--benchmarks", "bfcl", "--model-profile", str(path), expect=2)
        assert f"give --model: model profile '{path}' states no model" in result.stderr
        run(invoke, "--benchmarks", "bfcl", "--model-profile", str(path), "--model", "m")
        [row] = recorded(invoke)
        config = json.loads(invoke("show", row["run_id"], "--json").stdout)["run"]["config"]
        assert (config["sample"], config["limit"]) == (3, 3)

    def test_preflight_reports_a_bad_profile_file_as_its_blocker(
        self, invoke: Invoke, here: Path
    ) -> None:
        path = profile(here, "bad", {"provider": "openai", "model": "m", "tier": 1})
        out = here / "pre"
        options = ("--benchmarks", "bfcl", "--agent", "eliza", "--model-profile", str(path))
        invoke("preflight", *options, "--out", str(out), expect=2)
        report = json.loads((out / "preflight.json").read_text())
        [blocker] = report["blockers"]
        assert (blocker["subject"], report["exit_reason"]) == (str(path), "preflight_failed")
        assert "field 'tier': unknown key" in blocker["problem"]


@pytest.mark.skipif(
    not CHECKOUT, reason="set BENCHLEDGER_ORCHESTRATOR_CHECKOUT to a checkout of elizaOS/benchmarks"
)
class TestTheOrchestratorsOwnProfiles:
    def test_each_model_profile_runs_by_name_with_its_provider_model_and_effort(
        self, invoke: Invoke, here: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        folder = Path(CHECKOUT) / "suites" / "orchestrator" / "profiles"
        monkeypatch.setenv("BENCHLEDGER_PROFILES", str(folder))
        stated = {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}
        models = {name: data for name, data in stated.items() if "model" in data}
        assert models, f"no model profiles in {folder}"
        for name in models:
            run(invoke, "--benchmarks", "bfcl", "--model-profile", name)
        efforts = [
            str(data.get("extra", {}).get("reasoning_effort", "")).strip().lower() or None
            for data in models.values()
        ]
        assert [e["OPENAI_REASONING_EFFORT"] for e in seen(here, "bfcl")] == efforts
        assert [e["CEREBRAS_REASONING_EFFORT"] for e in seen(here, "bfcl")] == efforts
        assert [(r["provider"], r["model"]) for r in recorded(invoke)] == [
            (data["provider"], data["model"]) for data in models.values()
        ]
        for name in stated.keys() - models.keys():  # per_benchmark profiles, with --model
            run(invoke, "--benchmarks", "bfcl", "--model-profile", name, "--model", "m")
