"""`compare --run`: both sides of a comparison run here, as the orchestrator's `compare` runs them.

A side is `provider:model[@base_url]`. Each side runs the selected benchmarks through
the ordinary run path as its own run group (agent `compare` unless told otherwise);
both groups, and every run they start, are tagged with one comparison id. The config
gets what the orchestrator's compare adds: the side's base URL as `vllm_base_url`, and
`--max-examples N` as `max_examples`, `max_tasks`, `max_questions` and `sample` (whose
positive integer also becomes `limit`, see `effective_config`): every benchmark gets all
of them and reads the one it knows, so the work and its signature are the
orchestrator's. `--temperature T`, when given, is `temperature`.

Each benchmark's row is the orchestrator's (scores, delta B - A, winner, both statuses)
plus, when both runs succeeded with the same work, the paired statistics of B against A
over their cells (`head_to_head.paired`), Holm-adjusted across the benchmarks, and B's
status. The comparison is recorded, and `view-comparison` renders it from its event.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchledger.adapters.publication import head_to_head
from benchledger.adapters.publication.queries import Queries
from benchledger.domain.comparison_stats import holm, verdict
from benchledger.domain.pairing import differing_config_keys
from benchledger.domain.stats import winner

SAMPLING_KEYS = ("max_examples", "max_tasks", "max_questions", "sample")
RUN_FIELDS = (
    "run_id, run_key, benchmark, agent, provider, model, status, score, unit, "
    "higher_is_better, config, metrics, duration_seconds, error"
)
COLUMNS = ["cells", "ci95", "p", "p_holm", "status"]


@dataclass(frozen=True)
class RunSide:
    """A side to run: provider and model, and the OpenAI-compatible endpoint to use."""

    provider: str
    model: str
    base_url: str | None = None

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def spec(self) -> str:
        return f"{self.label}@{self.base_url}" if self.base_url else self.label

    def as_dict(self, agent: str) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "agent": agent,
            "provider": self.provider,
            "model": self.model,
            "base_url": self.base_url,
        }


def parse_run_side(text: str) -> RunSide:
    """`provider:model[@base_url]`, as the orchestrator's compare reads it: split at the
    first `@`, then at the first `:`; the provider lowercased. ValueError if malformed."""
    raw = text.strip()
    base_url: str | None = None
    if "@" in raw:
        raw, url = raw.split("@", 1)
        base_url = url.strip() or None
    if ":" not in raw:
        raise ValueError(f"'{text}' is not provider:model[@base_url]")
    provider, model = (part.strip() for part in raw.split(":", 1))
    if not provider or not model:
        raise ValueError(f"'{text}' is not provider:model[@base_url]: both are required")
    return RunSide(provider.lower(), model, base_url)


def side_extra(
    side: RunSide, max_examples: int | None, temperature: float | None
) -> dict[str, Any]:
    """The config a side adds to every benchmark's (see the module docstring)."""
    extra: dict[str, Any] = {}
    if side.base_url:
        extra["vllm_base_url"] = side.base_url
    if max_examples is not None:
        extra.update(dict.fromkeys(SAMPLING_KEYS, max_examples))
    if temperature is not None:
        extra["temperature"] = temperature
    return extra


def side_run(queries: Queries, run_id: str | None) -> dict[str, Any] | None:
    """A run as a side's entry needs it, its JSON columns decoded; None without one."""
    if run_id is None:
        return None
    cursor = queries.conn.execute(f"SELECT {RUN_FIELDS} FROM runs WHERE run_id = ?", (run_id,))
    row = cursor.fetchone()
    if row is None:
        return None
    run = dict(zip([d[0] for d in cursor.description], row, strict=True))
    for name in ("config", "metrics"):
        run[name] = json.loads(run[name]) if run[name] else {}
    return run


def side_entry(
    side: RunSide, outcome: dict[str, Any], run: dict[str, Any] | None
) -> dict[str, Any]:
    """One benchmark of a side as the orchestrator's compare-<id>.json lists it, with what
    this invocation did (`outcome`: ran it, or skipped it for an earlier run) and the
    run's key and attempt."""
    return {
        "benchmark_id": outcome["benchmark"],
        "run_id": run["run_id"] if run else None,
        "status": run["status"] if run else outcome["state"],
        "provider": side.provider,
        "model": side.model,
        "base_url": side.base_url,
        "score": run["score"] if run else None,
        "unit": run["unit"] if run else None,
        "higher_is_better": _bool(run["higher_is_better"]) if run else None,
        "metrics": run["metrics"] if run else {},
        "duration_seconds": run["duration_seconds"] if run else None,
        "error": (run["error"] if run else None) or outcome.get("reason"),
        "outcome": outcome["state"],
        "run_key": run["run_key"] if run else None,
        "attempt": outcome.get("attempt"),
    }


def rows(
    queries: Queries,
    benchmarks: list[str],
    a_runs: dict[str, dict[str, Any] | None],
    b_runs: dict[str, dict[str, Any] | None],
    tolerance: float,
    alpha: float = 0.05,
    *,
    unrun: Mapping[str, Mapping[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """One row per benchmark: the orchestrator's fields, then the paired statistics of B
    against A when both runs succeeded with the same work (the sides' base URLs aside).
    A side without a run has the status `unrun` gives it (by side, then benchmark: e.g.
    `refused`, or `skipped` for an incompatible agent), else `missing`."""
    built, stats = [], []
    for benchmark in benchmarks:
        run_a, run_b = a_runs.get(benchmark), b_runs.get(benchmark)
        row, paired = _row(queries, benchmark, run_a, run_b)
        for side in ("a", "b"):
            if row[f"{side}_run_id"] is None:
                row[f"{side}_status"] = (unrun or {}).get(side, {}).get(benchmark, "missing")
        built.append(row)
        stats.append(paired)
    adjusted = holm([s.p_value if s is not None else None for s in stats])
    for row, s, p_holm in zip(built, stats, adjusted, strict=True):
        if s is None:
            continue
        if s.n_paired == 0:
            row["status"], row["status_rule"] = "inconclusive", "the runs share no cell keys"
            continue
        row["paired"] = {
            "cells": s.n_paired,
            "mean_difference": s.mean_diff,
            "ci95_low": s.ci95[0] if s.ci95 else None,
            "ci95_high": s.ci95[1] if s.ci95 else None,
            "p": s.p_value,
            "p_holm": p_holm,
        }
        row["stats"] = s.as_dict()
        row["status"], row["status_rule"] = verdict(
            s,
            tolerance=tolerance,
            higher_is_better=row["higher_is_better"] is not False,
            alpha=alpha,
            adjusted_p=p_holm,
        )
    return built


def _row(
    queries: Queries,
    benchmark: str,
    run_a: dict[str, Any] | None,
    run_b: dict[str, Any] | None,
) -> tuple[dict[str, Any], Any]:
    a_score, b_score = _score(run_a), _score(run_b)
    directions = [
        _bool(r["higher_is_better"])
        for r in (run_a, run_b)
        if r and r["higher_is_better"] is not None
    ]
    higher = directions[0] if directions else None
    row: dict[str, Any] = {
        "benchmark_id": benchmark,
        "a_score": a_score,
        "b_score": b_score,
        "delta": b_score - a_score if a_score is not None and b_score is not None else None,
        "higher_is_better": higher,
        "winner": winner(a_score, b_score, higher),
        "a_run_id": run_a["run_id"] if run_a else None,
        "b_run_id": run_b["run_id"] if run_b else None,
        "a_status": run_a["status"] if run_a else "missing",
        "b_status": run_b["status"] if run_b else "missing",
        "unit": (run_a or {}).get("unit") or (run_b or {}).get("unit"),
        "paired": None,
    }
    failed = [
        f"{name} {run['status'] if run else 'did not run'}"
        for name, run in (("A", run_a), ("B", run_b))
        if run is None or run["status"] != "succeeded"
    ]
    if failed:
        row["status"], row["status_rule"] = "failed", "; ".join(failed)
        return row, None
    assert run_a is not None and run_b is not None
    differ = [
        key
        for key in differing_config_keys(
            run_a["config"], run_b["config"], agent_a=run_a["agent"], agent_b=run_b["agent"]
        )
        if key != "base_url" and not key.endswith("_base_url")
    ]
    if differ:
        row["status"] = "not comparable"
        row["status_rule"] = f"config differs: {', '.join(differ)}"
        row["config_differs"] = differ
        return row, None
    return row, head_to_head.paired(queries, run_b, run_a)


def _score(run: dict[str, Any] | None) -> float | None:
    """A side's score: a run that did not succeed has none to compare."""
    if run is None or run["status"] != "succeeded":
        return None
    score = run["score"]
    return None if score is None else float(score)


def _bool(value: Any) -> bool | None:
    return None if value is None else bool(value)


def document(stored: dict[str, Any]) -> dict[str, Any]:
    """compare-<id>.json: the orchestrator's shape ({comparison_id, created_at, a, b,
    rows}, each side {provider, model, base_url, runs}), and, added to it, each side's
    agent and run group, the statistics and the ledger position recorded."""
    execution = stored["execution"]
    doc: dict[str, Any] = {
        "comparison_id": stored["comparison_id"],
        "created_at": execution["created_at"],
    }
    for name in ("a", "b"):
        side = stored[name]
        doc[name] = {
            "provider": side["provider"],
            "model": side["model"],
            "base_url": side.get("base_url"),
            "runs": execution["sides"][name]["runs"],
            "agent": side.get("agent"),
            "run_group": execution["sides"][name]["run_group"],
        }
    doc["rows"] = stored["rows"]
    doc["statistics"] = stored.get("statistics") or {}
    doc["position"] = stored.get("position")
    return doc


# -- the table ----------------------------------------------------------------------------


def render(stored: dict[str, Any]) -> str:
    """The orchestrator's compare output (its header, then benchmark, A, B, delta (B-A)
    and winner, columns padded and joined by ` | `), with the paired statistics' columns
    after the winner and, under the table, which rule decided each status."""
    a, b = stored["a"], stored["b"]
    label_a, label_b = f"{a['provider']}:{a['model']}", f"{b['provider']}:{b['model']}"
    lines = [
        f"Comparison ID: {stored['comparison_id']}",
        f"A: {label_a}{' @ ' + a['base_url'] if a.get('base_url') else ''}",
        f"B: {label_b}{' @ ' + b['base_url'] if b.get('base_url') else ''}",
        f"Benchmarks: {', '.join(stored['benchmarks'])}",
        "",
    ]
    headers = ["benchmark", f"A: {label_a}", f"B: {label_b}", "delta (B-A)", "winner", *COLUMNS]
    body = [
        [
            str(row["benchmark_id"]),
            _side_score(row, "a"),
            _side_score(row, "b"),
            _delta(row["delta"]),
            str(row["winner"]),
            *(_stat(row, column) for column in COLUMNS),
        ]
        for row in stored["rows"]
    ]
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(headers)]
    lines.append(" | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    lines.append("-+-".join("-" * w for w in widths))
    lines += [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in body]
    lines.append("")
    lines += [
        f"{row['benchmark_id']}: {row['status']}: {row['status_rule']}" for row in stored["rows"]
    ]
    statistics = stored.get("statistics") or {}
    if statistics:
        lines.append(
            f"status of B against A; Holm-adjusted p, alpha {statistics['alpha']:g}, "
            f"tolerance {statistics['tolerance']:g}"
        )
    return "\n".join(lines)


def _side_score(row: dict[str, Any], side: str) -> str:
    score, status = row[f"{side}_score"], row[f"{side}_status"]
    if score is not None:
        return f"{score:.4f}"
    return "n/a" if status == "succeeded" else f"n/a ({status})"


def _delta(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{'+' if value > 0 else ''}{value:.4f}"


def _stat(row: dict[str, Any], column: str) -> str:
    if column == "status":
        return str(row["status"])
    paired = row.get("paired") or {}
    if not paired:
        return ""
    if column == "cells":
        return str(paired["cells"])
    if column == "ci95":
        low, high = paired.get("ci95_low"), paired.get("ci95_high")
        return "" if low is None or high is None else f"[{low:.4f}, {high:.4f}]"
    p = paired.get(column)
    return "" if p is None else "<0.0001" if p < 0.0001 else f"{p:.4f}"
