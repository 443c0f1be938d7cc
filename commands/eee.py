"""The command that exports runs as Every Eval Ever records."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from benchledger.adapters.publication.eee_export import export_runs
from benchledger.adapters.publication.publication import TABLE_OF, Selection
from benchledger.adapters.publication.queries import Queries, decode_run
from benchledger.adapters.publication.results_matrix import (
    RecordedReview,
    coverage,
    recorded_reviews,
)
from benchledger.commands.context import LedgerContext, as_of_option
from benchledger.commands.paths import writes_paths
from benchledger.commands.selection import benchmark_filters, selection_option, split

pass_ledger = click.make_pass_decorator(LedgerContext)


@click.command(name="export-eee")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@benchmark_filters
@selection_option
@click.option(
    "--reviewed",
    is_flag=True,
    help="Only rows of benchmarks a current passing review covers",
)
@as_of_option
@click.option("--json", "as_json", is_flag=True, help="Print the receipt as JSON")
@pass_ledger
@writes_paths(directory="DIRECTORY")
def export_eee_command(
    ctx: LedgerContext,
    directory: Path,
    include_benchmarks: str,
    exclude_benchmarks: str,
    selection: Selection,
    reviewed: bool,
    as_of: str | None,
    as_json: bool,
) -> None:
    """Write the latest rows as Every Eval Ever records (schema 0.2.1).

    Each row's run becomes data/<benchmark>/<developer>/<model>/<uuid>.json
    under DIR, with <uuid>_samples.jsonl beside it when the run has cells; the
    uuid is derived from the run id, so exporting again rewrites the same files
    (byte-identical when nothing changed). --reviewed keeps only the rows of
    benchmarks a passing review still vouches for (what results-matrix shows).

    \b
    Example:
        benchledger export-eee eee-out
        benchledger export-eee eee-out --include-benchmarks GAIA --reviewed --json
    """
    queries = ctx.queries(as_of)
    include, exclude = split(include_benchmarks), split(exclude_benchmarks)
    rows = [
        row
        for row in queries.publication(TABLE_OF[selection])
        if (not include or row["benchmark"] in include) and row["benchmark"] not in exclude
    ]
    if reviewed:
        reviews = recorded_reviews(queries)
        rows = [
            row for row in rows if isinstance(coverage(reviews, row["benchmark"]), RecordedReview)
        ]
    receipt = export_runs(_runs(queries, [str(row["run_id"]) for row in rows]), directory)
    if as_json:
        click.echo(json.dumps({"directory": str(directory), **asdict(receipt)}))
        return
    click.echo(
        f"Exported {receipt.records} records ({receipt.samples} with instance-level files) "
        f"to {directory}: {len(receipt.written)} files written, "
        f"{len(receipt.unchanged)} unchanged"
    )


def _runs(
    queries: Queries, run_ids: list[str]
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each run's full row and its cells, one run at a time."""
    for run_id in run_ids:
        cursor = queries.conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        names = [d[0] for d in cursor.description]
        found = cursor.fetchone()
        if found is None:
            continue
        yield decode_run(dict(zip(names, found, strict=True))), queries.cells(run_id)


COMMANDS = [export_eee_command]
