"""The code versions a run records (`adapters/execution/versions.py`), the registry's
`versions` tables, and the read models' columns of them (`run_rules.stated_versions`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import benchledger.adapters.execution.versions as versions_module
from benchledger.adapters.execution.defaults import DEFAULT_REGISTRY
from benchledger.adapters.execution.registry import inventory, load_registry
from benchledger.adapters.execution.versions import (
    MAX_CHARS,
    VersionSource,
    code_versions,
    package_version,
    run_command,
    working_tree,
)
from benchledger.domain.errors import InputFormatError
from benchledger.domain.run_rules import stated_versions

PY = sys.executable


def plain(text: str) -> str:
    return text


def registry(tmp_path: Path, text: str) -> Path:
    path = tmp_path / DEFAULT_REGISTRY
    path.write_text(textwrap.dedent(text))
    return path


def source(table: object, folder: Path = Path("/r")) -> VersionSource:
    return VersionSource.model_validate(table, context={"folder": folder})


class TestSources:
    def test_a_command_s_stdout_is_stripped_and_bounded(self, tmp_path: Path) -> None:
        script = "print('  ' + 'v' * 1000 + '  ')"
        found = code_versions(
            tmp_path, {"agent_version": source({"command": [PY, "-c", script]})}, plain, {}
        )
        assert len(found["agent_version"]) == MAX_CHARS
        assert found["agent_version"].startswith("vvv") and found["agent_version"].endswith("…")

    def test_a_command_runs_in_the_cwd_with_the_run_s_environment(self, tmp_path: Path) -> None:
        script = "import os; print(os.getcwd(), os.environ['AGENT_V'])"
        answer = run_command([PY, "-c", script], tmp_path, {"AGENT_V": "7"})
        assert answer.value == f"{tmp_path} 7"

    def test_a_failing_silent_or_slow_command_is_recorded_as_such(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(versions_module, "COMMAND_SECONDS", 0.5)
        found = code_versions(
            tmp_path,
            {
                "failing": source({"command": [PY, "-c", "import sys; sys.exit(2)"]}),
                "silent": source({"command": [PY, "-c", "pass"]}),
                "slow": source({"command": [PY, "-c", "import time; time.sleep(5)"]}),
                "absent": source({"command": ["benchledger-no-such-command"]}),
                "unknown": source({"command": ["{nothing}"]}),
            },
            plain,
            dict(os.environ),
        )
        assert found["failing.error"].endswith("exited with code 2")
        assert found["silent.error"].endswith("printed nothing")
        assert found["slow.error"].endswith("no answer within 0.5s")
        assert found["absent.error"] == "benchledger-no-such-command: command not found"
        assert not {"failing", "silent", "slow", "absent"} & set(found)

    def test_placeholders_are_rendered_and_an_unrenderable_one_is_an_error(
        self, tmp_path: Path
    ) -> None:
        from benchledger.adapters.execution.registry import render_command

        def render(text: str) -> str:
            return render_command([text], {"agent": "hermes"}, {})[0]

        found = code_versions(
            tmp_path,
            {
                "agent_version": source({"command": [PY, "-c", "print('{agent}')"]}),
                "other": source({"command": ["{model}"]}),
            },
            render,
            {},
        )
        assert found["agent_version"] == "hermes"
        assert "no value for this run" in found["other.error"]

    def test_package_json(self, tmp_path: Path) -> None:
        (tmp_path / "package.json").write_text('{"version": "1.4.0"}')
        (tmp_path / "bad.json").write_text("{")
        (tmp_path / "none.json").write_text('{"name": "x"}')
        assert package_version(tmp_path / "package.json").value == "1.4.0"
        assert package_version(tmp_path / "bad.json").error == "bad.json is not JSON"
        assert package_version(tmp_path / "none.json").error == "none.json states no version string"
        assert package_version(tmp_path / "gone.json").error == "gone.json does not exist"

    def test_a_declared_repository_that_is_none_is_an_error_not_a_stop(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
        (tmp_path / "plain").mkdir()
        declared = {
            "agent_commit": source({"git": "plain"}, tmp_path),
            "gone": source({"git": "gone"}, tmp_path),
        }
        found = code_versions(tmp_path, declared, plain, {})
        assert found["agent_commit.error"] == "not a git repository"
        assert found["gone.error"] == "gone is not a directory"
        assert "agent_commit" not in found and "benchmarks_commit" not in found

    def test_secrets_are_scrubbed(self, tmp_path: Path) -> None:
        found = code_versions(
            tmp_path,
            {"v": source("1.0 token=abc")},
            plain,
            {},
            scrub=lambda value: value.replace("abc", "***"),
        )
        assert found["v"] == "1.0 token=***"


class TestWorkingTree:
    def test_no_git_means_no_commit_and_no_error(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
        assert working_tree(tmp_path) == {}

    def test_not_a_repository_means_no_commit(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
        assert working_tree(tmp_path) == {}

    def test_a_repository_without_commits_has_no_commit(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        assert working_tree(tmp_path) == {}

    def test_git_that_does_not_answer_in_time_is_not_waited_for(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        fake = tmp_path / "bin"
        fake.mkdir()
        # A child holding git's output past the timeout does not keep us waiting either.
        (fake / "git").write_text(f"#!/bin/sh\n{shutil.which('sleep')} 5 &\nwait\n")
        (fake / "git").chmod(0o755)
        monkeypatch.setenv("PATH", str(fake))
        monkeypatch.setattr(versions_module, "GIT_SECONDS", 0.3)
        began = time.monotonic()
        answer = versions_module.git(tmp_path, "rev-parse", "HEAD", timeout=0.3)
        assert answer.error == "git did not answer within 0.3s"
        assert working_tree(tmp_path) == {}
        assert time.monotonic() - began < 3


class TestRegistry:
    def test_top_level_versions_are_under_the_benchmark_s_own(self, tmp_path: Path) -> None:
        path = registry(
            tmp_path,
            """
            [versions]
            agent_commit = { git = "../eliza" }
            benchmark_version = "0"

            [benchmarks.a]
            command = ["true"]
            versions = { benchmark_version = "1.2", agent_version = { command = "x --version" } }

            [benchmarks.b]
            command = ["true"]
            """,
        )
        loaded = load_registry(path)
        a, b = loaded.get("a").versions, loaded.get("b").versions
        assert a["benchmark_version"].literal == "1.2"
        assert a["agent_version"].command == ("x", "--version")
        assert a["agent_commit"].git == str(tmp_path.parent / "eliza")
        assert b["benchmark_version"].literal == "0" and "agent_version" not in b

    @pytest.mark.parametrize(
        ("line", "field", "message"),
        [
            ('versions = { benchmarks_commit = "1" }', "versions.benchmarks_commit", "every run"),
            ('versions = { "a.b" = "1" }', "versions.a.b", "letters, digits"),
            ("versions = { x = 3 }", "versions.x", "a string or a table"),
            ('versions = { x = " " }', "versions.x", "not blank"),
            ("versions = { x = { command = [] } }", "versions.x.command", "empty"),
            ('versions = { x = { git = "a", command = "b" } }', "versions.x", "exactly one"),
            ("versions = { x = { url = 1 } }", "versions.x.url", "unknown key"),
        ],
    )
    def test_a_bad_declaration_is_refused_naming_its_field(
        self, tmp_path: Path, line: str, field: str, message: str
    ) -> None:
        path = registry(tmp_path, f'[benchmarks.a]\ncommand = ["true"]\n{line}\n')
        with pytest.raises(InputFormatError) as refused:
            load_registry(path)
        assert refused.value.field == f"benchmarks.a.{field}"
        assert message in str(refused.value)

    def test_a_bad_top_level_declaration_names_its_field(self, tmp_path: Path) -> None:
        path = registry(tmp_path, "[versions]\nbenchledger_version = '1'\n")
        with pytest.raises(InputFormatError) as refused:
            load_registry(path)
        assert refused.value.field == "versions.benchledger_version"

    def test_inventory_names_an_unknown_placeholder(self, tmp_path: Path) -> None:
        path = registry(
            tmp_path,
            """
            [benchmarks.a]
            command = ["true"]
            config = { limit = 3 }
            [benchmarks.a.versions]
            v = { command = ["x", "{agent}", "{config.limit}", "{output_dir}"] }
            w = { git = "{config.nope}" }
            """,
        )
        gaps = inventory(load_registry(path), known_formats={"native"})
        assert [g.problem for g in gaps] == [
            "versions.v: unknown placeholder {output_dir}",
            "versions.w: placeholder {config.nope} has no default",
        ]


class TestStatedVersions:
    def test_an_executed_run_s_recorded_versions(self) -> None:
        recorded = {
            "benchmarks_commit": "c0ffee",
            "benchmarks_dirty": "true",
            "agent_version": "1.0",
            "agent_commit": "beef",
            "benchmark_version": "2",
            "other": "x",
        }
        assert stated_versions(recorded, {}) == {
            "benchmark_version": "2",
            "benchmarks_commit": "c0ffee",
            "benchmarks_dirty": 1,
            "agent_version": "1.0",
            "agent_commit": "beef",
        }

    def test_an_orchestrator_row_s_columns_under_benchledger_s_names(self) -> None:
        provenance = {
            "source_columns": {
                "benchmark_version": "0.4.1",
                "benchmarks_commit": "a1b2",
                "eliza_version": "2.0.0",
                "eliza_commit": "d4e5",
            }
        }
        assert stated_versions({}, provenance) == {
            "benchmark_version": "0.4.1",
            "benchmarks_commit": "a1b2",
            "benchmarks_dirty": None,
            "agent_version": "2.0.0",
            "agent_commit": "d4e5",
        }
        assert json.dumps(stated_versions({}, {})) == json.dumps(
            dict.fromkeys(
                [
                    "benchmark_version",
                    "benchmarks_commit",
                    "benchmarks_dirty",
                    "agent_version",
                    "agent_commit",
                ]
            )
        )
