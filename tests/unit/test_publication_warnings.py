"""The warnings a published row carries, as the ElizaOS orchestrator computes them."""

from __future__ import annotations

from typing import Any

import pytest

from benchledger.domain.publication import publication_warnings

TELEMETRY = {"total_tokens": 4800, "llm_call_count": 12}


@pytest.mark.parametrize(
    ("tokens", "metrics", "warnings"),
    [
        (TELEMETRY, {"n": 10}, []),
        ({}, {}, ["telemetry_missing_total_tokens", "telemetry_missing_llm_calls:0"]),
        ({"total_tokens": 900, "llm_call_count": 1}, {}, ["single_llm_call"]),
        ({"total_tokens": 900}, {}, ["telemetry_missing_llm_calls:0"]),
        ({"llm_call_count": 3}, {}, ["telemetry_missing_total_tokens"]),
        # prompt + completion make a total; calls come from the trajectory's turns
        ({"input_tokens": 40, "output_tokens": 2}, {"trajectory_summary": {"turns": 4}}, []),
        (
            {},
            {"trajectory_summary": {"turns": 3, "prompt_chars": 401}},
            ["estimated_token_metrics:prompt_chars_div_4"],
        ),
        (
            {**TELEMETRY, "token_estimate_source": "result_tokens_generated"},
            {},
            ["estimated_token_metrics:result_tokens_generated"],
        ),
        ({**TELEMETRY, "estimated_total_tokens": 10}, {}, ["estimated_token_metrics:unknown"]),
        (TELEMETRY, {"total_instances": 1}, ["insufficient_total_instances:1"]),
        (TELEMETRY, {"total_instances": 2, "total_samples": 2}, ["insufficient_total_samples:2"]),
        (TELEMETRY, {"total_tasks": 1, "total_questions": 3}, ["insufficient_total_tasks:1"]),
        (TELEMETRY, {"total_questions": 2.0}, ["insufficient_total_questions:2.0"]),
        (
            TELEMETRY,
            {"scenario_count": 0, "n": 2},
            ["insufficient_scenario_count:0", "insufficient_n:2"],
        ),
        (TELEMETRY, {"n": 3, "total_samples": 3, "scenario_count": 2}, []),
        (TELEMETRY, {"sample": True}, ["sample_task_set"]),
        (TELEMETRY, {"dataset_source": " Sample "}, ["sample_task_set"]),
        (TELEMETRY, {"dataset_source": "sample-files"}, []),
        (TELEMETRY, {"use_sample_tasks": True, "sample": "yes"}, ["sample_task_set"]),
        (TELEMETRY, {"demoMode": True}, ["demo_mode"]),
        (TELEMETRY, {"demo_mode": 1, "interrupted": True}, ["interrupted_run"]),
    ],
)
def test_warnings_of_a_succeeded_row(
    tokens: dict[str, Any], metrics: dict[str, Any], warnings: list[str]
) -> None:
    assert publication_warnings("bfcl", "succeeded", tokens, metrics) == warnings


@pytest.mark.parametrize("benchmark", ["configbench", "solana", "framework", "eliza_replay"])
def test_benchmarks_with_optional_token_telemetry_get_no_telemetry_warnings(
    benchmark: str,
) -> None:
    assert publication_warnings(benchmark, "succeeded", {}, {"n": 1}) == ["insufficient_n:1"]
    estimated = {"token_estimate_source": "x"}
    assert publication_warnings(benchmark, "succeeded", estimated, {}) == [
        "estimated_token_metrics:x"
    ]


@pytest.mark.parametrize("status", ["failed", "incompatible", "recovered", None])
def test_a_row_that_did_not_succeed_has_none(status: str | None) -> None:
    assert publication_warnings("bfcl", status, {}, {"n": 0, "demo_mode": True}) == []
