"""Static checks of the registry that run nothing: inventory and validate-matrix."""

from __future__ import annotations

import os
from pathlib import Path

import click

from benchledger.adapters.execution.defaults import DEFAULT_MODEL, DEFAULT_PROVIDER
from benchledger.commands.output import emit, output_options, stderr
from benchledger.commands.work import plan, registry_option
from benchledger.domain.matrix import CANONICAL_HARNESSES

format_option = click.option(
    "--format",
    "report_format",
    type=click.Choice(["markdown", "json"]),
    help="The report as Markdown (the default) or JSON, in the orchestrator's keys",
)


@click.command()
@registry_option
@click.option(
    "--benchmarks-root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A folder of benchmark directories (the orchestrator's suites/): each must be "
    "a registered benchmark's cwd or `directory`",
)
@format_option
@output_options
def inventory(
    registry_path: Path,
    benchmarks_root: Path | None,
    report_format: str | None,
    fmt: str | None,
) -> None:
    """Check the registry: commands resolvable, directories present, formats known.

    Prints the orchestrator's static checklist without running anything: the
    registry entries (each is its own adapter), directory coverage, each
    benchmark's harnesses, required env, result locators and trajectory
    expectations. A registry entry "without an adapter" is one benchledger
    cannot run as declared; `gaps` says why. --json, --csv, --nl or --table
    list only the gaps, one row each. Exit 2 if there are gaps.

    \b
    Example:
        benchledger inventory
        benchledger inventory --format json --benchmarks-root ../benchmarks/suites
        benchledger inventory --csv
    """
    if fmt and report_format:
        raise click.UsageError(f"--{fmt} lists the gaps; --format prints the checklist")
    from benchledger.adapters import formats
    from benchledger.adapters.execution import checklist
    from benchledger.adapters.execution.registry import load_registry

    registry = load_registry(registry_path)
    report = checklist.checklist(registry, formats.NAMES, benchmarks_root)
    if fmt:
        emit(report.gaps, fmt, columns=["benchmark", "problem"], empty="No gaps.")
    elif report_format == "json":
        click.echo(checklist.to_json(report))
    else:
        click.echo(checklist.to_markdown(report))
    if report.has_gaps:
        stderr(f"{len(report.gaps)} gaps in {registry.path.name}")
        raise SystemExit(2)
    stderr(f"OK: {len(registry.benchmarks)} benchmarks ready")


@click.command(name="validate-matrix")
@registry_option
@click.option("--provider", help=f"Model provider (default {DEFAULT_PROVIDER})")
@click.option("--model", help=f"Model id (default {DEFAULT_MODEL})")
@click.option(
    "--model-profile",
    help="Profile supplying provider, model and extra, as for `run` (its --provider "
    "and --model win)",
)
@click.option("--extra", help='Config overrides as JSON, as for `run`, e.g. {"limit": 5}')
@click.option(
    "--results-root",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where run directories would go (default: the registry's results_root)",
)
@format_option
def validate_matrix(
    registry_path: Path,
    provider: str | None,
    model: str | None,
    model_profile: str | None,
    extra: str | None,
    results_root: Path | None,
    report_format: str | None,
) -> None:
    """Build every benchmark's command for each harness, without running anything.

    For every registered benchmark under eliza, hermes and openclaw (and the
    benchmark's own agents): whether the harness may run it, and if so the
    effective config, the command and the variables `run` would set (secrets
    masked), the required env (and which this host lacks), where the result is
    looked for and what happens to trajectories. The same code builds them as
    `run`; nothing is launched, created or recorded. Exit 1 if a cell's command
    or config cannot be built (a placeholder without a value...).

    \b
    Example:
        benchledger validate-matrix
        benchledger validate-matrix --model-profile gpt-5.5 --extra '{"limit": 2}' \\
            --format json
    """
    from benchledger.adapters.execution import dry_run

    work = plan(
        registry_path,
        (),
        True,
        CANONICAL_HARNESSES[0],
        provider or (None if model_profile else DEFAULT_PROVIDER),
        model or (None if model_profile else DEFAULT_MODEL),
        model_profile,
        extra,
        None,
        None,
        results_root,
    )
    assert work.registry is not None  # a registered selection always has its registry
    report = dry_run.validate_matrix(work.registry, work.request, os.environ, work.results_root)
    if report_format == "json":
        click.echo(dry_run.to_json(report))
    else:
        click.echo(dry_run.to_markdown(report))
    if report.error_count:
        stderr(f"{report.error_count} cells cannot be built")
        raise SystemExit(1)


COMMANDS: list[click.Command] = [inventory, validate_matrix]
