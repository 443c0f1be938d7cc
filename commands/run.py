"""Commands that execute benchmarks: run, benchmarks, inventory, recover-stale."""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import click
from pydantic import ValidationError

from benchledger.adapters import formats
from benchledger.adapters.execution.registry import (
    DEFAULT_REGISTRY,
    BenchmarkSpec,
    Profile,
    Registry,
    load_registry,
    split_ids,
)
from benchledger.adapters.execution.registry import (
    inventory as check_inventory,
)
from benchledger.adapters.execution.runner import Runner, RunRequest, register
from benchledger.commands.context import LedgerContext, actor
from benchledger.commands.output import emit, output_options, short, stderr
from benchledger.domain.signature import Mode

pass_ledger = click.make_pass_decorator(LedgerContext)

registry_option = click.option(
    "--registry",
    "registry_path",
    envvar="BENCHLEDGER_REGISTRY",
    default=DEFAULT_REGISTRY,
    show_default=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Benchmark registry file (env BENCHLEDGER_REGISTRY)",
)

STALE_WITHOUT_LEASE = 6 * 3600.0


def _json_object(value: str | None, name: str) -> dict[str, Any]:
    if not value:
        return {}
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as e:
        raise click.BadParameter(f"not JSON: {e.msg}", param_hint=name) from None
    if not isinstance(parsed, dict):
        raise click.BadParameter("must be a JSON object", param_hint=name)
    per = parsed.get("per_benchmark", {})
    if not isinstance(per, dict) or not all(isinstance(v, dict) for v in per.values()):
        raise click.BadParameter("per_benchmark must map benchmark ids to objects", param_hint=name)
    return parsed


@click.command(context_settings={"allow_interspersed_args": False})
@registry_option
@click.option(
    "--benchmarks",
    "benchmark_lists",
    multiple=True,
    metavar="A,B,...",
    help="Benchmarks to run (comma-separated, repeatable)",
)
@click.option("--all", "run_all", is_flag=True, help="Run every registered benchmark")
@click.option("--benchmark", "adhoc_id", help="With -- COMMAND...: id of an ad hoc benchmark")
@click.option("--agent", required=True, help="Agent (harness) under test")
@click.option("--provider", help="Model provider")
@click.option("--model", help="Model id")
@click.option(
    "--model-profile",
    help="Profile supplying provider, model and extra: a registry profile name or a .toml file",
)
@click.option("--extra", help='Config overrides as JSON, e.g. {"limit": 5, "per_benchmark": {...}}')
@click.option(
    "--rerun-failed", is_flag=True, help="Re-run unless the latest executed attempt succeeded"
)
@click.option("--force", is_flag=True, help="Always run a new attempt")
@click.option("--timeout", type=float, help="Kill a benchmark after this many seconds")
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Benchmarks to run in parallel",
)
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
@click.option(
    "--results-root",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where run directories go (default: the registry's results_root)",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@pass_ledger
def run(
    ctx: LedgerContext,
    registry_path: Path,
    benchmark_lists: tuple[str, ...],
    run_all: bool,
    adhoc_id: str | None,
    agent: str,
    provider: str | None,
    model: str | None,
    model_profile: str | None,
    extra: str | None,
    rerun_failed: bool,
    force: bool,
    timeout: float | None,
    jobs: int,
    lease_seconds: float,
    renew_seconds: float,
    results_root: Path | None,
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

    \b
    Example:
        benchledger run --benchmarks bfcl,gaia --agent eliza --model gpt-oss-120b
        benchledger run --all --agent hermes --model-profile cerebras-oss --rerun-failed
        benchledger run --benchmark smoke --agent eliza --model m -- python smoke.py {output_dir}
    """
    if rerun_failed and force:
        raise click.UsageError("--rerun-failed and --force exclude each other")
    mode: Mode = "force" if force else "rerun_failed" if rerun_failed else "default"
    registry, specs = _selection(registry_path, benchmark_lists, run_all, adhoc_id, command)
    extras: list[dict[str, Any]] = []
    if model_profile:
        profile = _profile(model_profile, registry)
        provider, model = provider or profile.provider, model or profile.model
        extras.append(dict(profile.extra))
    extras.append(_json_object(extra, "--extra"))
    if not model:
        raise click.UsageError("give --model or --model-profile")
    services = ctx.services
    ledger = services.ledger
    _sweep_stale(ctx)
    register(ledger, specs, registry.path.parent if registry else Path.cwd())
    root = results_root or (registry.results_root if registry else Path("results"))
    request = RunRequest(
        agent=agent,
        provider=provider or "",
        model=model,
        extras=tuple(extras),
        mode=mode,
        timeout=timeout,
        lease_seconds=lease_seconds,
        renew_seconds=renew_seconds,
    )
    from benchledger.domain.secrets import mask_config

    label = f"rg_{datetime.now(UTC):%Y%m%dT%H%M%SZ}_{os.urandom(4).hex()}"
    group = ledger.new_group(
        label,
        "run",
        request={
            "agent": agent,
            "provider": provider or "",
            "model": model,
            "extra": [mask_config(e) for e in extras],
            "mode": mode,
            "timeout": timeout,
            "benchmarks": [s.id for s in specs],
        },
        selection=[s.id for s in specs],
    )
    runner = Runner(ledger, root.resolve(), log=stderr)
    outcomes = []
    try:
        for outcome in runner.run_all(group, specs, request, jobs):
            outcomes.append(outcome)
            group.count(outcome.state)
    finally:
        ledger.close_group(group)
    counts = group.counts
    services.runner.catch_up()
    rows = [{**asdict(o), "run": short(o.run_id)} for o in outcomes]
    if as_json:
        click.echo(
            json.dumps({"run_group": label, "outcomes": [asdict(o) for o in outcomes]}, indent=2)
        )
    else:
        emit(rows, None, columns=["benchmark", "state", "attempt", "run", "score", "reason"])
        stderr(f"Run group {label}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    if any(o.failed for o in outcomes):
        raise SystemExit(1)


def _profile(name: str, registry: Registry | None) -> Profile:
    """A profile of the registry, or a TOML file of its own (provider, model, extra)."""
    path = Path(name)
    if path.suffix == ".toml" and path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise click.ClickException(f"{path}: {e}") from None
        try:
            return Profile.model_validate({"name": path.stem, **data})
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise click.ClickException(f"{path}: field '{where}': {first['msg']}") from None
    if registry is None:
        raise click.UsageError(f"no profile file '{name}' and no registry to look it up in")
    return registry.profile(name)


def _selection(
    registry_path: Path,
    benchmark_lists: tuple[str, ...],
    run_all: bool,
    adhoc_id: str | None,
    command: tuple[str, ...],
) -> tuple[Registry | None, list[BenchmarkSpec]]:
    if command:
        if not adhoc_id or benchmark_lists or run_all:
            raise click.UsageError("an ad hoc command takes --benchmark ID and nothing else")
        registry = load_registry(registry_path) if registry_path.exists() else None
        base = registry.benchmarks.get(adhoc_id) if registry else None
        fields: dict[str, Any] = base.model_dump() if base else {"id": adhoc_id}
        fields.update(command=tuple(command), cwd=Path.cwd())
        return registry, [BenchmarkSpec.model_validate(fields, context={"folder": Path.cwd()})]
    if adhoc_id:
        raise click.UsageError(
            "--benchmark needs a command after --; use --benchmarks for registered benchmarks"
        )
    ids = split_ids(list(benchmark_lists))
    if bool(ids) == run_all:
        raise click.UsageError("give --benchmarks A,B,... or --all")
    registry = load_registry(registry_path)
    return registry, list(registry.benchmarks.values()) if run_all else registry.select(ids)


def _sweep_stale(
    ctx: LedgerContext, stale_seconds: float | None = None
) -> tuple[list[tuple[UUID, str]], list[tuple[UUID, str]]]:
    """Recover running runs whose lease expired; lease-less ones by age (6 h by default).
    Then close as interrupted the run groups their processes left open, judged by age."""
    candidates = [UUID(r["run_id"]) for r in ctx.queries().runs(status="running")]
    ledger = ctx.services.ledger
    age_cutoff = STALE_WITHOUT_LEASE if stale_seconds is None else stale_seconds
    recovered = ledger.recover_stale(
        candidates, stale_seconds or 0.0, actor(None), age_cutoff=age_cutoff
    )
    if recovered:
        ctx.services.runner.catch_up()
    open_groups = [g for g in ctx.queries().open_groups() if not g["running"]]
    labels = {UUID(g["run_group_id"]): g["label"] for g in open_groups}
    closed = ledger.close_stale_groups(
        ((UUID(g["run_group_id"]), _moment(g["last_activity"])) for g in open_groups),
        age_cutoff,
        actor(None),
    )
    if closed:
        ctx.services.runner.catch_up()
    return recovered, [(group_id, labels[group_id]) for group_id in closed]


def _moment(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


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
    recovered, closed = _sweep_stale(ctx, stale_seconds)
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
@output_options
@pass_ledger
def benchmarks(ctx: LedgerContext, registry_path: Path, fmt: str | None) -> None:
    """List the registered benchmarks (and record them in the ledger).

    \b
    Example:
        benchledger benchmarks --registry benchledger.toml
    """
    registry = load_registry(registry_path)
    if not ctx.read_only:  # a read-only ledger lists the registry without recording it
        register(ctx.services.ledger, list(registry.benchmarks.values()), registry.path.parent)
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


@click.command()
@registry_option
@output_options
def inventory(registry_path: Path, fmt: str | None) -> None:
    """Check the registry: commands resolvable, directories present, formats known.

    Exit 2 if anything is missing.

    \b
    Example:
        benchledger inventory
    """
    registry = load_registry(registry_path)
    gaps = check_inventory(registry, formats.NAMES)
    emit([asdict(g) for g in gaps], fmt, columns=["benchmark", "problem"])
    if gaps:
        stderr(f"{len(gaps)} gaps in {registry.path.name}")
        raise SystemExit(2)
    stderr(f"OK: {len(registry.benchmarks)} benchmarks ready")


COMMANDS = [run, recover_stale, benchmarks, inventory]
