"""What may be published: the markers of demo, mock and sample results, and warnings.

The markers follow the rules existing users of the ElizaOS orchestrator rely on:
truthy non-real flags anywhere in a payload, sample dataset sources, warnings
and free-text markers of demo, mock, smoke or stub runs. As in the orchestrator,
the publishability gate checks latest rows for them (`non_real_marker`); `latest`
itself quarantines by the orchestrator's rebuild rules (`projections.latest_select`),
which look at a run's metrics only, by a non-real agent label (`agent_marker`) and by
a config flag of a mock, demo, stub or dry run (benchledger's own rule).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from typing import Any, TypeGuard

# Made once: `isinstance(x, int | float)` builds the union anew at every call, and the
# token counts of every published row ask it of each alias.
_NUMBER = int | float

NON_REAL_FLAGS = frozenset(
    {
        "demo",
        "demo_mode",
        "dry_run",
        "fixture",
        "fixtures",
        "mock",
        "mock_mode",
        "oracle",
        "sample",
        "sample_tasks",
        "stub",
        "synthetic",
        "use_sample_tasks",
        "using_sample_tasks",
    }
)
TEXT_MARKERS = (
    "bundled smoke",
    "demo mode",
    "dry run",
    "fixture dataset",
    "larp",
    "mock run",
    "mock runtime",
    "oracle mode",
    "sample task set",
    "sample_task_set",
    "smoke task",
    "stub runtime",
    "synthetic dataset",
    "using sample task",
)
# "mock runtime" must not be reported as its prefix "mock run".
_LONGEST_FIRST = tuple(sorted(TEXT_MARKERS, key=len, reverse=True))
WARNING_MARKERS = ("demo", "dry_run", "fixture", "larp", "mock", "smoke", "stub")
SYNTHETIC_AGENTS = frozenset({"random_v1", "perfect_v1", "wrong_v1", "half_v1"})
CALIBRATION_EXPECTED = {"perfect_v1": 1.0, "wrong_v1": 0.0, "half_v1": 0.5}
# The ElizaOS orchestrator's benchmark_runs columns that its published rows carry (its
# importer keeps them; an export of what it imported writes them back).
# The telemetry groups: top-level `*_json` columns, each also copied into the metrics.
TELEMETRY_GROUPS = ("cache_metrics", "performance_metrics", "trajectory_summary", "token_metrics")
# Its denormalised telemetry and its reference columns, in the order its `list_runs` reads.
TELEMETRY_COLUMNS = (
    "trajectory_count",
    "llm_call_count",
    "total_prompt_tokens",
    "total_completion_tokens",
    "total_cache_read_input_tokens",
    "total_cache_creation_input_tokens",
    "mean_latency_ms",
    "p95_latency_ms",
    "throughput_per_second",
)
REFERENCE_COLUMNS = (
    "high_score_label",
    "high_score_value",
    "delta_to_high_score",
    "benchmark_version",
    "benchmarks_commit",
    "eliza_commit",
    "eliza_version",
)


# Labels that name a smoke test or a stand-in, not an agent under test.
NON_REAL_AGENTS = frozenset({"mock", "smoke", "final-smoke", "full-sweep", "dummy", "stub"})


def agent_marker(agent: str) -> str | None:
    return "non_real_agent_label" if agent.lower() in NON_REAL_AGENTS else None


# The kind of run group `benchledger demo` records its runs in: generated, never measured.
DEMO_GROUP_KIND = "demo"


def group_marker(kind: str | None) -> str | None:
    """Why the run group a row's run was recorded in says it is no real result: the demo
    ledger's (`demo_data`). Its rows may be browsed, never published."""
    return "demo_data" if kind == DEMO_GROUP_KIND else None


# What a source writes where it does not know (or hides) a run's benchmark or model: an
# anonymised fixture's `"..."`, a `none` or `unknown` default. Compared case-insensitively.
PLACEHOLDER_NAMES = frozenset({"...", "none", "unknown", "none/none", "null", "n/a"})
# Model providers that answer without a model: inspect_ai's `mockllm/model`, say.
MOCK_PROVIDERS = frozenset({"mockllm", "mock"})
MOCK_MODELS = frozenset({"mockllm", "mockllm/model", "mock", "mock-model", "mock_model"})


def _placeholder(name: str | None) -> bool:
    text = (name or "").strip().lower()
    return not text or text in PLACEHOLDER_NAMES


def identity_marker(benchmark: str, provider: str | None, model: str | None) -> str | None:
    """Why a run's benchmark or model names no real benchmark or model, or None.

    Such a run is still recorded (a ledger never loses a fact), but a score of benchmark
    `...` by model `...` is no result anyone can publish: it is quarantined, the reason
    naming the field (`placeholder_identity:benchmark`, `placeholder_identity:model`),
    or `mock_model` for a model that is a stand-in."""
    if _placeholder(benchmark):
        return "placeholder_identity:benchmark"
    full = f"{(provider or '').strip()}/{(model or '').strip()}".strip("/").lower()
    if _placeholder(model) or _placeholder(full):
        return "placeholder_identity:model"
    if (provider or "").strip().lower() in MOCK_PROVIDERS or full in MOCK_MODELS:
        return "mock_model"
    if (model or "").strip().lower() in MOCK_MODELS:
        return "mock_model"
    return None


# A pure function of the labels, which a ledger's runs repeat: worked out once per four.
@functools.lru_cache(maxsize=4096)
def label_marker(agent: str, benchmark: str, provider: str | None, model: str | None) -> str | None:
    """The first reason a run's labels say it is no real result: its agent's label, then
    its benchmark's and model's names, then a placeholder agent."""
    marker = agent_marker(agent) or identity_marker(benchmark, provider, model)
    return marker or ("placeholder_identity:agent" if _placeholder(agent) else None)


def is_synthetic(agent: str) -> bool:
    """Calibration harnesses: their rows are baselines, never published results."""
    return agent in SYNTHETIC_AGENTS


def _walk(value: Any) -> Iterator[tuple[str | None, Any]]:
    """(key, value) for every node of a JSON-like payload."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield str(key), child
            yield from _walk(child)
    elif isinstance(value, list | tuple):
        for child in value:
            yield None, child
            yield from _walk(child)


# Every flag, warning marker and text marker holds one of these (a test checks it): a
# payload whose text, lower-cased, holds none of them has no marker, with no walk.
MARKER_ROOTS = (
    "demo",
    "dry",
    "fixture",
    "larp",
    "mock",
    "oracle",
    "sample",
    "smoke",
    "stub",
    "synthetic",
)


def may_hold_marker(*texts: str | None) -> bool:
    """False when no marker can be in a payload whose keys and strings are all in
    `texts` (its JSON, say): then `non_real_marker` of it is None."""
    for text in texts:
        if text:
            lowered = text.lower()
            if any(root in lowered for root in MARKER_ROOTS):
                return True
    return False


def non_real_marker(payload: Any) -> str | None:
    """The first reason this payload is not a real result, or None."""
    for key, value in _walk(payload):
        name = (key or "").lower()
        if name in NON_REAL_FLAGS and not _falsy(value):
            return "truthy_non_real_flag"
        if name == "dataset_source" and value in ("sample", "sample-files"):
            return "sample_dataset_source"
        if name in ("warnings", "publication_warnings") and isinstance(value, list):
            for warning in value:
                text = str(warning).lower()
                if text == "sample_task_set" or any(m in text for m in WARNING_MARKERS):
                    return "non_real_publication_warning"
        if isinstance(value, str):
            lowered = value.lower()
            for marker in _LONGEST_FIRST:
                if marker in lowered:
                    return f"non_real_text_marker:{marker}"
    return None


def _falsy(value: Any) -> bool:
    """False, None, "", 0, [] and {} say "not a mock"; anything else says it is."""
    if value is None or value is False or value == "" or value == [] or value == {}:
        return True
    return isinstance(value, _NUMBER) and not isinstance(value, bool) and value == 0


def high_score_delta(
    score: float | None,
    unit: str | None,
    higher_is_better: bool,
    reference: float | None,
    reference_unit: str | None,
) -> float | None:
    """How far ahead of the reference a score is (positive is better), in the score's unit.

    Computed when read, never stored. Percent references are rescaled to fractions
    and back; other unit mismatches have no delta.
    """
    if score is None or reference is None:
        return None
    scaled = _rescale(reference, reference_unit, unit)
    if scaled is None:
        return None
    return score - scaled if higher_is_better else scaled - score


PERCENT = {"%", "percent", "pct", "percentage"}


def _rescale(value: float, source: str | None, target: str | None) -> float | None:
    src, dst = (source or "").lower(), (target or "").lower()
    if not src or not dst or src == dst:
        return value
    if src in PERCENT and dst not in PERCENT:
        return value / 100
    if dst in PERCENT and src not in PERCENT:
        return value * 100
    return None


# Benchmarks whose token telemetry is optional: no telemetry warnings for them.
TOKEN_TELEMETRY_OPTIONAL = frozenset(
    {
        "configbench",
        "eliza_replay",
        "framework",
        "hermes_yc_bench",
        "personality_bench",
        "solana",
        "vision_language",
        "voiceagentbench",
    }
)
# metrics key -> the largest count that is still too small to publish without a warning.
TOO_FEW = {
    "total_instances": 1,
    "total_samples": 2,
    "total_tasks": 1,
    "total_questions": 2,
    "scenario_count": 1,
    "n": 2,
}
_ALIASES = {
    "prompt": ("prompt_tokens", "input_tokens", "total_prompt_tokens"),
    "completion": ("completion_tokens", "output_tokens", "total_completion_tokens"),
    "total": ("total_tokens",),
    "calls": ("llm_call_count", "call_count"),
}


def _count(tokens: dict[str, Any], name: str) -> float | None:
    for alias in _ALIASES[name]:
        value = tokens.get(alias)
        if isinstance(value, _NUMBER) and not isinstance(value, bool):
            return value
    return None


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, _NUMBER) and not isinstance(value, bool)


def complete_token_metrics(
    token_metrics: dict[str, Any], trajectory_summary: dict[str, Any]
) -> dict[str, Any]:
    """A row's token metrics as the orchestrator completes them when it writes a latest/
    row: calls from the trajectory's turns, prompt tokens estimated as prompt characters
    / 4, completion from the total, the total at least prompt plus completion, and the
    flat aliases and averages. (The orchestrator also estimates completion tokens from
    the saved result file on its host, which an export does not open.)"""
    tokens = dict(token_metrics)
    prompt, completion = tokens.get("prompt_tokens"), tokens.get("completion_tokens")
    total, calls = tokens.get("total_tokens"), tokens.get("llm_call_count")
    cached = tokens.get("cached_tokens", tokens.get("cache_read_input_tokens"))
    turns, chars = trajectory_summary.get("turns"), trajectory_summary.get("prompt_chars")
    source = tokens.get("token_estimate_source")
    if not _number(calls):
        calls = turns if _number(turns) else 0
    calls = int(calls)
    if not _number(prompt):
        prompt = math.ceil(float(chars) / 4.0) if _number(chars) and chars > 0 else 0
        if prompt:
            source = source or "prompt_chars_div_4"
            tokens["estimated_prompt_tokens"] = prompt
    if not _number(completion):
        completion = max(0, int(total) - int(prompt)) if _number(total) else 0
    if not _number(total) or int(total) < int(prompt) + int(completion):
        total = int(prompt) + int(completion)
        if source is not None:
            tokens["estimated_total_tokens"] = total
    cached = cached if _number(cached) else 0
    tokens.update(
        llm_call_count=calls,
        call_count=calls,
        prompt_tokens=int(prompt),
        input_tokens=int(prompt),
        completion_tokens=int(completion),
        output_tokens=int(completion),
        total_tokens=int(total),
        cached_tokens=int(cached),
        avg_prompt_tokens=(int(prompt) / calls) if calls else 0,
        avg_completion_tokens=(int(completion) / calls) if calls else 0,
        telemetry_missing=source is not None or int(total) <= 0 or calls <= 0,
    )
    if source is not None:
        tokens["token_estimate_source"] = source
    return tokens


def completed_tokens(
    tokens: dict[str, Any], trajectory_summary: dict[str, Any]
) -> tuple[int, int, str | None]:
    """(LLM calls, total tokens, estimate source or None) as the orchestrator completes a
    row's token metrics before judging them: calls default to the trajectory's turns,
    missing prompt tokens are estimated as prompt characters / 4, and the total is at
    least prompt plus completion. (It also estimates completion tokens from the saved
    result file, which a read model does not open.)"""
    source = tokens.get("token_estimate_source")
    estimated = any(str(k).startswith("estimated_") for k in tokens)
    turns = trajectory_summary.get("turns")
    calls = _count(tokens, "calls")
    if calls is None:
        calls = turns if isinstance(turns, _NUMBER) and not isinstance(turns, bool) else 0
    prompt = _count(tokens, "prompt")
    if prompt is None:
        chars = trajectory_summary.get("prompt_chars")
        if isinstance(chars, _NUMBER) and not isinstance(chars, bool) and chars > 0:
            prompt = math.ceil(chars / 4)
        else:
            prompt = 0
        if prompt:
            source, estimated = source or "prompt_chars_div_4", True
    total = _count(tokens, "total")
    completion = _count(tokens, "completion")
    if completion is None:
        completion = max(0, int(total) - int(prompt)) if total is not None else 0
    if total is None or int(total) < int(prompt) + int(completion):
        total = int(prompt) + int(completion)
    named = str(source or "unknown") if source is not None or estimated else None
    return int(calls), int(total), named


def publication_warnings(
    benchmark: str,
    status: str | None,
    tokens: dict[str, Any],
    metrics: dict[str, Any],
) -> list[str]:
    """What a reader of a published (or quarantined) succeeded row should know: estimated
    or missing token telemetry, too few samples, sample tasks, demo mode, interruption."""
    if status != "succeeded":
        return []
    summary = metrics.get("trajectory_summary")
    calls, total, source = completed_tokens(tokens, summary if isinstance(summary, dict) else {})
    warnings = [f"estimated_token_metrics:{source}"] if source is not None else []
    if benchmark not in TOKEN_TELEMETRY_OPTIONAL:
        if total == 0:
            warnings.append("telemetry_missing_total_tokens")
        if calls == 0:
            warnings.append(f"telemetry_missing_llm_calls:{calls!r}")
        elif calls == 1:
            warnings.append("single_llm_call")
    for key, limit in TOO_FEW.items():
        value = metrics.get(key)
        # As the orchestrator counts: a boolean is a number here too.
        if isinstance(value, _NUMBER) and value <= limit:
            warnings.append(f"insufficient_{key}:{value!r}")
    source_name = metrics.get("dataset_source")
    if metrics.get("sample") is True or (
        isinstance(source_name, str) and source_name.strip().lower() == "sample"
    ):
        warnings.append("sample_task_set")
    if metrics.get("use_sample_tasks") is True:
        warnings.append("sample_task_set")
    if metrics.get("demo_mode") is True or metrics.get("demoMode") is True:
        warnings.append("demo_mode")
    if metrics.get("interrupted") is True:
        warnings.append("interrupted_run")
    return warnings
