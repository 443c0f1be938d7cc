"""lm-eval result rows: which keys are metrics, and which one is a task's headline score.

A row maps "<metric>,<filter>" (≥0.4) or "<metric>" (≤0.3) to a value, with the
stderr as the sibling "<metric>_stderr,<filter>". The headline is chosen so the same
task is scored by the same metric in every file:

1. the metric: the first of PREFERRED the row has (acc before acc_norm, as lm-eval
   lists them), else the first of the task config's `metric_list`, else the row's first;
2. its filter: "none", else "strict-match" (gsm8k-style tasks), else the row's first.

Direction comes from the file's `higher_is_better`, else the task's `metric_list`,
else the metric's name (perplexities, errors and losses are lower-is-better).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from benchledger.adapters.formats.lm_eval_document import json_safe, number

NON_METRIC_KEYS = frozenset({"alias", "name", "sample_len", "sample_count"})
PREFERRED = ("acc", "exact_match", "acc_norm", "em", "f1", "mcc", "pass@1")
PREFERRED_FILTERS = ("none", "strict-match")
LOWER_IS_BETTER = frozenset(
    {
        "perplexity",
        "ppl",
        "word_perplexity",
        "byte_perplexity",
        "bits_per_byte",
        "mae",
        "mse",
        "rmse",
        "ter",
        "wer",
        "cer",
        "loss",
    }
)


@dataclass(frozen=True)
class Headline:
    key: str  # as the row spells it: "exact_match,strict-match", "acc,none", "acc"
    metric: str
    filter: str | None
    value: float  # possibly NaN or Infinity
    higher_is_better: bool

    @property
    def unit(self) -> str:
        """The metric, with its filter when it is not the default one."""
        return self.metric if self.filter in (None, "none") else self.key

    @property
    def score(self) -> float | None:
        return self.value if math.isfinite(self.value) else None


def split_key(key: str) -> tuple[str, str | None]:
    metric, comma, filter_name = key.partition(",")
    return metric, (filter_name if comma else None)


def metric_keys(row: dict[str, Any]) -> list[str]:
    """Keys holding a metric's own value: not its stderr, the alias or sample counts."""
    filtered = any("," in key for key in row)
    keys = []
    for key, value in row.items():
        if key in NON_METRIC_KEYS or (filtered and "," not in key):
            continue
        if split_key(key)[0].endswith("_stderr") or number(value) is None:
            continue
        keys.append(key)
    return keys


def metric_names(row: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(split_key(key)[0] for key in metric_keys(row)))


def listed_metrics(task_config: dict[str, Any]) -> list[dict[str, Any]]:
    """The task config's `metric_list` entries that name a metric."""
    entries = task_config.get("metric_list")
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("metric"), str)]


def headline(
    row: dict[str, Any], directions: dict[str, bool | None], listed: list[dict[str, Any]]
) -> Headline | None:
    keys = metric_keys(row)
    if not keys:
        return None
    by_metric: dict[str, list[str]] = {}
    for key in keys:
        by_metric.setdefault(split_key(key)[0], []).append(key)
    order = [*PREFERRED, *(e["metric"] for e in listed), *by_metric]
    metric = next(m for m in order if m in by_metric)
    candidates = by_metric[metric]
    key = next(
        (k for f in PREFERRED_FILTERS for k in candidates if split_key(k)[1] == f), candidates[0]
    )
    value = number(row[key])
    assert value is not None  # metric_keys keeps numbers only
    return Headline(key, metric, split_key(key)[1], value, _direction(metric, directions, listed))


def _direction(
    metric: str, directions: dict[str, bool | None], listed: list[dict[str, Any]]
) -> bool:
    stated = directions.get(metric)
    if isinstance(stated, bool):
        return stated
    for entry in listed:
        if entry["metric"] == metric and isinstance(entry.get("higher_is_better"), bool):
            return bool(entry["higher_is_better"])
    return metric not in LOWER_IS_BETTER


def aggregation(metric: str, listed: list[dict[str, Any]]) -> str | None:
    for entry in listed:
        if entry["metric"] == metric:
            value = entry.get("aggregation")
            return value if isinstance(value, str) else None
    return None


def row_metrics(row: dict[str, Any]) -> dict[str, Any]:
    """Every value of the row but its labels: metric/filter pairs, stderrs ("N/A" kept), counts."""
    values = json_safe({k: v for k, v in row.items() if k not in ("alias", "name")})
    assert isinstance(values, dict)
    return values


def quirks_of(row: dict[str, Any]) -> list[str]:
    found = []
    values = [v for k, v in row.items() if k not in NON_METRIC_KEYS]
    if any(isinstance(v, float) and not math.isfinite(v) for v in values):
        found.append("non_finite_metric_values")
    if any(isinstance(v, str) for k, v in row.items() if "_stderr" in k):
        found.append("stderr_not_available")
    return found
