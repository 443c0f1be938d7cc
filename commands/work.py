"""What `run`, `preflight` and `review` share: choosing the work, and running it."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

import click

from benchledger.adapters.execution.defaults import DEFAULT_REGISTRY
from benchledger.commands.context import LedgerContext, actor
from benchledger.commands.output import stderr
from benchledger.domain.matrix import CANONICAL_HARNESSES

# The registry, the runner and what they load (pydantic, the event classes) are imported
# where the work is planned or run: the options and every command's --help need none.
if TYPE_CHECKING:
    from benchledger.adapters.execution.accounts import AccountChoice
    from benchledger.adapters.execution.registry import BenchmarkSpec, Profile, Registry
    from benchledger.adapters.execution.runner import BenchmarkOutcome, RunRequest, WorkItem
    from benchledger.adapters.store.projection_runner import ProjectionRunner
    from benchledger.domain.signature import Mode

STALE_WITHOUT_LEASE = 6 * 3600.0

registry_option = click.option(
    "--registry",
    "registry_path",
    envvar="BENCHLEDGER_REGISTRY",
    default=DEFAULT_REGISTRY,
    show_default=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Benchmark registry file (env BENCHLEDGER_REGISTRY)",
)

_SELECTION_OPTIONS = (
    registry_option,
    click.option(
        "--benchmarks",
        "benchmark_lists",
        multiple=True,
        metavar="A,B,...",
        help="Benchmarks to run (comma-separated, repeatable)",
    ),
    click.option("--all", "run_all", is_flag=True, help="Run every registered benchmark"),
    click.option("--agent", help="Agent (harness) under test"),
    click.option("--provider", help="Model provider"),
    click.option("--model", help="Model id"),
    click.option(
        "--model-profile",
        help="Profile supplying provider, model and extra: a file (the orchestrator's JSON "
        "profiles, or .toml), a registry profile, or NAME.json in a profiles folder "
        "(env BENCHLEDGER_PROFILES, the registry's profiles_dir, profiles/ beside it)",
    ),
    click.option(
        "--extra", help='Config overrides as JSON, e.g. {"limit": 5, "per_benchmark": {...}}'
    ),
    click.option(
        "--accounts",
        metavar="N|A,B,...",
        help="Credential-pool accounts to rotate over: the first N ids, or these ids "
        "(default: all of the pool's)",
    ),
    click.option(
        "--account-pool",
        metavar="NAME",
        help="The registry's [accounts.NAME] pool (default: the one named like --agent)",
    ),
    click.option(
        "--results-root",
        type=click.Path(file_okay=False, path_type=Path),
        help="Where run directories go (default: the registry's results_root)",
    ),
)
_MODE_OPTIONS = (
    click.option(
        "--rerun-failed", is_flag=True, help="Re-run unless the latest executed attempt succeeded"
    ),
    click.option("--force", is_flag=True, help="Always run a new attempt"),
    click.option("--timeout", type=float, help="Kill a benchmark after this many seconds"),
    click.option(
        "--jobs",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help="Benchmarks (and a cohort's agents) to run in parallel",
    ),
)


def selection_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options that choose the work: benchmarks, agent, model, accounts, results root."""
    for option in reversed(_SELECTION_OPTIONS):
        command = option(command)
    return command


def mode_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """How the work is run: --rerun-failed or --force, --timeout, --jobs."""
    for option in reversed(_MODE_OPTIONS):
        command = option(command)
    return command


def mode_of(rerun_failed: bool, force: bool) -> Mode:
    if rerun_failed and force:
        raise click.UsageError("--rerun-failed and --force exclude each other")
    return "force" if force else "rerun_failed" if rerun_failed else "default"


@dataclass(frozen=True)
class Work:
    """The benchmarks to run and how: what `run` executes and `preflight` checks."""

    registry: Registry | None
    specs: list[BenchmarkSpec]
    request: RunRequest
    results_root: Path
    # A cohort (`--agents`, `--all-agents`): one request per agent, the same config, and
    # the agents each benchmark runs for. Empty for one agent (`request`).
    cohort: tuple[RunRequest, ...] = ()
    cohort_agents: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def accounts(self) -> AccountChoice | None:
        return self.request.accounts

    def requests(self) -> tuple[RunRequest, ...]:
        return self.cohort or (self.request,)

    def items(self) -> list[WorkItem]:
        """What to run, in order: each benchmark (for a cohort, under each of its
        agents' requests), with the index of its account (the benchmark's position)."""
        if not self.cohort:
            return [(spec, self.request, i) for i, spec in enumerate(self.specs)]
        by_agent = {r.agent: r for r in self.cohort}
        return [
            (spec, by_agent[agent], i)
            for i, spec in enumerate(self.specs)
            for agent in self.cohort_agents[spec.id]
        ]


def plan(
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
    *,
    mode: Mode = "default",
    adhoc_id: str | None = None,
    command: tuple[str, ...] = (),
    timeout: float | None = None,
    lease_seconds: float = 300.0,
    renew_seconds: float = 60.0,
    agents: tuple[str, ...] = (),
    all_agents: bool = False,
    skip_runtime_gates: bool = False,
) -> Work:
    """The work the options select; accounts that cannot be used are left for the caller
    to refuse (`run`) or report (`preflight`). `agents` (or `all_agents`: each
    benchmark's compatible agents) makes it a cohort, one request per agent."""
    from benchledger.adapters.execution.profiles import find_profile
    from benchledger.adapters.execution.registry import split_ids
    from benchledger.adapters.execution.runner import RunRequest

    listed = split_ids(list(agents))
    if agents and not listed:
        raise click.BadParameter("names no agent", param_hint="--agents")
    if agent and (listed or all_agents):
        other = "--agents" if listed else "--all-agents"
        raise click.UsageError(f"--agent and {other} exclude each other")
    if listed and all_agents:
        raise click.UsageError("--agents and --all-agents exclude each other")
    if not agent and not listed and not all_agents:
        raise click.UsageError("Missing option '--agent' (or --agents A,B,... or --all-agents).")
    registry, specs = selection(registry_path, benchmark_lists, run_all, adhoc_id, command)
    cohort_agents = {
        spec.id: tuple(listed) if listed else spec.agents or CANONICAL_HARNESSES for spec in specs
    }
    if not agent:
        agent = next(a for agents_of in cohort_agents.values() for a in agents_of)
    extras: list[dict[str, Any]] = []
    if model_profile:
        profile = find_profile(model_profile, registry, registry_path, os.environ)
        _warn_overridden(profile, provider, model)
        provider, model = provider or profile.provider, model or profile.model
        extras.append(dict(profile.extra))
    extras.append(json_object(extra, "--extra"))
    if not model:
        raise click.UsageError(
            f"give --model: model profile '{model_profile}' states no model"
            if model_profile
            else "give --model or --model-profile"
        )
    request = RunRequest(
        agent=agent,
        provider=provider or "",
        model=model,
        extras=tuple(extras),
        mode=mode,
        timeout=timeout,
        lease_seconds=lease_seconds,
        renew_seconds=renew_seconds,
        accounts=_accounts(registry, agent, accounts, account_pool),
        skip_runtime_gates=skip_runtime_gates,
    )
    root = results_root or (registry.results_root if registry else Path("results"))
    if not listed and not all_agents:
        return Work(registry, specs, request, root.resolve())
    names = dict.fromkeys(a for agents_of in cohort_agents.values() for a in agents_of)
    cohort = tuple(
        replace(request, agent=name, accounts=_accounts(registry, name, accounts, account_pool))
        for name in names
    )
    return Work(registry, specs, cohort[0], root.resolve(), cohort, cohort_agents)


def _warn_overridden(profile: Profile, provider: str | None, model: str | None) -> None:
    """--provider and --model win over the profile's; the orchestrator lets the profile
    win (its flags have defaults), so an operator coming from it is told."""
    for option, given, stated in (
        ("--provider", provider, profile.provider),
        ("--model", model, profile.model),
    ):
        if given and stated and given != stated:
            stderr(f"warning: {option} {given} overrides model profile '{profile.name}' ({stated})")


def _accounts(
    registry: Registry | None, agent: str, wanted: str | None, pool_name: str | None
) -> AccountChoice | None:
    pool = registry.account_pool(agent, pool_name) if registry else None
    if pool is None:
        if wanted is not None or pool_name is not None:
            raise click.UsageError(
                f"no account pool for agent '{agent}': declare [accounts.{agent}] "
                "in the registry, or name one with --account-pool"
            )
        return None
    from benchledger.adapters.execution.accounts import choose

    return choose(pool, wanted)


def execute(ctx: LedgerContext, work: Work, jobs: int = 1) -> tuple[str, list[BenchmarkOutcome]]:
    """Run the work as one run group; its label and each benchmark's outcome."""
    from benchledger.adapters.execution.runner import Runner, register
    from benchledger.domain.secrets import mask_config

    services = ctx.services
    ledger = services.ledger
    sweep_stale(ctx)
    register(ledger, work.specs)
    request = work.request
    label = f"rg_{datetime.now(UTC):%Y%m%dT%H%M%SZ}_{os.urandom(4).hex()}"
    group = ledger.new_group(
        label,
        "run",
        request={
            **_who(work),
            "provider": request.provider,
            "model": request.model,
            "extra": [mask_config(e) for e in request.extras],
            "mode": request.mode,
            "timeout": request.timeout,
            "benchmarks": [s.id for s in work.specs],
            **request.tags,
        },
        selection=[s.id for s in work.specs],
    )
    runner = Runner(ledger, work.results_root, log=stderr, catch_up=_serialised(services.runner))
    outcomes = []
    try:
        for outcome in runner.run_items(group, work.items(), jobs):
            outcomes.append(outcome)
            group.count(outcome.state)
    finally:
        ledger.close_group(group)
    services.runner.catch_up()
    return label, outcomes


def _who(work: Work) -> dict[str, Any]:
    """Who the run group's request runs as: the agent (or the cohort's agents, and the
    agents of each benchmark), and the accounts chosen."""
    if not work.cohort:
        chosen = work.accounts
        accounts = (
            {"account_pool": chosen.pool.name, "accounts": [a.id for a in chosen.accounts]}
            if chosen
            else {}
        )
        return {"agent": work.request.agent, **accounts}
    pools = {r.agent: r.accounts for r in work.cohort if r.accounts}
    return {
        "agents": [r.agent for r in work.cohort],
        "cohort": {benchmark: list(agents) for benchmark, agents in work.cohort_agents.items()},
        **(
            {
                "account_pools": {agent: c.pool.name for agent, c in pools.items()},
                "accounts": {agent: [a.id for a in c.accounts] for agent, c in pools.items()},
            }
            if pools
            else {}
        ),
    }


def _serialised(projection_runner: ProjectionRunner) -> Callable[[], object]:
    """The read models' catch-up, one thread at a time (`--jobs` runs benchmarks in
    threads, each catching up as its run starts and its cells arrive)."""
    lock = threading.Lock()

    def catch_up() -> object:
        with lock:
            return projection_runner.catch_up()

    return catch_up


def selection(
    registry_path: Path,
    benchmark_lists: tuple[str, ...],
    run_all: bool,
    adhoc_id: str | None,
    command: tuple[str, ...],
) -> tuple[Registry | None, list[BenchmarkSpec]]:
    from benchledger.adapters.execution.registry import BenchmarkSpec, load_registry, split_ids

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


def json_object(value: str | None, name: str) -> dict[str, Any]:
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


def sweep_stale(
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
