"""The operator's review chain: preflight, run, gates, review package, verify-artifacts."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from benchledger.adapters.execution.runtime import Probe
from benchledger.adapters.publication import artifacts, gates
from benchledger.adapters.publication import review as packages
from benchledger.adapters.publication.publication import Publication, Selection, load
from benchledger.commands.checks import (
    artifacts_line,
    generated_option,
    generated_outputs,
    out_option,
    preflight_line,
    results_root_of,
    run_preflight,
)
from benchledger.commands.context import LedgerContext, actor
from benchledger.commands.gates import json_option, tolerance_option
from benchledger.commands.output import printable, short, stderr
from benchledger.commands.paths import writes_paths
from benchledger.commands.selection import benchmark_filters, selection_option, split
from benchledger.commands.work import Work, execute, mode_of, mode_options, selection_options

if TYPE_CHECKING:
    from benchledger.adapters.execution import preflight as checks

# Each step's exit code when the chain stops there (`preflight` and `verify-artifacts`
# exit with theirs on their own too).
RUN_FAILED, GATES_BLOCKED, PACKAGE_BLOCKED = 4, 5, 6

pass_ledger = click.make_pass_decorator(LedgerContext)


@dataclass
class Steps:
    """One status line per step; the chain stops at the first that cannot proceed."""

    as_json: bool
    done: list[dict[str, Any]] = field(default_factory=list)

    def passed(self, step: str, status: str, detail: str) -> None:
        self._say(step, status, detail, 0)

    def stop(self, step: str, status: str, detail: str, code: int) -> NoReturn:
        self._say(step, status, detail, code)
        if self.as_json:
            click.echo(json.dumps({"ok": False, "exit_code": code, "steps": self.done}, indent=2))
        raise SystemExit(code)

    def finish(self) -> None:
        if self.as_json:
            click.echo(json.dumps({"ok": True, "exit_code": 0, "steps": self.done}, indent=2))

    def _say(self, step: str, status: str, detail: str, code: int) -> None:
        self.done.append({"step": step, "status": status, "detail": detail, "exit_code": code})
        click.echo(printable(f"{step}: {status} ({detail})"), err=self.as_json)


@click.command()
@selection_options
@mode_options
@click.option("--no-run", is_flag=True, help="Only package what is recorded: no preflight, no run")
@click.option(
    "--skip-runtime-gates",
    is_flag=True,
    help="Do not probe the host's runtime gates (the registry's `requires`) in preflight, "
    "the run or readiness",
)
@click.option("--reviewer", required=True, metavar="NAME", help="Who signs off")
@click.option(
    "--reviewer-note",
    "--note",
    "note",
    required=True,
    metavar="TEXT",
    help="What was reviewed and why it is ok",
)
@benchmark_filters
@tolerance_option
@selection_option
@out_option
@generated_option
@json_option
@pass_ledger
@writes_paths(out_dir="--out", results_root="--results-root")
def review(
    ctx: LedgerContext,
    /,
    rerun_failed: bool,
    force: bool,
    no_run: bool,
    skip_runtime_gates: bool,
    reviewer: str,
    note: str,
    include_benchmarks: str,
    exclude_benchmarks: str,
    tolerance: float | None,
    selection: Selection,
    out_dir: Path,
    generated: tuple[Path, ...],
    timeout: float | None,
    jobs: int,
    as_json: bool,
    **work_options: Any,
) -> None:
    """Preflight, run, gate and sign off benchmarks, then check nothing generated is committed.

    The operator's wrapper: preflight, then run the benchmarks (rotating the
    --accounts of the agent's credential pool), then the gates, then the
    review package, then verify-artifacts. One status line per step; the chain
    stops at the first step that cannot proceed and exits with its code:

    \b
        0  every step passed
        1  an error (Error: ...)     2  a usage error, or
           preflight blocked (a missing executable, env var, runtime gate
           requirement or account auth file...): preflight.md in --out says how
           to unblock (preflight_failed, 2, as the orchestrator's review)
        4  run: a benchmark failed, timed out or was refused
        5  gates: readiness or calibration findings, or no latest rows
        6  review package blocked (a blank --reviewer-note, or inventory
           gaps: checked before the run)
        7  verify-artifacts: generated outputs are tracked or staged in git

    The package needs zero inventory gaps in the whole registry, as the
    orchestrator's review-package does, unless it is a scoped partial matrix:
    --include-benchmarks or --exclude-benchmarks narrow it, the manifest
    records `filters.scoped_partial_matrix`, and only the gaps of benchmarks
    in its scope block it. --benchmarks alone chooses what runs, not the scope.

    The manifest reports the preflight, inventory and verify-artifacts results
    it got (or that a check was not run), never a default. --no-run only
    packages what is recorded: the gates and the package (written even when
    blocked, with the blocking findings; exit 1 then).

    \b
    Example:
        benchledger review --benchmarks bfcl,action-calling --agent codex \\
            --model-profile gpt-5.5 --accounts 3 --reviewer ana \\
            --reviewer-note "spot-checked tool calls per account" --out review/codex
        benchledger review --no-run --reviewer ana --note "May run, all green" --out review/
    """
    if no_run:
        if work_options["benchmark_lists"] or work_options["run_all"] or rerun_failed or force:
            raise click.UsageError("--no-run runs nothing: it takes no benchmarks to run")
        _package_only(
            ctx,
            reviewer,
            note,
            packages.Scope(
                split(include_benchmarks),
                split(exclude_benchmarks),
                tolerance,
                declared=bool(split(include_benchmarks) or split(exclude_benchmarks)),
            ),
            selection,
            out_dir,
            generated_outputs(
                ctx,
                results_root_of(work_options["registry_path"], work_options["results_root"]),
                out_dir,
                generated,
            ),
            work_options["registry_path"],
            as_json,
        )
        return
    if not (work_options["benchmark_lists"] or work_options["run_all"]):
        raise click.UsageError(
            "give --benchmarks A,B,... or --all, or --no-run to package what is recorded"
        )
    from benchledger.adapters.execution import preflight as checks

    steps = Steps(as_json)
    report, work = run_preflight(
        work_options,
        out_dir,
        mode=mode_of(rerun_failed, force),
        timeout=timeout,
        skip_runtime_gates=skip_runtime_gates,
    )
    written = checks.write(report, out_dir)
    if not report.ok or work is None:
        steps.stop("preflight", "blocked", preflight_line(report, work, written), report.exit_code)
    steps.passed("preflight", "ok", preflight_line(report, work, written))
    declared = bool(split(include_benchmarks) or split(exclude_benchmarks))
    scope = packages.Scope(
        split(include_benchmarks) or [s.id for s in work.specs],
        split(exclude_benchmarks),
        tolerance,
        declared=declared,
    )
    # The package would be blocked by these: stop before running anything.
    for finding in packages.inventory_blocking(report.checks["inventory"], scope):
        detail = f"{finding['reason']}: {finding['value']}; fix them, or declare a scoped "
        detail += "partial matrix with --include-benchmarks or --exclude-benchmarks"
        steps.stop("inventory", "blocked", detail, PACKAGE_BLOCKED)
    ran = _run_step(ctx, steps, work, jobs)
    pub = load(ctx.queries(), scope.include, scope.exclude, selection)
    verdicts = _gates_step(ctx, steps, pub, scope, work, skip_runtime_gates)
    outputs = generated_outputs(ctx, work.results_root, out_dir, generated)
    seen = artifacts.verify(Path.cwd(), outputs)
    receipt = packages.review(
        ctx.services.ledger,
        pub,
        scope,
        reviewer=reviewer,
        note=note,
        actor=actor(None),
        out_dir=out_dir,
        checks={
            "preflight": _preflight_seen(report),
            "inventory": report.checks["inventory"],
            "run": ran,
            "verify_artifacts": seen.as_json(),
        },
        verdicts=verdicts,
    )
    ctx.services.runner.catch_up()
    if not receipt.ok:
        reasons = ", ".join(f["reason"] for f in receipt.blocking_findings)
        steps.stop("package", "blocked", f"{reasons}; package in {out_dir}", PACKAGE_BLOCKED)
    where = f"{out_dir / 'manifest.json'}, {out_dir / 'scorecard.md'}"
    steps.passed(
        "package",
        "ok",
        f"review {short(receipt.review_id)} at position {receipt.position}; {where}",
    )
    final = artifacts.verify(Path.cwd(), outputs)
    status, detail = artifacts_line(final)
    if final.offenders:
        steps.stop("verify-artifacts", status, detail, final.exit_code)
    steps.passed("verify-artifacts", status, detail)
    steps.finish()


def _run_step(ctx: LedgerContext, steps: Steps, work: Work, jobs: int) -> dict[str, Any]:
    """Run the work; what the manifest says of it (account ids, never homes)."""
    label, outcomes = execute(ctx, work, jobs)
    failed = [o for o in outcomes if o.failed]
    if failed:
        shown = "; ".join(f"{o.benchmark} {o.state}: {o.reason}" for o in failed)
        steps.stop("run", "failed", f"run group {label}: {shown}", RUN_FAILED)
    states = sorted({o.state for o in outcomes})
    counted = ", ".join(f"{sum(o.state == s for o in outcomes)} {s}" for s in states)
    steps.passed("run", "ok", f"run group {label}: {counted}")
    kept = ("benchmark", "state", "run_key", "account")
    return {
        "run_group": label,
        "outcomes": [{k: v for k, v in asdict(o).items() if k in kept} for o in outcomes],
    }


def _gates_step(
    ctx: LedgerContext,
    steps: Steps,
    pub: Publication,
    scope: packages.Scope,
    work: Work,
    skip_runtime_gates: bool,
) -> dict[str, dict[str, Any]]:
    """Evaluate and record the review's gates (readiness with the runtime gates of the
    work's benchmarks, unless skipped); stop on what would block the sign-off."""
    runtime: list[dict[str, Any]] = []
    if not skip_runtime_gates:
        probe = Probe(dict(os.environ))
        given = {work.accounts.pool.env, work.accounts.pool.pool_env} if work.accounts else set()
        missing = [
            m
            for spec in work.specs
            if scope.covers(spec.id)
            for m in probe.missing(spec.id, spec.requires, spec.cwd, given)
        ]
        runtime = [
            {**f, "scope": f"runtime_gate:{f['scope']}"} for f in gates.runtime_findings(missing)
        ]
    verdicts = packages.evaluate_gates(
        ctx.services.ledger, pub, scope, actor=actor(None), runtime=runtime
    )
    ctx.services.runner.catch_up()
    blockers = packages.gate_blocking(verdicts, len(pub.latest))
    if blockers:
        for item in blockers[:20]:
            stderr(f"  {item['gate']}: {item['scope']} {item['reason']} {item['value']}")
        steps.stop("gates", "blocked", f"{len(blockers)} findings", GATES_BLOCKED)
    steps.passed("gates", "ok", f"{', '.join(verdicts)} at position {pub.position}")
    return verdicts


def _preflight_seen(report: checks.Preflight) -> dict[str, Any]:
    return {
        "ok": report.ok,
        "exit_code": report.exit_code,
        "blockers": len(report.blockers),
        "checks": sorted(report.checks),
        "plan": report.plan,
    }


def _package_only(
    ctx: LedgerContext,
    reviewer: str,
    note: str,
    scope: packages.Scope,
    selection: Selection,
    out_dir: Path,
    generated: artifacts.Generated,
    registry_path: Path,
    as_json: bool,
) -> None:
    """`review --no-run`: gate and package what is already recorded."""
    ctx.creates = False  # packaging needs a ledger that exists
    ctx.publishes = True  # the gates' verdicts and the review are all it appends
    pub = load(ctx.queries(), scope.include, scope.exclude, selection)
    seen = artifacts.verify(Path.cwd(), generated)
    if registry_path.is_file():
        from benchledger.adapters import formats
        from benchledger.adapters.execution import preflight as checks
        from benchledger.adapters.execution.registry import inventory, load_registry

        registry = load_registry(registry_path)
        inventory_seen = checks.inventory_seen(registry, inventory(registry, formats.NAMES))
    else:
        inventory_seen = packages.not_checked("no registry")
    receipt = packages.review(
        ctx.publisher.ledger,
        pub,
        scope,
        reviewer=reviewer,
        note=note,
        actor=actor(None),
        out_dir=out_dir,
        checks={
            "preflight": packages.not_checked("review --no-run"),
            "inventory": inventory_seen,
            "verify_artifacts": seen.as_json(),
        },
    )
    ctx.publisher.runner.catch_up()
    if as_json:
        click.echo(
            json.dumps(
                {**asdict(receipt), "out_dir": str(receipt.out_dir)}, indent=2, sort_keys=True
            )
        )
    state = "complete" if receipt.ok else f"blocked by {len(receipt.blocking_findings)} findings"
    message = (
        f"Review {short(receipt.review_id)} {state} at position {receipt.position} "
        f"(head {receipt.head_sha256[:12]}); package in {out_dir}"
    )
    click.echo(printable(message), err=as_json)
    if seen.offenders:
        stderr(f"warning: {artifacts_line(seen)[1]} (see `benchledger verify-artifacts`)")
    if not receipt.ok:
        for item in receipt.blocking_findings[:20]:
            stderr(f"  {item['gate']}: {item['scope']} {item['reason']} {item['value']}")
        if len(receipt.blocking_findings) > 20:
            stderr(f"  ... and {len(receipt.blocking_findings) - 20} more in the manifest")
        raise SystemExit(1)


COMMANDS: list[click.Command] = [review]
