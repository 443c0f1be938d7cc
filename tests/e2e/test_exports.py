"""export-latest and export-viewer-data: the orchestrator's shapes (ORCHESTRATOR.md §11),
byte-stable, relative paths only, as of any ledger position."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.publication.viewer_summaries import Summaries
from tests.conftest import Invoke
from tests.helpers import create_empty_ledger, run_json, write_json

NUM = (int, float)
NONE = type(None)
OPT_STR = (str, NONE)
OPT_NUM = (int, float, NONE)

# §11(b): latest/bfcl__eliza.json, key by key; the quarantine twin drops extra_config.
ROW = {
    "agent": str,
    "artifacts": list,
    "benchmark_directory": str,
    "benchmark_id": str,
    "cache_metrics": dict,
    "comparison_signature": str,
    "error": OPT_STR,
    "extra_config": dict,
    "higher_is_better": bool,
    "metrics": dict,
    "model": str,
    "performance_metrics": dict,
    "provider": str,
    "result_json_path": str,
    "run_group_id": str,
    "run_id": str,
    "score": NUM,
    "signature": str,
    "status": str,
    "token_metrics": dict,
    "trajectory_summary": dict,
    "unit": str,
    "updated_at": str,
}
QUARANTINE_ROW = {
    **{k: v for k, v in ROW.items() if k != "extra_config"},
    "score": OPT_NUM,
    "quarantine_reason": str,
}
BASELINE_ROW = {**ROW, "synthetic": bool}
# §11(c): latest/index.json.
INDEX = {
    "benchmark_comparability": dict,
    "latest": dict,
    "latest_by_comparison_signature": dict,
    "latest_by_signature": dict,
    "matrix_contract": dict,
    "updated_at": str,
    "ledger_position": int,
    "ledger_head_sha256": str,
    # The latest signed checkpoint: null where none was made (the demo's case).
    "ledger_checkpoint": type(None),
}
INDEX_LATEST = {
    "comparison_signature": str,
    "path": str,
    "run_group_id": str,
    "run_id": str,
    "score": NUM,
    "signature": str,
    "status": str,
    "updated_at": str,
}
BY_SIGNATURE = {
    "agent": str,
    "benchmark_id": str,
    "result_json_path": str,
    "run_group_id": str,
    "run_id": str,
    "score": NUM,
    "signature": str,
    "status": str,
    "updated_at": str,
}
BY_COMPARISON = {**BY_SIGNATURE, "comparison_signature": str}
COMPARABILITY = {"agents": list, "comparable": bool, "comparison_signatures": dict}
MATRIX = {"benchmarks": dict, "harnesses": list, "status": str, "summary": dict}
MATRIX_SUMMARY = dict.fromkeys(
    (
        "benchmarks",
        "complete_benchmarks",
        "failed_required_real_cells",
        "incomplete_benchmarks",
        "invalid_subscription_cohort_benchmarks",
        "missing_required_real_cells",
        "no_required_real_harness_benchmarks",
        "required_real_cells",
        "succeeded_required_real_cells",
        "unsupported_real_cells",
    ),
    int,
)
MATRIX_BENCHMARK = {
    "cohort_reason": OPT_STR,
    "cohort_run_group_id": OPT_STR,
    "compatible_harnesses": list,
    "complete": bool,
    "cells": dict,
}
# benchledger's entry of a benchmark nothing requires an agent of: no required cell, so
# neither complete nor incomplete, and marked so that a directory read back keeps it so.
UNSTATED_MATRIX_BENCHMARK = {
    **MATRIX_BENCHMARK,
    "complete": NONE,
    "required_agents_stated": bool,
}
CELL = {
    "required": bool,
    "run_group_id": OPT_STR,
    "run_id": OPT_STR,
    "score": OPT_NUM,
    "state": str,
    "status": str,
}
# §11(d): viewer_data.json, in the orchestrator's key order.
VIEWER_KEYS = [
    "generated_at",
    "runs",
    "run_groups",
    "latest_scores",
    "benchmark_summary",
    "model_summary",
    "agent_summary",
    "calibration_summary",
    "ledger_position",
    "ledger_head_sha256",
    "ledger_checkpoint",
]
VIEWER_RUN = {
    "run_id": str,
    "run_group_id": str,
    "signature": str,
    "benchmark_id": str,
    "benchmark_directory": str,
    "status": str,
    "attempt": (int, NONE),  # the ledger has no attempt number for imported runs
    "agent": str,
    "provider": str,
    "model": str,
    "started_at": str,
    "ended_at": OPT_STR,
    "duration_seconds": OPT_NUM,
    "cwd": OPT_STR,
    "stdout_path": OPT_STR,
    "stderr_path": OPT_STR,
    "result_json_path": OPT_STR,
    "score": OPT_NUM,
    "unit": OPT_STR,
    "higher_is_better": (bool, NONE),
    "trajectory_count": (int, NONE),
    "llm_call_count": int,
    "total_prompt_tokens": int,
    "total_completion_tokens": int,
    "total_cache_read_input_tokens": int,
    "total_cache_creation_input_tokens": int,
    "mean_latency_ms": OPT_NUM,
    "p95_latency_ms": OPT_NUM,
    "throughput_per_second": OPT_NUM,
    "error": OPT_STR,
    "high_score_label": OPT_STR,
    "high_score_value": OPT_NUM,
    "delta_to_high_score": OPT_NUM,
    "benchmark_version": OPT_STR,
    "benchmarks_commit": OPT_STR,
    "eliza_commit": OPT_STR,
    "eliza_version": OPT_STR,
    "extra_config": dict,
    "command": list,
    "metrics": dict,
    "trajectory_summary": dict,
    "token_metrics": dict,
    "cache_metrics": dict,
    "performance_metrics": dict,
    "artifacts": list,
    "input_tokens": int,
    "output_tokens": int,
    "total_tokens": int,
    "cached_tokens": int,
    "call_count": int,
    # The one addition: the orchestrator never invalidates a run; the ledger does.
    "invalidated": bool,
    "invalidated_reason": OPT_STR,
}
VIEWER_RUN_GROUP = {
    "run_group_id": str,
    "created_at": str,
    "finished_at": OPT_STR,
    "execution_namespace": OPT_STR,
    "checkpoint_relpath": OPT_STR,
    "cohort_status": str,
    "pause_retry_at": OPT_STR,
    "pause_reason": OPT_STR,
    "updated_at": str,
    "request": dict,
    "benchmarks": list,
    "repo_meta": dict,
    "pause_metadata": dict,
    "storage_preflight": dict,
}
TOKEN_COUNTS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cached_tokens",
    "cache_creation_input_tokens",
    "llm_call_count",
    "call_count",
)
LATEST_SCORE = {
    "benchmark_id": str,
    "run_id": str,
    "run_group_id": str,
    "started_at": str,
    "score": NUM,
    "unit": str,
    "agent": str,
    "provider": str,
    "model": str,
    "high_score_label": OPT_STR,
    "high_score_value": OPT_NUM,
    "delta_to_high_score": OPT_NUM,
    "llm_call_count": int,
    "total_prompt_tokens": int,
    "total_completion_tokens": int,
    "total_cache_read_input_tokens": int,
    "total_cache_creation_input_tokens": int,
    **dict.fromkeys(TOKEN_COUNTS, int),
    "token_metrics": dict,
}
BENCHMARK_SUMMARY = {
    "benchmark_id": str,
    "runs": int,
    "succeeded_runs": int,
    "best_score": OPT_NUM,
    "latest_run_id": str,
    "latest_started_at": str,
    "latest_model": str,
    "latest_provider": str,
}
SUMMARY = {"runs": int, "succeeded_runs": int, "average_score": OPT_NUM, "best_score": OPT_NUM}
CALIBRATION = {"benchmark_id": str, "scores": dict, "statuses": dict, "complete": bool}

LATENCY = "Latency Bench/v2"  # lower is better, and its file name needs sanitising


# Keys §4 lets a row carry or leave out: publication_warnings only when there are some.
# benchledger's stamp on rows of the demo ledger (`demo_data`), beyond the orchestrator's.
OPTIONAL_ROW = {"publication_warnings": list, "demo_data": bool}
OPTIONAL_INDEX = {"demo_data": list}
OPTIONAL_INDEX_LATEST = {"demo_data": bool}


def assert_shape(
    obj: Any, spec: dict[str, Any], where: str, optional: dict[str, Any] | None = None
) -> None:
    assert isinstance(obj, dict), where
    spec = {**spec, **{k: v for k, v in (optional or {}).items() if k in obj}}
    assert set(obj) == set(spec), f"{where}: {set(obj) ^ set(spec)}"
    for key, kind in spec.items():
        kinds = kind if isinstance(kind, tuple) else (kind,)
        value = obj[key]
        assert isinstance(value, kinds), f"{where}.{key} = {value!r}"
        if isinstance(value, bool):
            assert bool in kinds, f"{where}.{key} is a bool, expected {kinds}"


def hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *strings(v)]]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def read(path: Path) -> Any:
    return json.loads(path.read_text())


@pytest.fixture
def ledger(invoke: Invoke, tmp_path: Path) -> Invoke:
    """The demo, plus a calibration run, a sample-task run, a lower-is-better benchmark, and
    runs whose files and config sit at absolute host paths."""
    invoke("demo")
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    host_dir = str(tmp_path / "host" / "outputs")
    late = {"started_at": "2026-12-01T10:00:00+00:00", "ended_at": "2026-12-01T10:30:00+00:00"}
    docs = {
        "perfect.json": run_json("bfcl", "perfect_v1", score=1.0, run_key="cal-1"),
        "mock.json": run_json("bfcl", "eliza", score=0.99, run_key="mock-1", **late,
                              metrics={"sample": True}),
        "slow.json": run_json(
            LATENCY, "eliza", score=3.0, unit="seconds", higher_is_better=False,
            provider="local", model="tiny-model", run_key="lat-1",
            config={"output_dir": host_dir},
        ),
        "fast.json": run_json(
            LATENCY, "eliza", score=1.5, unit="seconds", higher_is_better=False,
            provider="local", model="tiny-model", run_key="lat-2", **late,
            config={"output_dir": host_dir}, metrics={"log": f"wrote {host_dir}/result.json"},
        ),
    }  # fmt: skip
    for name, doc in docs.items():
        invoke("import", str(write_json(inputs / name, doc)))
    return invoke


def export_latest(invoke: Invoke, directory: Path, *args: str) -> dict[str, Any]:
    return json.loads(invoke("export-latest", str(directory), "--json", *args).stdout)


def export_viewer(invoke: Invoke, out: Path, *args: str) -> dict[str, Any]:
    """The export and its receipt; --parents, as `out` may be in a folder not made yet."""
    receipt = json.loads(
        invoke("export-viewer-data", "--out", str(out), "--json", "--parents", *args).stdout
    )
    return {**receipt, "data": read(out)}


class TestExportLatestShapes:
    def test_rows_match_the_orchestrators_latest_quarantine_and_baseline_shapes(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        out = tmp_path / "export"
        receipt = export_latest(ledger, out)
        latest = sorted((out / "latest").glob("*__*.json"))
        quarantine = sorted((out / "quarantine").glob("*.json"))
        baselines = sorted((out / "baselines").glob("*.json"))
        assert receipt["rows"] == {
            "latest": len(latest),
            "quarantine": len(quarantine),
            "baselines": len(baselines),
        }
        assert latest and quarantine and baselines
        for path in latest:
            assert_shape(read(path), ROW, str(path), OPTIONAL_ROW)
        for path in quarantine:
            assert_shape(read(path), QUARANTINE_ROW, str(path), OPTIONAL_ROW)
        for path in baselines:
            assert_shape(read(path), BASELINE_ROW, str(path))

    def test_files_are_key_sorted_indent_2_with_a_trailing_newline(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        out = tmp_path / "export"
        export_latest(ledger, out)
        for path in out.rglob("*.json"):
            text = path.read_text()
            assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n", path

    def test_calibration_runs_are_baselines_and_sample_task_runs_are_quarantined(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        out = tmp_path / "export"
        export_latest(ledger, out)
        baseline = read(out / "baselines" / "bfcl__perfect_v1.json")
        assert (baseline["synthetic"], baseline["score"]) == (True, 1.0)
        assert not (out / "latest" / "bfcl__perfect_v1.json").exists()
        held = read(out / "quarantine" / "bfcl__eliza.json")
        assert held["quarantine_reason"] == "sample_task_set"
        assert read(out / "latest" / "bfcl__eliza.json")["score"] != 0.99

    def test_file_names_are_sanitised_and_the_index_points_at_them_relatively(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        out = tmp_path / "export"
        export_latest(ledger, out)
        index = read(out / "latest" / "index.json")
        entry = index["latest"][f"{LATENCY}::eliza"]
        assert entry["path"] == "latest/latency-bench-v2__eliza.json"
        for key, entry in index["latest"].items():
            assert (out / entry["path"]).is_file(), key
            assert read(out / entry["path"])["run_id"] == entry["run_id"]

    def test_index_matches_the_orchestrators_index_shape(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        out = tmp_path / "export"
        export_latest(ledger, out)
        index = read(out / "latest" / "index.json")
        assert_shape(index, INDEX, "index", OPTIONAL_INDEX)
        assert len(index["latest"]) == len(list((out / "latest").glob("*__*.json")))
        for key, entry in index["latest"].items():
            assert_shape(entry, INDEX_LATEST, key, OPTIONAL_INDEX_LATEST)
        for key, entry in index["latest_by_signature"].items():
            assert_shape(entry, BY_SIGNATURE, key)
            assert key == f"{entry['signature']}::{entry['benchmark_id']}::{entry['agent']}"
        for key, entry in index["latest_by_comparison_signature"].items():
            assert_shape(entry, BY_COMPARISON, key)
            assert key.startswith(entry["comparison_signature"] + "::")
        for key, entry in index["benchmark_comparability"].items():
            assert_shape(entry, COMPARABILITY, key)
        matrix = index["matrix_contract"]
        assert_shape(matrix, MATRIX, "matrix_contract")
        assert_shape(matrix["summary"], MATRIX_SUMMARY, "summary")
        for benchmark, entry in matrix["benchmarks"].items():
            unstated = entry.get("required_agents_stated") is False
            spec = UNSTATED_MATRIX_BENCHMARK if unstated else MATRIX_BENCHMARK
            assert_shape(entry, spec, benchmark)
            for harness, cell in entry["cells"].items():
                assert_shape(cell, CELL, f"{benchmark}.{harness}")

    def test_latest_by_signature_keeps_every_signature_not_only_the_current_rows(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        out = tmp_path / "export"
        export_latest(ledger, out)
        index = read(out / "latest" / "index.json")
        current = {e["run_id"] for e in index["latest"].values()}
        by_signature = {e["run_id"] for e in index["latest_by_signature"].values()}
        assert current < by_signature
        assert "mock-1" not in json.dumps(index["latest_by_signature"])


class TestExportLatestIsStable:
    def test_re_export_without_new_events_is_byte_identical_and_rewrites_nothing(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        out = tmp_path / "export"
        first = export_latest(ledger, out)
        before = hashes(out)
        again = export_latest(ledger, out)
        assert hashes(out) == before
        assert again["written"] == [] and sorted(again["unchanged"]) == sorted(first["written"])

    def test_as_of_export_equals_the_export_made_at_that_position(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        then = export_latest(ledger, tmp_path / "then")
        row = read(tmp_path / "then" / "latest" / "latency-bench-v2__eliza.json")
        ledger("invalidate", row["run_id"], "--reason", "clock skew")
        now = export_latest(ledger, tmp_path / "now")
        assert now["position"] > then["position"]
        assert hashes(tmp_path / "now") != hashes(tmp_path / "then")
        export_latest(ledger, tmp_path / "replayed", "--as-of", str(then["position"]))
        assert hashes(tmp_path / "replayed") == hashes(tmp_path / "then")

    def test_a_row_that_stops_being_current_is_removed_and_nothing_else_is(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        out = tmp_path / "export"
        export_latest(ledger, out)
        keep = [out / "latest" / "notes.txt", out / "latest" / "README.JSON", out / "x__y.json"]
        for path in keep:
            path.write_text("{}")
        runs = json.loads(ledger("runs", "--benchmark", LATENCY, "--json").stdout)
        for run in runs:
            ledger("invalidate", run["run_id"], "--reason", "wrong clock")
        receipt = export_latest(ledger, out)
        assert "latest/latency-bench-v2__eliza.json" in receipt["removed"]
        assert not (out / "latest" / "latency-bench-v2__eliza.json").exists()
        held = read(out / "quarantine" / "latency-bench-v2__eliza.json")
        assert held["quarantine_reason"] == "invalidated_run"
        assert all(path.exists() for path in keep)
        assert not [p for p in out.rglob(".*")]  # no temp files left behind

    def test_filters_export_only_the_chosen_benchmarks(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        out = tmp_path / "export"
        export_latest(ledger, out, "--include-benchmarks", "bfcl,gaia")
        names = {p.name.split("__")[0] for p in out.rglob("*__*.json")}
        assert names == {"bfcl", "gaia"}
        index = read(out / "latest" / "index.json")
        assert set(index["matrix_contract"]["benchmarks"]) == {"bfcl", "gaia"}
        assert {e["benchmark_id"] for e in index["latest_by_signature"].values()} == {
            "bfcl",
            "gaia",
        }


class TestExportViewerData:
    def test_matches_the_orchestrators_viewer_shape_in_its_key_order(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        data = export_viewer(ledger, tmp_path / "viewer_data.json")["data"]
        assert list(data) == VIEWER_KEYS
        assert isinstance(data["generated_at"], str)
        for run in data["runs"]:
            assert_shape(run, VIEWER_RUN, run["run_id"])
            assert list(run)[:6] == list(VIEWER_RUN)[:6]
        for group in data["run_groups"]:
            assert_shape(group, VIEWER_RUN_GROUP, group["run_group_id"])
        for row in data["latest_scores"]:
            assert_shape(row, LATEST_SCORE, row["run_id"])
            assert set(row["token_metrics"]) == set(TOKEN_COUNTS)
        for row in data["benchmark_summary"]:
            assert_shape(row, BENCHMARK_SUMMARY, row["benchmark_id"])
        for row in data["model_summary"]:
            assert_shape(row, {"model_key": str, **SUMMARY}, row["model_key"])
        for row in data["agent_summary"]:
            assert_shape(row, {"agent": str, **SUMMARY}, row["agent"])
        for row in data["calibration_summary"]:
            assert_shape(row, CALIBRATION, row["benchmark_id"])

    def test_is_indent_2_ascii_json_even_though_it_is_streamed(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        out = tmp_path / "viewer_data.json"
        export_viewer(ledger, out)
        text = out.read_text()
        assert text.isascii()
        assert text == json.dumps(json.loads(text), indent=2) + "\n"

    def test_every_run_is_exported_newest_first_never_capped(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        data = export_viewer(ledger, tmp_path / "viewer_data.json")["data"]
        ledger_runs = json.loads(ledger("runs", "--json").stdout)
        ids = [r["run_id"] for r in data["runs"]]
        assert len(ids) == len(set(ids)) == len(ledger_runs)
        assert set(ids) == {r["run_id"] for r in ledger_runs}
        starts = [(r["started_at"], r["run_id"]) for r in data["runs"]]
        assert starts == sorted(starts, reverse=True)

    def test_latest_scores_are_the_newest_scored_successes_as_the_orchestrator_lists_them(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        """The orchestrator export's definition: per benchmark and agent, the succeeded
        runs with a score that started last (an invalidated run is not a success)."""
        data = export_viewer(ledger, tmp_path / "viewer_data.json")["data"]
        newest: dict[tuple[str, str], dict[str, Any]] = {}
        for run in json.loads(ledger("runs", "--json").stdout):
            if run["status"] != "succeeded" or run["score"] is None or run["invalidated"]:
                continue
            key = (run["benchmark"], run["agent"])
            if key not in newest or run["started_at"] > newest[key]["started_at"]:
                newest[key] = run
        assert [r["run_id"] for r in data["latest_scores"]] == [
            newest[key]["run_id"] for key in sorted(newest)
        ]
        assert {r["benchmark_id"] for r in data["latest_scores"]} >= {LATENCY}

    def test_best_scores_follow_the_benchmarks_direction(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        data = export_viewer(ledger, tmp_path / "viewer_data.json")["data"]
        latency = next(b for b in data["benchmark_summary"] if b["benchmark_id"] == LATENCY)
        assert (latency["runs"], latency["best_score"]) == (2, 1.5)
        tiny = next(m for m in data["model_summary"] if m["model_key"] == "local:tiny-model")
        assert (tiny["best_score"], tiny["average_score"]) == (1.5, 2.25)
        # eliza ran both directions: its best is over the higher-is-better runs only
        eliza = next(a for a in data["agent_summary"] if a["agent"] == "eliza")
        runs = json.loads(ledger("runs", "--agent", "eliza", "--json").stdout)
        higher = [
            r["score"]
            for r in runs
            if r["status"] == "succeeded" and not r["invalidated"] and r["higher_is_better"]
        ]
        assert eliza["best_score"] == max(higher)

    def test_calibration_summary_reports_each_calibration_harness(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        data = export_viewer(ledger, tmp_path / "viewer_data.json")["data"]
        assert data["calibration_summary"] == [
            {
                "benchmark_id": "bfcl",
                "scores": {"perfect_v1": 1.0, "wrong_v1": None, "half_v1": None},
                "statuses": {"perfect_v1": "succeeded", "wrong_v1": None, "half_v1": None},
                "complete": False,
            }
        ]

    def test_re_export_and_as_of_export_are_byte_identical(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        then = export_viewer(ledger, tmp_path / "then" / "viewer_data.json")
        text = (tmp_path / "then" / "viewer_data.json").read_bytes()
        export_viewer(ledger, tmp_path / "then" / "viewer_data.json")
        assert (tmp_path / "then" / "viewer_data.json").read_bytes() == text
        run_id = then["data"]["latest_scores"][0]["run_id"]
        ledger("invalidate", run_id, "--reason", "leak")
        now = export_viewer(ledger, tmp_path / "now" / "viewer_data.json")
        assert now["data"]["ledger_position"] > then["position"]
        out = tmp_path / "replayed" / "viewer_data.json"
        export_viewer(ledger, out, "--as-of", str(then["position"]))
        assert out.read_bytes() == text

    def test_filters_restrict_runs_and_summaries(self, ledger: Invoke, tmp_path: Path) -> None:
        data = export_viewer(
            ledger, tmp_path / "viewer_data.json", "--exclude-benchmarks", f"gaia,{LATENCY}"
        )["data"]
        benchmarks = {r["benchmark_id"] for r in data["runs"]}
        assert benchmarks and not benchmarks & {"gaia", LATENCY}
        assert {b["benchmark_id"] for b in data["benchmark_summary"]} == benchmarks

    def test_a_failed_export_leaves_the_previous_file_and_no_temp_file(
        self, ledger: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        out = tmp_path / "site" / "viewer_data.json"
        export_viewer(ledger, out)
        before = out.read_bytes()

        def broken(self: Summaries) -> list[dict[str, Any]]:
            raise RuntimeError("disk on fire")

        monkeypatch.setattr(Summaries, "calibration_summary", broken)
        ledger("invalidate", json.loads(before)["latest_scores"][0]["run_id"], "--reason", "x")
        result = ledger("export-viewer-data", "--out", str(out), expect=None)
        assert isinstance(result.exception, RuntimeError)
        assert out.read_bytes() == before
        assert [p.name for p in out.parent.iterdir()] == ["viewer_data.json"]

    def test_writes_viewer_data_json_in_the_working_directory_by_default(
        self, invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        invoke("demo")
        monkeypatch.chdir(tmp_path)
        result = invoke("export-viewer-data")
        assert "viewer_data.json" in result.stdout
        assert len(read(tmp_path / "viewer_data.json")["runs"]) == 79


class TestEveryExportIsTraceable:
    def test_exports_carry_the_ledger_position_and_head_hash_verify_reports(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        verified = json.loads(ledger("verify", "--json").stdout)
        head = (verified["head_position"], verified["head_sha256"])
        receipt = export_latest(ledger, tmp_path / "export")
        index = read(tmp_path / "export" / "latest" / "index.json")
        viewer = export_viewer(ledger, tmp_path / "viewer_data.json")
        assert (receipt["position"], receipt["head_sha256"]) == head
        assert (index["ledger_position"], index["ledger_head_sha256"]) == head
        assert (viewer["data"]["ledger_position"], viewer["data"]["ledger_head_sha256"]) == head
        assert (viewer["position"], viewer["head_sha256"]) == head

    def test_the_text_receipt_names_position_and_head(self, ledger: Invoke, tmp_path: Path) -> None:
        verified = json.loads(ledger("verify", "--json").stdout)
        out = ledger("export-latest", str(tmp_path / "export")).stdout
        assert f"position {verified['head_position']}" in out
        assert verified["head_sha256"] in out

    def test_no_host_path_appears_anywhere_in_any_export(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        export_latest(ledger, tmp_path / "export")
        export_viewer(ledger, tmp_path / "export" / "viewer_data.json")
        for path in (tmp_path / "export").rglob("*.json"):
            text = path.read_text()
            assert str(tmp_path) not in text, path
            for value in strings(json.loads(text)):
                assert not value.startswith("/"), (path, value)
        latency = read(tmp_path / "export" / "latest" / "latency-bench-v2__eliza.json")
        assert latency["result_json_path"] == "fast.json"
        assert latency["extra_config"] == {"output_dir": "outputs"}
        assert latency["metrics"]["log"] == "wrote result.json"

    def test_an_empty_ledger_exports_an_empty_index_at_position_0(
        self, invoke: Invoke, tmp_path: Path, db: Path
    ) -> None:
        create_empty_ledger(db)
        receipt = export_latest(invoke, tmp_path / "export")
        index = read(tmp_path / "export" / "latest" / "index.json")
        assert receipt["position"] == index["ledger_position"] == 0
        assert index["latest"] == {} and index["matrix_contract"]["benchmarks"] == {}


class TestMatrixCoversRegisteredBenchmarks:
    def test_a_registered_benchmark_without_runs_is_in_the_matrix_as_missing(
        self, ledger: Invoke, db: Path, tmp_path: Path
    ) -> None:
        from benchledger.adapters.store.bootstrap import Settings, build

        with build(Settings(db_path=db)) as services:
            services.ledger.register_benchmark("never-run", unit="accuracy")
        out = tmp_path / "export"
        export_latest(ledger, out)
        matrix = read(out / "latest" / "index.json")["matrix_contract"]
        entry = matrix["benchmarks"]["never-run"]
        # Nothing requires an agent of it: no cell, nothing missing.
        assert (entry["cells"], entry["complete"], entry["required_agents_stated"]) == (
            {},
            None,
            False,
        )
        with build(Settings(db_path=db)) as services:
            services.ledger.declare_required_agents("never-run", ["eliza"], source="test")
        export_latest(ledger, out)
        matrix = read(out / "latest" / "index.json")["matrix_contract"]
        entry = matrix["benchmarks"]["never-run"]
        cells = entry["cells"]
        assert cells and {cell["state"] for cell in cells.values()} == {"missing"}
        assert entry["complete"] is False and matrix["status"] == "incomplete"
        export_latest(ledger, out, "--exclude-benchmarks", "never-run")
        excluded = read(out / "latest" / "index.json")["matrix_contract"]
        assert "never-run" not in excluded["benchmarks"]
