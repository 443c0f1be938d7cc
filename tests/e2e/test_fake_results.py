"""Nothing fake is publishable, whichever way it entered the ledger (issue 12, item 5)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from benchledger.commands.cli import cli
from tests.conftest import CORPUS, Invoke

BENCHLEDGER = Path(sys.executable).parent / "benchledger"
MOCK_RESULT = {
    "schema": "benchledger/run@1",
    "benchmark": "quick",
    "agent": "eliza",
    "provider": "openai",
    "model": "m1",
    "config": {"mock": True, "limit": 2},
    "status": "succeeded",
    "score": 0.75,
    "unit": "accuracy",
    "cells": [
        {"key": "q1", "outcome": "passed", "score": 1.0},
        {"key": "q2", "outcome": "failed", "score": 0.0},
    ],
}
RUN_OPTIONS = ("--benchmarks", "quick", "--agent", "eliza", "--provider", "openai", "--model", "m1")
# Writes MOCK_RESULT, byte for byte, where the runner asks for it.
SCRIPT = """
import shutil, sys
shutil.copy(sys.argv[1], sys.argv[2] + "/result.json")
"""


def read(db: Path, *args: str) -> Any:
    """A read command's JSON output, against the ledger at `db`."""
    result = CliRunner().invoke(cli, ["--db", str(db), *args, "--json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def quarantine(invoke: Invoke) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(invoke("latest", "--quarantine", "--json").stdout)
    return rows


def run_quick(root: Path, db: Path, result: Path) -> None:
    (root / "bench.py").write_text(textwrap.dedent(SCRIPT))
    command = json.dumps([sys.executable, "bench.py", str(result), "{output_dir}"])
    registry = root / "benchledger.toml"
    registry.write_text(f'[benchmarks.quick]\ncommand = {command}\nunit = "accuracy"\n')
    done = subprocess.run(
        [str(BENCHLEDGER), "--db", str(db), "run", "--registry", str(registry), *RUN_OPTIONS],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


class TestAMockResultFile:
    def test_is_quarantined_alike_whether_imported_or_produced_by_run(
        self, tmp_path: Path, invoke: Invoke
    ) -> None:
        result = tmp_path / "mock_result.json"
        result.write_text(json.dumps(MOCK_RESULT))
        invoke("import", str(result))
        imported = quarantine(invoke)

        ran_db = tmp_path / "ran.db"
        run_quick(tmp_path, ran_db, result)
        ran = read(ran_db, "latest", "--quarantine")

        assert [(r["benchmark"], r["quarantine_reason"]) for r in imported] == [
            ("quick", "truthy_non_real_flag")
        ]
        assert [(r["benchmark"], r["quarantine_reason"]) for r in ran] == [
            ("quick", "truthy_non_real_flag")
        ]
        assert read(ran_db, "latest") == []

    def test_run_keeps_the_result_files_config_without_changing_the_runs_signature(
        self, tmp_path: Path
    ) -> None:
        result = tmp_path / "mock_result.json"
        result.write_text(json.dumps(MOCK_RESULT))
        plain = {**MOCK_RESULT, "config": {}}
        (tmp_path / "plain.json").write_text(json.dumps(plain))
        signatures = []
        for name, source in (("mock", result), ("plain", tmp_path / "plain.json")):
            db = tmp_path / f"{name}.db"
            run_quick(tmp_path, db, source)
            (run,) = read(db, "runs")
            signatures.append(run["signature"])
            if name == "mock":
                assert run["config"]["mock"] is True and run["config"]["limit"] == 2
            else:
                assert "mock" not in run["config"]
        assert signatures[0] == signatures[1]


class TestAPlaceholderIdentity:
    def test_an_anonymised_inspect_log_is_recorded_but_quarantined_naming_the_field(
        self, invoke: Invoke
    ) -> None:
        log = CORPUS / "inspect_ai" / "json" / "log_tool_call_error.json"
        invoke("import", str(log))
        (run,) = json.loads(invoke("runs", "--json").stdout)
        assert (run["benchmark"], run["model"], run["score"]) == ("...", "...", 1.0)
        assert json.loads(invoke("latest", "--json").stdout) == []
        reasons = [r["quarantine_reason"] for r in quarantine(invoke)]
        assert reasons == ["placeholder_identity:benchmark"]
        matrix = json.loads(invoke("matrix", "--json").stdout)
        cell = matrix["benchmarks"]["..."]["cells"]["..."]
        assert cell["state"] == "placeholder_identity:benchmark"
        assert matrix["summary"]["succeeded_required_real_cells"] == 0
        assert "1.0" not in invoke("matrix").stdout

    def test_a_mock_model_is_quarantined(self, tmp_path: Path, invoke: Invoke) -> None:
        doc = {**MOCK_RESULT, "config": {}, "provider": "mockllm", "model": "model"}
        (tmp_path / "mockllm.json").write_text(json.dumps(doc))
        invoke("import", str(tmp_path / "mockllm.json"))
        assert [r["quarantine_reason"] for r in quarantine(invoke)] == ["mock_model"]
        assert json.loads(invoke("latest", "--json").stdout) == []
