"""Model identities: the names sources state, the id each resolves to, declared aliases."""

from __future__ import annotations

import json

import click

from benchledger.commands.context import LedgerContext, actor, as_of_option
from benchledger.commands.output import emit, output_options

pass_ledger = click.make_pass_decorator(LedgerContext)


@click.command()
@click.argument("model_id", required=False)
@as_of_option
@output_options
@pass_ledger
def models(ctx: LedgerContext, model_id: str | None, as_of: str | None, fmt: str | None) -> None:
    """List each model_id with every name a source stated for it and what joined it.

    `joined_by` is the shipped rule that resolved the name (`stated`: the name is its own
    id) or `alias` (declared with `alias-model`). MODEL_ID (or a stated name) shows one.

    \b
    Example:
        benchledger models
        benchledger models claude-3-5-sonnet-20241022 --json
    """
    rows = ctx.queries(as_of).models(model_id)
    emit(
        rows,
        fmt,
        columns=["model_id", "name", "provider", "joined_by", "runs"]
        if fmt in (None, "table")
        else None,
        empty="No models.",
    )


@click.command(name="alias-model")
@click.argument("name")
@click.argument("model_id")
@click.option("--reason", default="", help="Why NAME is MODEL_ID (shown in `models`)")
@click.option("--by", help="Who decided (default: your user name)")
@click.option("--json", "as_json", is_flag=True, help="Print the receipt as JSON")
@pass_ledger
def alias_model(
    ctx: LedgerContext, name: str, model_id: str, reason: str, by: str | None, as_json: bool
) -> None:
    """Declare that the model a source names NAME is MODEL_ID.

    Every name the shipped rules resolve as they resolve NAME follows it, in runs
    already recorded and in runs to come; `--as-of` and rebuilds see the alias from
    its position on. Declaring NAME again replaces its alias.

    \b
    Example:
        benchledger alias-model "GPT4o" gpt-4o --reason "EPAM's board names no date"
    """
    ctx.publishes = True
    alias_id = ctx.publisher.ledger.declare_model_alias(name, model_id, actor(by), reason)
    ctx.publisher.runner.catch_up()
    receipt = {"alias_id": str(alias_id), "name": name, "model_id": model_id, "reason": reason}
    click.echo(json.dumps(receipt) if as_json else f"Aliased model {name!r} to {model_id}")


COMMANDS = [models, alias_model]
