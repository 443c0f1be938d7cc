"""Checks before and after a run: preflight, and verify-artifacts."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from benchledger.adapters.publication import artifacts
from benchledger.commands.context import LedgerContext
from benchledger.commands.gates import json_option
from benchledger.commands.output import printable, stderr
from benchledger.commands.paths import writes_paths
from benchledger.commands.work import Work, plan, registry_option, selection_options
from benchledger.domain.errors import InputFormatError, NotFoundError

if TYPE_CHECKING:
    from benchledger.adapters.execution import preflight as checks

pass_ledger = click.make_pass_decorator(LedgerContext)

out_option = click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory for preflight.json/.md, manifest.json and scorecard.md",
)
generated_option = click.option(
    "--generated",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Another generated file or folder that must not be committed (repeatable; "
    "latest/ and viewer_data.json always count)",
)


def run_preflight(
    work_options: dict[str, Any], out_dir: Path, **run_options: Any
) -> tuple[checks.Preflight, Work | None]:
    """Preflight of the selected work; an unreadable registry or unknown selection is
    a blocker it reports, not an error."""
    from benchledger.adapters import formats
    from benchledger.adapters.execution import preflight as checks

    try:
        work = plan(**work_options, **run_options)
    except (InputFormatError, NotFoundError) as e:
        # A bad registry or profile file names itself; an unknown name is the registry's.
        where = Path(e.path) if isinstance(e, InputFormatError) else work_options["registry_path"]
        return checks.unusable_registry(where, str(e)), None
    report = checks.check(
        work.registry,
        work.specs,
        agent=work.request.agent,
        environ=os.environ,
        accounts=work.accounts,
        out_dir=out_dir,
        known_formats=formats.NAMES,
        skip_runtime_gates=work.request.skip_runtime_gates,
    )
    return report, work


def preflight_line(report: checks.Preflight, work: Work | None, written: Sequence[Path]) -> str:
    where = f"see {written[1]}" if written else "no report: --out is not writable"
    if not report.ok or work is None:
        return f"{report.reason}; {where}"
    chosen = work.accounts
    accounts = f", accounts {', '.join(a.id for a in chosen.accounts)}" if chosen else ""
    return f"{len(work.specs)} benchmarks{accounts}; report in {written[0]}"


def generated_outputs(
    ctx: LedgerContext,
    results_root: Path,
    review_dir: Path | None,
    extra: Sequence[Path],
) -> artifacts.Generated:
    exports = [Path(p) for p in artifacts.DEFAULT_EXPORTS] + list(extra)
    return artifacts.Generated.of(
        results_root=results_root, ledger=ctx.path, review_dir=review_dir, exports=exports
    )


def results_root_of(registry_path: Path, results_root: Path | None) -> Path:
    if results_root is not None:
        return results_root
    if registry_path.is_file():
        from benchledger.adapters.execution.registry import load_registry

        return load_registry(registry_path).results_root
    return Path("results")


def artifacts_line(result: artifacts.ArtifactCheck) -> tuple[str, str]:
    if not result.checked:
        return "not checked", str(result.reason)
    if result.offenders:
        shown = ", ".join(result.offenders[:10])
        more = f" and {len(result.offenders) - 10} more" if len(result.offenders) > 10 else ""
        return (
            "failed",
            f"generated outputs tracked or staged in {result.repository}: {shown}{more}",
        )
    return "ok", f"no generated output tracked or staged in {result.repository}"


@click.command()
@selection_options
@out_option
@json_option
@writes_paths(out_dir="--out")
def preflight(out_dir: Path, as_json: bool, **work_options: Any) -> None:
    """Check that the selected work can run, without running anything.

    The registry and its inventory, each selected benchmark's executable,
    required environment variables and runtime gate (its `requires`: a
    reachable Docker daemon, credentials, commands, paths), each selected
    account's home and its auth file (e.g. auth.json for CODEX_HOME; never opened),
    and that --out can be written. Writes preflight.json and preflight.md into --out
    with the exit code, the reason and the steps that unblock it. Exit 2 when
    blocked (preflight_failed, the orchestrator's code).

    \b
    Example:
        benchledger preflight --benchmarks bfcl,gaia --agent codex --model gpt-5.5 \\
            --accounts 2 --out review/codex
    """
    from benchledger.adapters.execution import preflight as checks

    report, work = run_preflight(work_options, out_dir)
    written = checks.write(report, out_dir)
    if as_json:
        click.echo(json.dumps(report.as_json(), indent=2, sort_keys=True))
    line = (
        f"preflight: {'ok' if report.ok else 'blocked'} ({preflight_line(report, work, written)})"
    )
    click.echo(printable(line), err=as_json)
    for step in dict.fromkeys(b.unblock for b in report.blockers):
        stderr(f"  to unblock: {step}")
    if not report.ok:
        raise SystemExit(report.exit_code)


@click.command(name="verify-artifacts")
@registry_option
@click.option(
    "--results-root",
    type=click.Path(file_okay=False, path_type=Path),
    help="The results folder (default: the registry's results_root, else ./results)",
)
@click.option(
    "--review-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="A review package folder: only its scorecard.md and manifest.json may be committed",
)
@generated_option
@json_option
@pass_ledger
def verify_artifacts(
    ctx: LedgerContext,
    registry_path: Path,
    results_root: Path | None,
    review_dir: Path | None,
    generated: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Fail when generated outputs are tracked or staged in this directory's git repository.

    Generated: the results folder, the ledger file and its -wal/-shm, exports
    (latest/, viewer_data.json, --generated), trajectories, and a review
    package's folder except scorecard.md and manifest.json. Outside a git
    repository (or without git) it says "not checked" and exits 0. Exit 7
    naming the files otherwise.

    \b
    Example:
        benchledger verify-artifacts
        benchledger verify-artifacts --review-dir review/codex --generated exports/
    """
    root = results_root_of(registry_path, results_root)
    result = artifacts.verify(Path.cwd(), generated_outputs(ctx, root, review_dir, generated))
    if as_json:
        click.echo(json.dumps({**result.as_json(), "exit_code": result.exit_code}, indent=2))
    status, detail = artifacts_line(result)
    for name in result.offenders:
        click.echo(printable(name), err=as_json)
    stderr(f"verify-artifacts: {status} ({detail})")
    if result.offenders:
        raise SystemExit(result.exit_code)


COMMANDS: list[click.Command] = [preflight, verify_artifacts]
