"""Each finding the orchestrator's validators make, made by benchledger's on a small
latest/ directory written here: its reason, scope, value text and report keys, and
benchledger's own checks labelled `extra`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import Invoke
from tests.helpers import write_json

TRIO = ("eliza", "hermes", "openclaw")


def row(benchmark: str, agent: str, **fields: Any) -> dict[str, Any]:
    """A latest/ row as the orchestrator writes one."""
    return {
        "benchmark_id": benchmark,
        "benchmark_directory": benchmark,
        "agent": agent,
        "run_id": f"{benchmark}-{agent}",
        "run_group_id": "rg-1",
        "signature": f"s-{agent}",
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


def cell(state: str = "succeeded", required: bool = True, **fields: Any) -> dict[str, Any]:
    return {"required": required, "state": state, "status": state, **fields}


def contract(status: str = "complete", **benchmarks: dict[str, Any]) -> dict[str, Any]:
    return {
        "matrix_contract": {
            "status": status,
            "summary": {},
            "benchmarks": {b: {"cells": cells} for b, cells in benchmarks.items()},
        }
    }


def latest_dir(root: Path, *rows: dict[str, Any], index: Any = None) -> Path:
    directory = root / "latest"
    directory.mkdir(parents=True)
    for payload in rows:
        write_json(directory / f"{payload['benchmark_id']}__{payload['agent']}.json", payload)
    if index is not None:
        write_json(directory / "index.json", index)
    return directory


def check(invoke: Invoke, gate: str, directory: Path, *args: str) -> dict[str, Any]:
    extra = ("--skip-runtime-gates",) if gate == "readiness" else ()
    result = invoke(
        f"validate-latest-{gate}",
        "--latest-dir",
        str(directory),
        "--json",
        *extra,
        *args,
        expect=None,
    )
    assert result.exit_code in (0, 1), result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    assert result.exit_code == (0 if report["ok"] else 1)
    return report


def named(report: dict[str, Any], *keys: str) -> list[tuple[Any, ...]]:
    """The orchestrator's findings (not benchledger's extra ones), by these keys."""
    return [tuple(f[k] for k in keys) for f in report["findings"] if not f["extra"]]


def full_trio(benchmark: str = "bfcl", **fields: Any) -> list[dict[str, Any]]:
    return [row(benchmark, agent, **fields) for agent in TRIO]


class TestPublishability:
    def test_every_marker_is_named_by_file_and_json_path(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        marked = row(
            "bfcl",
            "eliza",
            metrics={"run": {"Mock": "yes", "sample": 0, "sampleCount": 4}},
            publication_warnings=["single_llm_call", "sample_task_set", "smoke:partial"],
            error="stub runtime, then a mock runtime",
        )
        directory = latest_dir(tmp_path, marked)
        report = check(invoke, "publishability", directory)
        # In the file's key order; a warning is named as a warning, then again as text
        # where it holds a text marker, as the orchestrator's scan does.
        assert named(report, "path", "reason", "value") == [
            ("$.metrics.run.Mock", "truthy_non_real_flag", '"yes"'),
            (
                "$.error",
                "non_real_text_marker:mock run",  # the orchestrator's order: before "stub"
                '"stub runtime, then a mock runtime"',
            ),
            ("$.publication_warnings[1]", "non_real_publication_warning", '"sample_task_set"'),
            ("$.publication_warnings[2]", "non_real_publication_warning", '"smoke:partial"'),
            (
                "$.publication_warnings[1]",
                "non_real_text_marker:sample_task_set",
                '"sample_task_set"',
            ),
        ]
        assert {f["file"] for f in report["findings"]} == {"bfcl__eliza.json"}
        assert (report["latest_dir"], report["checked_files"]) == (str(directory), 1)

    def test_a_failed_unscored_row_quotes_its_values_as_json(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        directory = latest_dir(tmp_path, row("bfcl", "eliza", status="failed", score=None))
        report = check(invoke, "publishability", directory)
        assert named(report, "scope", "reason", "value") == [
            ("bfcl__eliza.json$.status", "latest_row_not_succeeded", '"failed"'),
            ("bfcl__eliza.json$.score", "latest_row_missing_numeric_score", "null"),
        ]
        assert report["findings"][0]["agent"] == "eliza"  # what it is about, added

    def test_a_key_left_with_a_quarantined_row_only_is_an_extra_finding(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        directory = latest_dir(tmp_path, row("bfcl", "eliza"))
        (tmp_path / "quarantine").mkdir()
        held = row("bfcl", "hermes", status="failed", quarantine_reason="unsucceeded_run")
        write_json(tmp_path / "quarantine" / "bfcl__hermes.json", held)
        report = check(invoke, "publishability", directory)
        assert named(report, "reason") == []
        assert [(f["scope"], f["reason"], f["extra"]) for f in report["findings"]] == [
            ("bfcl::hermes", "no_publishable_row", True)
        ]
        assert report["ok"] is False


class TestComparability:
    def test_a_contract_benchmark_without_rows_misses_its_required_harnesses_only(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        index = contract(
            gaia={"eliza": cell("missing"), "hermes": cell("unsupported", required=False)},
            trust={"eliza": cell("unsupported", required=False)},
        )
        directory = latest_dir(tmp_path, *full_trio(), index=index)
        report = check(invoke, "comparability", directory)
        # bfcl is in no contract: all three are required, and there; trust requires none.
        assert named(report, "benchmark_id", "reason", "value") == [
            ("gaia", "missing_required_latest_rows", "eliza")
        ]
        assert (report["checked_benchmarks"], report["tolerance"]) == (3, 0.08)

    def test_a_benchmark_missing_rows_is_not_checked_further(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        directory = latest_dir(tmp_path, row("bfcl", "eliza", status="failed", score=None))
        report = check(invoke, "comparability", directory)
        assert named(report, "reason", "value") == [
            ("missing_required_latest_rows", "hermes, openclaw")
        ]

    def test_each_required_row_must_have_succeeded_with_a_numeric_score(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        rows = full_trio()
        rows[1] |= {"status": "failed", "score": None}
        rows[2] |= {"score": float("nan")}
        report = check(invoke, "comparability", latest_dir(tmp_path, *rows))
        assert named(report, "benchmark_id", "reason", "value") == [
            ("bfcl", "hermes_not_succeeded", "failed"),
            ("bfcl", "hermes_missing_numeric_score", "None"),
            ("bfcl", "openclaw_missing_numeric_score", "nan"),
        ]

    def test_configs_that_differ_are_mixed_even_under_one_recorded_signature(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        rows = full_trio()
        rows[0]["extra_config"] = {"limit": 5}
        report = check(invoke, "comparability", latest_dir(tmp_path, *rows))
        [(reason, value)] = named(report, "reason", "value")
        assert reason == "mixed_comparison_signatures"
        parsed = json.loads(value)
        assert parsed["recorded"] == dict.fromkeys(TRIO, "c")
        derived = parsed["derived_input_config"]
        assert derived["hermes"] == derived["openclaw"] != derived["eliza"]
        assert value == json.dumps(parsed, sort_keys=True)

    def test_subscription_rows_must_come_from_one_run_group(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        rows = full_trio(provider="claude-subscription")
        rows[2]["run_group_id"] = "rg-2"
        report = check(invoke, "comparability", latest_dir(tmp_path, *rows))
        assert named(report, "reason", "value") == [
            (
                "subscription_rows_not_single_cohort",
                '{"eliza": "rg-1", "hermes": "rg-1", "openclaw": "rg-2"}',
            )
        ]

    def test_a_score_spread_is_benchledgers_extra_check(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        rows = full_trio()
        rows[0]["score"] = 0.9
        report = check(invoke, "comparability", latest_dir(tmp_path, *rows))
        assert named(report, "reason") == []
        [item] = report["findings"]
        assert (item["reason"], item["extra"], item["benchmark_id"]) == (
            "score_spread_exceeds_tolerance",
            True,
            "bfcl",
        )
        assert report["ok"] is False


class TestReadiness:
    def test_the_stated_contract_its_counters_and_every_cell_not_succeeded(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        index = contract(
            "incomplete",
            bfcl={h: cell() for h in TRIO},
            gaia={
                "eliza": cell("failed"),
                "hermes": cell(
                    "unsupported",
                    required=False,
                    reason="needs a key",
                    required_env=["HL_PRIVATE_KEY", " "],
                ),
                "openclaw": {"required": True},
            },
        )
        index["matrix_contract"]["summary"] = {
            "unsupported_real_cells": 1,
            "missing_required_real_cells": 0,
            "failed_required_real_cells": 2,
            "no_required_real_harness_benchmarks": 0,
        }
        directory = latest_dir(tmp_path, *full_trio(), index=index)
        report = check(invoke, "readiness", directory)
        assert named(report, "scope", "reason", "value", "metadata") == [
            ("matrix_contract", "matrix_contract_incomplete", "incomplete", None),
            ("matrix_contract.summary", "unsupported_real_cells", "1", None),
            ("matrix_contract.summary", "failed_required_real_cells", "2", None),
            ("gaia::eliza", "failed", "failed", None),
            ("gaia::hermes", "unsupported", "needs a key", {"required_env": ["HL_PRIVATE_KEY"]}),
            ("gaia::openclaw", "unknown_state", "", None),
            ("comparability:gaia", "missing_required_latest_rows", "eliza, openclaw", None),
        ]
        assert set(report) >= {"latest_dir", "tolerance", "ok", "findings"}

    def test_filters_leave_out_the_contracts_status_and_counters(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        index = contract("incomplete", bfcl={h: cell() for h in TRIO}, gaia={"eliza": cell("x")})
        index["matrix_contract"]["summary"] = {"missing_required_real_cells": 1}
        directory = latest_dir(tmp_path, *full_trio(), index=index)
        assert check(invoke, "readiness", directory, "--include-benchmarks", "bfcl")["ok"]
        nothing = check(invoke, "readiness", directory, "--include-benchmarks", "nowhere")
        assert named(nothing, "scope", "reason", "value") == [
            (
                "matrix_contract.benchmarks",
                "no_selected_benchmarks",
                "filters excluded every benchmark in latest/index.json",
            ),
            (
                f"publishability:{directory}.",
                "no_selected_latest_rows",
                "filters excluded every latest row",
            ),
            ("comparability:.", "no_selected_benchmarks", "filters excluded every benchmark"),
        ]

    def test_publishability_findings_are_scoped_by_file_and_path(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        rows = full_trio()
        rows[0]["extra_config"] = {"use_sample_tasks": True}
        rows[0]["signature"] = "x"
        index = contract(bfcl={h: cell() for h in TRIO})
        directory = latest_dir(tmp_path, *rows, index=index)
        report = check(invoke, "readiness", directory)
        assert named(report, "scope", "reason") == [
            (
                "publishability:bfcl__eliza.json$.extra_config.use_sample_tasks",
                "truthy_non_real_flag",
            ),
            ("comparability:bfcl", "mixed_comparison_signatures"),
        ]

    def test_the_table_marks_the_extra_findings_and_counts_them_apart(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        rows = full_trio()
        rows[0]["score"] = 0.9
        index = contract("incomplete", bfcl={h: cell() for h in TRIO})
        directory = latest_dir(tmp_path, *rows, index=index)
        args = ("--latest-dir", str(directory), "--skip-runtime-gates")
        out = invoke("validate-latest-readiness", *args, expect=1).stdout.splitlines()
        assert out[0].startswith(f"readiness: 1 findings + 1 extra in {directory} at position ")
        assert out[1].split() == ["scope", "reason", "value", "extra"]
        assert out[3].split() == ["matrix_contract", "matrix_contract_incomplete", "incomplete"]
        assert out[4].split()[:2] == ["comparability:bfcl", "score_spread_exceeds_tolerance"]
        assert out[4].split()[-1] == "extra"
