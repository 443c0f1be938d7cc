"""Commands that export the publication in the orchestrator's file shapes."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from benchledger.adapters.publication.exports import export_latest
from benchledger.adapters.publication.publication import Selection, load
from benchledger.adapters.publication.viewer_export import export_viewer_data
from benchledger.commands.context import LedgerContext, as_of_option
from benchledger.commands.paths import writes_paths
from benchledger.commands.selection import benchmark_filters, selection_option, split

pass_ledger = click.make_pass_decorator(LedgerContext)


@click.command(name="export-latest")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@benchmark_filters
@selection_option
@as_of_option
@click.option("--json", "as_json", is_flag=True, help="Print the receipt as JSON")
@pass_ledger
@writes_paths(directory="DIRECTORY")
def export_latest_command(
    ctx: LedgerContext,
    directory: Path,
    include_benchmarks: str,
    exclude_benchmarks: str,
    selection: Selection,
    as_of: str | None,
    as_json: bool,
) -> None:
    """Write the latest/ snapshot: one JSON file per row, and latest/index.json.

    DIR gets latest/, quarantine/ and baselines/ holding <benchmark>__<agent>.json
    rows, and latest/index.json, in the ElizaOS orchestrator's shapes, with
    relative paths only. Re-exporting without new events is byte-identical;
    files are replaced atomically. DIR belongs to the export: any other
    <b>__<a>.json in those three directories is removed as stale.

    Where a benchmark's required agents are known (the registry's agents, an
    imported matrix contract, or the orchestrator's incompatible-harness rows)
    and their newest rows mix comparison signatures, the newest complete cohort
    of one signature is published for all of them, as the orchestrator does;
    --selection newest publishes each agent's own newest row instead.

    \b
    Example:
        benchledger export-latest benchmark_results
        benchledger export-latest snapshot --as-of 250 --include-benchmarks bfcl --json
        benchledger export-latest per-agent --selection newest
    """
    queries = ctx.queries(as_of)
    view = load(queries, split(include_benchmarks), split(exclude_benchmarks), selection)
    receipt = export_latest(view, queries, directory)
    if as_json:
        click.echo(json.dumps({"directory": str(directory), **asdict(receipt)}))
        return
    rows = ", ".join(f"{n} {table}" for table, n in receipt.rows.items())
    click.echo(
        f"Exported {rows} rows and latest/index.json to {directory}: "
        f"{len(receipt.written)} files written, {len(receipt.unchanged)} unchanged, "
        f"{len(receipt.removed)} stale removed"
    )
    click.echo(f"Ledger position {receipt.position}, head {receipt.head_sha256}")


@click.command(name="export-viewer-data")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("viewer_data.json"),
    show_default=True,
    help="Where to write it",
)
@benchmark_filters
@selection_option
@as_of_option
@click.option("--json", "as_json", is_flag=True, help="Print the receipt as JSON")
@pass_ledger
@writes_paths(out="--out")
def export_viewer_data_command(
    ctx: LedgerContext,
    out: Path,
    include_benchmarks: str,
    exclude_benchmarks: str,
    selection: Selection,
    as_of: str | None,
    as_json: bool,
) -> None:
    """Write viewer_data.json for the orchestrator's results viewer.

    Every run and run group, never capped, newest first; latest_scores are the
    published latest rows; best scores follow each benchmark's direction. The
    file is streamed to a temp file and renamed into place.

    \b
    Example:
        benchledger export-viewer-data
        benchledger export-viewer-data --out site/viewer_data.json --as-of 2026-10-01T00:00:00Z
    """
    include, exclude = split(include_benchmarks), split(exclude_benchmarks)
    queries = ctx.queries(as_of)
    view = load(queries, include, exclude, selection)
    receipt = export_viewer_data(view, queries, out, include, exclude)
    if as_json:
        click.echo(json.dumps(asdict(receipt)))
        return
    click.echo(
        f"Exported {receipt.runs} runs, {receipt.run_groups} run groups and "
        f"{receipt.latest_scores} latest scores to {out}"
    )
    click.echo(f"Ledger position {receipt.position}, head {receipt.head_sha256}")


COMMANDS = [export_latest_command, export_viewer_data_command]
