"""The ElizaOS orchestrator parser on databases and files built from ORCHESTRATOR.md."""

from __future__ import annotations

import copy
import itertools
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.adapters.formats import orchestrator
from benchledger.adapters.formats.orchestrator_facts import derive_signature
from benchledger.domain import facts
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord, RunStatus, SkipRecord
from tests.conftest import Invoke

SIGNATURE = "51c42ab183297eefc7c0679d98dca4976714e6532b6cc654bf08ad0f4c993fb0"
RUN_ID = "run_bfcl_20260512T101500Z_1_3fa9c2d1"
HOST = "/srv/eliza/benchmark_results/rg_20260512T101455Z_9b1e7a40/bfcl__bfcl/" + RUN_ID
BASE_COLUMNS = (
    "run_id TEXT PRIMARY KEY, run_group_id TEXT NOT NULL, benchmark_id TEXT NOT NULL, "
    "benchmark_directory TEXT NOT NULL, signature TEXT NOT NULL, status TEXT NOT NULL, "
    "attempt INTEGER NOT NULL, agent TEXT NOT NULL, provider TEXT NOT NULL, "
    "model TEXT NOT NULL, extra_config_json TEXT NOT NULL, started_at TEXT NOT NULL, "
    "ended_at TEXT, duration_seconds REAL, command_json TEXT NOT NULL, cwd TEXT NOT NULL, "
    "stdout_path TEXT NOT NULL, stderr_path TEXT NOT NULL, result_json_path TEXT, score REAL, "
    "unit TEXT, higher_is_better INTEGER, metrics_json TEXT NOT NULL, "
    "artifacts_json TEXT NOT NULL, error TEXT, high_score_label TEXT, high_score_value REAL, "
    "delta_to_high_score REAL, benchmark_version TEXT, benchmarks_commit TEXT, "
    "eliza_commit TEXT, eliza_version TEXT, created_at TEXT NOT NULL"
)
MIGRATION_COLUMNS = (
    "comparison_id TEXT, trajectory_summary_json TEXT, token_metrics_json TEXT, "
    "cache_metrics_json TEXT, performance_metrics_json TEXT, trajectory_count INTEGER, "
    "llm_call_count INTEGER, total_prompt_tokens INTEGER, total_completion_tokens INTEGER, "
    "total_cache_read_input_tokens INTEGER, total_cache_creation_input_tokens INTEGER, "
    "mean_latency_ms REAL, p95_latency_ms REAL, throughput_per_second REAL"
)
GROUP_VALUES = {
    "trajectory_summary": {
        "files": 1,
        "prompt_chars": 183402,
        "repeated_prefixes": [],
        "turns": 12,
    },
    "token_metrics": {
        "completion_tokens": 3011,
        "llm_call_count": 12,
        "prompt_tokens": 45200,
        "telemetry_missing": False,
        "total_tokens": 48211,
    },
    "cache_metrics": {
        "cache_creation_input_tokens": 0,
        "cache_hit_ratio": 0.0,
        "cache_read_input_tokens": 0,
        "turns_with_cached_field": 0,
    },
    "performance_metrics": {"duration_seconds": 401.68, "mean_latency_ms": 2210.5},
}
TOKENS = {"completion_tokens": 3011, "llm_call_count": 12, "prompt_tokens": 45200}
TOKENS["total_tokens"] = 48211


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def db_row(**changes: Any) -> dict[str, Any]:
    """A benchmark_runs row (ORCHESTRATOR.md §11a): metrics carry the telemetry copies."""
    extra = changes.pop("extra_config", {"agent": "eliza", "harness": "eliza", "limit": 10})
    metrics = changes.pop("metrics", {"n": 10, "return_code": 0, **GROUP_VALUES})
    row: dict[str, Any] = {
        "run_id": RUN_ID,
        "run_group_id": "rg_20260512T101455Z_9b1e7a40",
        "benchmark_id": "bfcl",
        "benchmark_directory": "bfcl",
        "signature": SIGNATURE,
        "status": "succeeded",
        "attempt": 1,
        "agent": "eliza",
        "provider": "cerebras",
        "model": "gpt-oss-120b",
        "extra_config_json": dumps(extra),
        "started_at": "2026-05-12T10:15:00.120000+00:00",
        "ended_at": "2026-05-12T10:21:41.800000+00:00",
        "duration_seconds": 401.68,
        "command_json": dumps(["python", "-m", "benchmarks.bfcl"]),
        "cwd": "/srv/eliza/benchmarks/bfcl",
        "stdout_path": HOST + "/stdout.log",
        "stderr_path": HOST + "/stderr.log",
        "result_json_path": HOST + "/output/bfcl_results.json",
        "score": 0.8,
        "unit": "ratio",
        "higher_is_better": 1,
        "metrics_json": dumps(metrics),
        "artifacts_json": dumps([HOST + "/output"]),
        "error": None,
        "high_score_label": "gpt-5",
        "high_score_value": 0.891,
        "delta_to_high_score": -0.091,
        "benchmark_version": "0.4.1",
        "benchmarks_commit": "a1b2c3d",
        "eliza_commit": "d4e5f6a",
        "eliza_version": "2.0.0",
        "created_at": "2026-05-12T10:15:00.120000+00:00",
        "comparison_id": None,
        **{f"{name}_json": dumps(value) for name, value in GROUP_VALUES.items()},
        "llm_call_count": 12,
        "total_prompt_tokens": 45200,
    }
    row.update(changes)
    return row


def make_db(path: Path, rows: list[dict[str, Any]], *, migrated: bool = True) -> Path:
    """An orchestrator.sqlite of the E2 vintage, or (migrated=False) E1 before migrations."""
    columns = BASE_COLUMNS + (", " + MIGRATION_COLUMNS if migrated else "")
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"CREATE TABLE benchmark_runs ({columns})")
    conn.execute("CREATE TABLE run_groups (run_group_id TEXT PRIMARY KEY, created_at TEXT)")
    names = [line.split()[0] for line in columns.split(", ")]
    for row in rows:
        values = [row.get(name) for name in names]
        marks = ", ".join("?" for _ in names)
        conn.execute(f"INSERT INTO benchmark_runs ({', '.join(names)}) VALUES ({marks})", values)
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


def decoded(row: dict[str, Any]) -> dict[str, Any]:
    """The row as the orchestrator's list_runs hands it to its exports."""
    out = {k: v for k, v in row.items() if not k.endswith("_json")}
    for key, value in row.items():
        if key.endswith("_json") and value is not None:
            out[key.removesuffix("_json")] = json.loads(value)
    out["higher_is_better"] = (
        None if row["higher_is_better"] is None else bool(row["higher_is_better"])
    )
    return out


def completed_tokens(group: dict[str, Any]) -> dict[str, Any]:
    """E2's `completed` token metrics: the same counts under every alias, plus averages."""
    calls = group.get("llm_call_count", 0)
    return {
        **group,
        "call_count": calls,
        "input_tokens": group.get("prompt_tokens", 0),
        "output_tokens": group.get("completion_tokens", 0),
        "cached_tokens": 0,
        "avg_prompt_tokens": round(group.get("prompt_tokens", 0) / max(calls, 1), 2),
    }


def latest_row(
    row: dict[str, Any], *, vintage: str = "e2", folder: str = "latest"
) -> dict[str, Any]:
    """A latest/ (or quarantine/) file of the row, as E1 or E2 writes it."""
    run = decoded(row)
    out: dict[str, Any] = {
        k: run.get(k) for k in ("agent", "benchmark_directory", "benchmark_id", "error")
    }
    out.update({k: run.get(k) for k in ("model", "provider", "run_group_id", "run_id", "score")})
    out.update(status=run["status"], unit=run["unit"], higher_is_better=run["higher_is_better"])
    out.update(artifacts=run["artifacts"], result_json_path=run["result_json_path"])
    out["updated_at"] = run["ended_at"] or run["started_at"]
    out["metrics"] = copy.deepcopy(run["metrics"])
    for name in GROUP_VALUES:
        out[name] = copy.deepcopy(run.get(name) or {})
    if vintage == "e2":
        out["signature"] = run["signature"]
        out["comparison_signature"] = "9098938c" * 8
        out["token_metrics"] = completed_tokens(out["token_metrics"])
        if "token_metrics" in out["metrics"]:
            out["metrics"]["token_metrics"] = completed_tokens(out["metrics"]["token_metrics"])
        if folder == "latest":
            out["extra_config"] = run["extra_config"]
        else:
            out["quarantine_reason"] = "unsucceeded_run"
    return dict(sorted(out.items()))


def viewer(rows: list[dict[str, Any]]) -> dict[str, Any]:
    runs = []
    for row in rows:
        run = {k: v for k, v in decoded(row).items() if k not in ("created_at", "comparison_id")}
        run.update(input_tokens=45200, output_tokens=3011, total_tokens=48211, call_count=12)
        runs.append(run)
    return {"generated_at": "2026-05-13T09:15:00+00:00", "runs": runs, "run_groups": []}


def comparison(row: dict[str, Any]) -> dict[str, Any]:
    run = decoded(row)
    keys = ("benchmark_id", "run_id", "status", "provider", "model", "score", "unit")
    side = {k: run[k] for k in keys}
    side.update(higher_is_better=run["higher_is_better"], metrics=run["metrics"])
    side.update(base_url=None, duration_seconds=run["duration_seconds"], error=run["error"])
    block: dict[str, Any] = {
        "provider": "cerebras",
        "model": "gpt-oss-120b",
        "base_url": None,
        "runs": [side],
    }
    empty: dict[str, Any] = {"provider": "vllm", "model": "m", "base_url": None, "runs": []}
    return {"comparison_id": "cmp_20260512T101455Z_0a1b2c3d", "a": block, "b": empty, "rows": []}


def write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2))
    return path


def parse(path: Path) -> list[RunRecord | SkipRecord]:
    return list(orchestrator.parse(path, path.read_bytes()))


def only_run(path: Path) -> RunRecord:
    [record] = parse(path)
    assert isinstance(record, RunRecord)
    return record


class TestDetection:
    def test_claims_the_database_rows_viewer_and_comparisons(self, tmp_path: Path) -> None:
        claimed = [
            make_db(tmp_path / "orchestrator.sqlite", [db_row()]),
            make_db(tmp_path / "orchestrator-20260512.sqlite", []),
            write(tmp_path / "latest" / "bfcl__eliza.json", latest_row(db_row())),
            write(tmp_path / "history" / "bfcl__eliza@1.json", latest_row(db_row(), vintage="e1")),
            write(tmp_path / "viewer_data.json", viewer([db_row()])),
            write(tmp_path / "comparisons" / "compare-cmp_1.json", comparison(db_row())),
        ]
        for path in claimed:
            assert orchestrator.detect(path, path.read_bytes()[:4096]), path

    def test_leaves_the_index_other_sqlite_and_other_json_alone(self, tmp_path: Path) -> None:
        other_db = tmp_path / "other.sqlite"
        with closing(sqlite3.connect(other_db)) as conn:
            conn.execute("CREATE TABLE stored_events (id INTEGER)")
        ignored = [
            write(tmp_path / "latest" / "index.json", {"latest": {}, "updated_at": "x"}),
            write(tmp_path / "run_meta.json", {"demoMode": True}),
            write(tmp_path / "results.json", {"benchmark_id": "x", "agent": "y"}),
            other_db,
        ]
        for path in ignored:
            assert not orchestrator.detect(path, path.read_bytes()[:4096]), path

    def test_an_index_declares_its_contracts_rules_and_another_index_nothing(
        self, tmp_path: Path
    ) -> None:
        cells = {
            "eliza": {"required": True, "state": "succeeded"},
            "openclaw": {"required": False, "state": "unsupported", "reason": "no sandbox"},
        }
        contract = {"benchmarks": {"bfcl": {"compatible_harnesses": ["eliza"], "cells": cells}}}
        index = write(
            tmp_path / "latest" / "index.json",
            {"benchmark_comparability": {}, "latest": {}, "matrix_contract": contract},
        )
        other = write(tmp_path / "site" / "index.json", {"files": ["a"], "latest": "v2"})
        named = write(tmp_path / "latest" / "summary.json", {"latest": {}})
        assert orchestrator.declares(index, index.read_bytes())
        assert not orchestrator.declares(other, other.read_bytes())
        assert not orchestrator.declares(named, named.read_bytes())
        rules = orchestrator.rules(index, index.read_bytes())
        assert rules is not None
        [(benchmark, rule)] = rules.items()
        assert (benchmark, rule.required, rule.compatible) == ("bfcl", ("eliza",), ("eliza",))
        assert rule.unsupported == {"openclaw": "no sandbox"}
        assert rule.source == orchestrator.CONTRACT_SOURCE


class TestOneRunWhicheverFileStatesIt:
    def test_database_latest_quarantine_viewer_and_comparison_give_identical_records(
        self, tmp_path: Path
    ) -> None:
        # A compare run: the one kind of run a comparison file states (its agent is implied).
        row = db_row(
            agent="compare",
            extra_config={"harness": "compare", "max_examples": 10},
            comparison_id="cmp_20260512T101455Z_0a1b2c3d",
        )
        sources = [
            make_db(tmp_path / "orchestrator.sqlite", [row]),
            write(tmp_path / "latest" / "bfcl__eliza.json", latest_row(row)),
            write(tmp_path / "quarantine" / "bfcl__eliza.json", latest_row(row, folder="q")),
            write(tmp_path / "e1" / "bfcl__eliza.json", latest_row(row, vintage="e1")),
            write(tmp_path / "viewer_data.json", viewer([row])),
            write(tmp_path / "compare-cmp_1.json", comparison(row)),
        ]
        records = [only_run(path) for path in sources]
        database = facts.stated(records[0])
        for path, record in zip(sources[1:], records[1:], strict=True):
            # Each sparser file states a part of the database's facts, and none differently.
            assert facts.compare(database, facts.stated(record)) == ({}, []), path
        header = records[0].header
        assert (header.run_key, header.status, header.score, header.tokens) == (
            RUN_ID,
            RunStatus.SUCCEEDED,
            0.8,
            TOKENS,
        )
        # The database's facts, exactly: times to the microsecond, duration, config, signature.
        assert header.started_at is not None and header.started_at.isoformat() == (
            "2026-05-12T10:15:00.120000+00:00"
        )
        assert header.ended_at is not None and header.ended_at.isoformat() == (
            "2026-05-12T10:21:41.800000+00:00"
        )
        assert header.duration_seconds == 401.68
        assert header.config == {"harness": "compare", "max_examples": 10}
        assert header.signature == SIGNATURE
        assert header.metrics["performance_metrics"]["mean_latency_ms"] == 2210.5
        # The metrics as the database states them, their nested token_metrics too.
        assert header.metrics["token_metrics"] == GROUP_VALUES["token_metrics"]
        columns = header.provenance["source_columns"]
        assert columns["token_metrics"] == GROUP_VALUES["token_metrics"]
        assert columns["command"] == ["python", "-m", "benchmarks.bfcl"]
        assert (columns["benchmark_version"], columns["eliza_commit"]) == ("0.4.1", "d4e5f6a")
        assert columns["run_group_id"] == "rg_20260512T101455Z_9b1e7a40"
        assert header.provenance["attempt"] == 1
        assert header.provenance["benchmark_directory"] == "bfcl"
        # A latest row states no start time, and an E1 row no config: nothing stands in.
        latest, e1 = records[1].header, records[3].header
        assert latest.started_at is None and "started_at" not in latest.model_fields_set
        assert e1.config == {} and "config" not in facts.stated(records[3])

    def test_a_database_before_the_migrations_agrees_with_its_latest_rows(
        self, tmp_path: Path
    ) -> None:
        row = db_row(metrics={"n": 10, "return_code": 0})
        bare = make_db(tmp_path / "orchestrator.sqlite", [row], migrated=False)
        e1 = dict(latest_row(row, vintage="e1"), **{name: {} for name in GROUP_VALUES})
        file = write(tmp_path / "latest" / "bfcl__eliza.json", e1)
        database = facts.stated(only_run(bare))
        assert facts.compare(database, facts.stated(only_run(file))) == ({}, [])
        assert only_run(bare).header.tokens == {}

    def test_importing_three_sources_of_one_run_records_it_once(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        row = db_row()
        make_db(tmp_path / "orchestrator.sqlite", [row])
        write(tmp_path / "latest" / "bfcl__eliza.json", latest_row(row))
        write(tmp_path / "viewer_data.json", viewer([row]))
        reports = json.loads(invoke("import", str(tmp_path), "--json").stdout)
        # Whichever file comes first records the run; the others add what it lacked.
        assert {r["state"] for r in reports} <= {"imported", "unchanged"}
        [run] = json.loads(invoke("runs", "--json").stdout)
        assert (run["benchmark"], run["status"], run["score"]) == ("bfcl", "succeeded", 0.8)
        assert (run["started_at"], run["ended_at"]) == (row["started_at"], row["ended_at"])
        assert run["config"] == json.loads(row["extra_config_json"])

    @pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
    def test_in_any_order_the_three_sources_leave_the_same_run(
        self, invoke: Invoke, tmp_path: Path, order: tuple[int, ...]
    ) -> None:
        row = db_row()
        files = [
            make_db(tmp_path / "db" / "orchestrator.sqlite", [row]),
            write(tmp_path / "latest" / "bfcl__eliza.json", latest_row(row)),
            write(tmp_path / "viewer" / "viewer_data.json", viewer([row])),
        ]
        for i in order:
            invoke("import", str(files[i]))
        [run] = json.loads(invoke("runs", "--json").stdout)
        volatile = ("recorded_at", "updated_at", "last_position", "source_format")
        volatile += ("last_heard_at", "run_group_id")
        volatile += ("source_path", "source_sha256", "source")
        kept = {k: v for k, v in run.items() if k not in volatile}
        reference = tmp_path / "reference.db"
        invoke("--db", str(reference), "import", str(files[0]))
        [alone] = json.loads(invoke("--db", str(reference), "runs", "--json").stdout)
        assert kept == {k: v for k, v in alone.items() if k not in volatile}
        # Importing any of them again adds nothing.
        before = invoke("events", "--json").stdout
        for path in files:
            invoke("import", str(path))
        assert invoke("events", "--json").stdout == before

    def test_a_file_that_states_the_run_differently_is_a_conflict(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        make_db(tmp_path / "db" / "orchestrator.sqlite", [db_row()])
        write(tmp_path / "latest" / "bfcl__eliza.json", latest_row(db_row(score=0.9)))
        invoke("import", str(tmp_path / "db"))
        result = invoke("import", str(tmp_path / "latest"), expect=1)
        assert "conflict" in result.stdout and RUN_ID in result.stderr


class TestStatuses:
    def test_skipped_incompatible_paused_and_missing_env_rows_are_skips(
        self, tmp_path: Path
    ) -> None:
        rows = [
            db_row(run_id="skip_bfcl_20260513T080000Z_2_77aa01bc", status="skipped",
                   metrics={"reason": "already_succeeded"}),
            db_row(run_id="incompat_x_20260513T080000Z_1_00000001", benchmark_id="x",
                   status="incompatible", metrics={"reason": "harness_not_in_compatibility"}),
            db_row(run_id="incompat_y_20260513T080000Z_1_00000002", benchmark_id="y",
                   status="incompatible", metrics={"missing_env": ["KEY"]}),
            db_row(run_id="missing_env_z_20260513T080000Z_1_00000003", benchmark_id="z",
                   status="failed", metrics={"missing_env": ["KEY"]}),
            db_row(run_id="run_w_20260513T080000Z_1_00000004", status="paused"),
            db_row(run_id="run_v_20260513T080000Z_1_00000005", status="running"),
        ]  # fmt: skip
        records = parse(make_db(tmp_path / "orchestrator.sqlite", rows))
        assert all(isinstance(r, SkipRecord) for r in records)
        assert [r.reason for r in records if isinstance(r, SkipRecord)] == [
            "incompatible", "missing_env", "missing_env", "paused", "skipped"
        ]  # fmt: skip
        skipped = records[-1]
        assert isinstance(skipped, SkipRecord) and skipped.detail == "already_succeeded"
        assert skipped.provenance["signature_check"] == "matches"

    def test_stale_recovered_rows_are_recovered_runs(self, tmp_path: Path) -> None:
        error = "Recovered stale running run from interrupted orchestrator process"
        rows = [
            db_row(status="failed", metrics={"reason": "orchestrator_interrupted"}, error=error),
            db_row(run_id="run_bfcl_20260513T090000Z_1_c0ffee01", status="paused_unknown",
                   metrics={"reason": "orchestrator_interrupted"}),
        ]  # fmt: skip
        records = parse(make_db(tmp_path / "orchestrator.sqlite", rows))
        assert [r.header.status for r in records if isinstance(r, RunRecord)] == [
            RunStatus.RECOVERED,
            RunStatus.RECOVERED,
        ]

    def test_a_recovered_run_and_a_skip_import_through_the_cli(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        stale = {"reason": "orchestrator_interrupted"}
        rows = [
            db_row(status="failed", metrics=stale, score=None),
            db_row(run_id="skip_bfcl_20260513T080000Z_2_77aa01bc", status="skipped", metrics={}),
        ]
        make_db(tmp_path / "orchestrator.sqlite", rows)
        [report] = json.loads(invoke("import", str(tmp_path), "--json").stdout)
        assert (report["state"], report["runs"]) == ("imported", 1)
        [run] = json.loads(invoke("runs", "--json").stdout)
        assert (run["run_key"], run["status"]) == (RUN_ID, "recovered")

    def test_a_failed_row_keeps_its_score(self, tmp_path: Path) -> None:
        row = db_row(status="failed", score=0.4643, error="exited with return code 2")
        header = only_run(make_db(tmp_path / "orchestrator.sqlite", [row])).header
        assert (header.status, header.score) == (RunStatus.FAILED, 0.4643)
        assert header.provenance["unsucceeded_with_score"] is True

    def test_a_success_with_a_nonzero_exit_is_the_failure_the_orchestrator_repairs_it_to(
        self, tmp_path: Path
    ) -> None:
        metrics = {"return_code": 1, "nonzero_return_code_with_result": 1}
        before = write(tmp_path / "a.json", latest_row(db_row(metrics=metrics, score=0.0)))
        repaired = db_row(metrics=metrics, score=0.0, status="failed")
        repaired["error"] = "Command produced a result JSON but exited with return code 1"
        after = write(tmp_path / "b.json", latest_row(repaired))
        assert only_run(before).header.status is RunStatus.FAILED
        assert only_run(before).content_sha256() == only_run(after).content_sha256()

    def test_a_zero_sample_success_is_a_failure(self, tmp_path: Path) -> None:
        row = latest_row(db_row(benchmark_id="mmlu", metrics={"n": 0, "return_code": 0}))
        header = only_run(write(tmp_path / "mmlu__eliza.json", row)).header
        assert header.status is RunStatus.FAILED and "zero-sample" in (header.error or "")


class TestTheIndex:
    def index(self, tmp_path: Path, **entry: Any) -> None:
        body = {"path": "/srv/x/latest/bfcl__eliza.json", "run_id": RUN_ID, **entry}
        write(tmp_path / "latest" / "index.json", {"latest": {"bfcl::eliza": body}})

    def test_an_index_saying_failed_agrees_with_a_row_succeeded_with_a_nonzero_exit(
        self, tmp_path: Path
    ) -> None:
        self.index(tmp_path, status="failed", score=0.0)
        metrics = {"return_code": 1}
        path = write(
            tmp_path / "latest" / "bfcl__eliza.json", latest_row(db_row(metrics=metrics, score=0.0))
        )
        assert only_run(path).header.status is RunStatus.FAILED

    def test_a_real_status_disagreement_names_the_index_and_the_field(self, tmp_path: Path) -> None:
        self.index(tmp_path, status="failed")
        path = write(tmp_path / "latest" / "bfcl__eliza.json", latest_row(db_row()))
        with pytest.raises(InputFormatError, match=r"index\.json") as e:
            parse(path)
        assert e.value.field == "status" and "'failed'" in e.value.message

    def test_a_score_disagreement_is_reported_and_other_runs_are_not_compared(
        self, tmp_path: Path
    ) -> None:
        self.index(tmp_path, status="succeeded", score=0.5)
        path = write(tmp_path / "latest" / "bfcl__eliza.json", latest_row(db_row()))
        with pytest.raises(InputFormatError) as e:
            parse(path)
        assert e.value.field == "score"
        other = write(tmp_path / "latest" / "x__eliza.json", latest_row(db_row(run_id="run_2")))
        assert only_run(other).header.run_key == "run_2"


class TestSignaturesAndPaths:
    def test_the_worked_example_and_the_calibration_key(self) -> None:
        extra = {"agent": "eliza", "harness": "eliza", "limit": 10}
        assert derive_signature("bfcl", "bfcl", "eliza", "cerebras", "gpt-oss-120b", extra) == (
            SIGNATURE
        )
        plain = derive_signature("bfcl", "bfcl", "eliza_v1", "p", "m", {})
        calibrated = derive_signature("bfcl", "bfcl", "half_v1", "p", "m", {})
        with_key = {"calibration_spec_version": "calibration_v1"}
        assert calibrated == derive_signature("bfcl", "bfcl", "half_v1", "p", "m", with_key)
        assert plain != derive_signature("bfcl", "bfcl", "eliza_v1", "p", "m", with_key)

    def test_a_runs_signature_is_kept_and_checked_from_the_richest_source(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        row = db_row()
        make_db(tmp_path / "orchestrator.sqlite", [row])
        write(tmp_path / "latest" / "bfcl__eliza.json", latest_row(row))
        record = only_run(tmp_path / "orchestrator.sqlite")
        assert record.header.signature == row["signature"]
        assert record.header.provenance["signature_check"] == "matches"
        invoke("import", str(tmp_path))
        [run] = json.loads(invoke("runs", "--json").stdout)
        assert run["provenance"]["signature_check"] == "matches"
        assert run["signature"] == row["signature"]  # the orchestrator's, as it stated it
        assert run["config"] == json.loads(row["extra_config_json"])

    def test_a_signature_that_does_not_match_its_config_is_flagged(self, tmp_path: Path) -> None:
        row = db_row(status="skipped", extra_config={"limit": 5}, metrics={})
        [skip] = parse(make_db(tmp_path / "orchestrator.sqlite", [row]))
        assert isinstance(skip, SkipRecord)
        assert skip.provenance["signature_check"] == "mismatch"

    def test_host_paths_are_kept_as_the_source_states_them(self, tmp_path: Path) -> None:
        """The source's paths are its facts (its logs and results on its host): an export
        of the run writes them back, so the record keeps them whole."""
        metrics = {
            "stale_result_path": HOST + "/output/old.json",
            "note": "see /Users/me/work/trace.txt, via http://127.0.0.1:8001/v1 and a/b",
        }
        row = db_row(metrics=metrics, error=f"failed reading {HOST}/stderr.log")
        header = only_run(make_db(tmp_path / "orchestrator.sqlite", [row])).header
        assert header.metrics["stale_result_path"] == HOST + "/output/old.json"
        assert header.metrics["note"] == metrics["note"]
        assert header.error == f"failed reading {HOST}/stderr.log"
        columns = header.provenance["source_columns"]
        assert columns["stdout_path"] == row["stdout_path"] and columns["cwd"] == row["cwd"]


class TestMalformedInput:
    def test_truncated_json_names_the_line(self, tmp_path: Path) -> None:
        path = tmp_path / "bfcl__eliza.json"
        path.write_text(json.dumps(latest_row(db_row()), indent=2)[:-30])
        with pytest.raises(InputFormatError) as e:
            orchestrator.parse(path, path.read_bytes()).__next__()
        assert e.value.line is not None and "invalid JSON" in e.value.message

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"model": None}, "model"),
            ({"score": "high"}, "score"),
            ({"status": "exploded"}, "status"),
            ({"metrics": [1]}, "metrics"),
            ({"higher_is_better": "yes"}, "higher_is_better"),
        ],
    )
    def test_a_bad_row_field_is_named(
        self, tmp_path: Path, change: dict[str, Any], field: str
    ) -> None:
        doc = {**latest_row(db_row()), **change}
        with pytest.raises(InputFormatError) as e:
            parse(write(tmp_path / "bfcl__eliza.json", doc))
        assert e.value.field == field

    def test_a_metric_string_that_is_not_unicode_is_refused(self, tmp_path: Path) -> None:
        path = tmp_path / "bfcl__eliza.json"
        text = json.dumps(latest_row(db_row())).replace('"n": 10', '"n": "\\ud800"')
        path.write_text(text)
        with pytest.raises(InputFormatError) as e:
            parse(path)
        assert e.value.field == "metrics.n"

    def test_a_missing_key_is_named_in_viewer_and_comparison_runs(self, tmp_path: Path) -> None:
        doc = viewer([db_row(), db_row(run_id="run_2")])
        del doc["runs"][1]["provider"]
        with pytest.raises(InputFormatError) as e:
            parse(write(tmp_path / "viewer_data.json", doc))
        assert e.value.field == "runs[1].provider" and "run_2" in e.value.message
        cmp = comparison(db_row())
        cmp["a"]["runs"][0]["status"] = 3
        with pytest.raises(InputFormatError) as e:
            parse(write(tmp_path / "compare-cmp_1.json", cmp))
        assert e.value.field == "a.runs[0].status"

    def test_database_errors_name_the_column(self, tmp_path: Path) -> None:
        bad = make_db(tmp_path / "a.sqlite", [db_row(metrics_json="{not json")])
        with pytest.raises(InputFormatError) as e:
            parse(bad)
        assert e.value.field == "benchmark_runs.metrics_json"
        no_model = tmp_path / "b.sqlite"
        with closing(sqlite3.connect(no_model)) as conn:
            conn.execute("CREATE TABLE benchmark_runs (run_id TEXT, status TEXT)")
            conn.execute("INSERT INTO benchmark_runs VALUES ('r', 'failed')")
            conn.commit()
        with pytest.raises(InputFormatError) as e:
            parse(no_model)
        assert (e.value.field or "").startswith("benchmark_runs.")

    def test_a_database_without_benchmark_runs_or_with_a_broken_body_is_refused(
        self, tmp_path: Path
    ) -> None:
        path = make_db(tmp_path / "orchestrator.sqlite", [db_row()])
        data = path.read_bytes()
        broken = data[:100] + b"\xff" * (len(data) - 100)
        for body in (broken, b"SQLite format 3\x00" + b"\x00" * 50):
            with pytest.raises(InputFormatError):
                list(orchestrator.parse(path, body))


class TestTheWriteAheadLog:
    def test_rows_still_in_the_wal_are_read_and_the_wal_is_a_member(self, tmp_path: Path) -> None:
        path = make_db(tmp_path / "orchestrator.sqlite", [db_row()])
        writer = sqlite3.connect(path)
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("UPDATE benchmark_runs SET score = 0.25")
        writer.commit()
        try:
            assert orchestrator.members(path) == [path.with_name("orchestrator.sqlite-wal")]
            assert only_run(path).header.score == 0.25
        finally:
            writer.close()


class TestHyperliquidBench:
    def run_dir(self, tmp_path: Path, meta: dict[str, Any] | None) -> Path:
        folder = tmp_path / "runs" / "eliza-20260502-231604"
        domains = [
            {"name": "perp", "weight": 1.0, "uniqueSignatures": ["a", "b"], "uniqueCount": 2,
             "contribution": 2.0},
            {"name": "risk", "weight": 1.0, "uniqueSignatures": [], "uniqueCount": 0,
             "contribution": 0.0},
        ]  # fmt: skip
        score = {"finalScore": 2.5, "base": 2.0, "bonus": 0.5, "penalty": 0.0,
                 "perDomain": domains, "uniqueSignatures": ["a", "b"]}  # fmt: skip
        path = write(folder / "eval_score.json", score)
        if meta is not None:
            write(folder / "run_meta.json", meta)
        return path

    def test_a_demo_run_is_one_run_with_a_cell_per_domain(self, tmp_path: Path) -> None:
        path = self.run_dir(tmp_path, {"demoMode": True, "llmDryRun": False, "timestamp": "t"})
        assert orchestrator.detect(path, path.read_bytes())
        assert orchestrator.members(path) == [path.with_name("run_meta.json")]
        record = only_run(path)
        assert (record.header.agent, record.header.score) == ("eliza", 2.5)
        assert record.header.metrics["demo_mode"] is True
        assert [(c.key, c.outcome) for c in record.cells] == [
            ("perp", "passed"),
            ("risk", "failed"),
        ]
        assert "final_score_mismatch" not in record.header.provenance
        assert record.header.model == "unknown"  # the files never name the model
        given = {"model": "gpt-oss-120b", "provider": "cerebras"}
        [named] = orchestrator.parse(path, path.read_bytes(), given)
        assert isinstance(named, RunRecord) and named.header.model == "gpt-oss-120b"

    def test_without_run_meta_it_says_so_and_a_bad_meta_field_is_named(
        self, tmp_path: Path
    ) -> None:
        path = self.run_dir(tmp_path, None)
        assert only_run(path).header.provenance["run_meta_missing"] is True
        write(path.with_name("run_meta.json"), {"demoMode": "yes"})
        with pytest.raises(InputFormatError) as e:
            parse(path)
        assert e.value.field == "demoMode" and e.value.path.endswith("run_meta.json")


ROW = latest_row(db_row())
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5))
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


class TestFuzzing:
    @settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(
        drop=st.sets(st.sampled_from(sorted(ROW))),
        retype=st.dictionaries(st.sampled_from(sorted(ROW)), VALUES, max_size=3),
        kind=st.sampled_from(["row", "viewer", "comparison"]),
    )
    def test_mutated_documents_yield_records_or_a_format_error(
        self, tmp_path: Path, drop: set[str], retype: dict[str, Any], kind: str
    ) -> None:
        row = {k: v for k, v in ROW.items() if k not in drop} | retype
        doc: Any = row
        name = "bfcl__eliza.json"
        if kind == "viewer":
            doc, name = {"generated_at": "t", "runs": [row]}, "viewer_data.json"
        elif kind == "comparison":
            doc, name = {"comparison_id": "c", "a": {"runs": [row]}, "b": {"runs": []}}, "c.json"
        data = json.dumps(doc).encode()
        try:
            records = list(orchestrator.parse(tmp_path / name, data))
        except InputFormatError:
            return
        assert all(isinstance(r, RunRecord | SkipRecord) for r in records)

    @settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(data=st.data())
    def test_damaged_databases_yield_records_or_a_format_error(
        self, tmp_path: Path, data: st.DataObject
    ) -> None:
        path = tmp_path / "orchestrator.sqlite"
        if not path.exists():
            make_db(path, [db_row(), db_row(run_id="run_2", status="skipped")])
        body = bytearray(path.read_bytes())
        for _ in range(data.draw(st.integers(1, 8))):
            at = data.draw(st.integers(16, len(body) - 1))
            body[at] = data.draw(st.integers(0, 255))
        try:
            records = list(orchestrator.parse(path, bytes(body)))
        except InputFormatError:
            return
        assert all(isinstance(r, RunRecord | SkipRecord) for r in records)


class TestSkipsStatedTwice:
    def test_a_skip_in_the_database_and_a_row_file_is_recorded_once(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        row = db_row(
            status="incompatible", score=None, metrics={"reason": "harness_not_in_compatibility"}
        )
        make_db(tmp_path / "orchestrator.sqlite", [row])
        write(tmp_path / "latest" / "bfcl__eliza.json", latest_row(row))
        invoke("import", str(tmp_path / "orchestrator.sqlite"))
        invoke("import", str(tmp_path / "latest"))
        skips = json.loads(invoke("skips", "--json").stdout)
        assert len(skips) == 1 and skips[0]["reason"] == "incompatible"
