"""Commands that anchor the ledger's integrity: checkpoints, their key, the chain's upgrade."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from benchledger.commands.context import LedgerContext
from benchledger.commands.output import stderr

if TYPE_CHECKING:
    from benchledger.adapters.store.chained import ChainedLog

pass_ledger = click.make_pass_decorator(LedgerContext)


@click.command(name="checkpoint-key")
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the new private key (mode 0600; never inside the ledger)",
)
def checkpoint_key(out: Path) -> None:
    """Generate an Ed25519 key for signing checkpoints.

    The key file is written with mode 0600 and never replaces a file. Keep it
    outside the ledger's directory and give it to `checkpoint` with --key or
    BENCHLEDGER_SIGNING_KEY; publish the fingerprint printed, so that readers
    know which checkpoints are yours.

    \b
    Example:
        benchledger checkpoint-key --out ~/.config/benchledger/signing.pem
    """
    from benchledger.adapters.store.checkpoint import generate_key

    click.echo(f"Wrote {out}; key fingerprint {generate_key(out)}")


@click.command()
@click.option(
    "--key",
    "key_path",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="BENCHLEDGER_SIGNING_KEY",
    help="Private key written by `checkpoint-key` (env BENCHLEDGER_SIGNING_KEY)",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the statement to this new file (default: stdout)",
)
@pass_ledger
def checkpoint(ctx: LedgerContext, key_path: Path | None, out: Path | None) -> None:
    """Sign the ledger's current head into a statement kept outside the ledger.

    Verifies the whole chain first, then signs (ledger id, position, head
    hash, time) and writes the statement as JSON; the ledger records that a
    checkpoint was made. `verify --checkpoint FILE` later fails when the
    ledger no longer extends it: a rewritten past, a removed tail.

    \b
    Example:
        benchledger checkpoint --key signing.pem --out checkpoints/today.json
    """
    from benchledger.adapters.store import checkpoint as signing
    from benchledger.adapters.store import snapshot

    if key_path is None:
        raise click.UsageError("no signing key: give --key FILE or set BENCHLEDGER_SIGNING_KEY")
    key = signing.load_key(key_path)
    if out is not None and (out.exists() or out.is_symlink()):
        raise click.ClickException(f"{out} exists: a checkpoint is written to a new file")
    services = ctx.services
    recorder, conn = ctx.event_log()
    result = snapshot.verify(cast("ChainedLog", recorder), conn)
    if not result.ok:
        raise click.ClickException(
            f"the ledger fails verify at position {result.bad_position} ({result.problem}): "
            "refusing to sign it"
        )
    if result.ledger_id is None:
        raise click.ClickException("the ledger has no events yet: nothing to sign")
    now = datetime.now(UTC).replace(microsecond=0)
    statement = signing.sign(key, result.ledger_id, result.head_position, result.head_sha256, now)
    text = signing.to_json(statement)
    if out is None:
        click.echo(text, nl=False)
    else:
        _write_new(out, text)
    services.ledger.record_checkpoint(
        statement.ledger_id,
        statement.position,
        statement.head_sha256,
        statement.signed_at,
        statement.key_fingerprint,
        statement.signature,
    )
    services.runner.catch_up()
    stderr(
        f"Checkpoint of position {statement.position} (hash {statement.head_sha256}) signed "
        f"by key {statement.key_fingerprint}" + (f", written to {out}" if out else "")
    )


def _write_new(out: Path, text: str) -> None:
    try:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError as e:
        raise click.ClickException(f"cannot write {out}: {e.strerror or e}") from None
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


@click.command(name="upgrade-chain")
@click.option("--json", "as_json", is_flag=True, help="Output JSON")
@pass_ledger
def upgrade_chain(ctx: LedgerContext, as_json: bool) -> None:
    """Chain, once, the events of a ledger written before its writer kept the chain.

    Until then `verify` fails and writes are refused on such a ledger. This
    hashes every stored event from the first into the event store's chain
    and records a ChainUpgraded event (the position and head it chained up
    to), in one transaction. A ledger whose writer keeps its chain already
    is left as it is.

    \b
    Example:
        benchledger upgrade-chain
    """
    from benchledger.adapters.store.chained import AlreadyChainedError
    from benchledger.domain.trust import chain_upgraded

    services = ctx.services
    ledger = services.ledger

    def record(position: int, head: str) -> Any:
        return ledger.mapper.to_stored_event(chain_upgraded(position, head))

    try:
        upgraded = ledger.recorder.upgrade_chain(record)  # type: ignore[attr-defined]
    except AlreadyChainedError:
        upgraded, already = None, True
    else:
        already = False
    services.runner.catch_up()
    if as_json:
        position, head = upgraded or (None, None)
        click.echo(
            json.dumps(
                {"upgraded": upgraded is not None, "position": position, "head_sha256": head}
            )
        )
    elif upgraded is not None:
        click.echo(
            f"Chained the events up to position {upgraded[0]}; head {upgraded[1]}; "
            "recorded ChainUpgraded"
        )
    elif already:
        click.echo("The writer keeps this ledger's chain already: nothing to upgrade")
    else:
        click.echo("The ledger has no events: nothing to upgrade")


COMMANDS = [checkpoint, checkpoint_key, upgrade_chain]
