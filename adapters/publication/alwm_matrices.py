"""Grid and pairwise matrices of the ledger's variant x prompt runs (`matrix --grid`,
`matrix --pairwise`), read from the projected `runs`, `cells` and `run_fingerprints`.

Which runs: the current version of each run (not superseded, not invalidated) whose
cells are all variant x prompt shaped (`domain.variant_matrix`), narrowed by
benchmark, campaign, run group or run. Each run gets its own matrices: variants of
different runs ran under different configs, and a grid mixing them would compare
what alwm never compared.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchledger.adapters.publication.queries import Queries
from benchledger.domain import comparison_stats as cs
from benchledger.domain import variant_matrix as vm


@dataclass(frozen=True)
class Selection:
    include_benchmarks: Sequence[str] = ()
    exclude_benchmarks: Sequence[str] = ()
    campaign: str | None = None
    run_group: str | None = None
    runs: Sequence[str] = ()


@dataclass(frozen=True)
class RunMatrices:
    run: dict[str, Any]
    grid: vm.Grid
    pairs: list[vm.Pair]


def select_runs(queries: Queries, selection: Selection) -> list[dict[str, Any]]:
    """The selected runs' rows (run_id, run_key, benchmark, agent, campaign_id), in
    benchmark, campaign, run-index and key order."""
    where = ["r.superseded_by IS NULL", "coalesce(r.invalidated, 0) = 0"]
    params: list[Any] = []
    if selection.include_benchmarks:
        where.append(f"r.benchmark IN ({_marks(selection.include_benchmarks)})")
        params += list(selection.include_benchmarks)
    if selection.exclude_benchmarks:
        where.append(f"r.benchmark NOT IN ({_marks(selection.exclude_benchmarks)})")
        params += list(selection.exclude_benchmarks)
    if selection.campaign is not None:
        where.append("f.campaign_id = ?")
        params.append(selection.campaign)
    if selection.run_group is not None:
        where.append("r.run_group_id LIKE ?")
        params.append(selection.run_group.lower() + "%")
    if selection.runs:
        ids = [queries.find_run(ref)["run_id"] for ref in selection.runs]
        where.append(f"r.run_id IN ({_marks(ids)})")
        params += ids
    sql = (
        "SELECT r.run_id, r.run_key, r.benchmark, r.agent, r.model, r.status, "
        "f.campaign_id, f.run_index FROM runs r "
        "LEFT JOIN run_fingerprints f ON f.run_id = r.run_id "
        f"WHERE {' AND '.join(where)} "
        "ORDER BY r.benchmark, f.campaign_id, f.run_index, r.run_key, r.run_id"
    )
    cursor = queries.conn.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


def run_cells(queries: Queries, run_id: str) -> list[vm.VariantCell] | None:
    rows = queries.conn.execute(
        "SELECT key, score, metrics FROM cells WHERE run_id = ? ORDER BY key", (run_id,)
    ).fetchall()
    return vm.variant_cells((key, score, json.loads(m) if m else None) for key, score, m in rows)


def matrices(
    queries: Queries,
    selection: Selection,
    *,
    weights: Mapping[str, float] | None = None,
    tie_tolerance: float = 0.0,
) -> list[RunMatrices]:
    """Every selected variant x prompt run with its grid and pairs; other runs are left
    out (a named run that is not shaped so is an error the caller reports)."""
    out = []
    for run in select_runs(queries, selection):
        cells = run_cells(queries, run["run_id"])
        if cells is None:
            continue
        grid = vm.grid(cells, weights, _prompt_order(queries, run["run_id"]))
        out.append(RunMatrices(run, grid, vm.pairwise(grid, tie_tolerance)))
    return out


def _prompt_order(queries: Queries, run_id: str) -> list[str]:
    """The run's own prompt list (alwm's `prompt_ids`, kept in its config), if any."""
    row = queries.conn.execute("SELECT config FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    config = json.loads(row[0]) if row and row[0] else {}
    prompts = config.get("prompt_ids") if isinstance(config, dict) else None
    return [p for p in prompts if isinstance(p, str)] if isinstance(prompts, list) else []


def parse_weights(text: str) -> dict[str, float]:
    """`criterion=weight,...` -> {criterion: weight}; raises ValueError naming the bad part."""
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"'{part}' is not criterion=weight")
        try:
            weight = float(value)
        except ValueError:
            raise ValueError(f"'{part}': the weight is not a number") from None
        if weight < 0 or weight != weight or weight == float("inf"):
            raise ValueError(f"'{part}': a weight must be a finite number >= 0")
        out[name.strip()] = weight
    if out and sum(out.values()) <= 0:
        raise ValueError("the weights sum to 0")
    return out


def _head(run: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "run_id": run["run_id"],
        "run_key": run["run_key"],
        "benchmark": run["benchmark"],
        "campaign_id": run["campaign_id"],
    }


def grid_document(m: RunMatrices, weights: Mapping[str, float] | None) -> dict[str, Any]:
    """A run's grid as JSON: alwm's `grid.json` layout (rows = variants, columns =
    prompts, `scores[row][col]`, null where the run has no such cell)."""
    return {
        **_head(m.run),
        "metric": "total_weighted_rubric_score" if not weights else "reweighted_rubric_score",
        "weights": dict(weights) if weights else None,
        "row_labels": list(m.grid.variants),
        "col_labels": list(m.grid.prompts),
        "scores": [list(row) for row in m.grid.scores],
    }


def grid_rows(m: RunMatrices) -> list[dict[str, Any]]:
    """One row per variant x prompt (long form, for CSV)."""
    return [
        {**_head(m.run), "variant": v, "prompt": p, "score": m.grid.score(v, p)}
        for v in m.grid.variants
        for p in m.grid.prompts
    ]


def pair_stats(m: RunMatrices) -> list[dict[str, Any]]:
    """Each pair's statistics, in `m.pairs` order: the paired comparison of the two
    variants' scores over their common prompts (`paired_stats`: mean difference, its
    SE and 95% interval, t-test p, detectable effect), Holm-adjusted across the run's
    unordered pairs (a vs b and b vs a are one test), and the exact sign test of wins
    against losses (ties dropped: McNemar's exact test on the two counts is that test)."""
    computed = []
    for p in m.pairs:
        stats = cs.paired_stats(
            dict(zip(p.prompts, p.a_scores, strict=True)),
            dict(zip(p.prompts, p.b_scores, strict=True)),
        )
        computed.append((p, stats))
    tests = sorted({tuple(sorted((p.a, p.b))) for p in m.pairs})
    p_of = {tuple(sorted((p.a, p.b))): s.p_value for p, s in computed}
    adjusted = dict(zip(tests, cs.holm([p_of[t] for t in tests]), strict=True))
    out = []
    for p, s in computed:
        sign_p = cs.mcnemar(p.wins, p.losses)[0]
        out.append(
            {
                "se": s.se,
                "ci95": list(s.ci95) if s.ci95 is not None else None,
                "p_value": s.p_value,
                "p_holm": adjusted[tuple(sorted((p.a, p.b)))],
                "sign_test_p": sign_p,
                "mde80": s.mde80,
            }
        )
    return out


def pair_row(m: RunMatrices, p: vm.Pair, stats: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {
        **_head(m.run),
        "variant_a": p.a,
        "variant_b": p.b,
        "prompts": len(p.prompts),
        "wins": p.wins,
        "losses": p.losses,
        "ties": p.ties,
        "only_a": p.only_a,
        "only_b": p.only_b,
        "mean_delta": p.mean_delta,
        "mean_abs_delta": p.mean_abs_delta,
        **(stats or {}),
    }
