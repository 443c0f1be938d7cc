"""Nothing fake is publishable, whichever way it entered the ledger (issue 12, item 5)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
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


def run_quick(root: Path, db: Path, result: Path, *options: str) -> None:
    (root / "bench.py").write_text(textwrap.dedent(SCRIPT))
    command = json.dumps([sys.executable, "bench.py", str(result), "{output_dir}"])
    registry = root / "benchledger.toml"
    registry.write_text(f'[benchmarks.quick]\ncommand = {command}\nunit = "accuracy"\n')
    done = subprocess.run(
        [
            str(BENCHLEDGER),
            "--db",
            str(db),
            "run",
            "--registry",
            str(registry),
            *RUN_OPTIONS,
            *options,
        ],
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

    def test_a_result_flagging_mock_against_the_runs_own_config_is_quarantined_too(
        self, tmp_path: Path
    ) -> None:
        """The run's config says `mock: false` (its signature keeps that), the file it
        wrote says `mock: true`: the file's word is kept and quarantines the run."""
        result = tmp_path / "mock_result.json"
        result.write_text(json.dumps(MOCK_RESULT))
        db = tmp_path / "ran.db"
        run_quick(tmp_path, db, result, "--extra", '{"mock": false}')
        (run,) = read(db, "runs")
        assert run["config"]["mock"] is False
        assert run["provenance"]["result_config"]["mock"] is True
        ran = read(db, "latest", "--quarantine")
        assert [(r["benchmark"], r["quarantine_reason"]) for r in ran] == [
            ("quick", "truthy_non_real_flag")
        ]
        assert read(db, "latest") == []

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
    @pytest.mark.skipif(
        not (CORPUS / "inspect_ai").is_dir(),
        reason=f"the shared corpus is not at {CORPUS} (it lives beside the repo)",
    )
    def test_an_anonymised_inspect_log_is_recorded_but_quarantined_naming_the_field(
        self, invoke: Invoke
    ) -> None:
        log = CORPUS / "inspect_ai" / "json" / "log_tool_call_error.json"
        if not log.is_file():
            pytest.skip(f"the shared corpus is not at {CORPUS}")
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


class TestTheDemoLedger:
    def test_its_rows_can_be_browsed_but_fail_the_publishability_gate_as_demo_data(
        self, invoke: Invoke
    ) -> None:
        invoke("demo")
        latest = json.loads(invoke("latest", "--json").stdout)
        assert len(latest) == 15
        verdict = json.loads(invoke("gate", "publishability", "--json", expect=1).stdout)
        demo = {f["scope"] for f in verdict["findings"] if f["reason"] == "demo_data"}
        assert demo == {f"{r['benchmark']}::{r['agent']}" for r in latest}

    def test_a_review_of_it_is_blocked_by_demo_data(self, invoke: Invoke, tmp_path: Path) -> None:
        invoke("demo")
        out = tmp_path / "review"
        invoke(
            "review",
            "--no-run",
            "--reviewer",
            "ana",
            "--note",
            "looks fine",
            "--out",
            str(out),
            expect=1,
        )
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["summary"]["ok"] is False
        reasons = {f["reason"] for f in manifest["blocking_findings"]}
        assert "demo_data" in reasons

    def test_export_latest_stamps_its_rows_and_index_as_demo_data(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        invoke("demo")
        invoke("export-latest", str(tmp_path / "out"))
        index = json.loads((tmp_path / "out" / "latest" / "index.json").read_text())
        assert len(index["demo_data"]) == 15 == len(index["latest"])
        assert all(entry["demo_data"] is True for entry in index["latest"].values())
        rows = sorted((tmp_path / "out").glob("*/*__*.json"))
        assert rows
        for path in rows:
            row = json.loads(path.read_text())
            assert row["demo_data"] is True and row["publication_warnings"][0] == "demo_data"

    def test_runs_imported_outside_the_demo_are_not_demo_data(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        doc = {**MOCK_RESULT, "config": {}, "run_key": "demo-lookalike"}
        (tmp_path / "real.json").write_text(json.dumps(doc))
        invoke("import", str(tmp_path / "real.json"))
        verdict = json.loads(invoke("gate", "publishability", "--json").stdout)
        assert verdict["ok"] is True
        invoke("export-latest", str(tmp_path / "out"))
        index = json.loads((tmp_path / "out" / "latest" / "index.json").read_text())
        assert "demo_data" not in index and "demo_data" not in json.dumps(index["latest"])
