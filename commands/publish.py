"""Commands over what may be published: latest, matrix, high-score."""

from __future__ import annotations

import json
import secrets
from datetime import UTC, date, datetime
from typing import Any

import click

from benchledger.adapters.publication.alwm_matrices import Selection
from benchledger.adapters.publication.compare import cell_values_and_clusters
from benchledger.adapters.publication.publication import load
from benchledger.adapters.publication.queries import Queries
from benchledger.commands import variant_matrices
from benchledger.commands.context import LedgerContext, actor, as_of_option
from benchledger.commands.output import emit, output_options, short
from benchledger.commands.selection import benchmark_filters, split
from benchledger.domain.comparison_stats import ALPHA
from benchledger.domain.ranking import Contender, tie_groups

pass_ledger = click.make_pass_decorator(LedgerContext)


@click.command()
@click.option(
    "--quarantine",
    "table",
    flag_value="quarantine",
    help="Show the quarantined rows and their reasons instead",
)
@click.option(
    "--baselines",
    "table",
    flag_value="baselines",
    help="Show the synthetic calibration baselines instead",
)
@click.option("--benchmark", metavar="NAME", help="Only this benchmark (needed by --rank)")
@click.option(
    "--rank",
    is_flag=True,
    help="Rank the benchmark's agents by score in tie groups of a paired, Holm-corrected test",
)
@click.option(
    "--record",
    is_flag=True,
    help="With --rank: append the ranking to the ledger (the `rankings` read model)",
)
@click.option("--by", help="With --record: who asked (default: your user name)")
@benchmark_filters
@as_of_option
@output_options
@pass_ledger
def latest(
    ctx: LedgerContext,
    table: str | None,
    benchmark: str | None,
    rank: bool,
    record: bool,
    by: str | None,
    include_benchmarks: str,
    exclude_benchmarks: str,
    as_of: str | None,
    fmt: str | None,
) -> None:
    """The newest publishable run per benchmark and agent.

    A newer failed, interrupted, invalidated or non-real (demo, mock, sample...)
    run never displaces a good row; it lands in --quarantine with its reason.
    The delta to a benchmark's high score is computed now, in the score's unit
    and direction (positive means ahead).

    --benchmark B --rank ranks B's agents by score in tie groups: an agent is
    tied with the leader when the paired test of its cells against the
    leader's is not significant after Holm's correction over the agents
    compared with the leader; the rest form the next group (docs/statistics.md).
    --record appends that ranking to the ledger, so Datasette's `rankings`
    table (and its "Tie groups of a benchmark" query) shows it.

    \b
    Example:
        benchledger latest
        benchledger latest --quarantine --include-benchmarks bfcl,gaia
        benchledger latest --as-of 2026-05-01T00:00:00Z --json
        benchledger latest --benchmark bfcl --rank
        benchledger latest --benchmark bfcl --rank --record --by ana
    """
    if rank and not benchmark:
        raise click.UsageError("--rank needs --benchmark")
    if record and not rank:
        raise click.UsageError("--record records a ranking: it needs --rank")
    if rank and table:
        raise click.UsageError("--rank ranks the latest rows, not --quarantine or --baselines")
    ctx.publishes = True  # a ranking (--record) is all it appends
    queries = ctx.queries(as_of)
    include = [benchmark] if benchmark else split(include_benchmarks)
    view = load(queries, include, split(exclude_benchmarks))
    if rank:
        ranked = ranking(queries, [row for _, row in sorted(view.latest.items())])
        if record and benchmark:
            position, head = queries.head()
            ranking_id = f"rank_{datetime.now(UTC):%Y%m%dT%H%M%SZ}_{secrets.token_hex(4)}"
            ctx.publisher.ledger.record_ranking(
                ranking_id,
                benchmark=benchmark,
                rows=ranked,
                position=position,
                head_sha256=head,
                actor=actor(by),
                statistics={"test": "paired vs leader", "correction": "holm", "alpha": ALPHA},
            )
            ctx.publisher.runner.catch_up()
            click.echo(f"Recorded ranking {ranking_id} at ledger position {position}", err=True)
        emit_ranking(ranked, fmt)
        return
    source = {"quarantine": view.quarantine, "baselines": view.baselines}.get(
        table or "", view.latest
    )
    rows = [view.with_high_score(row) for _, row in sorted(source.items())]
    if fmt in ("json", "nl", "csv"):
        emit(rows, fmt)
        return
    columns = ["benchmark", "agent", "provider", "model", "score", "unit"]
    columns += (
        ["quarantine_reason"]
        if table == "quarantine"
        else ["high_score_value", "delta_to_high_score"]
    )
    emit(
        [{**r, "run": short(r["run_id"])} for r in rows],
        fmt,
        columns=[*columns, "run", "updated_at"],
        empty="No rows.",
    )


RANK_COLUMNS = [
    "rank", "group", "agent", "provider", "model", "score", "unit", "p_holm", "rule", "run",
]  # fmt: skip


def ranking(queries: Queries, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tie-group ranking of one benchmark's latest rows (one per agent)."""
    by_agent = {row["agent"]: row for row in rows}
    contenders = []
    for row in rows:
        values, clusters = cell_values_and_clusters(queries, row["run_id"])
        contenders.append(Contender(row["agent"], row["score"], values, clusters))
    higher = all(row.get("higher_is_better") is not False for row in rows)
    return [
        {
            "rank": r["rank"],
            "group": r["group"],
            **{k: by_agent[r["name"]][k] for k in ("benchmark", "agent", "provider", "model")},
            "score": r["score"],
            "unit": by_agent[r["name"]]["unit"],
            "leader": r["leader"],
            "cells": r["paired_cells"],
            "p_vs_leader": r["p_vs_leader"],
            "p_holm": r["p_holm"],
            "rule": r["rule"],
            "run_id": by_agent[r["name"]]["run_id"],
        }
        for r in tie_groups(contenders, higher_is_better=higher)
    ]


def emit_ranking(ranked: list[dict[str, Any]], fmt: str | None) -> None:
    """The ranking as data, or as a table with the rule that placed each agent."""
    if fmt in ("json", "nl", "csv"):
        emit(ranked, fmt)
        return
    shown = [
        {
            **r,
            "p_holm": "" if r["p_holm"] is None else f"{r['p_holm']:.4f}",
            "run": short(r["run_id"]),
        }
        for r in ranked
    ]
    emit(
        shown,
        fmt,
        columns=RANK_COLUMNS,
        empty="No rows.",
    )


REQUIRED_AGENTS_HELP = (
    "Require these agents of every benchmark in scope (default: the registry's, an imported "
    "contract's or the orchestrator's; none where nothing states any)"
)


@click.command()
@click.option(
    "--harnesses",
    default="",
    metavar="A,B",
    help="Agents as columns, a cell of each for every benchmark (default: the agents with a "
    "row or required)",
)
@click.option("--required-agents", default="", metavar="A,B", help=REQUIRED_AGENTS_HELP)
@benchmark_filters
@as_of_option
@output_options
@click.option(
    "--grid",
    "kind",
    flag_value="grid",
    help="Per variant x prompt run: variants x prompts, the weighted rubric score",
)
@click.option(
    "--pairwise",
    "kind",
    flag_value="pairwise",
    help="Per variant x prompt run: variant vs variant wins, losses, ties over prompts",
)
@click.option("--campaign", metavar="ID", help="Only the member runs of this alwm campaign")
@click.option("--run-group", metavar="ID", help="Only runs of this run group (id or prefix)")
@click.option("--run", "runs", multiple=True, metavar="RUN", help="Only this run (repeatable)")
@click.option(
    "--weights",
    default="",
    metavar="C=W,...",
    help="Re-score each cell from its criteria with these weights (default: the recorded score)",
)
@click.option(
    "--tie-tolerance",
    default=0.0,
    show_default=True,
    type=float,
    help="Score differences up to this count as ties (--pairwise)",
)
@pass_ledger
def matrix(
    ctx: LedgerContext,
    harnesses: str,
    required_agents: str,
    include_benchmarks: str,
    exclude_benchmarks: str,
    as_of: str | None,
    fmt: str | None,
    kind: str | None,
    campaign: str | None,
    run_group: str | None,
    runs: tuple[str, ...],
    weights: str,
    tie_tolerance: float,
) -> None:
    """Benchmarks x agents: the latest score, or why a cell has none.

    A benchmark has a cell for each agent with a row of it, each agent it
    requires (--required-agents, else its declared or derived rules) and each
    its rules name as unable to run it; `complete` is empty for a benchmark that
    requires no agent because nothing states any.

    With --grid or --pairwise, the matrices of runs whose cells are variants x
    prompts (alwm runs, or any run whose cells carry variant_id / prompt_id
    metrics or have '<variant>__<prompt>' keys), one per run: the grid of
    weighted rubric scores, or each variant against each other over the prompts
    both answered (a prompt only one side has is counted apart, never a win).

    --json prints the matrix contract; --csv and --nl one row per benchmark
    and agent: its cell (state, score, run) and whether the benchmark is
    complete. With --grid, --json prints one document per run and --csv / --nl
    one row per variant and prompt; with --pairwise, one row per variant pair.

    \b
    Example:
        benchledger matrix
        benchledger matrix --harnesses eliza,hermes,openclaw --json
        benchledger matrix --required-agents eliza,hermes
        benchledger matrix --csv
        benchledger matrix --grid --campaign multi_suite
        benchledger matrix --pairwise --include-benchmarks bench.x --csv
    """
    if kind is not None:
        selection = Selection(
            split(include_benchmarks), split(exclude_benchmarks), campaign, run_group, runs
        )
        variant_matrices.show(
            ctx,
            kind,
            selection,
            as_of=as_of,
            weights=weights,
            tie_tolerance=tie_tolerance,
            fmt=fmt,
        )
        return
    if campaign or run_group or runs or weights:
        raise click.UsageError(
            "--campaign, --run-group, --run and --weights need --grid or --pairwise"
        )
    view = load(ctx.queries(as_of), split(include_benchmarks), split(exclude_benchmarks))
    if split(required_agents):
        view = view.requiring(split(required_agents))
    contract = view.matrix(split(harnesses) or None)
    if fmt == "json":
        click.echo(json.dumps(contract, indent=2, sort_keys=True))
        return
    if fmt in ("csv", "nl"):
        emit(matrix_rows(contract), fmt, empty="No benchmarks.")
        return
    rows = []
    for benchmark, entry in contract["benchmarks"].items():
        row = {"benchmark": benchmark}
        for harness, cell in entry["cells"].items():
            row[harness] = f"{cell['score']:.4g}" if cell["state"] == "succeeded" else cell["state"]
        row["complete"] = {True: "yes", False: "no"}.get(entry["complete"], "-")
        rows.append(row)
    emit(
        rows,
        None,
        columns=["benchmark", *contract["harnesses"], "complete"],
        empty="No benchmarks.",
    )
    summary = contract["summary"]
    click.echo(
        f"\n{contract['status']}: {summary['complete_benchmarks']} of "
        f"{summary['benchmarks']} benchmarks complete",
        err=True,
    )


def matrix_rows(contract: dict[str, Any]) -> list[dict[str, Any]]:
    """The matrix as rows: one per benchmark and agent, its cell as the contract has it."""
    return [
        {"benchmark": benchmark, "agent": harness, **cell, "complete": entry["complete"]}
        for benchmark, entry in contract["benchmarks"].items()
        for harness, cell in entry["cells"].items()
    ]


@click.group(name="high-score")
def high_score() -> None:
    """Reference the best published score of a benchmark.

    \b
    Example:
        benchledger high-score set bfcl --label gpt-5 --value 0.891 --unit accuracy
    """


@high_score.command(name="set")
@click.argument("benchmark")
@click.option("--label", required=True, help="Who holds it, e.g. a model or system name")
@click.option("--value", required=True, type=float, help="The score")
@click.option("--unit", help="Its unit (a percent is rescaled against fractions)")
@click.option("--source", help="Where it was published")
@click.option(
    "--as-of",
    "as_of",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    help="When it was published (YYYY-MM-DD)",
)
@click.option("--by", help="Who recorded it (default: your user name)")
@pass_ledger
def high_score_set(
    ctx: LedgerContext,
    benchmark: str,
    label: str,
    value: float,
    unit: str | None,
    source: str | None,
    as_of: datetime | None,
    by: str | None,
) -> None:
    """Record a high-score reference; deltas are computed whenever they are read.

    \b
    Example:
        benchledger high-score set swe_bench_verified --label "OpenHands" --value 72 --unit %
    """
    del by  # the reference itself names its source; the event records when
    day: date | None = as_of.date() if as_of else None
    changed = ctx.services.ledger.reference_high_score(
        benchmark, label=label, value=value, unit=unit, source=source, as_of=day
    )
    ctx.services.runner.catch_up()
    click.echo(
        f"High score of {benchmark}: {label} = {value}" + ("" if changed else " (unchanged)")
    )


COMMANDS = [latest, matrix, high_score]
