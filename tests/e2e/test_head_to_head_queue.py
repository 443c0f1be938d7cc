"""The code-agent matrix workflow around `head-to-head`: trajectory review briefs in the
improvement queue, re-reporting only a previous report's queue (`--rerun-queue`,
`--queue-priorities`, `--queue-statuses`), the previous-summary comparison of
`--compare-summary`, and deferred coverage. Runs are recorded with cells and trajectory
turns as `tests/e2e/test_code_agent_latest.py` records them."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Invoke
from tests.e2e.test_code_agent_latest import Record, record_run

# Per turn: prompt, completion, cached; latencies 900, 910, 920, ... ms.
CHEAP = [(1000, 200, 600)] * 3
COSTLY = [(1000, 250, 400)] * 4


@pytest.fixture
def record(db: Path) -> Record:
    minutes = iter(range(60))

    def add(benchmark: str, agent: str, right: int, turns: Any, **kw: Any) -> None:
        record_run(db, benchmark, agent, right, turns, minute=next(minutes), **kw)

    return add


def h2h(invoke: Invoke, *args: str, expect: int = 0) -> dict[str, Any]:
    result = invoke(
        "head-to-head", "--target", "eliza", "--baseline", "opencode", *args, "--json",
        expect=expect,
    )  # fmt: skip
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def benchmarks(data: dict[str, Any]) -> list[str]:
    return [row["benchmark"] for row in data["report_rows"]]


@pytest.fixture
def matrix(record: Record) -> None:
    """alpha: inferior and costlier (p0); beta: the baseline never ran (p1); gamma:
    superior."""
    record("alpha", "eliza", 100, COSTLY)
    record("alpha", "opencode", 180, CHEAP)
    record("beta", "eliza", 150, CHEAP)
    record("gamma", "eliza", 180, CHEAP)
    record("gamma", "opencode", 100, CHEAP)


@pytest.fixture
def previous(invoke: Invoke, tmp_path: Path, matrix: None) -> Path:
    """A first full report's summary.json."""
    out = tmp_path / "first"
    invoke(
        "head-to-head", "--target", "eliza", "--baseline", "opencode", "--out", str(out),
        "--enforce-comparable", "--enforce-efficiency", expect=3,
    )  # fmt: skip
    return out / "summary.json"


@pytest.mark.usefixtures("matrix")
class TestTrajectoryReviewBriefs:
    def test_each_side_has_a_brief_from_its_turns(self, invoke: Invoke) -> None:
        alpha = h2h(invoke)["improvement_queue"][0]
        target, baseline = alpha["target_trajectory_review"], alpha["baseline_trajectory_review"]
        assert target == {
            "run_id": target["run_id"],
            "trajectory_files": 1,
            "turns": 4,
            "input_tokens": 4000,
            "output_tokens": 1000,
            "total_tokens": 5000,
            "cached_tokens": 1600,
            "cached_token_percent": 40.0,
            "mean_latency_ms": 915.0,
            "p95_latency_ms": 930.0,
            "repeated_prefix_count": None,
            "top_repeated_prefixes": [],
            "review_notes": [],
        }
        assert (baseline["turns"], baseline["cached_token_percent"]) == (3, 60.0)
        assert (baseline["mean_latency_ms"], baseline["p95_latency_ms"]) == (910.0, 920.0)
        assert alpha["trajectory_delta"] == {
            "turn_delta": 1.0,
            "input_token_delta": 1000.0,
            "output_token_delta": 400.0,
            "total_token_delta": 1400.0,
            "cached_token_percent_delta": -20.0,
            "repeated_prefix_delta": None,
            "mean_latency_ms_delta": 5.0,
            "p95_latency_ms_delta": 10.0,
        }

    def test_repeated_prefixes_are_the_ones_the_runs_source_measured(
        self, invoke: Invoke, record: Record
    ) -> None:
        """The turns keep no prompt text: the brief's repeated prefixes are what the run's
        source states in its trajectory summary (as the orchestrator's rows do)."""
        prefix = "You are a careful coding agent. " * 8
        summary = {"trajectory_summary": {"turns": 4, "repeated_prefixes": [[prefix, 3]]}}
        record("delta", "eliza", 100, COSTLY, metrics=summary)
        record("delta", "opencode", 180, CHEAP)
        [entry] = [e for e in h2h(invoke)["improvement_queue"] if e["benchmark"] == "delta"]
        target = entry["target_trajectory_review"]
        assert target["repeated_prefix_count"] == 1
        assert target["top_repeated_prefixes"] == [{"count": 3, "snippet": prefix[:160]}]
        assert "repeated prompt prefixes detected" in target["review_notes"]
        assert entry["baseline_trajectory_review"]["repeated_prefix_count"] is None

    def test_the_diagnosis_names_the_loss_the_failure_classes_and_the_extra_cost(
        self, invoke: Invoke
    ) -> None:
        alpha = h2h(invoke)["improvement_queue"][0]
        assert (alpha["benchmark"], alpha["status"], alpha["priority"]) == (
            "alpha",
            "inferior",
            "p0",
        )
        assert alpha["diagnosis"] == [
            "target accuracy is below baseline",
            "target failure class: tests_failed",
            "baseline failure class: tests_failed",
            "target used more total tokens than baseline",
            "target made more LLM calls than baseline",
            "target cached-token percentage is below baseline",
        ]
        assert alpha["suggested_focus"] == [
            "inspect the target's failed tasks and its task strategy",
            "fix harness or runtime failures before tuning prompts",
            "reduce the trajectory's token load against the baseline",
            "reduce extra LLM calls and tokens",
            "make prompts more cacheable",
        ]
        assert (alpha["total_token_delta"], alpha["llm_call_delta"]) == (1400, 1)
        assert alpha["cached_token_percent_delta"] == pytest.approx(-20.0)
        assert (alpha["target_failure_class"], alpha["baseline_failure_class"]) == (
            "tests_failed",
            "tests_failed",
        )

    def test_a_side_without_a_run_has_an_empty_brief(self, invoke: Invoke) -> None:
        beta = h2h(invoke)["improvement_queue"][1]
        assert (beta["benchmark"], beta["status"], beta["priority"]) == ("beta", "missing", "p1")
        assert beta["baseline_trajectory_review"]["turns"] == 0
        assert beta["baseline_trajectory_review"]["review_notes"] == [
            "no run recorded",
            "no cached-token telemetry found",
        ]
        assert "baseline trajectory telemetry is missing" in beta["diagnosis"]
        assert beta["trajectory_delta"]["cached_token_percent_delta"] is None

    def test_the_rerun_template_keeps_the_targeted_options_and_no_coverage(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        latest = tmp_path / "latest dir"
        data = h2h(
            invoke, "--tolerance", "0.1", "--enforce-comparable", "--enforce-coverage",
            "--enforce-required-stats", "--publish-latest-dir", str(latest), expect=3,
        )  # fmt: skip
        alpha = data["improvement_queue"][0]
        assert alpha["rerun_command_template"] == (
            "benchledger head-to-head --target eliza --baseline opencode "
            "--rerun-queue {summary_json} --queue-priorities p0 --queue-statuses inferior "
            "--compare-summary {summary_json} --tolerance 0.1 "
            f"--publish-latest-dir '{latest}' --enforce-comparable --enforce-required-stats"
        )
        assert alpha["rerun_commands"][0].startswith("benchledger run --benchmarks alpha")

    def test_summary_md_shows_the_diagnosis_briefs_and_template(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        h2h(invoke, "--out", str(tmp_path / "r"))
        text = (tmp_path / "r" / "summary.md").read_text()
        assert "- **alpha** (inferior, p0): " in text
        assert (
            "  - target trajectory: 4 turns, 4000 in / 1000 out tokens, cached 40.00%, "
            "latency mean 915.0 ms, p95 930.0 ms\n"
        ) in text
        assert "  - diagnosis: target accuracy is below baseline; target failure class" in text
        assert "  - rerun template: `benchledger head-to-head --target eliza" in text


class TestRerunQueue:
    def test_only_the_queued_benchmarks_of_the_chosen_priority_are_reported(
        self, invoke: Invoke, previous: Path
    ) -> None:
        data = h2h(invoke, "--rerun-queue", str(previous), "--queue-priorities", "p0")
        assert benchmarks(data) == ["alpha"]
        options = data["options"]
        assert (options["rerun_queue"], options["queue_priorities"]) == (True, ["p0"])
        assert benchmarks(h2h(invoke, "--rerun-queue", str(previous))) == ["alpha", "beta"]
        statuses = h2h(invoke, "--rerun-queue", str(previous), "--queue-statuses", "missing")
        assert benchmarks(statuses) == ["beta"]

    def test_the_entrys_own_template_re_reports_its_queue_against_it(
        self, invoke: Invoke, previous: Path, record: Record
    ) -> None:
        record("alpha", "eliza", 190, CHEAP)  # the rerun, recorded as `run` would
        template = json.loads(previous.read_text())["improvement_queue"][0][
            "rerun_command_template"
        ]
        words = shlex.split(template.replace("{summary_json}", str(previous)))
        assert words[:2] == ["benchledger", "head-to-head"]
        result = invoke(*words[1:], "--json", expect=0)
        data = json.loads(result.stdout)
        assert benchmarks(data) == ["alpha"]
        assert data["report_rows"][0]["comparison_status"] == "superior"
        # Benchmarks of either summary, as the orchestrator compares them.
        alpha, beta, gamma = data["previous_summary_comparison"]["comparisons"]
        assert (beta["trend"], gamma["current_status"]) == ("missing", None)
        assert (alpha["trend"], alpha["previous_status"], alpha["current_status"]) == (
            "improved",
            "inferior",
            "superior",
        )

    def test_an_orchestrator_summary_queue_is_read_by_its_field_names(
        self, invoke: Invoke, tmp_path: Path, matrix: None
    ) -> None:
        summary = tmp_path / "orchestrator-summary.json"
        queue = [
            {"benchmark": "gamma", "status": "missing", "priority": "p1"},
            {"benchmark": "alpha", "status": "inferior", "priority": "p0"},
        ]
        summary.write_text(json.dumps({"improvement_queue": queue}))
        assert benchmarks(h2h(invoke, "--rerun-queue", str(summary))) == ["gamma", "alpha"]
        chosen = h2h(invoke, "--rerun-queue", str(summary), "--queue-priorities", "p1")
        assert benchmarks(chosen) == ["gamma"]

    def test_a_queue_with_nothing_selected_is_a_preflight_failure(
        self, invoke: Invoke, previous: Path
    ) -> None:
        result = invoke(
            "head-to-head", "--target", "eliza", "--baseline", "opencode",
            "--rerun-queue", str(previous), "--queue-priorities", "p2", expect=2,
        )  # fmt: skip
        assert result.stderr == (
            "Error: nothing to rerun: no selected entry in the --rerun-queue improvement queue\n"
        )

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["--queue-priorities", "p0"], "--queue-priorities and --queue-statuses need"),
            (["--rerun-queue", "SUMMARY", "--benchmarks", "alpha"], "drop --benchmarks"),
        ],
    )
    def test_queue_options_out_of_place_are_usage_errors(
        self, invoke: Invoke, previous: Path, args: list[str], message: str
    ) -> None:
        args = [str(previous) if a == "SUMMARY" else a for a in args]
        result = invoke(
            "head-to-head", "--target", "eliza", "--baseline", "opencode", *args, expect=2
        )
        assert message in result.stderr


class TestPreviousSummaryComparison:
    def test_each_benchmark_has_its_trend_figures_and_status_change(
        self, invoke: Invoke, previous: Path, record: Record
    ) -> None:
        record("alpha", "eliza", 190, CHEAP)
        data = h2h(invoke, "--compare-summary", str(previous))
        section = data["previous_summary_comparison"]
        first = json.loads(previous.read_text())
        assert section["previous_report_id"] == first["report_id"]
        # The moment the report was made, which its id also states.
        moment = section["current_generated_at"][:19].replace("-", "").replace(":", "")
        assert moment == data["report_id"][4:19]
        assert section["trend_counts"] == {
            "improved": 1,
            "unchanged": 2,
            "regressed": 0,
            "missing": 0,
        }
        alpha, beta, _gamma = section["comparisons"]
        assert alpha == {
            "benchmark": "alpha",
            "trend": "improved",
            "previous_status": "inferior",
            "current_status": "superior",
            "previous_target_accuracy": 0.5,
            "current_target_accuracy": 0.95,
            "target_accuracy_delta": pytest.approx(0.45),
            "previous_accuracy_delta": pytest.approx(-0.4),
            "current_accuracy_delta": pytest.approx(0.05),
            "accuracy_delta_change": pytest.approx(0.45),
            "target_total_token_delta": 3600 - 5000,
            "previous_target_total_tokens": 5000,
            "current_target_total_tokens": 3600,
            "target_cached_token_percent_delta": pytest.approx(20.0),
            "previous_target_cached_token_percent": pytest.approx(40.0),
            "current_target_cached_token_percent": pytest.approx(60.0),
            "target_llm_call_delta": -1,
            "previous_target_llm_call_count": 4,
            "current_target_llm_call_count": 3,
            "status_changed": True,
        }
        assert (beta["trend"], beta["status_changed"]) == ("unchanged", False)

    def test_summary_md_has_the_delta_table(
        self, invoke: Invoke, previous: Path, record: Record, tmp_path: Path
    ) -> None:
        record("alpha", "eliza", 190, CHEAP)
        invoke(
            "head-to-head", "--target", "eliza", "--baseline", "opencode",
            "--compare-summary", str(previous), "--out", str(tmp_path / "second"),
        )  # fmt: skip
        text = (tmp_path / "second" / "summary.md").read_text()
        assert "## Previous Summary Comparison" in text
        assert "1 improved, 2 unchanged, 0 regressed, 0 missing." in text
        assert (
            "| alpha | improved | inferior → superior | 0.5000 → 0.9500 | +0.4500 | -1400 "
            "| +20.00 | -1 |"
        ) in text

    def test_an_orchestrator_summary_is_read_by_its_field_names(
        self, invoke: Invoke, tmp_path: Path, matrix: None
    ) -> None:
        comparisons = [
            {
                "benchmark": "gamma",
                "status": "comparable",
                "target_accuracy": 0.9,
                "target_total_tokens": 4000,
                "target_cached_token_percent": 50.0,
                "target_llm_call_count": 5,
            },
            {"benchmark": "retired", "status": "weak", "target_accuracy": 0.0},
        ]
        summary = tmp_path / "orchestrator-summary.json"
        summary.write_text(
            json.dumps({"generated_at": "2026-05-16T12:00:00Z", "head_to_head": {
                "comparisons": comparisons
            }})
        )  # fmt: skip
        section = h2h(invoke, "--compare-summary", str(summary))["previous_summary_comparison"]
        assert section["previous_generated_at"] == "2026-05-16T12:00:00Z"
        rows = {c["benchmark"]: c for c in section["comparisons"]}
        gamma = rows["gamma"]
        assert (gamma["trend"], gamma["previous_status"], gamma["current_status"]) == (
            "unchanged",
            "comparable",
            "superior",
        )
        assert gamma["target_total_token_delta"] == 3600 - 4000
        assert gamma["target_cached_token_percent_delta"] == pytest.approx(10.0)
        assert gamma["target_llm_call_delta"] == -2
        assert (rows["retired"]["trend"], rows["retired"]["current_status"]) == ("missing", None)
        assert (rows["alpha"]["trend"], rows["alpha"]["previous_status"]) == ("missing", None)


class TestDeferredCoverage:
    def test_the_orchestrators_deferred_benchmarks_are_tracked_by_default(
        self, invoke: Invoke, record: Record
    ) -> None:
        record("alpha", "eliza", 150, CHEAP)
        record("alpha", "opencode", 150, CHEAP)
        data = h2h(invoke)
        coverage = data["coverage"]
        deferred = coverage["deferred_benchmarks"]
        assert [d["benchmark"] for d in deferred] == [
            "swe_bench_pro",
            "qwen_web_bench",
            "vision_language",
        ]
        assert [d["promotion_priority"] for d in deferred] == ["p1", "p2", "p1"]
        assert all(d["reason"] and d["selected"] is False for d in deferred)
        assert set(deferred[0]) == {
            "benchmark",
            "domains",
            "reason",
            "promotion_requirements",
            "promotion_priority",
            "selected",
        }
        assert coverage["included_benchmarks"] == [{"benchmark": "alpha", "selected": True}]
        assert coverage["status_counts"] == {
            "included": 1,
            "included_selected": 1,
            "included_unselected": 0,
            "deferred": 3,
        }
        assert data["gates"]["coverage"]["deferred_benchmarks"] == [
            "swe_bench_pro",
            "qwen_web_bench",
            "vision_language",
        ]
        assert "previous_summary_comparison" not in data

    def test_a_deferred_benchmark_does_not_block_coverage_until_it_is_undeferred(
        self, invoke: Invoke, record: Record
    ) -> None:
        record("alpha", "eliza", 150, CHEAP)
        record("alpha", "opencode", 150, CHEAP)
        record("vision_language", "eliza", 10, CHEAP)
        args = ("--benchmarks", "alpha", "--enforce-coverage")
        assert h2h(invoke, *args)["gates"]["coverage"]["blocking"] == []
        undeferred = h2h(invoke, *args, "--deferred-benchmarks", "", expect=6)
        assert undeferred["gates"]["coverage"]["blocking"] == ["vision_language"]
        assert undeferred["coverage"]["deferred_benchmarks"] == []
        assert undeferred["coverage"]["unselected_included_benchmarks"] == ["vision_language"]

    def test_the_deferred_list_is_configurable(
        self, invoke: Invoke, record: Record, tmp_path: Path
    ) -> None:
        record("alpha", "eliza", 150, CHEAP)
        record("beta", "eliza", 150, CHEAP)
        record("alpha", "opencode", 150, CHEAP)
        data = h2h(
            invoke, "--benchmarks", "alpha", "--deferred-benchmarks", "beta,vision_language",
            "--enforce-coverage", "--out", str(tmp_path / "r"),
        )  # fmt: skip
        beta, vision = data["coverage"]["deferred_benchmarks"]
        assert beta == {
            "benchmark": "beta",
            "domains": [],
            "reason": "deferred with --deferred-benchmarks",
            "promotion_requirements": [],
            "promotion_priority": "p2",
            "selected": False,
        }
        assert vision["domains"] == ["computer-use", "browser", "vision"]
        assert data["options"]["deferred_benchmarks"] == ["beta", "vision_language"]
        text = (tmp_path / "r" / "summary.md").read_text()
        assert "## Coverage\n\n- included: 1 of 1 selected\n" in text
        assert "  - **beta** (p2): deferred with --deferred-benchmarks\n" in text
