"""Compare two sides over the ledger's latest runs, or run both sides first; show a
recorded comparison again."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from benchledger.adapters.publication import compare as comparisons
from benchledger.adapters.publication import executed_compare as executed
from benchledger.adapters.publication.compare import Method, Side
from benchledger.adapters.publication.executed_compare import RunSide
from benchledger.adapters.publication.export_files import write_atomically
from benchledger.commands.context import LedgerContext, actor, as_of_option
from benchledger.commands.output import emit, output_options, printable, short, stderr
from benchledger.commands.output import table as output_table
from benchledger.commands.paths import writes_paths
from benchledger.commands.work import Work, execute, mode_of, plan, registry_option
from benchledger.domain.comparison_stats import Bootstrap

if TYPE_CHECKING:
    from benchledger.adapters.execution.runner import BenchmarkOutcome
    from benchledger.domain.signature import Mode

pass_ledger = click.make_pass_decorator(LedgerContext)

# As comparisons were shown before they carried a status: they still are, byte for byte.
COLUMNS = ["benchmark", "A", "B", "delta", "winner", "unit", "cells", "ci95", "p", "a_run", "b_run"]
STATUS_COLUMNS = [
    "benchmark", "A", "B", "delta", "winner", "unit", "cells", "ci95", "p", "p_holm", "status",
    "a_run", "b_run",
]  # fmt: skip


def _side(_ctx: click.Context, param: click.Parameter, value: str) -> str:
    """The spec as given, once it reads as [agent@]provider:model (comparing the ledger's
    runs) or provider:model[@base_url] (for --run); parsed as the mode asks."""
    try:
        comparisons.parse_side(value)
    except ValueError as e:
        try:
            executed.parse_run_side(value)
        except ValueError:
            raise click.BadParameter(
                f"{e} (nor provider:model[@base_url], as --run takes)"
            ) from None
    return value


def _benchmarks(values: tuple[str, ...]) -> list[str]:
    """Comma-separated and repeatable, in the order given, each once."""
    names = [n.strip() for value in values for n in value.split(",") if n.strip()]
    return list(dict.fromkeys(names))


@click.command()
@click.option(
    "--a",
    "side_a",
    required=True,
    metavar="SPEC",
    callback=_side,
    help="[agent@]provider:model; with --run provider:model[@base_url]",
)
@click.option(
    "--b",
    "side_b",
    required=True,
    metavar="SPEC",
    callback=_side,
    help="[agent@]provider:model; with --run provider:model[@base_url]",
)
@click.option(
    "--benchmarks",
    multiple=True,
    metavar="A,B",
    help="Benchmarks to compare, comma-separated, repeatable (default: all either side ran; "
    "required with --run)",
)
@click.option("--run", "run_sides", is_flag=True, help="Run both sides first, then compare them")
@registry_option
@click.option(
    "--agent",
    default="compare",
    show_default=True,
    help="With --run: the agent both sides run as",
)
@click.option(
    "--max-examples",
    type=click.IntRange(min=1),
    help="With --run: cap examples per benchmark (as max_examples, max_tasks, "
    "max_questions and sample)",
)
@click.option("--temperature", type=float, help="With --run: sampling temperature (config)")
@click.option(
    "--rerun-failed",
    is_flag=True,
    help="With --run: re-run unless the latest executed attempt succeeded",
)
@click.option("--force", is_flag=True, help="With --run: always run a new attempt")
@click.option("--timeout", type=float, help="With --run: kill a benchmark after this many seconds")
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="With --run: benchmarks of a side to run in parallel",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="With --run: where compare-ID.json goes (default: RESULTS_ROOT/comparisons)",
)
@click.option(
    "--tolerance",
    type=click.FloatRange(min=0),
    default=0.05,
    show_default=True,
    help="Largest difference that still counts as comparable (the MDE must be within it)",
)
@click.option(
    "--bootstrap",
    type=click.Choice(["none", "mean", "median"]),
    default="none",
    show_default=True,
    help="Also a paired bootstrap interval of this statistic of the cell differences",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed")
@click.option(
    "--resamples",
    type=click.IntRange(min=1),
    default=10_000,
    show_default=True,
    help="Bootstrap resamples",
)
@as_of_option
@click.option("--by", help="Who asked (default: your user name)")
@output_options
@pass_ledger
@writes_paths(out_dir="--out")
def compare(
    ctx: LedgerContext,
    side_a: str,
    side_b: str,
    benchmarks: tuple[str, ...],
    run_sides: bool,
    registry_path: Path,
    agent: str,
    max_examples: int | None,
    temperature: float | None,
    rerun_failed: bool,
    force: bool,
    timeout: float | None,
    jobs: int,
    out_dir: Path | None,
    tolerance: float,
    bootstrap: str,
    seed: int,
    resamples: int,
    as_of: str | None,
    by: str | None,
    fmt: str | None,
) -> None:
    """Compare two sides benchmark by benchmark, and record the comparison.

    A side is [agent@]provider:model; per benchmark it stands for the newest
    acceptable run of that provider and model (and agent, if named). Two runs
    are paired only when their configs match (the sides' own agent, provider
    and model aside); otherwise the row is `not comparable` and names the keys
    that differ. A benchmark one side did not run is `missing`, never a win.

    Over the cells both runs scored, the paired difference B - A gets its
    standard error (clustered when the cells state a cluster), a 95% interval,
    a p-value (exact McNemar for pass/fail cells, a paired t-test otherwise),
    Holm-adjusted across the benchmarks, and the minimum detectable effect.
    The status is B's against A: superior / inferior when significant,
    comparable when not and the detectable effect is within --tolerance,
    inconclusive otherwise; the lines under the table say which rule decided
    (docs/statistics.md). The comparison, with its tolerance and bootstrap
    seed and resamples, is appended to the ledger, and view-comparison ID
    shows it again, unchanged. --json prints the comparison; --csv and --nl
    one row per benchmark (its paired statistics a JSON object in CSV).

    With --run, as the orchestrator's compare, both sides run first: a side is
    provider:model[@base_url], and each runs the --benchmarks of the registry
    through the path `run` takes (signatures, attempts, leases and skips apply:
    work that already succeeded is not run again unless --rerun-failed or
    --force says so) as its own run group, with agent `compare` unless --agent
    names one. Both groups and every run they start are tagged with the
    comparison's id. The config gets the base URL as vllm_base_url (the
    benchmark sees it as OPENAI_BASE_URL; provider vllm defaults to
    http://127.0.0.1:8001/v1, or VLLM_BASE_URL), --max-examples N as
    max_examples, max_tasks, max_questions and sample, and --temperature T as
    temperature. The table is the orchestrator's (benchmark, A, B, delta B-A,
    winner) with the paired statistics of the runs' cells after it; a side
    whose run did not succeed shows n/a and its status. The comparison is
    recorded, view-comparison ID prints the same table, and compare-ID.json
    (the orchestrator's file) is written under --out. Exit 0 when the
    comparison is recorded, failed sides included, as the orchestrator's.

    \b
    Example:
        benchledger compare --a cerebras:gpt-oss-120b --b openai:gpt-4.1-mini
        benchledger compare --a eliza@cerebras:gpt-oss-120b \\
            --b hermes@cerebras:gpt-oss-120b --benchmarks bfcl,gaia --json
        benchledger compare --a cerebras:gpt-oss-120b --b openai:gpt-4.1-mini \\
            --tolerance 0.02 --bootstrap mean --seed 7 --resamples 20000
        benchledger compare --run --a openai:gpt-4.1-mini \\
            --b vllm:elizaos/eliza-1@http://127.0.0.1:8001/v1 \\
            --benchmarks action-calling,bfcl --max-examples 5 --out comparisons
    """
    run_options = {
        "--max-examples": max_examples is not None,
        "--temperature": temperature is not None,
        "--rerun-failed": rerun_failed,
        "--force": force,
        "--timeout": timeout is not None,
        "--jobs": jobs != 1,
        "--out": out_dir is not None,
        "--agent": agent != "compare",
    }
    if run_sides:
        if as_of is not None or bootstrap != "none":
            raise click.UsageError("--run compares the runs it makes: no --as-of or --bootstrap")
        stored = _run_both(
            ctx,
            _run_side(side_a, "--a"),
            _run_side(side_b, "--b"),
            _benchmarks(benchmarks),
            registry_path,
            agent,
            max_examples,
            temperature,
            mode_of(rerun_failed, force),
            timeout,
            jobs,
            out_dir,
            Method(tolerance=tolerance),
            by,
        )
        _show(stored, fmt)
        return
    if given := [name for name, on in run_options.items() if on]:
        raise click.UsageError(f"{', '.join(given)} only apply with --run")
    try:
        first, second = comparisons.parse_side(side_a), comparisons.parse_side(side_b)
    except ValueError as e:
        raise click.UsageError(f"{e}; a base URL needs --run") from None
    _compare_recorded(
        ctx, first, second, benchmarks, tolerance, bootstrap, seed, resamples, as_of, by, fmt
    )


def _run_side(text: str, option: str) -> RunSide:
    try:
        return executed.parse_run_side(text)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint=option) from None


def _run_both(
    ctx: LedgerContext,
    side_a: RunSide,
    side_b: RunSide,
    names: list[str],
    registry_path: Path,
    agent: str,
    max_examples: int | None,
    temperature: float | None,
    mode: Mode,
    timeout: float | None,
    jobs: int,
    out_dir: Path | None,
    method: Method,
    by: str | None,
) -> dict[str, Any]:
    """Run both sides, one run group each, record the comparison of their runs and write
    compare-ID.json; the comparison as recorded."""
    if not names:
        raise click.UsageError("--run needs --benchmarks A,B,...")
    if side_a == side_b:
        raise click.UsageError("--a and --b name the same side")
    ctx.creates = True  # running benchmarks may start a new ledger, as `run` does
    comparison_id = comparisons.new_comparison_id()
    sides = {"a": side_a, "b": side_b}
    works: dict[str, Work] = {}
    for name, side in sides.items():  # both planned before either runs: errors append nothing
        extra = executed.side_extra(side, max_examples, temperature)
        work = plan(
            registry_path,
            (",".join(names),),
            False,
            agent,
            side.provider,
            side.model,
            None,
            json.dumps(extra),
            None,
            None,
            None,
            mode=mode,
            timeout=timeout,
        )
        if work.accounts and work.accounts.problems:
            raise click.ClickException(
                "cannot use the accounts: " + "; ".join(work.accounts.problems)
            )
        tags = {"comparison_id": comparison_id, "comparison_side": name}
        works[name] = replace(work, request=replace(work.request, tags=tags))
    stderr(f"Comparison ID: {comparison_id}")
    ran: dict[str, tuple[str, list[BenchmarkOutcome]]] = {}
    for name, side in sides.items():
        stderr(f"Running side {name.upper()} ({side.spec})...")
        label, outcomes = execute(ctx, works[name], jobs)
        counts: dict[str, int] = {}
        for outcome in outcomes:
            counts[outcome.state] = counts.get(outcome.state, 0) + 1
        summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        stderr(f"Side {name.upper()} run group {label}: {summary}")
        ran[name] = (label, outcomes)
    queries = ctx.queries()
    runs: dict[str, dict[str, dict[str, Any] | None]] = {}
    execution: dict[str, Any] = {
        "agent": agent,
        "mode": mode,
        "max_examples": max_examples,
        "temperature": temperature,
        "timeout": timeout,
        "created_at": datetime.now(UTC).isoformat(),
        "sides": {},
    }
    for name, side in sides.items():
        label, outcomes = ran[name]
        found = {o.benchmark: executed.side_run(queries, o.run_id or o.defer_to) for o in outcomes}
        runs[name] = found
        execution["sides"][name] = {
            "run_group": label,
            "runs": [executed.side_entry(side, asdict(o), found[o.benchmark]) for o in outcomes],
        }
    unrun = {
        name: {o.benchmark: o.state for o in ran[name][1] if runs[name][o.benchmark] is None}
        for name in sides
    }
    rows = executed.rows(
        queries, names, runs["a"], runs["b"], method.tolerance, method.alpha, unrun=unrun
    )
    position, head = queries.head()
    ctx.services.ledger.record_comparison(
        comparison_id,
        a=side_a.as_dict(agent),
        b=side_b.as_dict(agent),
        benchmarks=names,
        rows=rows,
        position=position,
        head_sha256=head,
        actor=actor(by),
        statistics=method.as_dict(),
        execution=execution,
    )
    ctx.services.runner.catch_up()
    stored = comparisons.stored_comparison(ctx.queries(), comparison_id)
    folder = out_dir or works["a"].results_root / "comparisons"
    path = folder / f"compare-{comparison_id}.json"
    document = json.dumps(executed.document(stored), indent=2, ensure_ascii=True)
    write_atomically(path, (document + "\n").encode())  # never a half-written file
    stderr(f"Wrote {path}")
    return stored


def _compare_recorded(
    ctx: LedgerContext,
    side_a: Side,
    side_b: Side,
    benchmarks: tuple[str, ...],
    tolerance: float,
    bootstrap: str,
    seed: int,
    resamples: int,
    as_of: str | None,
    by: str | None,
    fmt: str | None,
) -> None:
    if side_a == side_b:
        raise click.UsageError("--a and --b name the same side")
    ctx.publishes = True  # the comparison is all it appends
    queries = ctx.queries(as_of)
    names = _benchmarks(benchmarks) or comparisons.benchmarks_of(queries, side_a, side_b)
    if not names:
        raise click.ClickException(f"neither {side_a.spec} nor {side_b.spec} has an acceptable run")
    unknown = comparisons.unknown_benchmarks(queries, names)
    if unknown:
        raise click.ClickException(f"unknown benchmark: {', '.join(unknown)}")
    method = Method(
        tolerance=tolerance,
        bootstrap=cast(Bootstrap, bootstrap),
        seed=seed,
        resamples=resamples,
    )
    rows = comparisons.compare(queries, side_a, side_b, names, method)
    position, head = queries.head()
    comparison_id = comparisons.new_comparison_id()
    ctx.publisher.ledger.record_comparison(
        comparison_id,
        a=side_a.as_dict(),
        b=side_b.as_dict(),
        benchmarks=names,
        rows=rows,
        position=position,
        head_sha256=head,
        actor=actor(by),
        statistics=method.as_dict(),
    )
    ctx.publisher.runner.catch_up()
    # Shown from the event just appended, so view-comparison prints the very same bytes.
    stored = comparisons.stored_comparison(ctx.queries(), comparison_id)
    _show(stored, fmt)


@click.command(name="view-comparison")
@click.argument("comparison_id", metavar="ID")
@as_of_option
@output_options
@pass_ledger
def view_comparison(
    ctx: LedgerContext, comparison_id: str, as_of: str | None, fmt: str | None
) -> None:
    """Show a recorded comparison exactly as compare printed it.

    It is read from its event, never recomputed: later runs, corrections or
    invalidations do not change it. A comparison imported from the orchestrator
    (its cmp_... id on the runs it tagged) is shown from those runs, as its own
    view-comparison does: sides by provider and model, in order of first start.
    With --as-of, only a comparison recorded by then is found. --csv and --nl
    print one row per benchmark, as compare does.

    \b
    Example:
        benchledger view-comparison cmp_20261001T090000Z_1a2b3c4d
        benchledger view-comparison cmp_20261001T090000Z_1a2b3c4d --json
        benchledger view-comparison cmp_20261001T090000Z_1a2b3c4d --csv
    """
    _show(comparisons.stored_comparison(ctx.queries(as_of), comparison_id), fmt)


def _show(stored: dict[str, Any], fmt: str | None) -> None:
    if fmt in ("csv", "nl"):
        rows = [{"comparison_id": stored["comparison_id"], **row} for row in stored["rows"]]
        emit(rows, fmt, empty="No benchmarks.")
        return
    click.echo(printable(render(stored, fmt == "json")))


def render(stored: dict[str, Any], as_json: bool) -> str:
    """The one rendering of a comparison, for compare and view-comparison alike."""
    if as_json:
        keys = ("comparison_id", "a", "b", "rows", "statistics", "execution")
        optional = ("statistics", "execution")  # shown when recorded
        shown = {k: stored[k] for k in keys if k in stored and (k not in optional or stored[k])}
        return json.dumps(shown, indent=2, ensure_ascii=False)
    if stored.get("execution"):
        return executed.render(stored)
    a, b = stored["a"], stored["b"]
    where = (
        "imported: the runs its source tagged with it"
        if stored.get("position") is None
        else f"at ledger position {stored['position']}"
    )
    header = [
        f"Comparison {stored['comparison_id']} {where}",
        f"A: {a['spec']}",
        f"B: {b['spec']}",
        "",
    ]
    with_status = any("status" in row for row in stored["rows"])
    columns = STATUS_COLUMNS if with_status else COLUMNS
    table = output_table(
        columns, [[_cell(row, column) for column in columns] for row in stored["rows"]]
    )
    if not with_status:
        return "\n".join([*header, table])
    return "\n".join([*header, table, "", *_rules(stored)])


def _rules(stored: dict[str, Any]) -> list[str]:
    """Which rule decided each row's status, and how the comparison decided."""
    statistics = stored.get("statistics") or {}
    lines = [
        f"{row['benchmark_id']}: {row['status']}: {row['status_rule']}" for row in stored["rows"]
    ]
    if statistics:
        method = (
            f"status of B against A; Holm-adjusted p, alpha {statistics['alpha']:g}, "
            f"tolerance {statistics['tolerance']:g}"
        )
        if statistics.get("bootstrap", "none") != "none":
            method += (
                f"; bootstrap {statistics['bootstrap']} seed {statistics['seed']} "
                f"resamples {statistics['resamples']}"
            )
        lines.append(method)
    return lines


def _cell(row: dict[str, Any], column: str) -> str:
    paired = row.get("paired") or {}
    if column == "benchmark":
        return str(row["benchmark_id"])
    if column in ("A", "B"):
        return _number(row[f"{column.lower()}_score"])
    if column == "delta":
        delta = row["delta"]
        return "" if delta is None else f"+{delta:.4f}" if delta > 0 else f"{delta:.4f}"
    if column == "cells":
        return str(paired.get("cells", ""))
    if column == "ci95":
        if not paired or paired.get("ci95_low") is None:
            return ""
        return f"[{paired['ci95_low']:.4f}, {paired['ci95_high']:.4f}]"
    if column in ("p", "p_holm"):
        p = paired.get("p" if "p" in paired else "sign_test_p") if column == "p" else None
        if column == "p_holm":
            p = paired.get("p_holm")
        return "" if p is None else "<0.0001" if p < 0.0001 else f"{p:.4f}"
    if column in ("a_run", "b_run"):
        return short(row[f"{column[0]}_run_id"])
    return "" if row.get(column) is None else str(row[column])


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


COMMANDS = [compare, view_comparison]
