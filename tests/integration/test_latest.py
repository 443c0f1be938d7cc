"""The latest snapshot: what may be published per benchmark and agent, and why not."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Invoke
from tests.helpers import run_json, write_json

_day = itertools.count(1)


def add_run(invoke: Invoke, tmp_path: Path, **fields: Any) -> str:
    """Import one run, each started a day after the previous one; returns its run id."""
    day = next(_day)
    start = datetime(2026, 1, 1, 10, tzinfo=UTC) + timedelta(days=day)
    doc = run_json(
        run_key=f"r{day}",
        started_at=start.isoformat(),
        ended_at=(start + timedelta(hours=1)).isoformat(),
    )
    doc.update(fields)
    out = json.loads(
        invoke("import", str(write_json(tmp_path / f"r{day}.json", doc)), "--json").stdout
    )
    return str(out[0]["run_ids"][0])


def latest(invoke: Invoke, *flags: str) -> list[dict[str, Any]]:
    return list(json.loads(invoke("latest", *flags, "--json").stdout))


class TestSelection:
    def test_the_newest_good_run_is_latest(self, invoke: Invoke, tmp_path: Path) -> None:
        add_run(invoke, tmp_path, score=0.4)
        newest = add_run(invoke, tmp_path, score=0.6)
        [row] = latest(invoke)
        assert (row["run_id"], row["score"]) == (newest, 0.6)

    @pytest.mark.parametrize(
        ("fields", "reason"),
        [
            ({"status": "failed", "score": None}, "unsucceeded_run"),
            ({"status": "timed_out", "score": 0.9}, "unsucceeded_run"),
            ({"score": None}, "missing_score"),
            ({"metrics": {"sample": True}}, "sample_task_set"),
            ({"metrics": {"dataset_source": " Sample-Files\n"}}, "sample_task_set"),
            ({"metrics": {"use_sample_tasks": True}}, "sample_task_set"),
            ({"metrics": {"demoMode": True}}, "demo_mode"),
            (
                {"metrics": {"publishable_three_harness": False}},
                "benchmark_not_publishable_three_harness",
            ),
            ({"metrics": {"failed_scenarios": 2}}, "failed_scenarios"),
            ({"metrics": {"total_runs": 3, "successful_runs": 0}}, "zero_successful_runs"),
            (
                {
                    "score": 0.0,
                    "metrics": {
                        "avg_net_worth": 0,
                        "avg_items_sold": 0.0,
                        "avg_orders_placed": False,
                        "total_revenue": 0,
                    },
                },
                "no_activity_zero_score",
            ),
            ({"metrics": {"interrupted": True}}, "interrupted_run"),
            ({"agent": "smoke"}, "non_real_agent_label"),
        ],
    )
    def test_a_newer_unpublishable_run_never_displaces_a_good_one(
        self, invoke: Invoke, tmp_path: Path, fields: dict[str, Any], reason: str
    ) -> None:
        good = add_run(invoke, tmp_path, score=0.5)
        bad = add_run(invoke, tmp_path, **fields)
        assert [r["run_id"] for r in latest(invoke)] == [good]
        [held] = latest(invoke, "--quarantine")
        assert (held["run_id"], held["quarantine_reason"]) == (bad, reason)

    def test_falsy_flags_and_look_alike_names_are_fine(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        run = add_run(
            invoke,
            tmp_path,
            config={"sample": False, "mock": 0, "demo": None, "sampleCount": 5, "fixtures": []},
        )
        assert [r["run_id"] for r in latest(invoke)] == [run]

    @pytest.mark.parametrize(
        "metrics",
        [
            {"sample": 5, "use_sample_tasks": "yes", "demo_mode": 1, "interrupted": "true"},
            {"dataset_source": "samples", "publishable_three_harness": 0},
            {"failed_scenarios": 0, "successful_runs": 0},
            {"failed_scenarios": True, "total_runs": 0, "successful_runs": 0},
            {"total_runs": "3", "successful_runs": 0, "avg_net_worth": 0},
        ],
    )
    def test_only_the_orchestrators_exact_values_quarantine(
        self, invoke: Invoke, tmp_path: Path, metrics: dict[str, Any]
    ) -> None:
        """As its rebuild compares them: `is True`, a numeric count, a zero score."""
        run = add_run(invoke, tmp_path, score=0.0, metrics=metrics)
        assert [r["run_id"] for r in latest(invoke)] == [run]

    def test_a_no_activity_run_with_a_score_is_published(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        idle = {"avg_net_worth": 0, "avg_items_sold": 0, "avg_orders_placed": 0}
        run = add_run(invoke, tmp_path, score=0.2, metrics={**idle, "total_revenue": 0})
        assert [r["run_id"] for r in latest(invoke)] == [run]

    @pytest.mark.parametrize(
        "config",
        [{"mock": True}, {"demo_mode": "true"}, {"dry_run": True}, {"stub": True, "x": 1}],
    )
    def test_a_run_whose_config_says_it_was_not_real_is_quarantined(
        self, invoke: Invoke, tmp_path: Path, config: dict[str, Any]
    ) -> None:
        good = add_run(invoke, tmp_path, score=0.5)
        fake = add_run(invoke, tmp_path, score=0.9, config=config)
        assert [r["run_id"] for r in latest(invoke)] == [good]
        [held] = latest(invoke, "--quarantine")
        assert (held["run_id"], held["quarantine_reason"]) == (fake, "truthy_non_real_flag")

    def test_non_real_markers_are_published_and_left_to_the_publishability_gate(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        """The orchestrator's rebuild publishes a run whose config asks for sample tasks
        (a `compare` run's `sample: 5`, realm's `use_sample_tasks: true`) or whose text
        only looks non-real; its publishability gate flags it."""
        add_run(invoke, tmp_path, score=0.5)
        run = add_run(
            invoke,
            tmp_path,
            config={"sample": 5, "use_sample_tasks": True, "mock": False},
            metrics={"note": "Ran the bundled smoke suite"},
            error="mock runtime was used",
        )
        assert [r["run_id"] for r in latest(invoke)] == [run]
        assert latest(invoke, "--quarantine") == []
        verdict = json.loads(invoke("gate", "publishability", "--json", expect=1).stdout)
        # Every marker where it sits, as the orchestrator's gate names them.
        assert sorted((f["path"], f["reason"], f["value"]) for f in verdict["findings"]) == [
            ("$.error", "non_real_text_marker:mock run", '"mock runtime was used"'),
            ("$.extra_config.sample", "truthy_non_real_flag", "5"),
            ("$.extra_config.use_sample_tasks", "truthy_non_real_flag", "true"),
            (
                "$.metrics.note",
                "non_real_text_marker:bundled smoke",
                '"Ran the bundled smoke suite"',
            ),
        ]

    def test_an_invalidated_latest_falls_back_to_the_previous_good_run(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        older = add_run(invoke, tmp_path, score=0.4)
        newer = add_run(invoke, tmp_path, score=0.6)
        invoke("invalidate", newer, "--reason", "leak")
        assert [r["run_id"] for r in latest(invoke)] == [older]
        [held] = latest(invoke, "--quarantine")
        assert (held["run_id"], held["quarantine_reason"]) == (newer, "invalidated_run")
        invoke("reinstate", newer, "--reason", "no leak")
        assert [r["run_id"] for r in latest(invoke)] == [newer]

    def test_a_corrected_score_shows_in_latest(self, invoke: Invoke, tmp_path: Path) -> None:
        run = add_run(invoke, tmp_path, score=0.4)
        invoke("correct-score", run, "--score", "0.35", "--reason", "grader fix")
        assert latest(invoke)[0]["score"] == 0.35

    def test_synthetic_calibration_agents_go_to_baselines(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        add_run(invoke, tmp_path, agent="perfect_v1", score=1.0)
        real = add_run(invoke, tmp_path, score=0.7)
        assert [r["agent"] for r in latest(invoke)] == ["eliza"]
        assert [r["run_id"] for r in latest(invoke)] == [real]
        [baseline] = latest(invoke, "--baselines")
        assert (baseline["agent"], baseline["score"]) == ("perfect_v1", 1.0)

    def test_only_quarantined_runs_leave_latest_empty(self, invoke: Invoke, tmp_path: Path) -> None:
        add_run(invoke, tmp_path, status="failed", score=None)
        assert latest(invoke) == []
        assert len(latest(invoke, "--quarantine")) == 1


class TestHighScores:
    def test_delta_is_computed_when_read_in_the_scores_direction(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        add_run(invoke, tmp_path, score=0.8, unit="accuracy")
        add_run(
            invoke, tmp_path, benchmark="latency", score=120.0, unit="ms", higher_is_better=False
        )
        invoke(
            "high-score", "set", "bfcl", "--label", "gpt-5", "--value", "0.9", "--unit", "accuracy"
        )
        invoke("high-score", "set", "latency", "--label", "fast", "--value", "100", "--unit", "ms")
        rows = {r["benchmark"]: r for r in latest(invoke)}
        assert rows["bfcl"]["delta_to_high_score"] == pytest.approx(-0.1)
        assert rows["latency"]["delta_to_high_score"] == pytest.approx(-20.0)
        invoke(
            "high-score", "set", "bfcl", "--label", "older", "--value", "0.7", "--unit", "accuracy"
        )
        rows = {r["benchmark"]: r for r in latest(invoke)}
        assert rows["bfcl"]["delta_to_high_score"] == pytest.approx(0.1)
        assert rows["bfcl"]["high_score_label"] == "older"

    def test_a_percent_reference_is_rescaled_and_other_units_give_no_delta(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        add_run(invoke, tmp_path, score=0.5, unit="resolved_rate")
        invoke("high-score", "set", "bfcl", "--label", "x", "--value", "60", "--unit", "%")
        assert latest(invoke)[0]["delta_to_high_score"] == pytest.approx(-0.1)
        invoke("high-score", "set", "bfcl", "--label", "x", "--value", "60", "--unit", "tokens")
        assert latest(invoke)[0]["delta_to_high_score"] is None

    def test_setting_the_same_reference_twice_appends_nothing(self, invoke: Invoke) -> None:
        args = ("high-score", "set", "bfcl", "--label", "gpt-5", "--value", "0.9")
        invoke(*args)
        before = len(json.loads(invoke("events", "--json").stdout))
        assert "(unchanged)" in invoke(*args).stdout
        assert len(json.loads(invoke("events", "--json").stdout)) == before


class TestMatrix:
    def test_cells_show_scores_or_why_not(self, invoke: Invoke, tmp_path: Path) -> None:
        add_run(invoke, tmp_path, score=0.7)
        add_run(invoke, tmp_path, agent="hermes", status="failed", score=None)
        add_run(invoke, tmp_path, benchmark="gaia", score=0.3)
        both = ("--required-agents", "eliza,hermes")
        contract = json.loads(invoke("matrix", *both, "--json").stdout)
        cells = contract["benchmarks"]["bfcl"]["cells"]
        assert cells["eliza"]["state"] == "succeeded" and cells["eliza"]["score"] == 0.7
        assert cells["hermes"]["state"] == "failed"
        assert contract["benchmarks"]["gaia"]["cells"]["hermes"]["state"] == "missing"
        assert contract["status"] == "incomplete"
        assert contract["summary"]["missing_required_real_cells"] == 1
        table = invoke("matrix", *both).stdout
        assert "bfcl" in table and "0.7" in table and "failed" in table

    def test_without_required_agents_a_benchmark_lists_only_the_agents_that_ran_it(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        add_run(invoke, tmp_path, score=0.7)
        add_run(invoke, tmp_path, agent="hermes", status="failed", score=None)
        add_run(invoke, tmp_path, benchmark="gaia", score=0.3)
        contract = json.loads(invoke("matrix", "--json").stdout)
        assert list(contract["benchmarks"]["bfcl"]["cells"]) == ["eliza", "hermes"]
        gaia = contract["benchmarks"]["gaia"]
        assert list(gaia["cells"]) == ["eliza"]  # no hermes cell: it never ran gaia
        assert (gaia["complete"], gaia["required_agents_stated"]) == (None, False)
        assert not any(c["required"] for c in gaia["cells"].values())
        summary = contract["summary"]
        assert (summary["missing_required_real_cells"], summary["required_real_cells"]) == (0, 0)
        assert contract["status"] == "complete"  # nothing asked is missing
        table = invoke("matrix").stdout.splitlines()
        assert table[0].split() == ["benchmark", "eliza", "hermes", "complete"]
        assert table[2].split() == ["bfcl", "0.7", "failed", "-"]
        wide = json.loads(invoke("matrix", "--harnesses", "eliza,hermes", "--json").stdout)
        assert wide["benchmarks"]["gaia"]["cells"]["hermes"]["state"] == "missing"
