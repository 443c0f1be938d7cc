"""A target agent head to head with a baseline; a recorded report shown again."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from benchledger.adapters.publication import code_agent_latest
from benchledger.adapters.publication import head_to_head as h2h
from benchledger.adapters.publication import head_to_head_files as files
from benchledger.adapters.publication import head_to_head_history as history
from benchledger.adapters.publication import head_to_head_queue as queue
from benchledger.adapters.publication.compare import benchmarks_of
from benchledger.adapters.publication.queries import Queries
from benchledger.commands.context import LedgerContext, actor, as_of_option
from benchledger.commands.output import emit, output_options, printable
from benchledger.commands.paths import writes_paths
from benchledger.commands.selection import benchmark_filters, split

pass_ledger = click.make_pass_decorator(LedgerContext)

ENFORCE = (
    ("comparable", "every benchmark is superior or comparable (exit 3)"),
    ("token-evidence", "both sides of every row have token, cache and LLM-call evidence (4)"),
    ("required-stats", "both sides have right/wrong/total; live rows also token evidence (5)"),
    ("coverage", "every registered benchmark (after the filters) has both sides (6)"),
    ("report", "coverage, comparable and required stats, plus the other enforced gates (7)"),
    ("efficiency", "the target uses no more tokens or calls and caches no less (8)"),
    ("no-regression", "no target accuracy below --compare-summary's (9)"),
    ("quality", "--quality-guardrail-summary says ok (10)"),
    ("trajectory-reviews", "both sides have trajectory turns with cache telemetry (11)"),
    ("live-report", "no side is a smoke, dry-run, mock or synthetic run (12)"),
    (
        "release",
        "all of live, coverage, comparable, stats, tokens, trajectories, "
        "efficiency and quality (13)",
    ),
)


def _side(_ctx: click.Context, _param: click.Parameter, value: str) -> h2h.Side:
    try:
        return h2h.parse_side(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def _json_file(_ctx: click.Context, _param: click.Parameter, value: Path | None) -> Any:
    if value is None:
        return None
    try:
        data = json.loads(value.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise click.BadParameter(f"{value}: {e}") from None
    if not isinstance(data, dict):
        raise click.BadParameter(f"{value}: not a JSON object")
    return data


def enforce_options(command: Any) -> Any:
    for name, meaning in reversed(ENFORCE):
        dest = "enforce_" + name.replace("-", "_")
        command = click.option(f"--enforce-{name}", dest, is_flag=True, help=meaning)(command)
    return command


@click.command(name="head-to-head")
@click.option(
    "--target", required=True, metavar="SPEC", callback=_side, help="agent[@provider:model]"
)
@click.option(
    "--baseline", required=True, metavar="SPEC", callback=_side, help="agent[@provider:model]"
)
@click.option(
    "--benchmarks",
    multiple=True,
    metavar="A,B",
    help="Benchmarks to compare, comma-separated, repeatable (default: all either side ran)",
)
@click.option(
    "--rerun-queue",
    "queued",
    metavar="SUMMARY",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    callback=_json_file,
    help="Report only the benchmarks in the improvement queue of SUMMARY (a previous "
    "report's summary.json, ours or the orchestrator's). This reports recorded runs and "
    "executes nothing: record the reruns first (the queue's rerun_commands)",
)
@click.option(
    "--queue-priorities",
    metavar="P0,P1",
    help="With --rerun-queue: only the queue entries of these priorities "
    "(p0 inferior or weak, p1 missing)",
)
@click.option(
    "--queue-statuses",
    metavar="S,S",
    help="With --rerun-queue: only the queue entries of these statuses (inferior, weak, missing)",
)
@benchmark_filters
@click.option(
    "--deferred-benchmarks",
    metavar="A,B",
    default=",".join(history.DEFAULT_DEFERRED),
    show_default=True,
    help="Related benchmarks not yet release-comparable: listed as deferred coverage and "
    "not required by the coverage gate ('' for none)",
)
@click.option(
    "--tolerance",
    type=click.FloatRange(min=0),
    default=h2h.DEFAULT_TOLERANCE,
    show_default=True,
    help="Largest detectable effect (MDE at 80% power) still called comparable",
)
@enforce_options
@click.option(
    "--compare-summary",
    "previous",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    callback=_json_file,
    help="A previous report's summary.json: the previous-summary comparison (per "
    "benchmark: accuracy trend, tokens, cached %, calls, statuses) and "
    "--enforce-no-regression",
)
@click.option(
    "--quality-guardrail-summary",
    "quality",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    callback=_json_file,
    help="A readiness report (JSON with ok: true or exit_code: 0), for --enforce-quality",
)
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), help="Write the report files here"
)
@click.option(
    "--publish-latest-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write <benchmark>__<target>_vs_<baseline>.json rows and index.json here",
)
@as_of_option
@click.option("--by", help="Who asked (default: your user name)")
@output_options
@pass_ledger
@writes_paths(out="--out", publish_latest_dir="--publish-latest-dir")
def head_to_head(
    ctx: LedgerContext,
    /,
    target: h2h.Side,
    baseline: h2h.Side,
    benchmarks: tuple[str, ...],
    queued: dict[str, Any] | None,
    queue_priorities: str | None,
    queue_statuses: str | None,
    include_benchmarks: str,
    exclude_benchmarks: str,
    deferred_benchmarks: str,
    tolerance: float,
    previous: dict[str, Any] | None,
    quality: dict[str, Any] | None,
    out: Path | None,
    publish_latest_dir: Path | None,
    as_of: str | None,
    by: str | None,
    fmt: str | None,
    **enforce_flags: bool,
) -> None:
    """Report a target agent against a baseline per benchmark, and record the report.

    Per benchmark: the target's newest acceptable run and the baseline's newest
    with the same comparison signature (else `not comparable`, naming the keys
    that differ; a side without a run is `missing`, never a win). Rows carry
    right/wrong/total and accuracy, input/output/total/cached tokens, cached %,
    LLM calls, target - baseline deltas, the paired statistics, both run ids and
    a comparison_status: superior, comparable (no significant difference and a
    detectable effect within --tolerance), inferior, weak (both measured zero),
    missing, not comparable or inconclusive. An improvement queue (inferior, weak:
    p0; missing: p1) with diagnoses and trajectory review briefs, and an efficiency
    queue, carry rerun commands without secrets. The coverage section lists the
    deferred benchmarks (--deferred-benchmarks); --compare-summary adds the
    previous-summary comparison; --rerun-queue reports only a previous report's
    queue (this command executes nothing: record the reruns with `run` first).

    Exit codes: 0 ok, 2 preflight (nothing to compare, unknown agent), then the
    first failing enforced gate in this order: 3 comparable, 4 token evidence,
    5 required stats, 6 coverage, 7 report, 8 efficiency, 9 no regression,
    10 quality, 11 trajectory reviews, 12 live report, 13 release. The rules
    are in docs/head-to-head.md. view-head-to-head ID shows the report again.

    \b
    Example:
        benchledger head-to-head --target eliza --baseline opencode --out report/
        benchledger head-to-head --target eliza@cerebras:gpt-oss-120b \\
            --baseline opencode@cerebras:gpt-oss-120b --benchmarks swe_bench \\
            --enforce-comparable --enforce-efficiency --publish-latest-dir latest/
        benchledger head-to-head --target eliza --baseline opencode \\
            --rerun-queue report/summary.json --queue-priorities p0 \\
            --compare-summary report/summary.json --out report-2/
    """
    ctx.publishes = True  # the report is all it appends
    enforce = tuple(g for g in h2h.GATES if enforce_flags.get(f"enforce_{g}"))
    if "no_regression" in enforce and previous is None:
        raise click.UsageError("--enforce-no-regression needs --compare-summary PREV")
    if target == baseline:
        raise click.UsageError("--target and --baseline name the same side")
    priorities, statuses = split(queue_priorities or ""), split(queue_statuses or "")
    if queued is None and (priorities or statuses):
        raise click.UsageError("--queue-priorities and --queue-statuses need --rerun-queue")
    if queued is not None and benchmarks:
        raise click.UsageError("--rerun-queue chooses the benchmarks: drop --benchmarks")
    queries = ctx.queries(as_of)
    for side in (target, baseline):
        if not h2h.known_agent(queries, side):
            _preflight(f"unknown agent: {side.spec} has no runs in the ledger")
    if queued is not None:
        chosen = queue.queued_benchmarks(queued, set(priorities) or None, set(statuses) or None)
    else:
        chosen = [
            n.strip() for v in benchmarks for n in v.split(",") if n.strip()
        ] or benchmarks_of(queries, target, baseline)
    names = _selected(chosen, include_benchmarks, exclude_benchmarks)
    if not names and queued is not None:
        _preflight("nothing to rerun: no selected entry in the --rerun-queue improvement queue")
    if not names:
        _preflight("nothing to compare: no selected benchmark has a run of either side")
    registered = [
        str(r[0])
        for r in queries.conn.execute("SELECT benchmark FROM benchmarks ORDER BY benchmark")
    ]
    options = h2h.Options(
        tolerance=tolerance,
        enforce=enforce,
        coverage=tuple(_selected(registered, include_benchmarks, exclude_benchmarks)),
        previous=previous,
        quality=quality,
        publish_latest_dir=str(publish_latest_dir) if publish_latest_dir else None,
        deferred=tuple(split(deferred_benchmarks)),
        rerun_queue=queued is not None,
        queue_priorities=tuple(priorities),
        queue_statuses=tuple(statuses),
    )
    moment = datetime.now(UTC)
    report = h2h.build(queries, target, baseline, names, options, moment.isoformat())
    position, head = queries.head()
    report_id = h2h.new_report_id(moment)
    ctx.publisher.ledger.record_head_to_head(
        report_id,
        target=target.as_dict(),
        baseline=baseline.as_dict(),
        benchmarks=names,
        options=options.as_dict(),
        report=report,
        position=position,
        head_sha256=head,
        actor=actor(by),
    )
    ctx.publisher.runner.catch_up()
    # Rendered from the event just appended, so view-head-to-head gives the very same bytes.
    queries = ctx.queries()
    stored = h2h.stored(queries, report_id)
    _emit(stored, queries, fmt, out, publish_latest_dir)
    click.get_current_context().exit(stored["report"]["exit_code"])


@click.command(name="view-head-to-head")
@click.argument("report_id", metavar="ID")
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), help="Write the report files here"
)
@click.option(
    "--publish-latest-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write its latest-style rows and index.json here",
)
@as_of_option
@output_options
@pass_ledger
@writes_paths(out="--out", publish_latest_dir="--publish-latest-dir")
def view_head_to_head(
    ctx: LedgerContext,
    report_id: str,
    out: Path | None,
    publish_latest_dir: Path | None,
    as_of: str | None,
    fmt: str | None,
) -> None:
    """Show a recorded head-to-head report exactly as head-to-head printed it.

    It is read from its event, never recomputed, and exits 0 whatever the
    report's own exit code (printed in its last line and in summary.json).
    With --as-of, only a report recorded by then is found.

    \b
    Example:
        benchledger view-head-to-head h2h_20261001T090000Z_1a2b3c4d
        benchledger view-head-to-head h2h_20261001T090000Z_1a2b3c4d --out again/
    """
    queries = ctx.queries(as_of)
    _emit(h2h.stored(queries, report_id), queries, fmt, out, publish_latest_dir)


def _emit(
    stored: dict[str, Any],
    queries: Queries,
    fmt: str | None,
    out: Path | None,
    latest: Path | None,
) -> None:
    """--json prints summary.json; --csv and --nl the report's rows (one per benchmark)."""
    if out is not None:
        files.write_out(out, stored)
    if latest is not None:
        summary = str((out / "summary.json").resolve()) if out is not None else ""
        code_agent_latest.publish(latest, stored, queries, summary)
    if fmt in ("csv", "nl"):
        emit(stored["report"]["report_rows"], fmt, empty="No benchmarks.")
    else:
        shown = files.summary_json(stored).rstrip("\n") if fmt == "json" else files.text(stored)
        click.echo(printable(shown))


def _selected(names: list[str], include: str, exclude: str) -> list[str]:
    """In the order given, each once: only the included ones, none of the excluded."""
    only, left_out = set(split(include)), set(split(exclude))
    return [n for n in dict.fromkeys(names) if (not only or n in only) and n not in left_out]


def _preflight(message: str) -> None:
    click.echo(printable(f"Error: {message}"), err=True)
    click.get_current_context().exit(h2h.EXIT_CODES["preflight_failed"])


COMMANDS = [head_to_head, view_head_to_head]
