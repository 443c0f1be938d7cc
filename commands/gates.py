"""Gates, reviews and their check: publication decisions, each appended as an event."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from benchledger.adapters.publication import gates as checks
from benchledger.adapters.publication.publication import Publication, Selection, load
from benchledger.commands.context import LedgerContext, actor, as_of_option
from benchledger.commands.output import emit, output_options, short, stderr
from benchledger.commands.selection import benchmark_filters, selection_option, split

pass_ledger = click.make_pass_decorator(LedgerContext)

tolerance_option = click.option(
    "--tolerance",
    type=float,
    help="Score tolerance of benchledger's extra score-spread check (comparability and "
    "readiness 0.08) and of calibration (1e-6)",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Output JSON")
GATE_NAMES = (*checks.GATES, checks.RUNTIME)


def evaluate(
    ctx: LedgerContext,
    names: Sequence[str],
    include_benchmarks: str,
    exclude_benchmarks: str,
    tolerance: float | None,
    as_of: str | None,
    fmt: str | None,
    selection: Selection = "cohort",
    *,
    fail_on_findings: bool = True,
    latest_dir: Path | None = None,
    registry_path: Path | None = None,
    benchmark_lists: Sequence[str] = (),
    skip_runtime_gates: bool = False,
    required_agents: Sequence[str] = (),
    dry_run: bool = False,
) -> None:
    """Evaluate each gate at one position, append its verdict (unless `dry_run`: a check
    that appends nothing), print it; exit 1 on findings (unless not `fail_on_findings`: a
    report, whose verdicts are recorded all the same). `required_agents`: those of every
    benchmark in scope, whatever the ledger's rules say.

    Over the ledger, or over `latest_dir` (a latest/ directory on disk read into the same
    checks); readiness adds the runtime gates of the registry's benchmarks in scope
    unless `skip_runtime_gates`; the runtime gate probes this host.

    --json prints the verdict (a list of them for several gates); --csv and --nl
    one row per verdict, its findings a JSON list."""
    ctx.publishes = True  # verdicts are all it appends
    include, exclude = split(include_benchmarks), split(exclude_benchmarks)
    names = list(dict.fromkeys(names))
    if latest_dir is not None and as_of is not None:
        raise click.UsageError("--as-of reads the ledger; --latest-dir is read as it is on disk")
    if latest_dir is not None and "calibration" in names:
        raise click.UsageError("--latest-dir checks publishability, comparability and readiness")
    if benchmark_lists and checks.RUNTIME not in names:
        raise click.UsageError("--benchmarks selects the runtime gate's benchmarks")
    if latest_dir is not None and required_agents:
        raise click.UsageError(
            "--required-agents applies to the ledger; a latest/ directory's index.json states "
            "its own"
        )
    if (latest_dir is not None or checks.RUNTIME in names) and not dry_run:
        ctx.creates = True  # a verdict over a directory or the host needs no earlier event
        ctx.publisher.runner.catch_up()
    params: dict[str, Any] = {"include": include, "exclude": exclude, "as_of": as_of}
    extra: list[checks.Finding] = []
    if latest_dir is not None:
        from benchledger.adapters.publication.latest_dir import load as read_latest_dir

        position, head = _head(ctx, dry_run)
        seen = read_latest_dir(latest_dir, include, exclude, position=position, head_sha256=head)
        pub, extra = seen.publication, list(seen.findings)
        params |= seen.params(latest_dir)
    elif dry_run and names == [checks.RUNTIME] and _head(ctx, dry_run) == (0, ""):
        pub = Publication(0, "", {}, {}, {}, {}, None)  # probes the host; reads no ledger
    else:
        pub = load(ctx.queries(as_of), include, exclude, selection)
        params["selection"] = selection
        if required_agents:
            pub = pub.requiring(required_agents)
            params["required_agents"] = list(required_agents)
    runtime: list[checks.Finding] | None = None
    if checks.RUNTIME in names or ("readiness" in names and not skip_runtime_gates):
        runtime, probed = _runtime(
            registry_path,
            benchmark_lists,
            include,
            exclude,
            pub.benchmark_ids if checks.RUNTIME not in names else None,
        )
        params["runtime_gates"] = probed
    elif "readiness" in names:
        params["runtime_gates"] = {"not checked": "--skip-runtime-gates"}
    in_readiness = [{**f, "scope": f"runtime_gate:{f['scope']}"} for f in runtime or []]

    def extra_of(name: str) -> list[checks.Finding]:
        return (runtime or []) if name == checks.RUNTIME else [*extra, *in_readiness]

    if dry_run:
        verdicts = [
            checks.check(pub, name, tolerance=tolerance, extra=extra_of(name)) for name in names
        ]
    else:
        verdicts = [
            checks.record(
                ctx.publisher.ledger,
                pub,
                name,
                tolerance=tolerance,
                params=params,
                actor=actor(None),
                extra=extra_of(name),
            )
            for name in names
        ]
        ctx.publisher.runner.catch_up()
    if fmt == "json":
        click.echo(json.dumps(verdicts[0] if len(verdicts) == 1 else verdicts, indent=2))
    elif fmt in ("csv", "nl"):
        emit(verdicts, fmt)
    else:
        for verdict in verdicts:
            _print_verdict(verdict, latest_dir)
    if fail_on_findings and not all(v["ok"] for v in verdicts):
        raise SystemExit(1)


def _head(ctx: LedgerContext, dry_run: bool) -> tuple[int, str]:
    """The ledger's head a check of a directory states; a check that records nothing
    needs no ledger (position 0 without one), as the orchestrator's validators need none."""
    from benchledger.adapters.store import ledger_file

    absent = (ledger_file.Kind.MISSING, ledger_file.Kind.EMPTY)
    if dry_run and not ctx.settings.event_store_url and ledger_file.inspect(ctx.path) in absent:
        return 0, ""
    return ctx.queries().head()


def _print_verdict(verdict: dict[str, Any], latest_dir: Path | None) -> None:
    """A verdict as a table: the orchestrator's findings first, then benchledger's own,
    marked `extra` (the summary counts them apart)."""
    findings = verdict["findings"]
    theirs, ours = checks.counts(findings)
    state = "ok" if verdict["ok"] else f"{theirs} findings" + (f" + {ours} extra" if ours else "")
    where = f" in {latest_dir}" if latest_dir is not None else ""
    recorded = (
        f"verdict {short(verdict['verdict_id'])}"
        if verdict["verdict_id"] is not None
        else "not recorded"
    )
    click.echo(
        f"{verdict['gate']}: {state}{where} at position {verdict['position']} "
        f"(head {verdict['head_sha256'][:12]}, {recorded})"
    )
    if findings:
        ordered = sorted(findings, key=lambda f: bool(f.get("extra")))
        rows = [{**f, "extra": "extra" if f.get("extra") else ""} for f in ordered]
        columns = ["scope", "reason", "value", *(["extra"] if ours else [])]
        emit(rows, None, columns=columns)


def _runtime(
    registry_path: Path | None,
    benchmark_lists: Sequence[str],
    include: Sequence[str],
    exclude: Sequence[str],
    in_scope: Sequence[str] | None,
) -> tuple[list[checks.Finding], dict[str, Any]]:
    """Probe the runtime gates of the registry's benchmarks: those --benchmarks names (else
    all) within the filters; for readiness (`in_scope`), those of the publication's scope,
    and none when there is no registry file."""
    from benchledger.adapters.execution.defaults import DEFAULT_REGISTRY

    path = registry_path or Path(DEFAULT_REGISTRY)
    if in_scope is not None and not path.is_file():
        return [], {"not checked": f"no registry {path}"}
    from benchledger.adapters.execution.registry import load_registry, split_ids
    from benchledger.adapters.execution.runtime import Probe

    registry = load_registry(path)
    ids = split_ids(list(benchmark_lists))
    specs = registry.select(ids) if ids else list(registry.benchmarks.values())
    specs = [
        s
        for s in specs
        if (not include or s.id in include)
        and s.id not in exclude
        and (in_scope is None or s.id in in_scope)
    ]
    probe = Probe(dict(os.environ))
    missing = [m for s in specs for m in probe.missing(s.id, s.requires, s.cwd)]
    probed = {
        "registry": path.name,
        "requires": {s.id: list(s.requires) for s in specs if s.requires},
    }
    return checks.runtime_findings(missing), probed


latest_dir_option = click.option(
    "--latest-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Validate this latest/ directory on disk (rows *.json and index.json, as "
    "export-latest or the orchestrator writes them) instead of the ledger",
)
skip_runtime_option = click.option(
    "--skip-runtime-gates",
    is_flag=True,
    help="Readiness without probing the host's runtime gates (the registry's `requires`)",
)
registry_path_option = click.option(
    "--registry",
    "registry_path",
    envvar="BENCHLEDGER_REGISTRY",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Benchmark registry whose `requires` the runtime gates probe (env "
    "BENCHLEDGER_REGISTRY; default benchledger.toml)",
)
required_agents_option = click.option(
    "--required-agents",
    default="",
    metavar="A,B",
    help="Require these agents of every benchmark in scope (default: the registry's, an "
    "imported contract's or the orchestrator's; none where nothing states any)",
)
dry_run_option = click.option(
    "--dry-run", is_flag=True, help="Check and print the verdicts; record nothing"
)
benchmarks_option = click.option(
    "--benchmarks",
    "benchmark_lists",
    multiple=True,
    metavar="A,B,...",
    help="The runtime gate's benchmarks (comma-separated, repeatable; default: all registered)",
)


@click.command()
@click.argument("names", nargs=-1, required=True, type=click.Choice(GATE_NAMES))
@latest_dir_option
@benchmark_filters
@tolerance_option
@skip_runtime_option
@registry_path_option
@benchmarks_option
@required_agents_option
@dry_run_option
@selection_option
@as_of_option
@output_options
@pass_ledger
def gate(
    ctx: LedgerContext,
    names: tuple[str, ...],
    latest_dir: Path | None,
    include_benchmarks: str,
    exclude_benchmarks: str,
    tolerance: float | None,
    skip_runtime_gates: bool,
    registry_path: Path | None,
    benchmark_lists: tuple[str, ...],
    required_agents: str,
    dry_run: bool,
    selection: Selection,
    as_of: str | None,
    fmt: str | None,
) -> None:
    """Evaluate gates over the latest rows and record each verdict; exit 1 on findings.

    publishability: each latest row succeeded, has a finite score and no demo,
    mock or sample marker; every benchmark and agent has a publishable row.
    comparability: the required agents of a benchmark all have a row, succeeded,
    scored, with one comparison signature (and scores within --tolerance).
    readiness: the matrix contract is complete (every cell not succeeded is
    named, an unsupported one too), plus both of those, plus the runtime gates
    of the registry's benchmarks in scope (unless --skip-runtime-gates; none
    without a registry file). Findings are named and counted as the
    orchestrator's validators name them; benchledger's own checks are marked
    extra (docs/gates.md). calibration:
    the perfect/wrong/half baselines score 1, 0 and 0.5, and real scores are
    not all 0, all 1 or all equal. A benchmark's required agents are those
    --required-agents names, else its declared ones (the registry's, an imported
    matrix contract's) or derived ones (the orchestrator's default harnesses for
    its runs); a benchmark without any requires none, so no agent is missing.

    runtime: probe on this host what each registered benchmark (or those
    --benchmarks names) `requires` (a Docker daemon answering `docker info`,
    env:NAME, command:NAME, path:PATH) and name every requirement not met.

    --latest-dir DIR checks a latest/ directory on disk instead of the ledger,
    with the same checks: its rows (*.json), its index.json's matrix_contract
    (without one, readiness finds missing_matrix_contract; with one, readiness
    reads its cells as stated) and, for a directory named latest, its siblings
    quarantine/ and baselines/. A latest file that is no JSON object is a
    finding (invalid_json, non_object_json); another that is no row is an error
    naming the file and field. Verdicts are recorded at the ledger's position,
    with the directory and a digest of its files. --dry-run records nothing (the
    validate-* commands never record).

    \b
    Example:
        benchledger gate publishability
        benchledger gate comparability --tolerance 0.1 --include-benchmarks bfcl --json
        benchledger gate readiness calibration --as-of 240
        benchledger gate readiness --selection newest
        benchledger gate comparability --required-agents eliza,hermes --dry-run
        benchledger gate readiness --latest-dir export/latest --skip-runtime-gates
        benchledger gate runtime --benchmarks terminal_bench,hyperliquid_bench
    """
    evaluate(
        ctx,
        names,
        include_benchmarks,
        exclude_benchmarks,
        tolerance,
        as_of,
        fmt,
        selection,
        latest_dir=latest_dir,
        registry_path=registry_path,
        benchmark_lists=benchmark_lists,
        skip_runtime_gates=skip_runtime_gates,
        required_agents=split(required_agents),
        dry_run=dry_run,
    )


def _alias(name: str, gate_name: str, *, report: bool = False) -> click.Command:
    """`gate GATE_NAME` under the orchestrator's command name, with its options (the
    latest validators take --latest-dir; readiness --skip-runtime-gates). `report`: as
    the orchestrator's reports, it exits 0 whatever it finds unless --fail-on-suspicious
    and records its verdict; the validators, as the orchestrator's, record nothing."""

    def run(
        ctx: LedgerContext,
        include_benchmarks: str,
        exclude_benchmarks: str,
        tolerance: float | None,
        selection: Selection,
        as_of: str | None,
        fmt: str | None,
        fail_on_suspicious: bool = True,
        latest_dir: Path | None = None,
        skip_runtime_gates: bool = False,
        registry_path: Path | None = None,
        required_agents: str = "",
    ) -> None:
        evaluate(
            ctx,
            [gate_name],
            include_benchmarks,
            exclude_benchmarks,
            tolerance,
            as_of,
            fmt,
            selection,
            fail_on_findings=fail_on_suspicious,
            latest_dir=latest_dir,
            registry_path=registry_path,
            skip_runtime_gates=skip_runtime_gates,
            required_agents=split(required_agents),
            dry_run=not report,
        )

    exits = (
        "Exit 0 whatever it finds, as the orchestrator's report does; with "
        "--fail-on-suspicious, exit 1 on findings. The verdict is recorded either way."
        if report
        else f"Exit 1 on findings. A check: nothing is recorded (`gate {gate_name}` records it)."
    )
    example = f"benchledger {name} --json"
    if not report:
        example += f"\n    benchledger {name} --latest-dir export/latest --include-benchmarks bfcl"
    help_text = (
        f"The {gate_name} gate (the orchestrator's name for `gate {gate_name}`). {exits}\n\n"
        f"\b\nExample:\n    {example}"
    )
    decorated: Callable[..., Any] = pass_ledger(run)
    options: tuple[Callable[[Any], Any], ...] = (
        output_options,
        as_of_option,
        selection_option,
        tolerance_option,
        benchmark_filters,
    )
    if report:
        flag = click.option(
            "--fail-on-suspicious",
            is_flag=True,
            help="Exit 1 when calibration is missing or mismatched, or real harnesses tie",
        )
        options = (flag, *options)
    else:
        options = (*options, latest_dir_option, required_agents_option)
    if gate_name == "readiness":
        options = (registry_path_option, skip_runtime_option, *options)
    for option in options:
        decorated = option(decorated)
    return click.command(name=name, help=help_text)(decorated)


@click.command(name="validate-runtime-gates")
@registry_path_option
@benchmarks_option
@benchmark_filters
@output_options
@pass_ledger
def validate_runtime_gates(
    ctx: LedgerContext,
    registry_path: Path | None,
    benchmark_lists: tuple[str, ...],
    include_benchmarks: str,
    exclude_benchmarks: str,
    fmt: str | None,
) -> None:
    """The runtime gate (the orchestrator's name for `gate runtime`). Exit 1 on findings.

    Probes on this host what each registered benchmark `requires` and reports
    one finding per requirement not met; records nothing (`gate runtime` does).

    \b
    Example:
        benchledger validate-runtime-gates --json
        benchledger validate-runtime-gates --benchmarks terminal_bench
    """
    evaluate(
        ctx,
        [checks.RUNTIME],
        include_benchmarks,
        exclude_benchmarks,
        None,
        None,
        fmt,
        registry_path=registry_path,
        benchmark_lists=benchmark_lists,
        dry_run=True,
    )


@click.command(name="gates")
@click.option("--gate", "gate_name", type=click.Choice(GATE_NAMES), help="Only this gate")
@as_of_option
@output_options
@pass_ledger
def gates_(ctx: LedgerContext, gate_name: str | None, as_of: str | None, fmt: str | None) -> None:
    """Recorded gate verdicts, oldest first.

    \b
    Example:
        benchledger gates
        benchledger gates --gate comparability --json
        benchledger gates --as-of 120
    """
    conn = ctx.queries(as_of).conn
    sql = (
        "SELECT verdict_id, gate, ok, findings, params, position, head_sha256, actor, "
        "evaluated_at, event_position FROM gate_verdicts"
    )
    cursor = conn.execute(
        sql + (" WHERE gate = ?" if gate_name else "") + " ORDER BY event_position",
        (gate_name,) if gate_name else (),
    )
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
    for row in rows:
        row["ok"] = bool(row["ok"])
        row["params"] = json.loads(row["params"] or "{}")
    if fmt in ("json", "nl", "csv"):
        emit(rows, fmt)
        return
    emit(
        [{**r, "verdict": short(r["verdict_id"]), "head": r["head_sha256"][:12]} for r in rows],
        fmt,
        columns=["verdict", "gate", "ok", "findings", "position", "head", "actor", "evaluated_at"],
        empty="No gate verdicts.",
    )


@click.command(name="verify-review")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@json_option
@pass_ledger
def verify_review(ctx: LedgerContext, directory: Path, as_json: bool) -> None:
    """Check a review package against the ledger: still the one recorded, nothing changed since.

    Exit 1 when the manifest matches no recorded review, the log was rewritten
    under it, or events touching the reviewed benchmarks were appended after
    the reviewed position (they are listed).

    \b
    Example:
        benchledger verify-review review/
    """
    from benchledger.adapters.publication import review_check

    result = review_check.verify(ctx.queries().conn, directory)
    changes = result["changes"]
    if as_json:
        click.echo(json.dumps(result, indent=2, sort_keys=True))
    elif changes:
        emit(
            [{**c, "run": short(c["run_id"])} for c in changes],
            None,
            columns=["position", "type", "benchmark", "run"],
        )
    scope = result["scope"]
    where = ",".join(scope["include"]) or "all benchmarks"
    where += f" minus {','.join(scope['exclude'])}" if scope["exclude"] else ""
    if changes:
        stderr(
            f"Error: {len(changes)} event{'s' if len(changes) > 1 else ''} touching the "
            f"reviewed scope ({where}) appended after position {result['position']}"
        )
        raise SystemExit(1)
    message = (
        f"OK: review {short(result['review_id'])} by {result['reviewer']} at position "
        f"{result['position']} matches the ledger; nothing in its scope ({where}) changed since"
    )
    click.echo(message, err=as_json)


COMMANDS: list[click.Command] = [
    gate,
    _alias("validate-latest-publishability", "publishability"),
    _alias("validate-latest-comparability", "comparability"),
    _alias("validate-latest-readiness", "readiness"),
    _alias("calibration-report", "calibration", report=True),
    validate_runtime_gates,
    gates_,
    verify_review,
]
