"""The head-to-head report's pure rules: sides, efficiency, gates and their exit order,
and rerun commands (what makes a latest-style row publishable: test_code_agent_contract)."""

from __future__ import annotations

from typing import Any

import pytest

from benchledger.adapters.publication import head_to_head as h2h
from benchledger.adapters.publication import head_to_head_queue as queue
from benchledger.adapters.publication import head_to_head_reviews as reviews


def row(benchmark: str = "alpha", **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "benchmark": benchmark,
        "comparison_status": "comparable",
        "status_reason": "",
        "token_evidence": True,
        "required_stats": True,
        "trajectory_review": True,
        "live": True,
        "efficiency_regressions": [],
        "target_accuracy": 0.8,
        "target_run_id": "t",
        "baseline_run_id": "b",
    }
    return {**base, **fields}


def test_sides_name_an_agent_and_optionally_provider_and_model() -> None:
    assert h2h.parse_side("eliza") == h2h.Side("eliza")
    side = h2h.parse_side("eliza@OpenAI:gpt-5")
    assert (side.agent, side.provider, side.model, side.spec) == (
        "eliza",
        "openai",
        "gpt-5",
        "eliza@openai:gpt-5",
    )
    with pytest.raises(ValueError, match="agent"):
        h2h.parse_side("eliza@openai")


def test_efficiency_regressions_are_more_tokens_more_calls_or_less_cache() -> None:
    deltas = {"total_tokens_delta": 10, "llm_calls_delta": 1, "cached_pct_delta": -2.5}
    assert h2h.efficiency_regressions(deltas) == [
        "total tokens +10",
        "LLM calls +1",
        "cached-token % -2.50",
    ]
    even = {"total_tokens_delta": -5, "llm_calls_delta": 0, "cached_pct_delta": None}
    assert h2h.efficiency_regressions(even) == []


def test_the_first_failing_enforced_gate_decides_the_exit_code() -> None:
    rows = [row(), row("beta", comparison_status="inferior", token_evidence=False)]
    results = h2h.gates(rows, h2h.Options())
    assert results["comparable"]["blocking"] == ["beta"]
    assert results["token_evidence"]["blocking"] == ["beta"]
    assert h2h.exit_result(results, ()) == (0, "ok")
    assert h2h.exit_result(results, ("token_evidence", "comparable")) == (
        3,
        "comparable_gate_failed",
    )
    assert h2h.exit_result(results, ("token_evidence",)) == (4, "token_evidence_failed")
    assert h2h.exit_result(results, ("efficiency",)) == (0, "ok")


def test_the_report_gate_adds_only_the_enforced_extras() -> None:
    rows = [row(efficiency_regressions=["total tokens +1"])]
    assert h2h.gates(rows, h2h.Options())["report"]["ok"]
    enforced = h2h.gates(rows, h2h.Options(enforce=("efficiency", "report")))
    assert enforced["report"]["blocking"] == ["alpha"]
    assert h2h.exit_result(enforced, ("report",)) == (7, "report_gate_failed")


def test_coverage_needs_every_registered_benchmark_with_both_sides() -> None:
    rows = [row(), row("beta", comparison_status="missing")]
    results = h2h.gates(rows, h2h.Options(coverage=("alpha", "beta", "gamma")))
    assert results["coverage"]["blocking"] == ["beta", "gamma"]
    assert results["release"]["blocking"] == ["beta", "gamma", "quality_guardrail"]


def test_no_regression_compares_target_accuracy_with_the_previous_summary() -> None:
    previous = {"report_rows": [{"benchmark": "alpha", "target_accuracy": 0.9}]}
    rows = [row(), row("beta")]
    assert h2h.gates(rows, h2h.Options(previous=previous))["no_regression"]["blocking"] == ["alpha"]
    assert h2h.gates(rows, h2h.Options())["no_regression"]["ok"]


def test_quality_needs_a_clean_guardrail_report() -> None:
    assert not h2h.gates([row()], h2h.Options())["quality"]["ok"]
    assert h2h.gates([row()], h2h.Options(quality={"ok": True}))["quality"]["ok"]
    assert h2h.gates([row()], h2h.Options(quality={"exit_code": 0}))["quality"]["ok"]
    assert not h2h.gates([row()], h2h.Options(quality={"exit_code": 5}))["quality"]["ok"]


def test_rerun_commands_keep_the_options_and_leave_secrets_out() -> None:
    facts = {
        "agent": "eliza",
        "provider": "cerebras",
        "model": "gpt-oss-120b",
        "config": {"limit": 5, "api_key": "sk-live-abcdef123456", "split": "test"},
    }
    command = queue.rerun_command("swe_bench", facts)
    assert command == (
        "benchledger run --benchmarks swe_bench --agent eliza --provider cerebras "
        '--model gpt-oss-120b --extra \'{"limit":5,"split":"test"}\' --force'
    )
    assert "sk-live" not in command


def test_report_commands_leave_coverage_out() -> None:
    options = h2h.Options(enforce=("comparable", "coverage"), publish_latest_dir="latest")
    command = queue.report_command("alpha", h2h.Side("eliza"), h2h.Side("opencode"), options)
    assert "--enforce-comparable" in command and "--enforce-coverage" not in command
    assert command.endswith("--publish-latest-dir latest")


class TestTheQueueOfAPreviousSummary:
    QUEUE = [
        {"benchmark": "alpha", "comparison_status": "inferior"},
        {"benchmark": "beta", "comparison_status": "missing"},
        {"benchmark": "gamma", "status": "weak", "priority": "p0"},
        {"benchmark": "alpha", "comparison_status": "inferior"},
        {"status": "missing", "priority": "p1"},
        "not an entry",
    ]

    def test_entries_without_a_priority_get_their_statuss(self) -> None:
        summary = {"improvement_queue": self.QUEUE}
        assert queue.queued_benchmarks(summary) == ["alpha", "beta", "gamma"]
        assert queue.queued_benchmarks(summary, {"p0"}) == ["alpha", "gamma"]
        assert queue.queued_benchmarks(summary, {"p1"}) == ["beta"]
        assert queue.queued_benchmarks(summary, None, {"weak"}) == ["gamma"]

    def test_a_summary_without_a_queue_queues_nothing(self) -> None:
        assert queue.queued_benchmarks({}) == []
        assert queue.queued_benchmarks({"improvement_queue": None}) == []


def test_both_sides_measured_zero_is_diagnosed_weak() -> None:
    side = {"total": 10, "wrong": 10}
    brief = {"trajectory_files": 1, "turns": 2, "repeated_prefix_count": None}
    weak = row(
        comparison_status="weak",
        target_total=10,
        baseline_total=10,
        total_tokens_delta=0,
        llm_calls_delta=0,
        cached_pct_delta=None,
    )
    classes = {"target": reviews.failure_class(side), "baseline": reviews.failure_class(side)}
    assert reviews.queue_diagnosis(weak, classes, {"target": brief, "baseline": brief}) == [
        "both adapters have measured zero accuracy",
        "target failure class: tests_failed",
        "baseline failure class: tests_failed",
    ]
    assert reviews.failure_class({"total": 4, "wrong": 0}) == "pass"
    assert reviews.failure_class({"total": None}) == "unknown_failure"
    assert reviews.failure_class({}) is None
