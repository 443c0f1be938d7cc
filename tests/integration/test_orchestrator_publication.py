"""What an imported orchestrator store publishes: the rows its own rebuild would pick for
latest/, quarantine/ and baselines/ (ORCHESTRATOR.md §4), and the rules its
latest/index.json declares. Built from small orchestrator databases and files."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.formats.orchestrator_facts import derive_signature
from benchledger.domain.signatures import comparison_signature
from tests.conftest import Invoke
from tests.integration.test_orchestrator_groups import group_row, with_groups
from tests.unit.test_format_orchestrator import db_row, make_db, write

GROUP = "rg_20260512T101455Z_9b1e7a40"
STALE = "Recovered stale running run from interrupted orchestrator process"


def row(agent: str, day: int, benchmark: str = "bfcl", **changes: Any) -> dict[str, Any]:
    """A benchmark_runs row of `agent` started on May `day`, signed as the orchestrator
    signs it (its config: the agent's labels plus `limit`, 10 unless given)."""
    limit = changes.pop("limit", 10)
    extra = changes.pop("extra_config", {"agent": agent, "harness": agent, "limit": limit})
    prefix = changes.pop("prefix", "run")
    run_id = changes.pop("run_id", f"{prefix}_{benchmark}_202605{day:02d}T101500Z_1_{day:08x}")
    directory = changes.pop("benchmark_directory", benchmark)
    started = f"2026-05-{day:02d}T10:15:00.120000+00:00"
    fields: dict[str, Any] = {
        "run_id": run_id,
        "benchmark_id": benchmark,
        "benchmark_directory": directory,
        "agent": agent,
        "extra_config": extra,
        "signature": derive_signature(
            benchmark, directory, agent, "cerebras", "gpt-oss-120b", extra
        ),
        "started_at": started,
        "created_at": started,
        "ended_at": f"2026-05-{day:02d}T10:21:41.800000+00:00",
    }
    fields.update(changes)
    return db_row(**fields)


def store(tmp_path: Path, rows: list[dict[str, Any]], name: str = "o") -> Path:
    return make_db(tmp_path / name / "orchestrator.sqlite", rows)


def cell(required: bool, **fields: Any) -> dict[str, Any]:
    return {"required": required, "state": "missing", "status": "missing", **fields}


def contract(benchmarks: dict[str, Any]) -> dict[str, Any]:
    return {"status": "incomplete", "harnesses": ["eliza", "hermes", "openclaw"],
            "summary": {}, "benchmarks": benchmarks}  # fmt: skip


TRIO = {
    "compatible_harnesses": ["eliza", "hermes", "openclaw"],
    "cells": {h: cell(True) for h in ("eliza", "hermes", "openclaw")},
}
NONE_COMPATIBLE = {
    "compatible_harnesses": [],
    "cells": {
        h: cell(False, state="unsupported", status="unsupported",
                reason=f"harness '{h}' not in adapter compatibility (none)")
        for h in ("eliza", "hermes", "openclaw")
    },
}  # fmt: skip
GATED = {
    "compatible_harnesses": [],
    "cells": {
        h: cell(False, state="unsupported", status="unsupported", reason="needs a live key",
                required_env=["HL_PRIVATE_KEY"])
        for h in ("eliza", "hermes", "openclaw")
    },
}  # fmt: skip


def index(tmp_path: Path, benchmarks: dict[str, Any], folder: str = "o") -> Path:
    doc = {"benchmark_comparability": {}, "latest": {}, "latest_by_signature": {},
           "latest_by_comparison_signature": {}, "matrix_contract": contract(benchmarks),
           "updated_at": "2026-05-20T00:00:00+00:00"}  # fmt: skip
    return write(tmp_path / folder / "latest" / "index.json", doc)


def by_key(invoke: Invoke) -> dict[str, str]:
    """benchledger run id -> the orchestrator's run_id."""
    return {r["run_id"]: r["run_key"] for r in json.loads(invoke("runs", "--json").stdout)}


def picks(invoke: Invoke, *flags: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(benchmark, agent) -> row of `latest` (or --quarantine / --baselines), its run_id
    the orchestrator's."""
    keys = by_key(invoke)
    rows = json.loads(invoke("latest", *flags, "--json").stdout)
    return {
        (r["benchmark"], r["agent"]): {**r, "run_id": keys.get(r["run_id"], r["run_id"])}
        for r in rows
    }


def picked(invoke: Invoke, *flags: str) -> dict[str, str]:
    return {f"{b}::{a}": r["run_id"] for (b, a), r in picks(invoke, *flags).items()}


def rule_events(invoke: Invoke) -> list[str]:
    """The events that register a benchmark or declare its rules, by type."""
    kinds = ("BenchmarkRegistered", "RequiredAgentsDeclared")
    return [e["type"] for e in json.loads(invoke("events", "--json").stdout) if e["type"] in kinds]


def stored(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM stored_events").fetchone()[0])


class TestQuarantineReasons:
    def test_a_stale_recovered_run_is_unsucceeded_not_interrupted(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        """The orchestrator's `interrupted_run` is a success whose metrics say so; a row its
        stale sweep ended is a failed run (benchledger's `recovered`)."""
        rows = [
            row("eliza", 1),
            row("eliza", 2, status="failed", score=None, error=STALE,
                metrics={"reason": "orchestrator_interrupted"}),
            row("hermes", 3, metrics={"interrupted": True, "n": 10, "return_code": 0}),
        ]  # fmt: skip
        invoke("import", str(store(tmp_path, rows)))
        held = picks(invoke, "--quarantine")
        assert (held["bfcl", "eliza"]["status"], held["bfcl", "eliza"]["quarantine_reason"]) == (
            "recovered",
            "unsucceeded_run",
        )
        assert held["bfcl", "hermes"]["quarantine_reason"] == "interrupted_run"
        assert picked(invoke) == {"bfcl::eliza": rows[0]["run_id"]}

    def test_a_compare_run_sampling_five_examples_is_published(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        """`compare --max-examples 5` puts `sample: 5` in the config: a sample size, not the
        orchestrator's sample-task flag (`metrics.sample is True`)."""
        extra = {"harness": "compare", "limit": 5, "max_examples": 5, "sample": 5}
        compare = row("compare", 1, extra_config=extra, provider="vllm", model="qwen3")
        invoke("import", str(store(tmp_path, [compare])))
        assert picked(invoke) == {"bfcl::compare": compare["run_id"]}
        assert picks(invoke, "--quarantine") == {}


class TestRowsThatNeverRan:
    def test_missing_env_incompatible_and_paused_rows_are_quarantined_skipped_ones_not(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        missing = row(
            "hermes",
            2,
            prefix="missing_env",
            status="failed",
            score=None,
            provider="anthropic",
            metrics={"missing_env": ["ANTHROPIC_API_KEY"]},
            error="Missing required env vars: ANTHROPIC_API_KEY",
        )
        paused = row("openclaw", 3, status="paused", score=None, metrics={})
        incompatible = row(
            "eliza",
            4,
            benchmark="gauntlet",
            prefix="incompat",
            status="incompatible",
            score=None,
            metrics={
                "reason": "harness_not_in_compatibility",
                "harness": "eliza",
                "supported_harnesses": [],
            },
        )
        skipped = row(
            "eliza",
            5,
            prefix="skip",
            status="skipped",
            score=None,
            metrics={"reason": "already_succeeded"},
        )
        rows = [row("eliza", 1), missing, paused, incompatible, skipped]  # fmt: skip
        invoke("import", str(store(tmp_path, rows)))
        held = picks(invoke, "--quarantine")
        assert {k: (r["run_id"], r["quarantine_reason"]) for k, r in held.items()} == {
            ("bfcl", "hermes"): (missing["run_id"], "unsucceeded_run"),
            ("bfcl", "openclaw"): (paused["run_id"], "unsucceeded_run"),
            ("gauntlet", "eliza"): (incompatible["run_id"], "incompatible_harness"),
        }
        assert picked(invoke) == {"bfcl::eliza": rows[0]["run_id"]}
        gauntlet = held["gauntlet", "eliza"]
        config = json.loads(incompatible["extra_config_json"])
        assert gauntlet["config"] == config
        assert gauntlet["comparison_signature"] == comparison_signature(
            "gauntlet", "cerebras", "gpt-oss-120b", config, directory="gauntlet", agent="eliza"
        )
        assert gauntlet["updated_at"] == incompatible["ended_at"]

    def test_a_skip_sits_in_the_run_group_its_source_decided_it_in(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        missing = row(
            "hermes",
            2,
            prefix="missing_env",
            status="failed",
            score=None,
            metrics={"missing_env": ["KEY"]},
            run_group_id=GROUP,
        )
        ran = row("eliza", 1, run_group_id=GROUP)  # fmt: skip
        invoke("import", str(with_groups(store(tmp_path, [ran, missing]), [group_row()])))
        with sqlite3.connect(db) as conn:
            [group] = conn.execute("SELECT run_group_id FROM run_groups WHERE label = ?", (GROUP,))
        held = picks(invoke, "--quarantine")["bfcl", "hermes"]
        assert held["run_group_id"] == group[0] == picks(invoke)["bfcl", "eliza"]["run_group_id"]


class TestBaselines:
    def test_the_newest_calibration_row_of_any_status_is_the_baseline(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        """As the orchestrator's rebuild: no quarantine for synthetic harnesses, so an
        incompatible (uninterpretable) or failed row is its key's baseline when newest."""
        extra = {"agent": "random_v1", "harness": "random_v1", "limit": 2}
        rows = [
            row("random_v1", 1, benchmark="mmlu", score=0.25, metrics={"n": 4}),
            row("random_v1", 2, benchmark="mmlu", prefix="random_v1", status="incompatible",
                score=None, extra_config=extra, benchmark_directory="standard",
                metrics={"reason": "synthetic_harness_uninterpretable"},
                error="random baseline uninterpretable for this benchmark"),
            row("perfect_v1", 3, score=1.0),
            row("perfect_v1", 4, status="failed", score=None),
        ]  # fmt: skip
        invoke("import", str(store(tmp_path, rows)))
        baselines = picks(invoke, "--baselines")
        assert {k: r["run_id"] for k, r in baselines.items()} == {
            ("mmlu", "random_v1"): rows[1]["run_id"],
            ("bfcl", "perfect_v1"): rows[3]["run_id"],
        }
        mmlu = baselines["mmlu", "random_v1"]
        assert (mmlu["status"], mmlu["config"]) == ("incompatible", extra)
        assert mmlu["comparison_signature"] == comparison_signature(
            "mmlu", "cerebras", "gpt-oss-120b", extra, directory="standard", agent="random_v1"
        )
        assert picks(invoke) == {} and picks(invoke, "--quarantine") == {}
        out = tmp_path / "export"
        invoke("export-latest", str(out))
        exported = json.loads((out / "baselines" / "mmlu__random_v1.json").read_text())
        assert (exported["synthetic"], exported["extra_config"]) == (True, extra)
        assert exported["run_id"] == rows[1]["run_id"]

    def test_an_invalidated_calibration_run_is_no_baseline(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        rows = [row("perfect_v1", 1, score=1.0), row("perfect_v1", 2, score=0.9)]
        invoke("import", str(store(tmp_path, rows)))
        newer = next(k for k, v in by_key(invoke).items() if v == rows[1]["run_id"])
        invoke("invalidate", newer, "--reason", "leak")
        assert picked(invoke, "--baselines") == {"bfcl::perfect_v1": rows[0]["run_id"]}


class TestTheRunGroupsOfRunsWithTrajectories:
    def test_a_run_with_trajectory_rows_is_recorded_in_its_source_group(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        path = with_groups(store(tmp_path, [row("eliza", 1, run_group_id=GROUP)]), [group_row()])
        with closing(sqlite3.connect(path)) as conn, conn:  # closed: no WAL left to vanish
            conn.execute(
                "CREATE TABLE benchmark_run_trajectories (run_id TEXT NOT NULL, "
                "trajectory_file TEXT NOT NULL, turn_index INTEGER NOT NULL, "
                "prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL "
                "DEFAULT 0, total_tokens INTEGER NOT NULL DEFAULT 0, cached_tokens INTEGER NOT "
                "NULL DEFAULT 0, cache_creation_tokens INTEGER NOT NULL DEFAULT 0, latency_ms "
                "REAL, prompt_chars INTEGER NOT NULL DEFAULT 0)"
            )
            conn.execute(
                "INSERT INTO benchmark_run_trajectories (run_id, trajectory_file, turn_index, "
                "prompt_tokens) VALUES (?, 'trajectory.jsonl', 0, 12)",
                (row("eliza", 1)["run_id"],),
            )
        invoke("import", str(path))
        [run] = json.loads(invoke("runs", "--json").stdout)
        with sqlite3.connect(db) as conn:
            [label] = conn.execute(
                "SELECT label FROM run_groups WHERE run_group_id = ?", (run["run_group_id"],)
            )
            turns = conn.execute("SELECT count(*) FROM turns").fetchone()[0]
        assert (label[0], turns) == (GROUP, 1)


class TestTheIndexDeclaresRules:
    def cohort(self, tmp_path: Path) -> list[dict[str, Any]]:
        """A full cohort at limit 10, then eliza again at limit 3: mixed newest rows."""
        return [
            row("eliza", 1),
            row("hermes", 2),
            row("openclaw", 3),
            row("eliza", 4, limit=3),
        ]

    def test_importing_latest_declares_the_contract_and_promotes_the_cohort(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        rows = self.cohort(tmp_path)
        invoke("import", str(store(tmp_path, rows)))
        # No contract yet: the orchestrator's default harnesses already make the cohort.
        assert picked(invoke)["bfcl::eliza"] == rows[0]["run_id"]
        index(tmp_path, {"bfcl": TRIO, "gauntlet": NONE_COMPATIBLE, "hyperliquid_bench": GATED})
        reports = json.loads(invoke("import", str(tmp_path / "o" / "latest"), "--json").stdout)
        [report] = [r for r in reports if r["path"].endswith("index.json")]
        assert (report["state"], report["format"]) == ("imported", "orchestrator")
        assert picked(invoke) == {
            "bfcl::eliza": rows[0]["run_id"],
            "bfcl::hermes": rows[1]["run_id"],
            "bfcl::openclaw": rows[2]["run_id"],
        }
        matrix = json.loads(invoke("matrix", "--json").stdout)
        assert sorted(matrix["benchmarks"]) == ["bfcl", "gauntlet", "hyperliquid_bench"]
        assert matrix["benchmarks"]["bfcl"]["complete"] is True
        gauntlet = matrix["benchmarks"]["gauntlet"]
        assert gauntlet["compatible_harnesses"] == []
        assert gauntlet["cells"]["eliza"]["reason"] == (
            "harness 'eliza' not in adapter compatibility (none)"
        )
        gated = matrix["benchmarks"]["hyperliquid_bench"]["cells"]["hermes"]
        assert (gated["state"], gated["required_env"]) == ("unsupported", ["HL_PRIVATE_KEY"])
        assert "required_env" not in gauntlet["cells"]["eliza"]
        before = stored(db)
        invoke("import", str(tmp_path / "o" / "latest"))
        again = json.loads(invoke("import", str(tmp_path / "o" / "latest" / "index.json"),
                                  "--json").stdout)  # fmt: skip
        assert [r["state"] for r in again] == ["unchanged"]
        assert stored(db) == before

    def test_the_same_contract_from_another_place_appends_nothing(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        invoke("import", str(index(tmp_path, {"bfcl": TRIO}, folder="a")))
        before = stored(db)
        [report] = json.loads(
            invoke("import", str(index(tmp_path, {"bfcl": TRIO}, folder="b")), "--json").stdout
        )
        assert report["state"] == "unchanged" and stored(db) == before

    def test_an_index_without_a_contract_or_discovery_declares_nothing(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        old = write(tmp_path / "e1" / "latest" / "index.json", {"latest": {}, "updated_at": ""})
        [report] = json.loads(invoke("import", str(old), "--json", expect=1).stdout)
        assert report["state"] == "ignored" and "neither runs nor rules" in report["message"]
        unknown = write(
            tmp_path / "u" / "latest" / "index.json",
            {"latest": {}, "matrix_contract": {"status": "unknown", "benchmarks": {},
                                               "reason": "adapter discovery unavailable"}},
        )  # fmt: skip
        [report] = json.loads(invoke("import", str(unknown), "--json").stdout)
        assert report["state"] == "unchanged"
        assert rule_events(invoke) == []

    @pytest.mark.parametrize(
        ("entry", "field"),
        [
            ({"cells": {"eliza": {"required": "yes"}}}, "benchmarks.bfcl.cells.eliza.required"),
            ({"cells": []}, "benchmarks.bfcl.cells"),
            ({"compatible_harnesses": "eliza", "cells": {}}, "bfcl.compatible_harnesses"),
            ({"cells": {"eliza": {"required": False, "reason": 3}}}, "cells.eliza.reason"),
        ],
    )
    def test_a_malformed_contract_fails_naming_the_field_and_declares_nothing(
        self, invoke: Invoke, db: Path, tmp_path: Path, entry: dict[str, Any], field: str
    ) -> None:
        path = index(tmp_path, {"gauntlet": NONE_COMPATIBLE, "bfcl": entry})
        [report] = json.loads(invoke("import", str(path), "--json", expect=1).stdout)
        assert report["state"] == "failed"
        assert "index.json" in report["message"] and field in report["message"]
        assert rule_events(invoke) == []

    def test_a_truncated_index_fails_naming_the_file(self, invoke: Invoke, tmp_path: Path) -> None:
        path = index(tmp_path, {"bfcl": TRIO})
        path.write_text(path.read_text()[:200])
        [report] = json.loads(invoke("import", str(path), "--json", expect=1).stdout)
        assert report["state"] == "failed" and "index.json" in report["message"]
        assert rule_events(invoke) == []


class TestTheDatabaseAloneRequiresTheOrchestratorsDefaults:
    """Where no contract states a benchmark's rule, the orchestrator's latest rebuild
    requires its default harnesses (eliza, hermes, openclaw) of a benchmark whose adapter
    it does not know; an incompatible row's supported harnesses still narrow them."""

    def test_a_database_without_its_index_promotes_the_complete_cohort(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        rows = [row("eliza", 1), row("hermes", 2), row("openclaw", 3), row("eliza", 4, limit=3)]
        invoke("import", str(store(tmp_path, rows)))
        assert picked(invoke) == {
            "bfcl::eliza": rows[0]["run_id"],
            "bfcl::hermes": rows[1]["run_id"],
            "bfcl::openclaw": rows[2]["run_id"],
        }
        rules = json.loads(invoke("matrix", "--json").stdout)["benchmarks"]["bfcl"]
        assert rules["complete"] is True

    def test_the_default_is_no_fact_of_the_ledger(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        invoke("import", str(store(tmp_path, [row("eliza", 1), row("hermes", 2)])))
        assert "RequiredAgentsDeclared" not in rule_events(invoke)
        with sqlite3.connect(db) as conn:
            [(required, declared)] = conn.execute(
                "SELECT required, declared FROM required_agents WHERE benchmark = 'bfcl'"
            ).fetchall()
        assert (json.loads(required), declared) == (["eliza", "hermes", "openclaw"], 0)

    def test_results_of_other_harnesses_require_no_agent(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        native = tmp_path / "run.json"
        native.write_text(
            json.dumps(
                {"schema": "benchledger/run@1", "run_key": "n1", "benchmark": "bfcl",
                 "agent": "eliza", "model": "m", "status": "succeeded", "score": 0.5}
            )
        )  # fmt: skip
        invoke("import", str(native))
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM required_agents").fetchone()[0] == 0
