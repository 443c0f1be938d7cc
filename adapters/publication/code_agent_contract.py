"""The code-agent latest row contract: what a head-to-head row in a latest/ directory must
state to be publishable, checked as the orchestrator's validators check it.

A code-agent row (`<benchmark>__<target>_vs_<baseline>.json`, as `head-to-head
--publish-latest-dir` and the orchestrator's code_agent_matrix write it) compares two
agents on one benchmark. It is publishable only with live execution, command, result
and trajectory provenance for both sides (files and a directory that exist, the
trajectories backing the row's token, cache and call figures), right/wrong/total
outcomes, tokens, cached-token percentage and LLM calls for both sides, deltas equal to
target minus baseline, a score equal to the target's accuracy, a `comparison_status`
that is `superior` or `comparable` and matches the measured accuracies, every report
gate true, and no token, call or cache regression. The reasons are the orchestrator's
names, so both systems reject a row for the same reasons.

The gates call `findings` once (`gates.evaluate`); `latest_dir` reads such a row with
`gate_row`. The trajectory reading is `code_agent_evidence`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from benchledger.adapters.publication.code_agent_evidence import summarize_trajectories
from benchledger.domain.errors import InputFormatError

if TYPE_CHECKING:
    from benchledger.adapters.publication.publication import Publication

# The orchestrator's matrix always compares ElizaOS against OpenCode under this name;
# benchledger's rows are named `<target>_vs_<baseline>` after the agents compared.
ORCHESTRATOR_PAIR = "elizaos_vs_opencode"
PAIR_SEPARATOR = "_vs_"
PROVENANCE_FIELDS = (
    "target_result_path",
    "baseline_result_path",
    "target_command_path",
    "baseline_command_path",
    "target_trajectory_dir",
    "baseline_trajectory_dir",
)
OUTCOMES = ("right", "wrong", "total")
TOKENS = ("input_tokens", "output_tokens", "total_tokens", "cached_token_percent", "llm_call_count")
# In the order of the orchestrator's shared contract (its findings follow it).
NUMERIC_FIELDS = (
    *(f"{side}_{n}" for side in ("target", "baseline") for n in OUTCOMES),
    *(f"{side}_{n}" for side in ("target", "baseline") for n in TOKENS),
    "accuracy_delta",
    "input_token_delta",
    "output_token_delta",
    "total_token_delta",
    "llm_call_delta",
    "cached_token_percent_delta",
)
REQUIRED_TRUE_FIELDS = (
    "coverage_gate_ok",
    "benchmark_gate_ok",
    "required_stats_gate_ok",
    "efficiency_gate_ok",
    "quality_guardrail_gate_ok",
    "trajectory_review_gate_ok",
    "live_report_gate_ok",
    "report_gate_ok",
    "release_readiness_ok",
)
ACCEPTABLE_STATUSES = ("superior", "comparable")
# delta field: (target field, baseline field)
DELTAS = {
    "accuracy_delta": ("target_accuracy", "baseline_accuracy"),
    "input_token_delta": ("target_input_tokens", "baseline_input_tokens"),
    "output_token_delta": ("target_output_tokens", "baseline_output_tokens"),
    "total_token_delta": ("target_total_tokens", "baseline_total_tokens"),
    "llm_call_delta": ("target_llm_call_count", "baseline_llm_call_count"),
    "cached_token_percent_delta": (
        "target_cached_token_percent",
        "baseline_cached_token_percent",
    ),
}
# delta field: (reason when the target is worse, worse when the delta is above zero)
EFFICIENCY = {
    "total_token_delta": ("code_agent_total_tokens_worse", True),
    "llm_call_delta": ("code_agent_llm_calls_worse", True),
    "cached_token_percent_delta": ("code_agent_cached_token_percent_worse", False),
}
# The keys whose presence marks a row as a code-agent row (with its agent and file name).
MARKER_KEYS = (
    "target_adapter",
    "baseline_adapter",
    "target_total_tokens",
    "baseline_total_tokens",
    "target_llm_call_count",
    "baseline_llm_call_count",
    *PROVENANCE_FIELDS,
)
TOLERANCE = {"rel_tol": 1e-9, "abs_tol": 1e-6}

Issue = tuple[str, str, str]  # (JSON path, reason, value)


def pair_name(target: str, baseline: str) -> str:
    return f"{target}{PAIR_SEPARATOR}{baseline}"


def is_code_agent_row(payload: dict[str, Any], filename: str = "") -> bool:
    agent = str(payload.get("agent") or "").strip()
    if agent == ORCHESTRATOR_PAIR or filename.endswith(f"__{ORCHESTRATOR_PAIR}.json"):
        return True
    return any(key in payload for key in MARKER_KEYS)


def finite(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, **TOLERANCE)


def accuracy(payload: dict[str, Any], side: str) -> float | None:
    """A side's accuracy: as stated, else right / total."""
    stated = payload.get(f"{side}_accuracy")
    if finite(stated):
        return float(stated)
    right, total = payload.get(f"{side}_right"), payload.get(f"{side}_total")
    if finite(right) and finite(total) and total > 0:
        return float(right) / float(total)
    return None


def expected_status(payload: dict[str, Any]) -> str | None:
    """The status the measured accuracies give: weak (both zero), inferior, superior or
    comparable (equal); None when an accuracy is not known."""
    target, baseline = accuracy(payload, "target"), accuracy(payload, "baseline")
    if target is None or baseline is None:
        return None
    if target <= 0 and baseline <= 0:
        return "weak"
    if target + 1e-9 < baseline:
        return "inferior"
    if target > baseline + 1e-9:
        return "superior"
    return "comparable"


def publisher_failure_reasons(payload: dict[str, Any]) -> list[str]:
    """Why a row is not publishable, in the words the orchestrator's publisher writes into
    `failure_reasons` (empty when it is)."""
    reasons = [] if finite(payload.get("score")) else ["missing numeric score"]
    if str(payload.get("mode") or "").strip() != "live":
        reasons.append("not live mode")
    status = str(payload.get("comparison_status") or "").strip()
    if status not in ACCEPTABLE_STATUSES:
        reasons.append("not comparable or better")
    expected = expected_status(payload)
    if expected is not None and status != expected:
        reasons.append(f"comparison status should be {expected}")
    reasons += [f"missing {k}" for k in PROVENANCE_FIELDS if not _text(payload.get(k))]
    reasons += [f"missing numeric {k}" for k in NUMERIC_FIELDS if not finite(payload.get(k))]
    reasons += [f"{k} is not true" for k in REQUIRED_TRUE_FIELDS if payload.get(k) is not True]
    for key, words in (
        ("total_token_delta", "total tokens worse"),
        ("llm_call_delta", "LLM calls worse"),
    ):
        if finite(payload.get(key)) and payload[key] > 0:
            reasons.append(words)
    if (
        finite(payload.get("cached_token_percent_delta"))
        and payload["cached_token_percent_delta"] < 0
    ):
        reasons.append("cached-token percent worse")
    return reasons


def row_issues(payload: dict[str, Any], base: Path) -> list[Issue]:
    """The publishability findings of a code-agent row beyond the ordinary row checks
    (status, score): provenance, stats, consistency, gates, status, live, efficiency.
    Relative provenance paths are read from `base`."""
    out: list[Issue] = []
    for key in PROVENANCE_FIELDS:
        value = payload.get(key)
        if not _text(value):
            out.append((f"$.{key}", "missing_code_agent_provenance_field", _short(value)))
        else:
            out += _artifact_issues(payload, key, Path(str(value)).expanduser(), base)
    for key in NUMERIC_FIELDS:
        if not finite(payload.get(key)):
            out.append((f"$.{key}", "missing_code_agent_numeric_stat", _short(payload.get(key))))
    out += _outcome_issues(payload)
    out += _delta_issues(payload)
    for key in REQUIRED_TRUE_FIELDS:
        if payload.get(key) is not True:
            out.append((f"$.{key}", "code_agent_required_gate_not_true", _short(payload.get(key))))
    status = str(payload.get("comparison_status") or "").strip()
    if status not in ACCEPTABLE_STATUSES:
        out.append(
            (
                "$.comparison_status",
                "code_agent_not_comparable_or_better",
                _short(payload.get("comparison_status")),
            )
        )
    expected = expected_status(payload)
    if expected is not None and status != expected:
        value = {
            "baseline_accuracy": accuracy(payload, "baseline"),
            "expected_status": expected,
            "row_status": status,
            "target_accuracy": accuracy(payload, "target"),
        }
        out.append(("$.comparison_status", "code_agent_comparison_status_mismatch", _dump(value)))
    if str(payload.get("mode") or "").strip() != "live":
        out.append(("$.mode", "code_agent_not_live", _short(payload.get("mode"))))
    for key, (reason, above) in EFFICIENCY.items():
        [value] = _values(payload, key)
        if _number(value) and (value > 0 if above else value < 0):
            out.append((f"$.{key}", reason, _short(value)))
    return out


def _artifact_issues(payload: dict[str, Any], key: str, path: Path, base: Path) -> list[Issue]:
    path = path if path.is_absolute() else base / path
    where = f"$.{key}"
    if not path.exists():
        return [(where, "missing_code_agent_provenance_artifact", str(path))]
    directory = key.endswith("_trajectory_dir")
    if not (path.is_dir() if directory else path.is_file()):
        kind = "directory" if directory else "file"
        return [(where, "wrong_type_code_agent_provenance_artifact", f"expected {kind}: {path}")]
    if not directory:
        return []
    if not any(child.is_file() for child in path.rglob("*")):
        return [(where, "empty_code_agent_trajectory_dir", str(path))]
    summary = summarize_trajectories(path)
    out: list[Issue] = [
        (where, reason, f"{detail}: {path}")
        for blocked, reason, detail in (
            (summary.turns <= 0, "unparseable", "no parseable trajectory turns"),
            (summary.prompt_tokens <= 0, "missing_input_tokens", "no input-token telemetry"),
            (summary.completion_tokens <= 0, "missing_output_tokens", "no output-token telemetry"),
            (summary.llm_calls <= 0, "missing_llm_calls", "no LLM-call telemetry"),
            (summary.turns_with_cached <= 0, "missing_cached_tokens", "no cached-token telemetry"),
        )
        if blocked
    ]
    out = [(w, _trajectory_reason(r), v) for w, r, v in out]
    if summary.turns <= 0:
        return out
    side = key.split("_", 1)[0]
    expected: dict[str, float] = {
        "input_tokens": summary.prompt_tokens,
        "output_tokens": summary.completion_tokens,
        "total_tokens": summary.total_tokens,
        "llm_call_count": summary.llm_calls,
    }
    if summary.prompt_tokens > 0 and summary.turns_with_cached > 0:
        expected["cached_token_percent"] = 100.0 * summary.cached_tokens / summary.prompt_tokens
    for metric, value in expected.items():
        actual = payload.get(f"{side}_{metric}")
        if finite(actual) and not _close(float(actual), float(value)):
            detail = {
                "artifact": str(path),
                "expected_from_trajectory": float(value),
                "row_value": actual,
            }
            out.append(
                (f"$.{side}_{metric}", "code_agent_trajectory_metric_mismatch", _dump(detail))
            )
    return out


def _trajectory_reason(short: str) -> str:
    if short == "unparseable":
        return "unparseable_code_agent_trajectory_dir"
    return f"{short.replace('missing_', 'missing_code_agent_trajectory_', 1)}"


def _outcome_issues(payload: dict[str, Any]) -> list[Issue]:
    out: list[Issue] = []
    for side in ("target", "baseline"):
        right, wrong, total = _values(payload, *(f"{side}_{n}" for n in OUTCOMES))
        if finite(right) and finite(wrong) and finite(total) and not _close(right + wrong, total):
            detail: dict[str, Any] = {
                "expected_total": float(right + wrong),
                "right": right,
                "row_total": total,
                "wrong": wrong,
            }
            out.append((f"$.{side}_total", "code_agent_outcome_total_mismatch", _dump(detail)))
        [stated] = _values(payload, f"{side}_accuracy")
        if _ratio_differs(stated, right, total):
            detail = {
                "expected_accuracy": right / total,
                "right": right,
                "row_accuracy": stated,
                "total": total,
            }
            out.append((f"$.{side}_accuracy", "code_agent_accuracy_mismatch", _dump(detail)))
    score, right, total = _values(payload, "score", "target_right", "target_total")
    if _ratio_differs(score, right, total):
        detail = {
            "expected_score": right / total,
            "row_score": score,
            "target_right": right,
            "target_total": total,
        }
        out.append(("$.score", "code_agent_score_mismatch", _dump(detail)))
    return out


def _ratio_differs(stated: Any, right: Any, total: Any) -> bool:
    """Whether a stated accuracy is not right / total (all three known, total above 0)."""
    known = finite(stated) and finite(right) and finite(total) and total > 0
    return known and not _close(float(stated), right / total)


def _delta_issues(payload: dict[str, Any]) -> list[Issue]:
    out: list[Issue] = []
    for key, (target_key, baseline_key) in DELTAS.items():
        delta, target, baseline = _values(payload, key, target_key, baseline_key)
        if not (finite(delta) and finite(target) and finite(baseline)):
            continue
        if not _close(float(delta), float(target) - float(baseline)):
            detail = {
                "baseline_field": baseline_key,
                "baseline_value": baseline,
                "expected_delta": float(target) - float(baseline),
                "row_delta": delta,
                "target_field": target_key,
                "target_value": target,
            }
            out.append((f"$.{key}", "code_agent_delta_mismatch", _dump(detail)))
    return out


def comparability_issues(agent: str, payload: dict[str, Any]) -> list[tuple[str, str]]:
    """(reason, value) of a required code-agent row: succeeded, scored, comparable or
    better, and its status what its accuracies say."""
    out = []
    if payload.get("status") != "succeeded":
        out.append((f"{agent}_not_succeeded", str(payload.get("status"))))
    if not finite(payload.get("score")):
        out.append((f"{agent}_missing_numeric_score", str(payload.get("score"))))
    status = str(payload.get("comparison_status") or "").strip()
    if status not in ACCEPTABLE_STATUSES:
        out.append(("code_agent_not_comparable_or_better", str(payload.get("comparison_status"))))
    expected = expected_status(payload)
    if expected is not None and status != expected:
        value = _dump({"expected_status": expected, "row_status": status})
        out.append(("code_agent_comparison_status_mismatch", value))
    return out


# -- the gates' one hook --------------------------------------------------------------


def findings(gate: str, pub: Publication) -> list[dict[str, Any]]:
    """The code-agent findings of `gate` over the code-agent rows of `pub` (none for a
    ledger's own publication, whose rows are never code-agent rows)."""
    from benchledger.adapters.publication.gates import finding

    def publishability() -> Iterator[dict[str, Any]]:
        for (benchmark, agent), row in _code_agent_rows(pub):
            payload, base = row["code_agent"], Path(row["code_agent_base"])
            for path, reason, value in row_issues(payload, base):
                yield finding(f"{benchmark}::{agent}", reason, value, path=path, file=row["file"])

    def comparability() -> Iterator[dict[str, Any]]:
        for (benchmark, agent), row in _code_agent_rows(pub):
            if agent in pub.required_agents(benchmark):
                for reason, value in comparability_issues(agent, row["code_agent"]):
                    yield finding(benchmark, reason, value)

    if gate == "publishability":
        return list(publishability())
    if gate == "comparability":
        return list(comparability())
    if gate == "readiness":
        return [
            *({**f, "scope": f"publishability:{f['scope']}"} for f in publishability()),
            *({**f, "scope": f"comparability:{f['scope']}"} for f in comparability()),
        ]
    return []


def _code_agent_rows(pub: Publication) -> list[tuple[tuple[str, str], dict[str, Any]]]:
    return [(key, row) for key, row in sorted(pub.latest.items()) if "code_agent" in row]


def gate_row(path: Path, payload: dict[str, Any], table: str) -> dict[str, Any]:
    """A code-agent row file as the gates read a row: the ordinary fields the row states
    (it has no run of its own: its runs are its sides'), and the whole payload for the
    contract's checks."""
    for name in ("benchmark_id", "agent"):
        value = payload.get(name)
        if not isinstance(value, str) or not value.strip():
            raise InputFormatError(str(path), "must be a non-empty string", field=name)
    metrics = payload.get("metrics")
    return {
        "benchmark": payload["benchmark_id"],
        "agent": payload["agent"],
        "run_id": payload.get("run_id"),
        "run_group_id": payload.get("run_group_id"),
        "signature": payload.get("signature"),
        "comparison_signature": payload.get("comparison_signature"),
        "status": payload.get("status"),
        "provider": payload.get("provider"),
        "model": payload.get("model"),
        "score": payload.get("score"),
        "unit": payload.get("unit"),
        "config": {},
        "metrics": metrics if isinstance(metrics, dict) else {},
        "error": payload.get("error"),
        "quarantine_reason": payload.get("quarantine_reason"),
        "updated_at": payload.get("updated_at"),
        "demo_data": payload.get("demo_data"),
        "synthetic": False,
        "file": f"{table}/{path.name}",
        "code_agent": payload,
        "code_agent_base": str(path.parent),
    }


def _values(payload: dict[str, Any], *keys: str) -> list[Any]:
    return [payload.get(k) for k in keys]


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True, sort_keys=True, default=str)
    return text if len(text) <= 180 else text[:177] + "..."
