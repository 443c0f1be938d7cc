"""The gates over a latest/ directory on disk (`--latest-dir`): what `export-latest`
wrote gives the ledger's own findings; a committed or hand-made directory is checked
row by row; a file that is no row is an error naming the file and field."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CORPUS, Invoke
from tests.helpers import import_demo_runs, run_json, write_json

GATES = ("publishability", "comparability", "readiness")
_keys = itertools.count()


def run(benchmark: str, agent: str, score: float | None = 0.5, **extra: Any) -> dict[str, Any]:
    n = next(_keys)
    return run_json(
        benchmark,
        agent,
        score=score,
        run_key=f"{benchmark}-{agent}-{n}",
        started_at=f"2026-05-12T10:{n % 60:02d}:00+00:00",
        ended_at=None,
        **extra,
    )


def verdict(invoke: Invoke, *args: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(invoke("gate", *args, "--json", expect=None).stdout)
    return result


def event_count(invoke: Invoke) -> int:
    return len(json.loads(invoke("events", "--json").stdout))


@pytest.fixture
def mixed(invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """A ledger with something for every gate to find: a failed agent, a spread, a sample
    config, an agent missing from a benchmark, a mock run, and calibration baselines."""
    monkeypatch.chdir(tmp_path)  # no registry here: readiness probes no runtime gate
    docs = [
        run("bfcl", "eliza", 0.5),
        run("bfcl", "hermes", 0.9),
        run("bfcl", "openclaw", 0.6, config={"opts": {"dataset_source": "sample"}}),
        run("gaia", "eliza", 0.4),
        run("gaia", "hermes", None, status="failed"),
        run("gaia", "openclaw", 0.41, config={"mock": True}),
        run("tau", "eliza", 0.7),
        run("bfcl", "perfect_v1", 1.0),
        run("bfcl", "wrong_v1", 0.0),
    ]
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    paths = [str(write_json(inputs / f"{d['run_key']}.json", d)) for d in docs]
    invoke("import", *paths)
    # The three agents are required of each benchmark (a registry elsewhere than the
    # working directory: recorded in the ledger, never probed).
    registry = inputs / "registry.toml"
    registry.write_text(
        "".join(
            f'[benchmarks.{b}]\ncommand = ["true"]\nagents = ["eliza", "hermes", "openclaw"]\n'
            for b in ("bfcl", "gaia", "tau")
        )
    )
    invoke("benchmarks", "--registry", str(registry))
    return invoke


class TestSameFindingsAsTheLedger:
    @pytest.mark.parametrize("gate", GATES)
    def test_an_exported_directory_gives_the_ledgers_findings(
        self, mixed: Invoke, tmp_path: Path, gate: str
    ) -> None:
        mixed("export-latest", str(tmp_path / "export"))
        latest = tmp_path / "export" / "latest"
        for filters in ((), ("--include-benchmarks", "bfcl,gaia"), ("--exclude-benchmarks", "tau")):
            ledger = verdict(mixed, gate, *filters)
            disk = verdict(mixed, gate, "--latest-dir", str(latest), *filters)
            assert ledger["findings"] and disk["findings"] == ledger["findings"]
            assert disk["ok"] is ledger["ok"] is False
            assert disk["position"] > ledger["position"]  # recorded after the first

    def test_the_demo_ledger_exported_gives_its_findings_too(
        self, invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        invoke("demo")
        invoke("export-latest", str(tmp_path / "out"))
        ledger = verdict(invoke, "readiness")
        disk = verdict(invoke, "readiness", "--latest-dir", str(tmp_path / "out" / "latest"))
        assert disk["findings"] == ledger["findings"]
        assert "demo_data" in {f["reason"] for f in disk["findings"]}

    def test_a_publishable_export_passes_on_disk_as_in_the_ledger(
        self, invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        import_demo_runs(invoke, tmp_path / "demo_runs")
        invoke("export-latest", str(tmp_path / "out"))
        latest = str(tmp_path / "out" / "latest")
        args = ("--tolerance", "0.5")
        assert verdict(invoke, "publishability", *args)["ok"] is True
        assert verdict(invoke, "publishability", "--latest-dir", latest)["ok"] is True
        ledger = verdict(invoke, "readiness", *args)
        disk = verdict(invoke, "readiness", "--latest-dir", latest, *args)
        assert (disk["ok"], disk["findings"]) == (ledger["ok"], ledger["findings"])

    def test_the_verdict_records_the_directory_and_a_digest_of_its_files(
        self, mixed: Invoke, tmp_path: Path
    ) -> None:
        mixed("export-latest", str(tmp_path / "export"))
        latest = tmp_path / "export" / "latest"
        mixed("gate", "readiness", "--latest-dir", str(latest), expect=1)
        params = recorded(mixed)[-1]["params"]
        assert params["latest_dir"] == str(latest)
        assert params["files"] == len(list(tmp_path.glob("export/*/*.json")))
        assert params["index_ledger_position"] == recorded(mixed)[-1]["position"]
        first = params["files_sha256"]
        mixed("gate", "readiness", "--latest-dir", str(latest), expect=1)
        assert recorded(mixed)[-1]["params"]["files_sha256"] == first
        (latest / "index.json").write_text((latest / "index.json").read_text() + " ")
        mixed("gate", "readiness", "--latest-dir", str(latest), expect=1)
        assert recorded(mixed)[-1]["params"]["files_sha256"] != first

    def test_the_orchestrator_spellings_take_latest_dir(
        self, mixed: Invoke, tmp_path: Path
    ) -> None:
        mixed("export-latest", str(tmp_path / "export"))
        latest = str(tmp_path / "export" / "latest")
        for gate in GATES:
            alias = json.loads(
                mixed(f"validate-latest-{gate}", "--latest-dir", latest, "--json", expect=1).stdout
            )
            assert alias["findings"] == verdict(mixed, gate)["findings"]
        mixed("validate-latest-readiness", "--latest-dir", latest, "--skip-runtime-gates", expect=1)


def recorded(invoke: Invoke) -> list[dict[str, Any]]:
    events = json.loads(invoke("events", "--json").stdout)
    return [e["data"] for e in events if e["type"] == "GateEvaluated"]


def row(benchmark: str, agent: str, **fields: Any) -> dict[str, Any]:
    """A latest/ row as the orchestrator writes one."""
    return {
        "benchmark_id": benchmark,
        "benchmark_directory": benchmark,
        "agent": agent,
        "run_id": f"{benchmark}-{agent}",
        "run_group_id": "rg-1",
        "signature": "s",
        "comparison_signature": "c",
        "status": "succeeded",
        "provider": "cerebras",
        "model": "gpt-oss-120b",
        "score": 0.5,
        "unit": "accuracy",
        "metrics": {},
        "extra_config": {},
        "error": None,
        **fields,
    }


def latest_dir(root: Path, *rows: dict[str, Any], index: Any = None) -> Path:
    directory = root / "latest"
    directory.mkdir(parents=True)
    for payload in rows:
        write_json(directory / f"{payload['benchmark_id']}__{payload['agent']}.json", payload)
    if index is not None:
        write_json(directory / "index.json", index)
    return directory


CONTRACT = {
    "matrix_contract": {
        "benchmarks": {
            "bfcl": {
                "compatible_harnesses": ["eliza", "hermes"],
                "cells": {
                    "eliza": {"required": True, "state": "succeeded"},
                    "hermes": {"required": True, "state": "succeeded"},
                },
            }
        }
    }
}


class TestADirectoryOnDisk:
    def test_a_mock_row_is_named(self, invoke: Invoke, tmp_path: Path) -> None:
        directory = latest_dir(
            tmp_path,
            row("bfcl", "eliza"),
            row("bfcl", "hermes", provider="mockllm", model="model"),
            row("bfcl", "mock"),
            index=CONTRACT,
        )
        found = verdict(invoke, "publishability", "--latest-dir", str(directory))
        assert [(f["scope"], f["reason"], f["value"], f["run_id"]) for f in found["findings"]] == [
            ("bfcl::hermes", "mock_model", "provider=mockllm model=model", "bfcl-hermes"),
            ("bfcl::mock", "non_real_agent_label", "agent=mock", "bfcl-mock"),
        ]
        ready = verdict(invoke, "readiness", "--latest-dir", str(directory))
        assert ("publishability:bfcl::mock", "non_real_agent_label") in {
            (f["scope"], f["reason"]) for f in ready["findings"]
        }

    def test_markers_anywhere_in_config_or_metrics_and_demo_rows_are_named(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        directory = latest_dir(
            tmp_path,
            row("bfcl", "eliza", metrics={"dataset_source": "sample"}),
            row("bfcl", "hermes", extra_config={"opts": {"demo_mode": True}}),
            row("gaia", "eliza", status="failed", score=None, run_group_id="rg-2"),
            row("gaia", "hermes", demo_data=True, run_group_id="rg-3"),
        )
        found = verdict(invoke, "publishability", "--latest-dir", str(directory))
        assert [(f["scope"], f["reason"], f["extra"]) for f in found["findings"]] == [
            ("bfcl__eliza.json$.metrics.dataset_source", "sample_dataset_source", False),
            ("bfcl__hermes.json$.extra_config.opts.demo_mode", "truthy_non_real_flag", False),
            ("gaia__eliza.json$.status", "latest_row_not_succeeded", False),
            ("gaia__eliza.json$.score", "latest_row_missing_numeric_score", False),
            ("gaia::hermes", "demo_data", True),
        ]

    def test_without_an_index_readiness_finds_no_matrix_contract(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        directory = latest_dir(tmp_path, row("bfcl", "eliza"), row("bfcl", "hermes"))
        assert verdict(invoke, "publishability", "--latest-dir", str(directory))["ok"] is True
        ready = verdict(invoke, "readiness", "--latest-dir", str(directory))
        # Without a contract each real harness is required, as the orchestrator's
        # validators require them.
        # Without a contract there are no cells to report, as in the orchestrator's.
        assert [(f["scope"], f["reason"], f["value"]) for f in ready["findings"]] == [
            (
                "matrix_contract",
                "missing_matrix_contract",
                "latest/index.json has no matrix_contract object",
            ),
            ("comparability:bfcl", "missing_required_latest_rows", "openclaw"),
        ]

    def test_without_a_contract_an_agent_with_a_row_is_not_required(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        rows = [row("bfcl", agent) for agent in ("eliza", "hermes", "openclaw")]
        directory = latest_dir(tmp_path, *rows, row("gaia", "mock"), row("gaia", "eliza"))
        ready = verdict(invoke, "readiness", "--latest-dir", str(directory))
        found = [(f["scope"], f["reason"], f["value"]) for f in ready["findings"]]
        assert ("publishability:gaia::mock", "non_real_agent_label", "agent=mock") in found
        assert ("comparability:gaia", "missing_required_latest_rows", "hermes, openclaw") in found
        assert not [f for f in found if f[0].startswith("comparability:bfcl")]
        assert not [f for f in found if f[0].endswith("::mock") and f[1] == "missing"]

    def test_the_contracts_required_harnesses_are_the_ones_compared(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        directory = latest_dir(tmp_path, row("bfcl", "eliza"), index=CONTRACT)
        found = verdict(invoke, "comparability", "--latest-dir", str(directory))
        assert [(f["scope"], f["reason"], f["value"]) for f in found["findings"]] == [
            ("bfcl", "missing_required_latest_rows", "hermes")
        ]
        assert verdict(
            invoke, "comparability", "--latest-dir", str(directory), "--exclude-benchmarks", "bfcl"
        )["findings"] == [
            {
                "scope": ".",
                "reason": "no_selected_benchmarks",
                "value": "filters excluded every benchmark",
                "extra": False,
                "benchmark_id": ".",
            }
        ]

    def test_siblings_of_a_directory_named_latest_are_read(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        directory = latest_dir(tmp_path, row("bfcl", "eliza"), row("bfcl", "perfect_v1"))
        (tmp_path / "quarantine").mkdir()
        held = row("bfcl", "hermes", status="failed", quarantine_reason="unsucceeded_run")
        write_json(tmp_path / "quarantine" / "bfcl__hermes.json", held)
        found = verdict(invoke, "publishability", "--latest-dir", str(directory))
        assert [(f["scope"], f["reason"], f["value"]) for f in found["findings"]] == [
            ("bfcl::hermes", "no_publishable_row", "unsucceeded_run")
        ]
        elsewhere = tmp_path / "elsewhere"
        shutil.copytree(directory, elsewhere)  # not named latest: its own rows only
        assert verdict(invoke, "publishability", "--latest-dir", str(elsewhere))["ok"] is True


class TestBadFiles:
    @pytest.mark.parametrize(
        ("content", "message"),
        [
            (json.dumps(row("bfcl", "")), "field 'agent': must be a non-empty string"),
            (
                json.dumps(row("bfcl", "eliza", metrics=[1])),
                "field 'metrics': must be an object or null",
            ),
            (
                json.dumps(row("bfcl", "eliza", score="0.5")),
                "field 'score': must be a number or null",
            ),
            (
                json.dumps({k: v for k, v in row("bfcl", "eliza").items() if k != "run_id"}),
                "field 'run_id': must be a non-empty string",
            ),
        ],
    )
    def test_a_file_that_is_no_row_is_an_error_naming_file_and_field(
        self, invoke: Invoke, tmp_path: Path, content: str, message: str
    ) -> None:
        directory = latest_dir(tmp_path, row("bfcl", "hermes"))
        invoke("gate", "publishability", "--latest-dir", str(directory))
        before = event_count(invoke)
        (directory / "row.json").write_text(content)
        result = invoke("gate", "readiness", "--latest-dir", str(directory), expect=1)
        assert result.stderr.startswith(f"Error: {directory / 'row.json'}")
        assert message in result.stderr
        assert event_count(invoke) == before  # nothing recorded

    @pytest.mark.parametrize(
        ("content", "reason", "value"),
        [
            ("{not json", "invalid_json", "Expecting property name enclosed in double quotes"),
            ("[1, 2]", "non_object_json", "[1, 2]"),
        ],
    )
    def test_a_latest_file_that_is_no_json_object_is_a_finding_as_the_orchestrators(
        self, invoke: Invoke, tmp_path: Path, content: str, reason: str, value: str
    ) -> None:
        directory = latest_dir(tmp_path, row("bfcl", "hermes"))
        (directory / "row.json").write_text(content)
        found = verdict(invoke, "publishability", "--latest-dir", str(directory))
        [item] = found["findings"]
        file = str(directory / "row.json") if reason == "invalid_json" else "row.json"
        assert (item["file"], item["path"], item["reason"]) == (file, ".", reason)
        assert item["value"].startswith(value) and found["checked_files"] == 2
        ready = verdict(invoke, "readiness", "--latest-dir", str(directory))
        assert f"publishability:{file}." in [f["scope"] for f in ready["findings"]]

    def test_two_rows_of_one_key_are_an_error_naming_both(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        directory = latest_dir(tmp_path, row("bfcl", "eliza"))
        write_json(directory / "bfcl__eliza-again.json", row("bfcl", "eliza"))
        result = invoke("gate", "publishability", "--latest-dir", str(directory), expect=1)
        assert "bfcl__eliza.json" in result.stderr and "bfcl__eliza-again.json" in result.stderr
        assert "field 'benchmark_id'" in result.stderr

    def test_a_bad_index_is_named(self, invoke: Invoke, tmp_path: Path) -> None:
        directory = latest_dir(tmp_path, row("bfcl", "eliza"), index={"matrix_contract": []})
        result = invoke("gate", "readiness", "--latest-dir", str(directory), expect=1)
        assert "index.json: field 'matrix_contract': must be an object" in result.stderr

    def test_as_of_and_calibration_do_not_apply_to_a_directory(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        directory = str(latest_dir(tmp_path, row("bfcl", "eliza")))
        result = invoke("gate", "readiness", "--latest-dir", directory, "--as-of", "1", expect=2)
        assert "--latest-dir is read as it is on disk" in result.stderr
        invoke("gate", "calibration", "--latest-dir", directory, expect=2)
        invoke("gate", "readiness", "--latest-dir", str(tmp_path / "nope"), expect=2)


ELIZA_LATEST = CORPUS / "eliza_alwm" / "eliza" / "benchmark_results" / "latest"


@pytest.mark.skipif(
    not ELIZA_LATEST.is_dir(), reason=f"the shared ElizaOS corpus is not at {ELIZA_LATEST}"
)
class TestTheOrchestratorsOwnDirectory:
    def test_its_committed_latest_rows_are_checked_and_the_mock_row_named(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        shutil.copytree(ELIZA_LATEST, tmp_path / "latest")
        found = verdict(invoke, "publishability", "--latest-dir", str(tmp_path / "latest"))
        reasons = {(f["scope"], f["reason"]) for f in found["findings"]}
        assert ("agentbench::mock", "non_real_agent_label") in reasons
        # As the file says: a failed row, an incompatible one, and no calibration row.
        assert ("bfcl__eliza.json$.status", "latest_row_not_succeeded") in reasons
        assert ("action-calling__openclaw.json$.status", "latest_row_not_succeeded") in reasons
        assert not any("perfect_v1" in scope or "wrong_v1" in scope for scope, _ in reasons)
        ready = verdict(
            invoke, "readiness", "--latest-dir", str(tmp_path / "latest"), "--skip-runtime-gates"
        )
        assert ("matrix_contract", "missing_matrix_contract") in {
            (f["scope"], f["reason"]) for f in ready["findings"]
        }
        mine = verdict(
            invoke,
            "publishability",
            "--latest-dir",
            str(ELIZA_LATEST),
            "--include-benchmarks",
            "adhdbench",
        )
        assert mine["ok"] is True
