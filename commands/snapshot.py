"""`publish`: a frozen snapshot of the ledger, for Datasette or a download."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from benchledger.commands.context import LedgerContext, as_of_option
from benchledger.commands.paths import writes_paths

if TYPE_CHECKING:
    from benchledger.adapters.store.chained import ChainedLog
    from benchledger.adapters.store.snapshot import Stamp

pass_ledger = click.make_pass_decorator(LedgerContext)


def write_snapshot(ctx: LedgerContext, out: Path, as_of: str | None, *, replace: bool) -> Stamp:
    """The read models (at `as_of`, or current) and the events up to them, written to `out`."""
    from benchledger.adapters.store import snapshot

    snapshot.check_target(out, replace=replace)  # before any work on the ledger
    at = None if as_of is None else ctx.resolve_position(as_of)
    models = ctx.read_models() if at is None else ctx.read_models_at(at)
    recorder, _ = ctx.event_log()
    published_at = datetime.now(UTC).isoformat(timespec="seconds")
    return snapshot.write(
        models, cast("ChainedLog", recorder), out, published_at=published_at, replace=replace
    )


@click.command()
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@as_of_option
@click.option("--force", is_flag=True, help="Replace OUT when it is an older snapshot")
@click.option("--json", "as_json", is_flag=True, help="Print the snapshot's stamp as JSON")
@pass_ledger
@writes_paths(out="OUT")
def publish(ctx: LedgerContext, out: Path, as_of: str | None, force: bool, as_json: bool) -> None:
    """Write a frozen, self-contained snapshot of the ledger to OUT.

    OUT holds the read models, the events up to their position (so
    `benchledger --db OUT verify` recomputes the hash chain) and a `snapshot`
    table with that position and its head hash. It never changes: every command
    reads it read-only and `serve` serves it immutable. With --as-of, the read
    models and events stop at that position. OUT is written beside itself and
    renamed at the end; an existing file is replaced only when it is a snapshot
    and --force is given.

    \b
    Example:
        benchledger publish site/ledger.db
        benchledger publish site/ledger-may.db --as-of 2026-05-01T00:00:00Z
        benchledger --db site/ledger.db verify
    """
    stamp = write_snapshot(ctx, out, as_of, replace=force)
    if as_json:
        click.echo(json.dumps({"path": str(out), **asdict(stamp)}))
        return
    click.echo(
        f"Published {out}: position {stamp.position}, {stamp.events} events, "
        f"head hash {stamp.head_sha256}"
    )


COMMANDS = [publish]
