"""Gates, reviews and their check: publication decisions, each appended as an event."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from benchledger.adapters.publication import gates as checks
from benchledger.adapters.publication import review_check
from benchledger.adapters.publication.publication import Selection, load
from benchledger.commands.context import LedgerContext, actor, as_of_option
from benchledger.commands.output import emit, output_options, short, stderr
from benchledger.commands.publish import benchmark_filters, split
from benchledger.commands.selection import selection_option

pass_ledger = click.make_pass_decorator(LedgerContext)

tolerance_option = click.option(
    "--tolerance",
    type=float,
    help="Score tolerance (comparability and readiness 0.08, calibration 1e-6)",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Output JSON")


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
) -> None:
    """Evaluate each gate at one position, append its verdict, print it; exit 1 on findings
    (unless not `fail_on_findings`: a report, whose verdicts are recorded all the same).

    --json prints the verdict (a list of them for several gates); --csv and --nl
    one row per verdict, its findings a JSON list."""
    include, exclude = split(include_benchmarks), split(exclude_benchmarks)
    pub = load(ctx.queries(as_of), include, exclude, selection)
    params = {"include": include, "exclude": exclude, "as_of": as_of, "selection": selection}
    verdicts = [
        checks.record(
            ctx.services.ledger, pub, name, tolerance=tolerance, params=params, actor=actor(None)
        )
        for name in dict.fromkeys(names)
    ]
    ctx.services.runner.catch_up()
    if fmt == "json":
        click.echo(json.dumps(verdicts[0] if len(verdicts) == 1 else verdicts, indent=2))
    elif fmt in ("csv", "nl"):
        emit(verdicts, fmt)
    else:
        for verdict in verdicts:
            state = "ok" if verdict["ok"] else f"{len(verdict['findings'])} findings"
            click.echo(
                f"{verdict['gate']}: {state} at position {verdict['position']} "
                f"(head {verdict['head_sha256'][:12]}, verdict {short(verdict['verdict_id'])})"
            )
            if verdict["findings"]:
                emit(verdict["findings"], None, columns=["scope", "reason", "value"])
    if fail_on_findings and not all(v["ok"] for v in verdicts):
        raise SystemExit(1)


@click.command()
@click.argument("names", nargs=-1, required=True, type=click.Choice(checks.GATES))
@benchmark_filters
@tolerance_option
@selection_option
@as_of_option
@output_options
@pass_ledger
def gate(
    ctx: LedgerContext,
    names: tuple[str, ...],
    include_benchmarks: str,
    exclude_benchmarks: str,
    tolerance: float | None,
    selection: Selection,
    as_of: str | None,
    fmt: str | None,
) -> None:
    """Evaluate gates over the latest rows and record each verdict; exit 1 on findings.

    publishability: each latest row succeeded, has a finite score and no demo,
    mock or sample marker; every benchmark and agent has a publishable row.
    comparability: agents of a benchmark share a comparison signature and their
    scores agree within --tolerance. readiness: the matrix is complete, plus
    both of those. calibration: the perfect/wrong/half baselines score 1, 0 and
    0.5, and real scores are not all 0, all 1 or all equal. A benchmark's required
    agents are its declared (or derived) ones, else every agent with a row.

    \b
    Example:
        benchledger gate publishability
        benchledger gate comparability --tolerance 0.1 --include-benchmarks bfcl --json
        benchledger gate readiness calibration --as-of 240
        benchledger gate readiness --selection newest
    """
    evaluate(ctx, names, include_benchmarks, exclude_benchmarks, tolerance, as_of, fmt, selection)


def _alias(name: str, gate_name: str, *, report: bool = False) -> click.Command:
    """`gate GATE_NAME` under the orchestrator's command name. `report`: as the
    orchestrator's reports, it exits 0 whatever it finds unless --fail-on-suspicious."""

    def run(
        ctx: LedgerContext,
        include_benchmarks: str,
        exclude_benchmarks: str,
        tolerance: float | None,
        selection: Selection,
        as_of: str | None,
        fmt: str | None,
        fail_on_suspicious: bool = True,
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
        )

    exits = (
        "Exit 0 whatever it finds, as the orchestrator's report does; with "
        "--fail-on-suspicious, exit 1 on findings. The verdict is recorded either way."
        if report
        else "Exit 1 on findings."
    )
    help_text = (
        f"The {gate_name} gate (the orchestrator's name for `gate {gate_name}`). {exits}\n\n"
        f"\b\nExample:\n    benchledger {name} --json"
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
    for option in options:
        decorated = option(decorated)
    return click.command(name=name, help=help_text)(decorated)


@click.command(name="gates")
@click.option("--gate", "gate_name", type=click.Choice(checks.GATES), help="Only this gate")
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
    gates_,
    verify_review,
]
