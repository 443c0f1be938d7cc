"""The results matrix file: generated from reviewed rows, and checked against the ledger."""

from __future__ import annotations

from pathlib import Path

import click

from benchledger.adapters.publication import results_markdown, results_matrix
from benchledger.adapters.publication.review import write_atomic
from benchledger.commands.context import LedgerContext, as_of_option
from benchledger.commands.output import stderr
from benchledger.commands.paths import writes_paths
from benchledger.commands.publish import REQUIRED_AGENTS_HELP
from benchledger.commands.selection import benchmark_filters, split

pass_ledger = click.make_pass_decorator(LedgerContext)


@click.command(name="results-matrix")
@click.option(
    "--harnesses",
    default="",
    metavar="A,B",
    help="Agents as columns, a cell of each for every benchmark (default: the agents with a "
    "row or required; a benchmark has cells of those only)",
)
@click.option("--required-agents", default="", metavar="A,B", help=REQUIRED_AGENTS_HELP)
@benchmark_filters
@as_of_option
@click.option(
    "--out",
    "out_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the matrix to this file (default: print it)",
)
@click.option(
    "--check",
    "check_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Compare this committed matrix with the ledger; exit 1 naming the cells that differ",
)
@pass_ledger
@writes_paths(out_file="--out")
def results_matrix_(
    ctx: LedgerContext,
    harnesses: str,
    required_agents: str,
    include_benchmarks: str,
    exclude_benchmarks: str,
    as_of: str | None,
    out_file: Path | None,
    check_file: Path | None,
) -> None:
    """Benchmarks x agents in Markdown: a score only where a current review signs it off.

    A cell shows its latest row's score (with unit, run and review) only when the
    row passes the gates `review` runs and the newest passing review whose scope
    covers its benchmark is current: no event touching that scope since its
    position (what `verify-review` checks). A blocked review, or one of
    `--selection newest` rows, vouches for no cell. Every other cell reads `not-run`,
    with its reasons listed below the table: unsupported, no run, quarantined,
    gate finding, not reviewed, review out of date. A cell is left empty for an
    agent that neither has a row of the benchmark nor is required of it. The file is stamped with
    the ledger position and head hash. Nothing is recorded.

    --check FILE exits 1 naming each cell (benchmark/agent: old -> new) whose
    text or reasons no longer match the ledger. A stamp that differs while every
    cell is the same is reported but exits 0: an event elsewhere in the ledger
    moves the head without changing any published number.

    \b
    Example:
        benchledger results-matrix --out RESULTS_MATRIX.md
        benchledger results-matrix --harnesses codex,eliza --include-benchmarks bfcl
        benchledger results-matrix --check RESULTS_MATRIX.md
    """
    if out_file is not None and check_file is not None:
        raise click.UsageError("give --out or --check, not both")
    matrix = results_matrix.build(
        ctx.queries(as_of),
        split(include_benchmarks),
        split(exclude_benchmarks),
        split(harnesses) or None,
        split(required_agents),
    )
    if check_file is not None:
        _check(check_file, matrix)
        return
    text = results_markdown.render(matrix)
    if out_file is None:
        click.echo(text, nl=False)
        return
    write_atomic(out_file, text.encode())
    shown = sum(1 for cell in matrix.cells.values() if not cell.reasons)
    stderr(
        f"Wrote {out_file}: {shown} of {len(matrix.cells)} cells with a reviewed score, "
        f"at position {matrix.position} (head {matrix.head_sha256[:12]})"
    )


def _check(path: Path, matrix: results_matrix.ResultsMatrix) -> None:
    comparison = results_markdown.check(path, matrix)
    for change in comparison.changes:
        click.echo(str(change))
    for what, old, new in comparison.stamp:
        stderr(f"Stamp differs: ledger {what} {old} -> {new}")
    if comparison.changes:
        count = len(comparison.changes)
        stderr(
            f"Error: {count} cell{'s' if count > 1 else ''} of {path} no longer match the ledger"
        )
        raise SystemExit(1)
    stderr(f"OK: every cell of {path} matches the ledger at position {matrix.position}")


COMMANDS: list[click.Command] = [results_matrix_]
