"""The static checks that run nothing: `inventory` (the orchestrator's checklist) and
`validate-matrix` (every benchmark's command built for each harness)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Invoke

# Keys of the orchestrator's `inventory --format json` and its rows (inventory.py).
INVENTORY_KEYS = {
    "adapter_count",
    "registry_entry_count",
    "benchmark_directory_count",
    "checklist_count",
    "registry_entries_without_adapters",
    "adapters_without_registry_entries",
    "benchmark_directories_without_adapters",
    "rows",
}
ROW_KEYS = {
    "benchmark_id",
    "directory",
    "source",
    "display_name",
    "description",
    "harnesses",
    "required_env",
    "result_locator_patterns",
    "trajectory_expectations",
    "default_timeout_seconds",
    "default_extra_config",
    "command_cwd",
    "has_adapter",
    "has_registry_entry",
}
# Keys of the orchestrator's `validate-matrix --format json` and its cells.
MATRIX_KEYS = {
    "provider",
    "model",
    "harnesses",
    "adapter_count",
    "compatible_cell_count",
    "incompatible_cell_count",
    "error_count",
    "cells",
}
CELL_KEYS = {
    "benchmark_id",
    "directory",
    "harness",
    "compatible",
    "reason",
    "cwd",
    "command",
    "command_display",
    "default_extra_config",
    "effective_extra_config",
    "required_env",
    "env_overrides",
    "propagated_env",
    "result_locator_patterns",
    "trajectory_expectations",
    "error",
}
# A benchmark that leaves a mark if it is ever launched.
MARKER_SCRIPT = "import pathlib, sys; pathlib.Path(sys.argv[1], 'ran').write_text('x')"

READY = f"""\
[benchmarks.alpha]
description = "Alpha questions"
command = [{json.dumps(sys.executable)}, "bench.py", "{{output_dir}}", "{{config}}"]
cwd = "suites/alpha"
result = "result.json"
config = {{ limit = 2, api_key = "plain-registry-secret-99" }}
required_env = ["ALPHA_TOKEN"]
agents = ["eliza", "codex"]

[benchmarks.beta]
command = [{json.dumps(sys.executable)}, "bench.py", "{{output_dir}}"]
cwd = "suites/beta"
directory = "beta-suite"
"""
BROKEN = """
[benchmarks.gamma]
command = ["no-such-harness-91c2", "{config.missing}"]
"""


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A registry of two runnable benchmarks in their own directories, as the cwd."""
    monkeypatch.chdir(tmp_path)
    for name in ("alpha", "beta"):
        folder = tmp_path / "suites" / name
        folder.mkdir(parents=True)
        (folder / "bench.py").write_text(MARKER_SCRIPT)
    (tmp_path / "benchledger.toml").write_text(READY)
    return tmp_path


def with_gap(workspace: Path) -> None:
    registry = workspace / "benchledger.toml"
    registry.write_text(registry.read_text() + BROKEN)


def as_json(text: str) -> Any:
    return json.loads(text)


class TestTheInventoryChecklist:
    def test_json_has_the_orchestrators_keys_and_one_row_per_registry_entry(
        self, invoke: Invoke, workspace: Path
    ) -> None:
        result = invoke("inventory", "--format", "json")
        report = as_json(result.stdout)
        assert set(report) >= INVENTORY_KEYS
        assert (report["adapter_count"], report["registry_entry_count"]) == (2, 2)
        assert (report["checklist_count"], report["benchmark_directory_count"]) == (2, 2)
        assert report["registry_entries_without_adapters"] == []
        assert report["adapters_without_registry_entries"] == []
        assert report["benchmark_directories_without_adapters"] == []
        alpha, beta = report["rows"]
        assert set(alpha) >= ROW_KEYS
        assert (alpha["benchmark_id"], alpha["source"], alpha["directory"]) == (
            "alpha",
            "registry",
            "alpha",
        )
        assert (alpha["has_adapter"], alpha["has_registry_entry"]) == (True, True)
        assert alpha["description"] == "Alpha questions"
        assert alpha["harnesses"] == ["eliza", "codex"]
        assert alpha["required_env"] == ["ALPHA_TOKEN"]
        assert alpha["result_locator_patterns"] == ["result.json"]
        assert alpha["command_cwd"] == str(workspace / "suites" / "alpha")
        assert any("{output_dir}" in t for t in alpha["trajectory_expectations"])
        # no `agents` means any: the canonical harnesses run it
        assert beta["harnesses"] == ["eliza", "hermes", "openclaw"]
        assert beta["directory"] == "beta-suite"
        assert "OK: 2 benchmarks ready" in result.stderr

    def test_a_secret_in_a_default_config_is_masked(self, invoke: Invoke, workspace: Path) -> None:
        result = invoke("inventory", "--format", "json")
        assert "plain-registry-secret-99" not in result.stdout
        alpha = as_json(result.stdout)["rows"][0]
        assert alpha["default_extra_config"] == {"limit": 2, "api_key": "[REDACTED]"}

    def test_markdown_is_the_default_with_the_orchestrators_sections(
        self, invoke: Invoke, workspace: Path
    ) -> None:
        text = invoke("inventory").stdout
        assert text == invoke("inventory", "--format", "markdown").stdout
        assert text.startswith("# Benchmark Inventory Checklist\n")
        assert "- registry entries without adapters: `0`" in text
        assert "| benchmark | source | directory | harnesses | required env |" in text
        assert "| alpha | registry | alpha | eliza, codex | ALPHA_TOKEN | result.json |" in text
        assert "## Registry Entries Without Adapters" not in text

    def test_a_benchmark_that_cannot_run_as_declared_is_an_entry_without_adapter_exit_2(
        self, invoke: Invoke, workspace: Path
    ) -> None:
        with_gap(workspace)
        result = invoke("inventory", "--format", "json", expect=2)
        report = as_json(result.stdout)
        assert report["registry_entries_without_adapters"] == ["gamma"]
        assert (report["adapter_count"], report["registry_entry_count"]) == (2, 3)
        gamma = report["rows"][2]
        assert (gamma["benchmark_id"], gamma["has_adapter"]) == ("gamma", False)
        assert [g["benchmark"] for g in report["gaps"]] == ["gamma", "gamma"]
        assert "no-such-harness-91c2" in report["gaps"][0]["problem"]
        assert result.stderr.strip() == "2 gaps in benchledger.toml"

    def test_markdown_names_each_gap_under_its_section(
        self, invoke: Invoke, workspace: Path
    ) -> None:
        with_gap(workspace)
        text = invoke("inventory", expect=2).stdout
        assert "- registry entries without adapters: `1`" in text
        assert "## Registry Entries Without Adapters\n\n- gamma: command 'no-such-harness" in text
        assert "- gamma: placeholder {config.missing} has no default" in text

    def test_a_benchmarks_root_directory_no_benchmark_covers_is_a_directory_gap(
        self, invoke: Invoke, workspace: Path
    ) -> None:
        (workspace / "suites" / "orphan").mkdir()
        (workspace / "suites" / ".cache").mkdir()
        result = invoke("inventory", "--benchmarks-root", "suites", "--format", "json", expect=2)
        report = as_json(result.stdout)
        assert report["benchmark_directories_without_adapters"] == ["orphan"]
        # alpha, beta-suite (registered), orphan; beta is covered as beta-suite's cwd
        assert report["benchmark_directory_count"] == 4
        assert report["registry_entries_without_adapters"] == []
        text = invoke("inventory", "--benchmarks-root", "suites", expect=2).stdout
        assert "## Benchmark Directories Without Adapters\n\norphan\n" in text

    def test_every_directory_covered_passes(self, invoke: Invoke, workspace: Path) -> None:
        invoke("inventory", "--benchmarks-root", "suites", "--format", "json")

    def test_the_listing_options_still_list_only_the_gaps(
        self, invoke: Invoke, workspace: Path
    ) -> None:
        assert as_json(invoke("inventory", "--json").stdout) == []
        with_gap(workspace)
        rows = as_json(invoke("inventory", "--json", expect=2).stdout)
        assert [set(r) for r in rows] == [{"benchmark", "problem"}] * 2
        csv = invoke("inventory", "--csv", expect=2).stdout.splitlines()
        assert csv[0] == "benchmark,problem" and len(csv) == 3

    def test_a_listing_option_and_format_together_are_a_usage_error(
        self, invoke: Invoke, workspace: Path
    ) -> None:
        result = invoke("inventory", "--json", "--format", "json", expect=2)
        assert "--json lists the gaps; --format prints the checklist" in result.stderr

    def test_an_unknown_format_is_a_usage_error(self, invoke: Invoke, workspace: Path) -> None:
        invoke("inventory", "--format", "yaml", expect=2)

    def test_it_runs_nothing_and_opens_no_ledger(
        self, invoke: Invoke, workspace: Path, db: Path
    ) -> None:
        invoke("inventory", "--format", "json")
        assert not db.exists()
        assert not list(workspace.rglob("ran"))


def matrix(invoke: Invoke, *args: str, expect: int = 0) -> dict[str, Any]:
    report: dict[str, Any] = as_json(
        invoke("validate-matrix", "--format", "json", *args, expect=expect).stdout
    )
    return report


def cell(report: dict[str, Any], benchmark: str, harness: str) -> dict[str, Any]:
    [found] = [
        c for c in report["cells"] if (c["benchmark_id"], c["harness"]) == (benchmark, harness)
    ]
    return found


class TestValidateMatrix:
    def test_reports_each_benchmark_under_the_canonical_harnesses_and_its_own_agents(
        self, invoke: Invoke, workspace: Path
    ) -> None:
        report = matrix(invoke)
        assert set(report) == MATRIX_KEYS
        assert (report["provider"], report["model"]) == ("cerebras", "gemma-4-31b")
        assert report["harnesses"] == ["eliza", "hermes", "openclaw", "codex"]
        assert report["adapter_count"] == 2
        # alpha: eliza, codex compatible; hermes, openclaw not. beta: any of the three.
        assert [(c["benchmark_id"], c["harness"]) for c in report["cells"]] == [
            ("alpha", "eliza"),
            ("alpha", "hermes"),
            ("alpha", "openclaw"),
            ("alpha", "codex"),
            ("beta", "eliza"),
            ("beta", "hermes"),
            ("beta", "openclaw"),
        ]
        assert (report["compatible_cell_count"], report["incompatible_cell_count"]) == (5, 2)
        assert report["error_count"] == 0
        assert set(report["cells"][0]) >= CELL_KEYS

    def test_an_incompatible_cell_says_why_and_builds_nothing(
        self, invoke: Invoke, workspace: Path
    ) -> None:
        hermes = cell(matrix(invoke), "alpha", "hermes")
        assert hermes["compatible"] is False
        assert hermes["reason"] == "harness 'hermes' not in adapter compatibility (eliza, codex)"
        assert (hermes["command"], hermes["effective_extra_config"], hermes["error"]) == (
            None,
            None,
            None,
        )
        assert hermes["result_locator_patterns"] == ["result.json"]

    def test_a_compatible_cell_has_the_command_config_and_env_run_would_use(
        self, invoke: Invoke, workspace: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv("ALPHA_TOKEN", raising=False)
        report = matrix(invoke, "--provider", "vllm", "--model", "m1", "--extra", '{"limit": 5}')
        eliza = cell(report, "alpha", "eliza")
        output_dir = workspace / "results" / "matrix-validation" / "alpha__eliza" / "output"
        config = {"agent": "eliza", "api_key": "[REDACTED]", "harness": "eliza", "limit": 5}
        assert eliza["effective_extra_config"] == config
        assert eliza["default_extra_config"] == {"limit": 2, "api_key": "[REDACTED]"}
        assert eliza["command"] == [
            sys.executable,
            "bench.py",
            str(output_dir),
            json.dumps(config, separators=(",", ":"), sort_keys=True),
        ]
        assert eliza["command_display"].startswith(f"{sys.executable} bench.py ")
        env = eliza["env_overrides"]
        assert env["BENCHLEDGER_AGENT"] == "eliza" and env["BENCHLEDGER_MODEL"] == "m1"
        assert env["BENCHLEDGER_OUTPUT_DIR"] == str(output_dir)
        assert env["OPENAI_BASE_URL"] == "http://127.0.0.1:8001/v1"  # vllm's endpoint
        assert env["OPENAI_API_KEY"] == "[REDACTED]"
        assert eliza["required_env"] == ["ALPHA_TOKEN"]
        assert eliza["missing_env"] == ["ALPHA_TOKEN"]
        assert eliza["cwd"] == str(workspace / "suites" / "alpha")

    def test_secrets_from_the_host_config_and_extra_never_show(
        self, invoke: Invoke, workspace: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("ALPHA_TOKEN", "tok-host-7c1d9e2f")
        monkeypatch.setenv("CEREBRAS_API_KEY", "csk-host-4b8a1f0e")
        extra = '{"auth_token": "xtra-secret-5d3e9a1b"}'
        result = invoke("validate-matrix", "--format", "json", "--extra", extra)
        for secret in ("tok-host-7c1d9e2f", "csk-host-4b8a1f0e", "xtra-secret-5d3e9a1b"):
            assert secret not in result.stdout
        assert "plain-registry-secret-99" not in result.stdout
        eliza = cell(as_json(result.stdout), "alpha", "eliza")
        assert eliza["propagated_env"] == {"ALPHA_TOKEN": "[REDACTED]"}
        assert eliza["missing_env"] == []
        assert eliza["env_overrides"]["OPENAI_API_KEY"] == "[REDACTED]"  # the cerebras key

    def test_a_model_profile_supplies_provider_model_and_extra(
        self, invoke: Invoke, workspace: Path
    ) -> None:
        registry = workspace / "benchledger.toml"
        profile = '\n[profiles.small]\nprovider = "groq"\nmodel = "llama-x"\n'
        profile += "extra = { limit = 9, per_benchmark = { beta = { limit = 1 } } }\n"
        registry.write_text(registry.read_text() + profile)
        report = matrix(invoke, "--model-profile", "small")
        assert (report["provider"], report["model"]) == ("groq", "llama-x")
        assert cell(report, "alpha", "eliza")["effective_extra_config"]["limit"] == 9
        assert cell(report, "beta", "hermes")["effective_extra_config"]["limit"] == 9
        assert matrix(invoke, "--model-profile", "small", "--model", "other")["model"] == "other"

    def test_a_command_that_cannot_be_built_is_an_error_and_exit_1(
        self, invoke: Invoke, workspace: Path
    ) -> None:
        with_gap(workspace)
        report = matrix(invoke, expect=1)
        assert report["error_count"] == 3  # gamma under eliza, hermes and openclaw
        gamma = cell(report, "gamma", "eliza")
        assert gamma["compatible"] is True and gamma["command"] is None
        assert gamma["error"].startswith("RuleViolationError: placeholder {config.missing}")

    def test_markdown_is_the_default_a_row_per_benchmark(
        self, invoke: Invoke, workspace: Path
    ) -> None:
        text = invoke("validate-matrix").stdout
        assert text.startswith("# Cross-Matrix Validation\n")
        assert "- compatible cells: `5`" in text and "- command construction errors: `0`" in text
        assert "| benchmark | directory | eliza | hermes | openclaw | codex |" in text
        assert "| beta | beta-suite | compatible | compatible | compatible | - |" in text
        assert "| alpha | alpha | compatible | harness 'hermes' not in adapter" in text

    def test_it_runs_nothing_creates_nothing_and_appends_no_event(
        self, invoke: Invoke, workspace: Path, db: Path
    ) -> None:
        invoke("validate-matrix")
        assert not db.exists()
        assert not (workspace / "results").exists()
        assert not list(workspace.rglob("ran"))

    def test_it_appends_nothing_to_an_existing_ledger(
        self, invoke: Invoke, workspace: Path
    ) -> None:
        invoke("demo")
        before = invoke("events", "--json").stdout
        invoke("validate-matrix", "--format", "json")
        assert invoke("events", "--json").stdout == before

    def test_bad_extra_is_a_usage_error(self, invoke: Invoke, workspace: Path) -> None:
        result = invoke("validate-matrix", "--extra", "[1]", expect=2)
        assert "must be a JSON object" in result.stderr

    def test_an_unreadable_registry_is_an_error(self, invoke: Invoke, tmp_path: Path) -> None:
        bad = tmp_path / "bad.toml"
        bad.write_text(textwrap.dedent("[benchmarks.x]\nnope = 1\n"))
        result = invoke("validate-matrix", "--registry", str(bad), expect=1)
        assert result.stderr.startswith("Error: ")
