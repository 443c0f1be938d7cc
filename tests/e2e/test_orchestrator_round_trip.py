"""An imported orchestrator database comes back out of the exports as the orchestrator
wrote it: its run and group ids, paths, commands, metrics, telemetry columns, statuses
and errors, and the rows it did not run (adding only). The whole round trip against the
orchestrator's own code is `benchmarks/orchestrator_parity.py` (EXPORT checks)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Invoke
from tests.unit.test_format_orchestrator import GROUP_VALUES, HOST, RUN_ID, db_row, dumps, make_db

GROUP = "rg_20260512T101455Z_9b1e7a40"
JSON_COLUMNS = (
    "extra_config_json",
    "command_json",
    "metrics_json",
    "trajectory_summary_json",
    "token_metrics_json",
    "cache_metrics_json",
    "performance_metrics_json",
    "artifacts_json",
)
STALE = "Recovered stale running run from interrupted orchestrator process"


def rows() -> list[dict[str, Any]]:
    """A run, a stale-recovered run with no direction, a calibration run whose telemetry
    is only in the columns, a skip and an incompatible row, in one group."""
    ran = db_row(benchmark_id="gsm8k", benchmark_directory="standard")
    recovered = db_row(
        run_id="run_gsm8k_20260513T090000Z_1_c0ffee01",
        agent="hermes",
        benchmark_id="gsm8k",
        benchmark_directory="standard",
        status="failed",
        started_at="2026-05-13T09:00:00.000000+00:00",
        ended_at="2026-05-13T09:15:00.000000+00:00",
        duration_seconds=900.0,
        score=None,
        unit=None,
        higher_is_better=None,
        metrics_json=dumps({"reason": "orchestrator_interrupted"}),
        error=STALE,
        result_json_path=None,
        high_score_label=None,
        high_score_value=None,
        delta_to_high_score=None,
    )
    calibration = db_row(
        run_id="half_v1_gsm8k_20260514T080000Z_1_0a0b0c0d",
        agent="half_v1",
        benchmark_id="gsm8k",
        benchmark_directory="standard",
        started_at="2026-05-14T08:00:00.000000+00:00",
        ended_at="2026-05-14T08:00:00.000000+00:00",
        score=0.5,
        metrics_json=dumps({"synthetic_harness": "half_v1", "return_code": 0}),
        trajectory_summary_json=dumps({}),
        cache_metrics_json=dumps({}),
        performance_metrics_json=dumps({}),
        token_metrics_json=dumps({}),
        extra_config_json=dumps({"agent": "half_v1", "harness": "half_v1", "limit": 10}),
    )
    skipped = db_row(
        run_id="skip_gsm8k_20260515T080000Z_2_77aa01bc",
        benchmark_id="gsm8k",
        benchmark_directory="standard",
        status="skipped",
        attempt=2,
        started_at="2026-05-15T08:00:00.010000+00:00",
        ended_at="2026-05-15T08:00:00.020000+00:00",
        duration_seconds=0.0,
        command_json="[]",
        stdout_path="",
        stderr_path="",
        result_json_path=None,
        score=None,
        unit=None,
        higher_is_better=None,
        metrics_json=dumps({"reason": "already_succeeded", "existing_succeeded_run_id": RUN_ID}),
        artifacts_json="[]",
    )
    incompatible = db_row(
        run_id="incompat_gsm8k_20260516T080000Z_1_5ba96229",
        agent="openclaw",
        benchmark_id="gsm8k",
        benchmark_directory="standard",
        status="incompatible",
        started_at="2026-05-16T08:00:00.000000+00:00",
        ended_at="2026-05-16T08:00:00.000000+00:00",
        score=None,
        unit=None,
        higher_is_better=None,
        metrics_json=dumps(
            {
                "reason": "harness_not_in_compatibility",
                "harness": "openclaw",
                "supported_harnesses": ["eliza", "hermes"],
            }
        ),
        command_json="[]",
        artifacts_json="[]",
    )
    return [ran, recovered, calibration, skipped, incompatible]


def listed(row: dict[str, Any]) -> dict[str, Any]:
    """The row as the orchestrator's `list_runs` reads it: each `*_json` column decoded
    without the suffix (a NULL one has no key), the direction a bool or None."""
    out = {k: v for k, v in row.items() if k not in JSON_COLUMNS}
    for column in JSON_COLUMNS:
        if isinstance(row.get(column), str):
            out[column.removesuffix("_json")] = json.loads(row[column])
    hib = out.get("higher_is_better")
    out["higher_is_better"] = None if hib is None else bool(hib)
    for column in ("created_at", "comparison_id"):  # not exported by the orchestrator
        out.pop(column, None)
    return out


@pytest.fixture
def exported(invoke: Invoke, tmp_path: Path) -> dict[str, Any]:
    source = make_db(tmp_path / "results" / "orchestrator.sqlite", rows())
    with sqlite3.connect(source) as conn:
        conn.execute("DROP TABLE run_groups")
        conn.execute(
            "CREATE TABLE run_groups (run_group_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, "
            "finished_at TEXT, request_json TEXT NOT NULL, benchmarks_json TEXT NOT NULL, "
            "repo_meta_json TEXT NOT NULL, created_by TEXT NOT NULL, cohort_status TEXT, "
            "updated_at TEXT)"
        )
        conn.execute(
            "INSERT INTO run_groups VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                GROUP,
                "2026-05-12T10:14:55.001000+00:00",
                "2026-05-16T08:00:01.000000+00:00",
                dumps({"agent": "eliza", "benchmarks": ["gsm8k"], "extra_config": {}}),
                dumps(["gsm8k"]),
                dumps({"eliza_version": "2.0.0"}),
                "benchmarks.orchestrator",
                "failed",
                "2026-05-16T08:00:01.000000+00:00",
            ),
        )
    invoke("import", str(source))
    out = tmp_path / "out"
    invoke("export-latest", str(out))
    invoke("export-viewer-data", "--out", str(out / "viewer_data.json"))
    latest = {
        f"{kind}/{p.name}": json.loads(p.read_text())
        for kind in ("latest", "quarantine", "baselines")
        for p in sorted((out / kind).glob("*__*.json"))
    }
    viewer = json.loads((out / "viewer_data.json").read_text())
    return {
        "latest": latest,
        "viewer": viewer,
        "index": json.loads((out / "latest/index.json").read_text()),
    }


def stated_in(theirs: Any, ours: Any, path: str = "") -> list[str]:
    """Where `ours` does not state what `theirs` states (a key only ours has is fine)."""
    if isinstance(theirs, dict) and isinstance(ours, dict):
        out = []
        for key, value in theirs.items():
            out += (
                [f"{path}/{key} missing"]
                if key not in ours
                else stated_in(value, ours[key], f"{path}/{key}")
            )
        return out
    if type(theirs) is not type(ours) or theirs != ours:
        return [f"{path}: {theirs!r} != {ours!r}"]
    return []


class TestTheViewerDatasetIsTheOrchestratorsRows:
    def test_every_row_comes_back_as_the_orchestrators_list_runs_reads_it(
        self, exported: dict[str, Any]
    ) -> None:
        items = {run["run_id"]: run for run in exported["viewer"]["runs"]}
        for row in rows():
            item = items[row["run_id"]]
            assert stated_in(listed(row), item) == [], row["run_id"]

    def test_rows_it_did_not_run_are_listed_and_counted_newest_first(
        self, exported: dict[str, Any]
    ) -> None:
        viewer = exported["viewer"]
        assert [r["run_id"] for r in viewer["runs"]] == [
            r["run_id"] for r in sorted(rows(), key=lambda r: r["started_at"], reverse=True)
        ]
        [gsm8k] = viewer["benchmark_summary"]
        assert (gsm8k["runs"], gsm8k["succeeded_runs"]) == (5, 2)
        # The newest row that is not a skip: the incompatible one.
        assert gsm8k["latest_run_id"] == "incompat_gsm8k_20260516T080000Z_1_5ba96229"

    def test_the_source_group_keeps_its_id_and_columns(self, exported: dict[str, Any]) -> None:
        [group] = [g for g in exported["viewer"]["run_groups"] if g["run_group_id"] == GROUP]
        assert group["cohort_status"] == "failed"
        assert group["updated_at"] == "2026-05-16T08:00:01.000000+00:00"
        assert group["repo_meta"] == {"eliza_version": "2.0.0"}

    def test_it_is_stamped_with_the_newest_time_its_rows_state(
        self, exported: dict[str, Any]
    ) -> None:
        assert exported["viewer"]["generated_at"] == "2026-05-16T08:00:01.000000+00:00"


class TestLatestRowsAreTheOrchestratorsRows:
    def test_a_latest_row_names_the_orchestrators_run_group_paths_and_directory(
        self, exported: dict[str, Any]
    ) -> None:
        row = exported["latest"]["latest/gsm8k__eliza.json"]
        assert (row["run_id"], row["run_group_id"]) == (RUN_ID, GROUP)
        assert row["benchmark_directory"] == "standard"
        assert row["result_json_path"] == HOST + "/output/bfcl_results.json"
        assert row["artifacts"] == [HOST + "/output"]
        assert row["updated_at"] == "2026-05-12T10:21:41.800000+00:00"
        entry = exported["index"]["latest"]["gsm8k::eliza"]
        assert (entry["run_id"], entry["run_group_id"]) == (RUN_ID, GROUP)

    def test_token_metrics_are_completed_as_the_orchestrator_completes_them(
        self, exported: dict[str, Any]
    ) -> None:
        row = exported["latest"]["latest/gsm8k__eliza.json"]
        tokens = GROUP_VALUES["token_metrics"]
        assert row["token_metrics"] == row["metrics"]["token_metrics"]
        assert row["token_metrics"] == {
            **tokens,
            "call_count": 12,
            "input_tokens": 45200,
            "output_tokens": 3011,
            "cached_tokens": 0,
            "avg_prompt_tokens": 45200 / 12,
            "avg_completion_tokens": 3011 / 12,
            "telemetry_missing": False,
        }

    def test_a_stale_recovered_run_is_the_failed_row_it_states_with_its_error(
        self, exported: dict[str, Any]
    ) -> None:
        row = exported["latest"]["quarantine/gsm8k__hermes.json"]
        assert (row["status"], row["error"]) == ("failed", STALE)
        assert row["higher_is_better"] is None
        assert row["quarantine_reason"] == "unsucceeded_run"

    def test_an_incompatible_row_keeps_its_own_error_and_score(
        self, exported: dict[str, Any]
    ) -> None:
        row = exported["latest"]["quarantine/gsm8k__openclaw.json"]
        assert (row["run_id"], row["status"]) == (
            "incompat_gsm8k_20260516T080000Z_1_5ba96229",
            "incompatible",
        )
        assert (row["error"], row["score"], row["higher_is_better"]) == (None, None, None)

    def test_a_baseline_keeps_its_empty_telemetry_columns(self, exported: dict[str, Any]) -> None:
        row = exported["latest"]["baselines/gsm8k__half_v1.json"]
        assert row["run_id"] == "half_v1_gsm8k_20260514T080000Z_1_0a0b0c0d"
        assert (row["trajectory_summary"], row["cache_metrics"]) == ({}, {})
        assert row["metrics"]["synthetic_harness"] == "half_v1"
