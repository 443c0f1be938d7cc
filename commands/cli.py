"""benchledger: an event-sourced ledger of benchmark results."""

from __future__ import annotations

import importlib
from typing import Any

import click

from benchledger.commands.context import LedgerContext, expected_error, loading
from benchledger.commands.messages import error_text, error_width
from benchledger.domain.version import VERSION

# Command name -> (module in benchledger.commands, its one-line help). A command's
# module is imported only when that command runs, so `--help`, `--version` and a
# read command load nothing they do not use; a test checks the help lines agree.
COMMANDS: dict[str, tuple[str, str]] = {
    "import": ("write", "Import result files or directories of them."),
    "invalidate": ("write", "Mark a run invalid; it stays in the ledger and its history."),
    "reinstate": ("write", "Undo an invalidation."),
    "correct-score": ("write", "Correct a run's score; the old one stays in its history."),
    "demo": ("write", "Build a realistic demo ledger through the ordinary import path."),
    "run": ("run", "Run benchmarks and record every run as it happens."),
    "recover-stale": (
        "run",
        "Recover runs whose lease expired: their process stopped renewing it.",
    ),
    "benchmarks": ("run", "List the registered benchmarks (and record them in the ledger)."),
    "inventory": (
        "inventory",
        "Check the registry: commands resolvable, directories present, formats known.",
    ),
    "validate-matrix": (
        "inventory",
        "Build every benchmark's command for each harness, without running anything.",
    ),
    "runs": ("read", "List runs, oldest first."),
    "show": ("read", "Show one run with a summary of its cells."),
    "show-runs": ("read", "Runs as the orchestrator's `show-runs` prints them, for a quick audit."),
    "history": ("read", "Every event of one run, in order: how it got to what `show` prints."),
    "events": (
        "read",
        "The audit log: every event in the ledger, in the order it was appended.",
    ),
    "skips": ("read", "Benchmarks that `run` decided not to execute, and launches it refused."),
    "models": (
        "models",
        "List each model_id with every name a source stated for it and what joined it.",
    ),
    "alias-model": ("models", "Declare that the model a source names NAME is MODEL_ID."),
    "latest": ("publish", "The newest publishable run per benchmark and agent."),
    "matrix": ("publish", "Benchmarks x agents: the latest score, or why a cell has none."),
    "high-score": ("publish", "Reference the best published score of a benchmark."),
    "gate": (
        "gates",
        "Evaluate gates over the latest rows and record each verdict; exit 1 on findings.",
    ),
    "validate-latest-publishability": (
        "gates",
        "The publishability gate (the orchestrator's name for `gate publishability`).",
    ),
    "validate-latest-comparability": (
        "gates",
        "The comparability gate (the orchestrator's name for `gate comparability`).",
    ),
    "validate-latest-readiness": (
        "gates",
        "The readiness gate (the orchestrator's name for `gate readiness`).",
    ),
    "calibration-report": (
        "gates",
        "The calibration gate (the orchestrator's name for `gate calibration`).",
    ),
    "validate-runtime-gates": (
        "gates",
        "The runtime gate (the orchestrator's name for `gate runtime`).",
    ),
    "gates": ("gates", "Recorded gate verdicts, oldest first."),
    "review": (
        "review",
        "Preflight, run, gate and sign off benchmarks, then check nothing generated is committed.",
    ),
    "preflight": ("checks", "Check that the selected work can run, without running anything."),
    "verify-artifacts": (
        "checks",
        "Fail when generated outputs are tracked or staged in this directory's git repository.",
    ),
    "verify-review": (
        "gates",
        "Check a review package against the ledger: still the one recorded, nothing changed since.",
    ),
    "results-matrix": (
        "results",
        "Benchmarks x agents in Markdown: a score only where a current review signs it off.",
    ),
    "compare": (
        "compare",
        "Compare two sides benchmark by benchmark, and record the comparison.",
    ),
    "view-comparison": ("compare", "Show a recorded comparison exactly as compare printed it."),
    "head-to-head": (
        "head_to_head",
        "Report a target agent against a baseline per benchmark, and record the report.",
    ),
    "view-head-to-head": (
        "head_to_head",
        "Show a recorded head-to-head report exactly as head-to-head printed it.",
    ),
    "export-latest": (
        "export",
        "Write the latest/ snapshot: one JSON file per row, and latest/index.json.",
    ),
    "export-eee": ("eee", "Write the latest rows as Every Eval Ever records (schema 0.2.1)."),
    "export-viewer-data": (
        "export",
        "Write viewer_data.json for the orchestrator's results viewer.",
    ),
    "rebuild": ("operate", "Rebuild read models from the event log, swapping them in atomically."),
    "verify": ("operate", "Recompute the hash chain over every stored event and compare."),
    "checkpoint": (
        "trust",
        "Sign the ledger's current head into a statement kept outside the ledger.",
    ),
    "checkpoint-key": ("trust", "Generate an Ed25519 key for signing checkpoints."),
    "upgrade-chain": (
        "trust",
        "Chain, once, the events of a ledger written before its writer kept the chain.",
    ),
    "serve": ("operate", "Browse the ledger in Datasette (read-only)."),
    "publish": ("snapshot", "Write a frozen, self-contained snapshot of the ledger to OUT."),
    "follow": (
        "operate",
        "Keep this machine's read models current with the event store, by polling.",
    ),
    "schema": ("operate", "Print the JSON Schema of the native result format."),
}

# Commands that may start a new ledger: they append facts that need no earlier event.
# Every other command needs an existing ledger and never creates one.
CREATES = frozenset({"import", "run", "review", "demo", "benchmarks", "high-score", "alias-model"})


class LazyGroup(click.Group):
    """Loads a command's module when that command runs; turns expected errors into
    `Error: ...` and exit 1."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands or cmd_name not in COMMANDS:
            return self.commands.get(cmd_name)
        with loading():
            module = importlib.import_module(f"benchledger.commands.{COMMANDS[cmd_name][0]}")
        for command in module.COMMANDS:
            self.add_command(command)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, _shorten(self._short_help(name), limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def _short_help(self, name: str) -> str:
        if name in COMMANDS:
            return COMMANDS[name][1]
        return self.commands[name].get_short_help_str(1000)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.UsageError, click.exceptions.Exit, click.Abort):
            raise
        except click.ClickException as e:
            text = error_text(e.message, error_width())
            if text == e.message or type(e) is not click.ClickException:
                raise  # a subclass keeps its own exit code and way of showing itself
            raise click.ClickException(text) from None
        except Exception as e:
            ledger = ctx.obj.path if isinstance(ctx.obj, LedgerContext) else None
            message = expected_error(e, ledger)
            if message is None:
                raise
            raise click.ClickException(error_text(message, error_width())) from None


def _shorten(text: str, limit: int) -> str:
    return click.Command(None, help=text).get_short_help_str(limit)


@click.group(cls=LazyGroup)
@click.version_option(VERSION, package_name="benchledger")
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
@click.option(
    "--read-only",
    is_flag=True,
    envvar="BENCHLEDGER_READ_ONLY",
    help="Never write the ledger: read commands need current read models "
    "(env BENCHLEDGER_READ_ONLY); implied where the ledger's location is not writable",
)
@click.pass_context
def cli(ctx: click.Context, db: str | None, event_store: str | None, read_only: bool) -> None:
    """An event-sourced ledger of AI benchmark results.

    Every import, correction and rebuild is an immutable event; read models
    are projections of them, browsable with `benchledger serve`.

    \b
    Example:
        benchledger demo
        benchledger runs --benchmark bfcl
        benchledger serve
    """
    name = ctx.invoked_subcommand
    context = LedgerContext(
        db, event_store, read_only=read_only, command=name, creates=name in CREATES
    )
    ctx.obj = context
    ctx.call_on_close(context.close)


def main() -> Any:
    """The `benchledger` command: the CLI, with pydantic's plugin lookup skipped in its
    process (`plugins_skipped`)."""
    from benchledger.commands import plugins_skipped

    plugins_skipped.install()
    return cli()
