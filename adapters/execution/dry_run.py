"""`validate-matrix`: every registered benchmark under each harness, built but not run.

For each cell it does what `run` does before it launches a benchmark (`runner.py`):
the compatibility check, the effective config (`registry.work_config`), the command
with its placeholders rendered and the variables the run would set (`launch_env`),
and lists the required environment, where the result is looked for and what happens
to trajectories. Nothing is launched, no directory is made and nothing is recorded.
Secrets are masked as `run` masks them before anything reaches an event or a log.

The report keeps the ElizaOS orchestrator's keys (`matrix_validation.py`); a cell
whose command or config cannot be built is an error, and errors make the exit 1.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from benchledger.adapters.execution.checklist import (
    result_locator_patterns,
    trajectory_expectations,
)
from benchledger.adapters.execution.registry import (
    BenchmarkSpec,
    Registry,
    render_command,
    work_config,
)
from benchledger.adapters.execution.runner import RunRequest, command_values, launch_env
from benchledger.adapters.execution.secrets import Redactor, mask_argv, secret_values
from benchledger.domain.errors import LedgerError
from benchledger.domain.matrix import CANONICAL_HARNESSES, AgentRules
from benchledger.domain.secrets import config_secrets, mask_config

# The run id a dry run renders `{run_id}` with.
DRY_RUN_ID = "matrix-validation"


@dataclass(frozen=True)
class MatrixCell:
    benchmark_id: str
    directory: str
    harness: str
    compatible: bool
    reason: str | None
    cwd: str
    command: list[str] | None
    command_display: str | None
    default_extra_config: dict[str, Any]
    effective_extra_config: dict[str, Any] | None
    required_env: list[str]
    env_overrides: dict[str, str]
    propagated_env: dict[str, str]
    result_locator_patterns: list[str]
    trajectory_expectations: list[str]
    error: str | None = None
    # benchledger's addition: required variables this host does not set
    missing_env: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class MatrixReport:
    provider: str
    model: str
    harnesses: tuple[str, ...]
    adapter_count: int
    compatible_cell_count: int
    incompatible_cell_count: int
    error_count: int
    cells: list[MatrixCell]

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def cell_harnesses(spec: BenchmarkSpec) -> tuple[str, ...]:
    """The canonical harnesses, then the benchmark's own agents that are not among them."""
    return tuple(dict.fromkeys((*CANONICAL_HARNESSES, *spec.agents)))


def validate_matrix(
    registry: Registry,
    request: RunRequest,
    environ: Mapping[str, str],
    results_root: Path,
) -> MatrixReport:
    """Every benchmark of the registry under each of its `cell_harnesses`, with `request`
    (provider, model and extras) as `run` would be given it; the agent is the harness."""
    specs = sorted(registry.benchmarks.values(), key=lambda spec: spec.id)
    cells = [
        _cell(spec, replace(request, agent=harness, accounts=None), environ, results_root)
        for spec in specs
        for harness in cell_harnesses(spec)
    ]
    harnesses = tuple(dict.fromkeys(h for spec in specs for h in cell_harnesses(spec)))
    return MatrixReport(
        provider=request.provider,
        model=request.model,
        harnesses=harnesses or CANONICAL_HARNESSES,
        adapter_count=len(specs),
        compatible_cell_count=sum(cell.compatible for cell in cells),
        incompatible_cell_count=sum(not cell.compatible for cell in cells),
        error_count=sum(cell.error is not None for cell in cells),
        cells=cells,
    )


def _cell(
    spec: BenchmarkSpec, request: RunRequest, environ: Mapping[str, str], results_root: Path
) -> MatrixCell:
    harness = request.agent
    base = MatrixCell(
        benchmark_id=spec.id,
        directory=spec.directory,
        harness=harness,
        compatible=spec.accepts(harness),
        reason=None,
        cwd=str(spec.cwd),
        command=None,
        command_display=None,
        default_extra_config=mask_config(spec.config),
        effective_extra_config=None,
        required_env=list(spec.required_env),
        env_overrides={},
        propagated_env={},
        result_locator_patterns=list(result_locator_patterns(spec)),
        trajectory_expectations=list(trajectory_expectations(spec)),
    )
    if not base.compatible:
        rules = AgentRules(required=spec.required(), compatible=spec.agents)
        return replace(base, reason=rules.unsupported_reason(harness))
    try:
        config = work_config(spec, harness, request.provider, *request.extras)
        output_dir = results_root / DRY_RUN_ID / f"{spec.id}__{harness}" / "output"
        values = command_values(spec, request, DRY_RUN_ID, output_dir)
        argv = render_command(spec.command, values, config)
        overrides = launch_env(spec, request, config, environ, values, 0)
    except (LedgerError, ValueError) as e:
        return replace(base, error=f"{type(e).__name__}: {e}")
    env = {**environ, **overrides}
    masked_argv, argv_secrets = mask_argv(argv)
    redactor = Redactor([*secret_values(env), *config_secrets(config), *argv_secrets])
    command: list[str] = redactor.redact_obj(masked_argv)
    return replace(
        base,
        command=command,
        command_display=shlex.join(command),
        effective_extra_config=mask_config(config),
        env_overrides=_masked(overrides, redactor),
        propagated_env=_masked({n: env[n] for n in spec.required_env if n in env}, redactor),
        missing_env=[n for n in spec.required_env if not env.get(n)],
    )


def _masked(env: Mapping[str, str], redactor: Redactor) -> dict[str, str]:
    """Environment values as a report may show them: secret-looking names masked by the
    name rule, any known secret or key shape masked wherever it stands."""
    return {name: redactor.redact(str(value)) for name, value in mask_config(env).items()}


def to_json(report: MatrixReport) -> str:
    return json.dumps(report.as_json(), indent=2, sort_keys=True, ensure_ascii=False)


def to_markdown(report: MatrixReport) -> str:
    lines = [
        "# Cross-Matrix Validation",
        "",
        f"- provider: `{report.provider}`",
        f"- model: `{report.model}`",
        f"- adapters: `{report.adapter_count}`",
        f"- compatible cells: `{report.compatible_cell_count}`",
        f"- incompatible cells: `{report.incompatible_cell_count}`",
        f"- command construction errors: `{report.error_count}`",
        "",
        "| benchmark | directory | " + " | ".join(report.harnesses) + " |",
        "| --- | --- | " + " | ".join("---" for _ in report.harnesses) + " |",
    ]
    by_benchmark: dict[str, dict[str, MatrixCell]] = {}
    for cell in report.cells:
        by_benchmark.setdefault(cell.benchmark_id, {})[cell.harness] = cell
    for benchmark, cells in by_benchmark.items():
        directory = next(iter(cells.values())).directory
        row = [benchmark, directory, *(_status(cells.get(h)) for h in report.harnesses)]
        lines.append("| " + " | ".join(_escaped(row)) + " |")
    return "\n".join(lines)


def _status(cell: MatrixCell | None) -> str:
    if cell is None:
        return "-"
    if cell.error:
        return f"error: {cell.error}"
    return "compatible" if cell.compatible else cell.reason or "incompatible"


def _escaped(values: Sequence[str]) -> list[str]:
    return [v.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ") for v in values]
