"""Commands that execute benchmarks: run, benchmarks, recover-stale."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from benchledger.commands.context import LedgerContext, as_of_option
from benchledger.commands.output import emit, output_options, short, stderr
from benchledger.commands.paths import writes_paths
from benchledger.commands.work import (
    execute,
    mode_of,
    mode_options,
    plan,
    registry_option,
    selection_options,
    sweep_stale,
)
from benchledger.domain.signatures import KNOWN_AGENTS

pass_ledger = click.make_pass_decorator(LedgerContext)


@click.command(context_settings={"allow_interspersed_args": False})
@selection_options
@click.option(
    "--agents",
    "agent_lists",
    multiple=True,
    metavar="A,B,...",
    help="Run a cohort: the same work for each of these agents (comma-separated, repeatable)",
)
@click.option(
    "--all-agents",
    is_flag=True,
    help="Run a cohort of each benchmark's compatible agents (its registry `agents`, "
    "else eliza, hermes and openclaw)",
)
@click.option("--benchmark", "adhoc_id", help="With -- COMMAND...: id of an ad hoc benchmark")
@mode_options
@click.option(
    "--lease-seconds",
    type=float,
    default=300.0,
    show_default=True,
    help="How long a run counts as live without a heartbeat",
)
@click.option(
    "--renew-seconds",
    type=float,
    default=60.0,
    show_default=True,
    help="Heartbeat interval while a benchmark runs",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@pass_ledger
@writes_paths(results_root="--results-root")
def run(
    ctx: LedgerContext,
    registry_path: Path,
    benchmark_lists: tuple[str, ...],
    run_all: bool,
    agent: str | None,
    provider: str | None,
    model: str | None,
    model_profile: str | None,
    extra: str | None,
    accounts: str | None,
    account_pool: str | None,
    results_root: Path | None,
    agent_lists: tuple[str, ...],
    all_agents: bool,
    adhoc_id: str | None,
    rerun_failed: bool,
    force: bool,
    timeout: float | None,
    jobs: int,
    lease_seconds: float,
    renew_seconds: float,
    as_json: bool,
    command: tuple[str, ...],
) -> None:
    """Run benchmarks and record every run as it happens.

    Each benchmark's work is identified by its signature, the orchestrator's
    (benchmark, its directory, agent, provider, model, effective config), so
    attempts imported from the orchestrator count as this work's. By default
    work that already succeeded (executed here or imported), or that another
    process is running, is skipped; --rerun-failed re-runs it unless the latest
    executed attempt succeeded; --force always runs a new attempt. A new attempt
    is numbered one past every attempt known, the orchestrator's skip rows
    included. Exit 1 if any benchmark failed.

    With a credential pool (the registry's [accounts.AGENT], or --account-pool),
    the i-th selected benchmark runs as account i % N of the --accounts chosen:
    its home is in the pool's env variable (e.g. CODEX_HOME), every chosen home
    in its pool_env (e.g. CODEX_HOMES), and the run records the account's id.

    A cohort (--agents A,B,... instead of --agent, or --all-agents for each
    benchmark's compatible agents) runs every benchmark for each agent with
    one effective config, so its runs share a comparison signature (the
    config's `agent` and `harness` name a known harness, which that signature
    leaves out) and `latest` publishes them as one cohort. An agent the
    benchmark does not support is recorded as an incompatible skip, quarantined
    in `latest` as incompatible_harness. --jobs runs the cohort's agents in
    parallel too; each agent uses its own account pool, if it has one.

    \b
    Example:
        benchledger run --benchmarks bfcl,gaia --agent eliza --model gpt-oss-120b
        benchledger run --all --agent hermes --model-profile cerebras-oss --rerun-failed
        benchledger run --benchmarks bfcl --agents eliza,hermes,openclaw --model m --jobs 3
        benchledger run --all --all-agents --model-profile cerebras-oss
        benchledger run --benchmarks bfcl,gaia --agent codex --model gpt-5.5 --accounts 2
        benchledger run --benchmark smoke --agent eliza --model m -- python smoke.py {output_dir}
    """
    work = plan(
        registry_path,
        benchmark_lists,
        run_all,
        agent,
        provider,
        model,
        model_profile,
        extra,
        accounts,
        account_pool,
        results_root,
        mode=mode_of(rerun_failed, force),
        adhoc_id=adhoc_id,
        command=command,
        timeout=timeout,
        lease_seconds=lease_seconds,
        renew_seconds=renew_seconds,
        agents=agent_lists,
        all_agents=all_agents,
    )
    for request in work.requests():
        if request.accounts and request.accounts.problems:
            problems = "; ".join(request.accounts.problems)
            raise click.ClickException(f"cannot use the accounts: {problems}")
    if work.cohort:
        apart = [r.agent for r in work.cohort if r.agent.strip().lower() not in KNOWN_AGENTS]
        if apart:
            stderr(
                f"warning: not a known harness: {', '.join(apart)}; the config keeps "
                "their agent and harness, so their runs get comparison signatures of their own"
            )
    label, outcomes = execute(ctx, work, jobs)
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.state] = counts.get(outcome.state, 0) + 1
    rows = [{**asdict(o), "run": short(o.run_id)} for o in outcomes]
    if as_json:
        click.echo(
            json.dumps({"run_group": label, "outcomes": [asdict(o) for o in outcomes]}, indent=2)
        )
    else:
        columns = ["benchmark", "state", "attempt", "run", "score", "reason"]
        if any(r.accounts for r in work.requests()):
            columns.insert(1, "account")
        if work.cohort:
            columns.insert(1, "agent")
        emit(rows, None, columns=columns)
        stderr(f"Run group {label}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    if any(o.failed for o in outcomes):
        raise SystemExit(1)


@click.command(name="recover-stale")
@click.option(
    "--stale-seconds",
    type=click.FloatRange(min=0),
    help="Grace after a lease expires (and age cutoff for runs without a lease); "
    "default: lease expiry, and 6 h for runs without a lease",
)
@click.option("--json", "as_json", is_flag=True, help="Output JSON")
@pass_ledger
def recover_stale(ctx: LedgerContext, stale_seconds: float | None, as_json: bool) -> None:
    """Recover runs whose lease expired: their process stopped renewing it.

    A run whose process is alive and renewing its lease is never touched. Its
    completed cells are kept, and if its process finishes later, that finish
    is recorded too. Run groups (a run or an import) left open by a process that
    was killed are closed as interrupted once nothing was heard of them or their
    runs for the age cutoff. (--json lists the recovered runs only.)

    \b
    Example:
        benchledger recover-stale
        benchledger recover-stale --stale-seconds 600
    """
    recovered, closed = sweep_stale(ctx, stale_seconds)
    if as_json:
        click.echo(json.dumps([{"run_id": str(r), "policy": p} for r, p in recovered]))
        return
    for run_id, policy in recovered:
        click.echo(f"Recovered run {short(str(run_id))} ({policy})")
    for _group_id, label in closed:
        click.echo(f"Closed run group {label} (interrupted)")
    click.echo(f"Recovered runs: {len(recovered)}")
    if closed:
        click.echo(f"Closed interrupted run groups: {len(closed)}")


@click.command()
@registry_option
@as_of_option
@output_options
@pass_ledger
def benchmarks(ctx: LedgerContext, registry_path: Path, as_of: str | None, fmt: str | None) -> None:
    """List the registered benchmarks (and record them in the ledger).

    With --as-of, the benchmarks the ledger had recorded by then (its
    `benchmarks` table), read without the registry and recording nothing.

    \b
    Example:
        benchledger benchmarks --registry benchledger.toml
        benchledger benchmarks --as-of 120 --json
    """
    if as_of is not None:
        recorded = ctx.queries(as_of).benchmarks()
        for row in recorded:
            if row["higher_is_better"] is not None:
                row["higher_is_better"] = bool(row["higher_is_better"])
        emit(recorded, fmt, empty="No benchmarks recorded then.")
        return
    from benchledger.adapters.execution.registry import load_registry
    from benchledger.adapters.execution.runner import register

    registry = load_registry(registry_path)
    if not ctx.read_only:  # a read-only ledger lists the registry without recording it
        register(ctx.services.ledger, list(registry.benchmarks.values()))
        ctx.services.runner.catch_up()
    rows = [
        {
            "benchmark": s.id,
            "format": s.format,
            "unit": s.unit,
            "higher_is_better": s.higher_is_better,
            "agents": ", ".join(s.agents) or "any",
            "required_env": ", ".join(s.required_env),
            "command": " ".join(s.command),
        }
        for s in registry.benchmarks.values()
    ]
    emit(rows, fmt, empty="No benchmarks registered.")


COMMANDS = [run, recover_stale, benchmarks]
