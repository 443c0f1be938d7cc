"""`matrix --grid` / `matrix --pairwise`: the variant x prompt matrices of runs."""

from __future__ import annotations

import json
from collections.abc import Sequence

import click

from benchledger.adapters.publication import alwm_matrices as am
from benchledger.commands.context import LedgerContext
from benchledger.commands.output import emit, printable

GRID, PAIRWISE = "grid", "pairwise"


def show(
    ctx: LedgerContext,
    kind: str,
    selection: am.Selection,
    *,
    as_of: str | None,
    weights: str,
    tie_tolerance: float,
    fmt: str | None,
) -> None:
    """Print the selected runs' grids or pairs as a table, JSON or CSV."""
    try:
        parsed = am.parse_weights(weights)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--weights") from None
    if tie_tolerance < 0:
        raise click.BadParameter("must be >= 0", param_hint="--tie-tolerance")
    found = am.matrices(
        ctx.queries(as_of), selection, weights=parsed or None, tie_tolerance=tie_tolerance
    )
    _refuse_unshaped(selection.runs, found)
    if kind == GRID:
        _grids(found, parsed or None, fmt)
    else:
        _pairs(found, fmt)


def _refuse_unshaped(refs: Sequence[str], found: list[am.RunMatrices]) -> None:
    """A run named with --run that has no variant x prompt cells is an error, not a
    silently empty matrix."""
    if refs and len(found) < len(set(refs)):
        raise click.UsageError(
            "a run named with --run has no variant x prompt cells (each cell needs "
            "variant_id and prompt_id metrics, or a '<variant>__<prompt>' key)"
        )


def _grids(found: list[am.RunMatrices], weights: dict[str, float] | None, fmt: str | None) -> None:
    if fmt == "json":
        click.echo(json.dumps([am.grid_document(m, weights) for m in found], indent=2))
        return
    if fmt in ("csv", "nl"):
        emit([row for m in found for row in am.grid_rows(m)], fmt)
        return
    if not found:
        click.echo("No variant x prompt runs.", err=True)
        return
    for i, m in enumerate(found):
        if i:
            click.echo("")
        click.echo(printable(f"{m.run['run_key']} ({m.run['benchmark']})"))
        rows = [
            {"variant": v, **dict(zip(m.grid.prompts, m.grid.scores[r], strict=True))}
            for r, v in enumerate(m.grid.variants)
        ]
        emit(rows, None, columns=["variant", *m.grid.prompts])


def _pairs(found: list[am.RunMatrices], fmt: str | None) -> None:
    rows = [
        am.pair_row(m, p, stats)
        for m in found
        for p, stats in zip(m.pairs, am.pair_stats(m), strict=True)
    ]
    if fmt in ("json", "csv", "nl"):
        emit(rows, fmt)
        return
    columns = [
        "run_key",
        "variant_a",
        "variant_b",
        "prompts",
        "wins",
        "losses",
        "ties",
        "mean_delta",
        "mean_abs_delta",
        "p_holm",
        "sign_test_p",
    ]
    emit(rows, None, columns=columns, empty="No variant pairs in the selected runs.")
