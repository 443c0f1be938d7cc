"""benchledger: an event-sourced ledger of benchmark results."""

from __future__ import annotations

import click

from benchledger.commands import compare, export, gates, operate, publish, read, write
from benchledger.commands import run as run_commands
from benchledger.commands.context import LedgerContext, LedgerGroup


@click.group(cls=LedgerGroup)
@click.version_option(package_name="benchledger")
@click.option(
    "-d",
    "--db",
    envvar="BENCHLEDGER_DB",
    type=click.Path(dir_okay=False),
    help="Ledger file (default ./ledger.db; env BENCHLEDGER_DB)",
)
@click.option(
    "--event-store",
    envvar="BENCHLEDGER_EVENT_STORE",
    metavar="URL",
    help="Keep events in PostgreSQL: postgresql://user@host/db (env BENCHLEDGER_EVENT_STORE)",
)
@click.pass_context
def cli(ctx: click.Context, db: str | None, event_store: str | None) -> None:
    """An event-sourced ledger of AI benchmark results.

    Every import, correction and rebuild is an immutable event; read models
    are projections of them, browsable with `benchledger serve`.

    \b
    Example:
        benchledger demo
        benchledger runs --benchmark bfcl
        benchledger serve
    """
    context = LedgerContext(db, event_store)
    ctx.obj = context
    ctx.call_on_close(context.close)


for module in (write, run_commands, read, publish, gates, compare, export, operate):
    for command in module.COMMANDS:
        cli.add_command(command)
