"""Comparisons of two sides over the read models, and the stored ones read back.

A side is `[agent@]provider:model`. For each benchmark it stands for the
newest acceptable run of that provider and model (and agent, when named), as
the `candidates` table holds them at the chosen ledger position. A stored
comparison is read from its `ComparisonRecorded` event and never recomputed.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from statistics import fmean
from typing import Any, Protocol

from benchledger.adapters.publication.queries import Queries
from benchledger.domain.comparison_stats import (
    Bootstrap,
    PairedStats,
    holm,
    paired_stats,
    verdict,
)
from benchledger.domain.errors import NotFoundError
from benchledger.domain.model_identity import resolve_model
from benchledger.domain.pairing import differing_config_keys
from benchledger.domain.stats import bootstrap_ci, sign_test_p, winner
from benchledger.projections.latest_select import REASON

# The runs of one model_id (`projections.models`): the side's model as a stated name, else
# the id its rules and the aliases give it; its provider as stated, or as the id implies
# where a source states none (a SWE-bench leaderboard's row).
SAME_MODEL = (
    "run_id IN (SELECT run_id FROM runs WHERE model_id = coalesce((SELECT model_id FROM models "
    "WHERE name = ?), (SELECT model_id FROM models WHERE rule_id = ? AND joined_by = 'alias' "
    "LIMIT 1), ?) AND "
    "(lower(provider) = ? OR (coalesce(provider, '') IN ('', 'unknown') AND "
    "(SELECT provider FROM models WHERE name = runs.model) = ?)))"
)
SPEC = re.compile(r"^(?:(?P<agent>[^@:\s]+)@)?(?P<provider>[^@:\s]+):(?P<model>[^@\s]+)$")
# A run `latest` could publish (for any agent, calibration harnesses included).
ACCEPTABLE = f"kind = 'run' AND stale = 0 AND ({REASON}) IS NULL"
NEWEST = "ORDER BY coalesce(started_at, recorded_at) DESC, run_id DESC"
OUTCOME_VALUES = {"passed": 1.0, "failed": 0.0}


@dataclass(frozen=True)
class Side:
    provider: str
    model: str
    agent: str | None = None

    @property
    def spec(self) -> str:
        prefix = f"{self.agent}@" if self.agent else ""
        return f"{prefix}{self.provider}:{self.model}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "agent": self.agent,
            "provider": self.provider,
            "model": self.model,
        }

    def where(self) -> tuple[str, list[str]]:
        """SQL over `candidates` for this side's runs: those of the model's id (the model
        as any source spelled it) and of the provider stated, or implied by the id where
        the source states none; a named agent is matched exactly; without one, synthetic
        calibration runs are no side's results."""
        sql, params = same_model(self.provider, self.model)
        if self.agent:
            sql += " AND agent = ?"
            params.append(self.agent)
        else:
            sql += " AND synthetic = 0"
        return sql, params


def same_model(provider: str, model: str) -> tuple[str, list[str]]:
    """SQL over `candidates` (or `runs`) for the runs of `provider:model` (`SAME_MODEL`)."""
    rule_id = resolve_model(model).model_id
    return SAME_MODEL, [model, rule_id, rule_id, provider, provider]


def parse_side(text: str) -> Side:
    """`[agent@]provider:model`, provider lowercased; ValueError if malformed."""
    match = SPEC.match(text.strip())
    if not match:
        raise ValueError(f"'{text}' is not [agent@]provider:model")
    return Side(
        provider=match["provider"].lower(), model=match["model"], agent=match["agent"] or None
    )


def new_comparison_id(now: datetime | None = None) -> str:
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"cmp_{moment:%Y%m%dT%H%M%SZ}_{secrets.token_hex(4)}"


def chosen_run(queries: Queries, benchmark: str, side: Side) -> dict[str, Any] | None:
    """The newest acceptable run of this side on this benchmark, or None."""
    where, params = side.where()
    cursor = queries.conn.execute(
        "SELECT run_id, agent, config, score, unit, higher_is_better FROM candidates "
        f"WHERE benchmark = ? AND {where} AND {ACCEPTABLE} {NEWEST} LIMIT 1",
        [benchmark, *params],
    )
    row = cursor.fetchone()
    if row is None:
        return None
    return dict(zip([d[0] for d in cursor.description], row, strict=True))


class Selecting(Protocol):
    """A side of a comparison or head-to-head: SQL over `candidates` for its runs."""

    def where(self) -> tuple[str, list[str]]: ...


def benchmarks_of(queries: Queries, a: Selecting, b: Selecting) -> list[str]:
    """Every benchmark where either side has an acceptable run, by name."""
    clauses, params = [], []
    for side in (a, b):
        where, side_params = side.where()
        clauses.append(f"({where})")
        params += side_params
    rows = queries.conn.execute(
        f"SELECT DISTINCT benchmark FROM candidates WHERE ({' OR '.join(clauses)}) "
        f"AND {ACCEPTABLE} ORDER BY benchmark",
        params,
    ).fetchall()
    return [str(r[0]) for r in rows]


def unknown_benchmarks(queries: Queries, benchmarks: list[str]) -> list[str]:
    """Names that neither the benchmark registry nor any run has heard of."""
    known = {
        str(r[0])
        for r in queries.conn.execute(
            "SELECT benchmark FROM benchmarks UNION SELECT DISTINCT benchmark FROM candidates"
        )
    }
    return [b for b in benchmarks if b not in known]


@dataclass(frozen=True)
class Method:
    """How `compare` decides: recorded with each comparison, so it can be read back."""

    tolerance: float = 0.05
    alpha: float = 0.05
    bootstrap: Bootstrap = "none"
    seed: int = 0
    resamples: int = 10_000

    def as_dict(self) -> dict[str, Any]:
        return {
            "tolerance": self.tolerance,
            "alpha": self.alpha,
            "bootstrap": self.bootstrap,
            "seed": self.seed,
            "resamples": self.resamples,
            "correction": "holm",
            "orientation": "B - A",
        }


def compare(
    queries: Queries, a: Side, b: Side, benchmarks: list[str], method: Method | None = None
) -> list[dict[str, Any]]:
    """One row per benchmark: both scores, the delta B - A, and, when the two runs are
    the same work, the paired statistics of B against A and B's status; p-values are
    Holm-adjusted across the benchmarks compared."""
    method = method or Method()
    rows, stats = [], []
    for benchmark in benchmarks:
        run_a = chosen_run(queries, benchmark, a)
        run_b = chosen_run(queries, benchmark, b)
        higher = _direction(queries, benchmark, run_a, run_b)
        row, paired_b_a = honest_row(queries, benchmark, run_a, run_b, higher, method)
        rows.append(row)
        stats.append(paired_b_a)
    adjusted = holm([s.p_value if s is not None else None for s in stats])
    for row, s, p_holm in zip(rows, stats, adjusted, strict=True):
        if s is None:
            continue
        if row["paired"] is not None:
            row["paired"]["p_holm"] = p_holm
        row["status"], row["status_rule"] = verdict(
            s,
            tolerance=method.tolerance,
            higher_is_better=bool(row["higher_is_better"]),
            alpha=method.alpha,
            adjusted_p=p_holm,
        )
    return rows


def honest_row(
    queries: Queries,
    benchmark: str,
    run_a: dict[str, Any] | None,
    run_b: dict[str, Any] | None,
    higher: bool,
    method: Method,
) -> tuple[dict[str, Any], PairedStats | None]:
    """A benchmark's row and, when its runs pair, B's paired statistics against A. A
    benchmark one side lacks is `missing`; runs of different configs are `not comparable`
    and name the keys that differ: neither is anyone's win."""
    row = comparison_row(queries, benchmark, run_a, run_b, higher, cells=False)
    row["paired"] = None
    if run_a is None or run_b is None:
        row["winner"] = "n/a"
        row["status"] = "missing"
        row["status_rule"] = f"only {'B' if run_a is None else 'A'} ran it"
        return row, None
    differ = differing_config_keys(
        _config(run_a), _config(run_b), agent_a=run_a["agent"], agent_b=run_b["agent"]
    )
    if differ:
        row["winner"] = "n/a"
        row["status"] = "not comparable"
        row["status_rule"] = f"config differs: {', '.join(differ)}"
        row["config_differs"] = differ
        return row, None
    a_values, a_clusters = cell_values_and_clusters(queries, run_a["run_id"])
    b_values, b_clusters = cell_values_and_clusters(queries, run_b["run_id"])
    stats = paired_stats(
        b_values,
        a_values,
        clusters={**a_clusters, **b_clusters},
        bootstrap=method.bootstrap,
        seed=method.seed,
        resamples=method.resamples,
    )
    row["stats"] = stats.as_dict()
    if stats.n_paired == 0:
        return row, stats
    row["paired"] = {
        "cells": stats.n_paired,
        "mean_difference": stats.mean_diff,
        "ci95_low": stats.ci95[0] if stats.ci95 else None,
        "ci95_high": stats.ci95[1] if stats.ci95 else None,
        "p": stats.p_value,
        "test": _test_name(stats),
    }
    return row, stats


def _test_name(stats: PairedStats) -> str | None:
    if stats.p_value is None:
        return None
    if stats.binary and not stats.clustered:
        return "mcnemar_exact"
    return "paired_t_clustered" if stats.clustered else "paired_t"


def _config(run: dict[str, Any]) -> dict[str, Any]:
    raw = run.get("config")
    value = json.loads(raw) if isinstance(raw, str) and raw else raw
    return value if isinstance(value, dict) else {}


def comparison_row(
    queries: Queries,
    benchmark: str,
    run_a: dict[str, Any] | None,
    run_b: dict[str, Any] | None,
    higher: bool | None,
    *,
    cells: bool = True,
) -> dict[str, Any]:
    """One benchmark's row: both runs' scores (and statuses, when the runs state them),
    the delta B - A, the winner, and (with `cells`) the paired per-cell difference as an
    imported comparison shows it."""
    a_score = run_a["score"] if run_a else None
    b_score = run_b["score"] if run_b else None
    row = {
        "benchmark_id": benchmark,
        "a_score": a_score,
        "b_score": b_score,
        "delta": b_score - a_score if a_score is not None and b_score is not None else None,
        "higher_is_better": higher,
        "winner": winner(a_score, b_score, higher),
        "a_run_id": run_a["run_id"] if run_a else None,
        "b_run_id": run_b["run_id"] if run_b else None,
    }
    if any(run and "status" in run for run in (run_a, run_b)):
        row["a_status"] = run_a["status"] if run_a else "missing"
        row["b_status"] = run_b["status"] if run_b else "missing"
    row["unit"] = (run_a or {}).get("unit") or (run_b or {}).get("unit")
    if cells:
        row["paired"] = (
            paired(queries, run_a["run_id"], run_b["run_id"]) if run_a and run_b else None
        )
    return row


def _direction(
    queries: Queries,
    benchmark: str,
    run_a: dict[str, Any] | None,
    run_b: dict[str, Any] | None,
) -> bool:
    """A's direction, else B's, else the benchmark's, else higher is better."""
    for run in (run_a, run_b):
        if run and run["higher_is_better"] is not None:
            return bool(run["higher_is_better"])
    row = queries.conn.execute(
        "SELECT higher_is_better FROM benchmarks WHERE benchmark = ?", (benchmark,)
    ).fetchone()
    return True if row is None or row[0] is None else bool(row[0])


def cell_values_and_clusters(
    queries: Queries, run_id: str
) -> tuple[dict[str, float], dict[str, str]]:
    """Each cell's value by key (its score, else 1 for passed and 0 for failed; the first
    cell of a key) and the clusters the cells state."""
    values: dict[str, float] = {}
    clusters: dict[str, str] = {}
    for key, outcome, score, cluster in queries.conn.execute(
        "SELECT key, outcome, score, cluster FROM cells WHERE run_id = ? ORDER BY rowid",
        (run_id,),
    ):
        value = score if score is not None else OUTCOME_VALUES.get(outcome)
        if value is not None and key not in values:
            values[key] = float(value)
            if cluster is not None:
                clusters[key] = str(cluster)
    return values, clusters


def paired(queries: Queries, a_run_id: str, b_run_id: str) -> dict[str, Any] | None:
    """B - A over the cells both runs scored, with a bootstrap 95% interval of the mean
    and an exact sign-test p-value; None when they share no cell. The sign test is
    two-sided, so which direction counts as a win does not change it."""
    a_values, _ = cell_values_and_clusters(queries, a_run_id)
    b_values, _ = cell_values_and_clusters(queries, b_run_id)
    differences = [b_values[k] - a_values[k] for k in sorted(a_values.keys() & b_values.keys())]
    if not differences:
        return None
    low, high = bootstrap_ci(differences)
    return {
        "cells": len(differences),
        "mean_difference": fmean(differences),
        "ci95_low": low,
        "ci95_high": high,
        "sign_test_p": sign_test_p(
            sum(d > 0 for d in differences), sum(d < 0 for d in differences)
        ),
    }


def stored_comparison(queries: Queries, comparison_id: str) -> dict[str, Any]:
    """The comparison exactly as its event recorded it; else, for a comparison another
    system ran (the orchestrator's `compare`), or one whose `compare --run` stopped
    before recording it, the one its tagged runs make."""
    row = queries.conn.execute(
        "SELECT data FROM events WHERE type = 'ComparisonRecorded' "
        "AND json_extract(data, '$.comparison_id') = ? ORDER BY position LIMIT 1",
        (comparison_id,),
    ).fetchone()
    if row is None:
        return tagged_comparison(queries, comparison_id)
    data: dict[str, Any] = json.loads(row[0])
    return data


# Where an imported run states the comparison its source tagged it with, or where a run
# `compare --run` started states its comparison.
COMPARISON_TAG = (
    "coalesce(json_extract(provenance, '$.source_columns.comparison_id'), "
    "json_extract(provenance, '$.comparison_id'))"
)


def tagged_comparison(queries: Queries, comparison_id: str) -> dict[str, Any]:
    """An imported comparison, as the orchestrator's view-comparison shows it: its runs
    tagged with the id, in start order, form two sides by (provider, model) in order of
    appearance; one row per benchmark either side ran. NotFoundError without runs or with
    only one side."""
    cursor = queries.conn.execute(
        "SELECT run_id, benchmark, provider, model, model_id, status, score, unit, "
        "higher_is_better "
        f"FROM runs WHERE {COMPARISON_TAG} = ? AND superseded_by IS NULL "
        "ORDER BY started_at, run_key",
        (comparison_id,),
    )
    names = [d[0] for d in cursor.description]
    runs = [dict(zip(names, r, strict=True)) for r in cursor]
    if not runs:
        raise NotFoundError(f"no comparison '{comparison_id}'")
    # Sides by model_id (one model however its runs spell it), shown by the first run's name.
    sides: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    stated: dict[tuple[str, str], str] = {}
    for run in runs:
        key = (run["provider"], run["model_id"] or run["model"])
        stated.setdefault(key, run["model"])
        side = sides.setdefault(key, {})
        side[run["benchmark"]] = run  # the side's last run of a benchmark
    if len(sides) < 2:
        raise NotFoundError(
            f"comparison '{comparison_id}' has runs of one side only "
            f"({runs[0]['provider']}:{runs[0]['model']})"
        )
    (key_a, side_a), (key_b, side_b) = list(sides.items())[:2]
    benchmarks = list(dict.fromkeys([*side_a, *side_b]))
    rows = []
    for benchmark in benchmarks:
        a, b = side_a.get(benchmark), side_b.get(benchmark)
        directions = [
            r["higher_is_better"] for r in (a, b) if r and r["higher_is_better"] is not None
        ]
        higher = bool(directions[0]) if directions else None
        rows.append(comparison_row(queries, benchmark, a, b, higher))

    def spec(key: tuple[str, str]) -> dict[str, Any]:
        provider, model = key[0], stated[key]
        return {"spec": f"{provider}:{model}", "agent": None, "provider": provider, "model": model}

    return {
        "comparison_id": comparison_id,
        "a": spec(key_a),
        "b": spec(key_b),
        "rows": rows,
        "position": None,
        "source": "imported",
    }
