"""Commands that operate the ledger: rebuild, verify, serve, schema."""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from benchledger.commands.context import LedgerContext, as_of_option
from benchledger.commands.output import stderr

if TYPE_CHECKING:
    from benchledger.adapters.store.chained import ChainedLog

pass_ledger = click.make_pass_decorator(LedgerContext)


@click.command()
@click.option(
    "--projection", "names", multiple=True, help="Only this read model (repeatable); default all"
)
@pass_ledger
def rebuild(ctx: LedgerContext, names: tuple[str, ...]) -> None:
    """Rebuild read models from the event log, swapping them in atomically.

    Projections whose version changed are rebuilt automatically; this does
    it on demand, e.g. after a read model was edited by hand.

    \b
    Example:
        benchledger rebuild
        benchledger rebuild --projection runs --projection cells
    """
    runner = ctx.services.runner
    try:
        targets = runner.by_name(list(names))
    except KeyError as e:
        known = ", ".join(p.name for p in runner.projections)
        raise click.UsageError(f"unknown projection {e} (known: {known})") from None
    count = runner.rebuild([p.name for p in targets])
    runner.catch_up()
    click.echo(f"Rebuilt {', '.join(p.name for p in targets)} from {count} events")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Output JSON")
@click.option(
    "--checkpoint",
    "checkpoints",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="A statement written by `checkpoint` that the ledger must extend (repeatable)",
)
@pass_ledger
def verify(ctx: LedgerContext, as_json: bool, checkpoints: tuple[Path, ...]) -> None:
    """Recompute the hash chain over every stored event and compare.

    Exit 0 when every stored event matches the chain its writer kept in the
    event store, 1 naming the first position that does not: an edited,
    inserted or removed event, an event without its chain entry or an entry
    without its event, read models that saw events the store no longer has.
    It never chains anything itself. With --checkpoint, also exit 1 unless
    the ledger extends each signed checkpoint. A snapshot written by `publish`
    must also have its stamp and read models at the chain's head.

    \b
    Example:
        benchledger verify
        benchledger verify --checkpoint checkpoints/2026-12-06.json
        benchledger --db site/ledger.db verify
    """
    from benchledger.adapters.store import checkpoint, snapshot

    statements = [(path, checkpoint.read_statement(path)) for path in checkpoints]
    recorder, conn = ctx.event_log()
    result = snapshot.verify(
        cast("ChainedLog", recorder), conn, {s.position for _, s in statements}
    )
    problems = (
        []
        if not result.ok
        else [
            (path, problem)
            for path, statement in statements
            if (problem := checkpoint.check(statement, result)) is not None
        ]
    )
    if as_json:
        report = {k: v for k, v in asdict(result).items() if k != "heads"}
        report["ok"] = result.ok and not problems
        report["checkpoints"] = [
            {
                "file": str(path),
                "position": s.position,
                "key_fingerprint": s.key_fingerprint,
                "problem": dict(problems).get(path),
            }
            for path, s in statements
        ]
        click.echo(json.dumps(report))
    elif not result.ok:
        stderr(f"Error: tampering detected at position {result.bad_position}: {result.problem}")
    elif problems:
        for path, problem in problems:
            stderr(f"Error: the ledger does not extend checkpoint {path}: {problem}")
    else:
        click.echo(
            f"OK: {result.checked} events verified; head position {result.head_position}, "
            f"hash {result.head_sha256}"
        )
        for path, s in statements:
            click.echo(
                f"OK: extends checkpoint {path} (position {s.position}, signed "
                f"{s.signed_at.isoformat()} by key {s.key_fingerprint})"
            )
    if not result.ok or problems:
        raise SystemExit(1)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Host to bind")
@click.option(
    "--port",
    default=8001,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to bind (0: any free port)",
)
@as_of_option
@pass_ledger
def serve(ctx: LedgerContext, host: str, port: int, as_of: str | None) -> None:
    """Browse the ledger in Datasette (read-only).

    A snapshot written by `publish` is served immutable, never written.
    With --as-of, the ledger as it was then: a snapshot at that position,
    in a temporary file, served immutable.

    \b
    Example:
        benchledger serve --port 8001
        benchledger --db site/ledger.db serve
        benchledger serve --as-of 120
    """
    from benchledger.adapters.publication.browse import listen
    from benchledger.adapters.publication.browse import serve as serve_datasette
    from benchledger.adapters.store.ledger_file import location_writable
    from benchledger.commands.interrupts import stopped_like_ctrl_c
    from benchledger.commands.snapshot import write_snapshot

    path = ctx.settings.db_path
    with (
        stopped_like_ctrl_c(),
        tempfile.TemporaryDirectory(prefix="benchledger-serve-") as work,
    ):
        at = ""
        if as_of is None:
            ctx.read_models()  # current, or an error saying how far behind a read-only ledger is
            served, immutable = path, ctx.frozen or not location_writable(path)
        else:
            served, immutable = Path(work) / path.name, True
            at = f" as of position {write_snapshot(ctx, served, as_of, replace=False).position}"
        ctx.close()
        try:
            sock = listen(host, port)
        except OSError as e:
            raise click.ClickException(
                f"cannot listen on {host}:{port}: {e.strerror or e}"
            ) from None
        bound = sock.getsockname()[1]
        where = f"[{host}]" if ":" in host else host
        stderr(f"Serving {path}{at} at http://{where}:{bound}/{path.stem} (Ctrl-C to stop)")
        serve_datasette(served, sock, immutable=immutable)


@click.command()
@click.option(
    "--interval",
    type=click.FloatRange(min=0.05),
    default=2.0,
    show_default=True,
    help="Seconds between polls of the event store",
)
@click.option("--polls", type=click.IntRange(min=1), help="Stop after this many polls")
@pass_ledger
def follow(ctx: LedgerContext, interval: float, polls: int | None) -> None:
    """Keep this machine's read models current with the event store, by polling.

    With the event store on PostgreSQL, every reader keeps its own SQLite read
    model (--db) and serves it with Datasette; this keeps it up to date.

    \b
    Example:
        benchledger --event-store postgresql://ledger@db/bench --db reader.db follow
    """
    runner = ctx.services.runner
    stderr(following(ctx, interval))
    done = 0
    try:
        while polls is None or done < polls:
            applied = runner.catch_up()
            if applied:
                stderr(f"position {runner.head_position()}: applied {applied} events")
            done += 1
            if polls is None or done < polls:
                time.sleep(interval)
    except KeyboardInterrupt:
        stderr("stopped")


def following(ctx: LedgerContext, interval: float) -> str:
    """What `follow` waits for: without it, a SQLite ledger's follow printed nothing, ever."""
    every = f"polling every {interval:g} s (Ctrl-C to stop)"
    url = ctx.settings.event_store_url
    if url:
        from benchledger.adapters.store.bootstrap import shown_url

        return (
            f"Following the event store at {shown_url(url)} into the read models of "
            f"{ctx.path}, {every}; each batch of new events is reported as it is applied"
        )
    return (
        f"Following {ctx.path}, {every}. It is a SQLite ledger: every command that writes "
        "to it brings its read models current as it writes, so there is nothing to wait "
        "for; `follow` is for a reader of a PostgreSQL event store (--event-store)"
    )


@click.command()
def schema() -> None:
    """Print the JSON Schema of the native result format.

    \b
    Example:
        benchledger schema > benchledger-run.schema.json
    """
    from benchledger.adapters.formats import native

    click.echo(json.dumps(native.json_schema(), indent=2))


COMMANDS = [rebuild, verify, serve, follow, schema]
