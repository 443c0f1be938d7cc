"""Commands that append events: import, corrections, demo."""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

import click

from benchledger.commands.context import LedgerContext, actor
from benchledger.commands.messages import error_text, error_width
from benchledger.commands.output import emit, output_options, short, stderr
from benchledger.domain.errors import InputFormatError

if TYPE_CHECKING:
    from benchledger.adapters.store.importer import FileReport

pass_ledger = click.make_pass_decorator(LedgerContext)


def _not_blank(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """A reason that is only white space explains nothing."""
    if not value.strip():
        raise click.ClickException("--reason must not be blank")
    return value


@click.command(name="import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "format_name", help="Skip detection and parse as this format")
@click.option(
    "--amend",
    is_flag=True,
    help="Record changed content of a run already imported as a correction (a new version "
    "that supersedes the old one) instead of refusing it",
)
@click.option("--benchmark", help="Benchmark, for files that do not say (e.g. JUnit XML)")
@click.option("--agent", help="Agent, for files that do not say")
@click.option("--provider", help="Provider, for files that do not say")
@click.option(
    "--model", help="Model, for files that do not say (a model a file names is kept, not replaced)"
)
@click.option(
    "limit_options",
    "--limit",
    multiple=True,
    metavar="NAME=N",
    help="Raise or lower one bound on input, e.g. --limit file-size=2GiB (repeatable). "
    "Bounds and defaults: file-size 512MiB, decompressed-size 1GiB (one .eval entry), "
    "compression-ratio 200, yaml-aliases 100 (counted as expanded), depth 128 (nesting), "
    "int-digits 100, string-length 1MiB (characters of one kept string, bytes of a blob), "
    "array-length 1000000 (elements of one array), "
    "value-size 16MiB (one value of a source database). "
    "BENCHLEDGER_LIMIT_<NAME> (e.g. BENCHLEDGER_LIMIT_FILE_SIZE) sets one for every command",
)
@output_options
@pass_ledger
def import_(
    ctx: LedgerContext,
    /,
    paths: tuple[Path, ...],
    format_name: str | None,
    amend: bool,
    limit_options: tuple[str, ...],
    fmt: str | None,
    **who: str | None,
) -> None:
    """Import result files or directories of them.

    Each file is appended atomically: a file that fails to parse or conflicts
    with what the ledger holds appends nothing. Re-importing the same content
    appends nothing and says so. A run is identified by its source's run key: a
    file that states more about a recorded run adds those facts; one that states
    a recorded fact differently is a conflict naming the field (--amend records
    its version as a correction). Every file is read within bounds (see --limit);
    pipes, devices and symlink loops are skipped unread.

    A file that is not a result (no format reads it; a pipe, device or broken
    link) is ignored, named or found in a directory alike, and its message says
    so. A file that is part of a result read through another file (a SWE-bench
    per-instance report, a submission's metadata.yaml) is ignored too: it names
    the imported run it is a member of, or what to import to read it whole. The
    summary counts ignored files by reason.

    --benchmark, --agent, --provider and --model fill in only what a file does
    not say (a tb run results.json published without its run_metadata.json names
    no model: it is `unknown`, a placeholder `latest` quarantines); what a file
    says is never replaced. A file imported already is read again when given
    them: a run it now states differently is a conflict naming the field, and
    --amend records it as a correction (a JUnit run, keyed by who ran it, is
    another run).

    Exit 1 if any file failed or conflicted, if a file named on the command line
    was ignored (unless it is a member of a run this import recorded), or if
    nothing importable was found; ignored files found in a directory do not
    change the exit code.

    \b
    Example:
        benchledger import results/run.jsonl
        benchledger import results/ --json
        benchledger import big.eval --limit file-size=2GiB
    """
    from benchledger.adapters.formats import limits
    from benchledger.adapters.formats.common import reads_kept
    from benchledger.adapters.store.importer import (
        MEMBER_OF_RUN,
        Importer,
        discover,
        explain_members,
        shown_name,
    )

    try:
        bounds = limits.current().updated(dict(_limit_pair(o) for o in limit_options))
        files = list(discover(paths))
    except InputFormatError as e:
        raise click.ClickException(str(e)) from None
    if not files:
        raise click.ClickException(f"no result files found under {_names(paths)} (0 ignored)")
    defaults = {k: v for k, v in who.items() if v}
    ledger = ctx.services.ledger
    importer = Importer(ledger)
    request = {"paths": [shown_name(str(p)) for p in paths]}
    group = ledger.new_group("import", "import", request=request)
    reports: list[FileReport] = []
    try:
        with (
            limits.applied(bounds),
            reads_kept(),
            click.progressbar(files, label="Importing", file=sys.stderr, show_pos=True) as bar,
        ):
            for found in bar:
                reports.append(
                    importer.import_file(
                        found.path,
                        group=group,
                        format_name=format_name,
                        label=found.name,
                        amend=amend,
                        defaults=defaults,
                    )
                )
    finally:  # an import cut short still closes its group, with the files it recorded
        ledger.close_group(group)
    ctx.services.runner.catch_up()
    reports = explain_members(files, reports)
    hidden = {"reason", "members"}
    hidden |= set() if fmt in ("json", "nl") else {"run_ids", "member_of"}
    rows = [
        # Its fields as they are (text, numbers, tuples of text): `asdict` deep-copied each.
        {f.name: getattr(r, f.name) for f in fields(r) if f.name not in hidden}
        for r in reports
        if r.state != "ignored" or fmt in ("json", "nl")
    ]
    emit(rows, fmt, columns=["path", "state", "format", "runs", "new_runs", "message"])
    counts = {
        s: sum(1 for r in reports if r.state == s)
        for s in ("imported", "amended", "unchanged", "conflict", "failed", "ignored")
    }
    reasons = _reasons(reports)
    merged = sum(r.merged_runs for r in reports)
    added = f", {merged} with facts added" if merged else ""
    stderr(
        f"{counts['imported']} imported ({sum(r.new_runs for r in reports)} new runs{added}), "
        f"{counts['amended']} amended, "
        f"{counts['unchanged']} unchanged, {counts['conflict']} conflicting, "
        f"{counts['failed']} failed, {counts['ignored']} ignored"
        + (f" ({reasons})" if reasons else "")
    )
    problems = [
        r
        for found, r in zip(files, reports, strict=True)
        if r.state in ("conflict", "failed")
        or (found.explicit and r.state == "ignored" and r.reason != MEMBER_OF_RUN)
    ]
    if problems:
        for r in problems:
            stderr(f"Error: {error_text(r.message or '', error_width())}")
        raise SystemExit(1)
    if counts["ignored"] == len(reports):
        raise click.ClickException(
            f"no result files found under {_names(paths)} ({len(reports)} ignored: {reasons})"
        )


def _reasons(reports: list[FileReport]) -> str:
    """The ignored files counted by reason, most common first."""
    counted = Counter(r.reason or "not importable" for r in reports if r.state == "ignored")
    return ", ".join(f"{reason}: {n}" for reason, n in counted.most_common())


def _limit_pair(option: str) -> tuple[str, str]:
    name, sep, value = option.partition("=")
    if not sep:
        raise InputFormatError("--limit", f"'{option}' is not NAME=N (e.g. file-size=2GiB)")
    return name, value


def _names(paths: tuple[Path, ...]) -> str:
    return ", ".join(str(p) for p in paths)


@click.command()
@click.argument("run")
@click.option("--reason", required=True, callback=_not_blank, help="Why the run must not count")
@click.option("--by", help="Who decided (default: your user name)")
@click.option("--json", "as_json", is_flag=True, help="Print the receipt as JSON")
@pass_ledger
def invalidate(ctx: LedgerContext, run: str, reason: str, by: str | None, as_json: bool) -> None:
    """Mark a run invalid; it stays in the ledger and its history.

    \b
    Example:
        benchledger invalidate 3fa9c2d1 --reason "leaked test set"
    """
    _set_validity(ctx, run, reason, by, as_json, invalidated=True)


@click.command()
@click.argument("run")
@click.option("--reason", required=True, callback=_not_blank, help="Why the run counts again")
@click.option("--by", help="Who decided (default: your user name)")
@click.option("--json", "as_json", is_flag=True, help="Print the receipt as JSON")
@pass_ledger
def reinstate(ctx: LedgerContext, run: str, reason: str, by: str | None, as_json: bool) -> None:
    """Undo an invalidation.

    \b
    Example:
        benchledger reinstate 3fa9c2d1 --reason "leak ruled out"
    """
    _set_validity(ctx, run, reason, by, as_json, invalidated=False)


@click.command(name="correct-score")
@click.argument("run")
@click.option("--score", required=True, type=float, help="The corrected score")
@click.option(
    "--reason", required=True, callback=_not_blank, help="Why the recorded score was wrong"
)
@click.option("--by", help="Who corrected it (default: your user name)")
@click.option("--json", "as_json", is_flag=True, help="Print the receipt as JSON")
@pass_ledger
def correct_score(
    ctx: LedgerContext, run: str, score: float, reason: str, by: str | None, as_json: bool
) -> None:
    """Correct a run's score; the old one stays in its history.

    \b
    Example:
        benchledger correct-score 3fa9c2d1 --score 0.61 --reason "grader bug"
    """
    row = ctx.queries().find_run(run)
    old = ctx.services.ledger.correct_score(UUID(row["run_id"]), score, reason, actor(by))
    ctx.services.runner.catch_up()
    _receipt(
        as_json,
        {"run_id": row["run_id"], "old_score": old, "score": score, "reason": reason},
        f"Corrected run {short(row['run_id'])}: {old} -> {score} ({reason})",
    )


@click.command()
@pass_ledger
def demo(ctx: LedgerContext) -> None:
    """Build a realistic demo ledger through the ordinary import path.

    Five benchmarks x three agents x three models, retried attempts, failures
    and timeouts, an invalidated run, a corrected score and high-score
    references. Running it again appends nothing. Its runs are recorded in a
    run group of kind `demo`: `latest` shows them, but they are demo data, never
    publishable (the publishability gate fails them as `demo_data`).

    \b
    Example:
        benchledger --db demo.db demo && benchledger --db demo.db runs
    """
    from benchledger.adapters.demo import build_demo, refuse_foreign_events

    services = ctx.services
    url = ctx.settings.event_store_url
    if url:
        from benchledger.adapters.store.bootstrap import shown_url

        where = f"the event store at {shown_url(url)}"
    else:
        where = str(ctx.settings.db_path)
    refuse_foreign_events(
        services.ledger.recorder, lambda note: services.runner.envelope(note).event, where
    )
    summary = build_demo(services.ledger)
    ctx.services.runner.catch_up()
    counts = ctx.queries().counts()
    imported = sum(1 for r in summary.files if r.state == "imported")
    click.echo(
        f"Demo ledger at {ctx.settings.db_path}: {counts['runs']} runs, {counts['cells']} cells, "
        f"{counts['benchmarks']} benchmarks, {counts['events']} events "
        f"({imported} of {len(summary.files)} files newly imported)"
    )


def _set_validity(
    ctx: LedgerContext, run: str, reason: str, by: str | None, as_json: bool, *, invalidated: bool
) -> None:
    row = ctx.queries().find_run(run)
    ledger = ctx.services.ledger
    change = ledger.invalidate_run if invalidated else ledger.reinstate_run
    change(UUID(row["run_id"]), reason, actor(by))
    ctx.services.runner.catch_up()
    verb = "Invalidated" if invalidated else "Reinstated"
    _receipt(
        as_json,
        {"run_id": row["run_id"], "invalidated": invalidated, "reason": reason},
        f"{verb} run {short(row['run_id'])}: {reason}",
    )


def _receipt(as_json: bool, data: dict[str, object], text: str) -> None:
    click.echo(json.dumps(data) if as_json else text)


COMMANDS = [import_, invalidate, reinstate, correct_score, demo]
