"""The static inventory checklist: what `inventory --format markdown|json` prints.

The keys are the ElizaOS orchestrator's (`inventory.py`), so a script written for its
JSON reads this one. In benchledger a registry entry is its own adapter: the
registry's `[benchmarks.ID]` table says how to run the benchmark (command, cwd,
placeholders) and how to read its result (`result`, `format`). So:

- `registry_entries_without_adapters`: entries benchledger cannot run as declared,
  the ones with a gap (`registry.inventory`: an unresolvable command, a missing cwd,
  an unknown format, a placeholder without a value). Each gap is in `gaps`.
- `adapters_without_registry_entries`: always empty; there is no adapter outside the
  registry.
- `benchmark_directories_without_adapters`: with a benchmarks root (the orchestrator's
  `suites/`), its sub-directories that no registered benchmark runs in or names as its
  `directory`; without one, none.

It runs nothing: it reads the registry and looks at the file system.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchledger.adapters.execution.registry import BenchmarkSpec, Gap, Registry, inventory
from benchledger.domain.matrix import CANONICAL_HARNESSES
from benchledger.domain.secrets import mask_config


@dataclass(frozen=True)
class ChecklistRow:
    benchmark_id: str
    directory: str
    source: str
    display_name: str | None
    description: str
    harnesses: tuple[str, ...]
    required_env: tuple[str, ...]
    result_locator_patterns: tuple[str, ...]
    trajectory_expectations: tuple[str, ...]
    default_timeout_seconds: int | None
    default_extra_config: dict[str, Any]
    command_cwd: str
    has_adapter: bool
    has_registry_entry: bool
    # benchledger's additions
    command: tuple[str, ...]
    format: str
    requires: tuple[str, ...]
    required_harnesses: tuple[str, ...]
    problems: tuple[str, ...]


@dataclass(frozen=True)
class Checklist:
    adapter_count: int
    registry_entry_count: int
    benchmark_directory_count: int
    checklist_count: int
    registry_entries_without_adapters: tuple[str, ...]
    adapters_without_registry_entries: tuple[str, ...]
    benchmark_directories_without_adapters: tuple[str, ...]
    rows: list[ChecklistRow]
    # benchledger's additions: the registry file, the benchmarks root looked at, each gap
    registry: str
    benchmarks_root: str | None
    gaps: list[dict[str, str]]

    @property
    def has_gaps(self) -> bool:
        return bool(
            self.registry_entries_without_adapters or self.benchmark_directories_without_adapters
        )

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def harnesses(spec: BenchmarkSpec) -> tuple[str, ...]:
    """The harnesses that may run the benchmark: its `agents`, else the canonical ones
    (no `agents` means any, and `run --all-agents` runs these)."""
    return spec.agents or CANONICAL_HARNESSES


def result_locator_patterns(spec: BenchmarkSpec) -> tuple[str, ...]:
    """Where the run's result is looked for, under the run's output dir."""
    return (spec.result,)


def trajectory_expectations(spec: BenchmarkSpec) -> tuple[str, ...]:
    """What benchledger does with what the benchmark writes, as the orchestrator lists
    its trajectory capture."""
    expectations = [
        "every file under {output_dir} (BENCHLEDGER_OUTPUT_DIR), trajectories included, "
        "is recorded as a run artifact (path, size, sha256)",
        "a `trajectories` folder is generated output: verify-artifacts fails if it is committed",
    ]
    if spec.progress:
        expectations.append(f"cells are recorded live from {{output_dir}}/{spec.progress}")
    return tuple(expectations)


def checklist(
    registry: Registry, known_formats: Collection[str], benchmarks_root: Path | None = None
) -> Checklist:
    """The checklist of `registry`, its directories compared with `benchmarks_root`'s."""
    gaps = inventory(registry, known_formats)
    problems: dict[str, list[str]] = {}
    for gap in gaps:
        problems.setdefault(gap.benchmark, []).append(gap.problem)
    rows = [_row(spec, problems.get(spec.id, [])) for spec in registry.benchmarks.values()]
    directories = _directories(registry.benchmarks.values(), benchmarks_root)
    uncovered = tuple(sorted(d for d, covered in directories.items() if not covered))
    return Checklist(
        adapter_count=sum(row.has_adapter for row in rows),
        registry_entry_count=len(rows),
        benchmark_directory_count=len(directories),
        checklist_count=len(rows),
        registry_entries_without_adapters=tuple(sorted(problems)),
        adapters_without_registry_entries=(),
        benchmark_directories_without_adapters=uncovered,
        rows=sorted(rows, key=lambda row: row.benchmark_id),
        registry=str(registry.path),
        benchmarks_root=str(benchmarks_root) if benchmarks_root else None,
        gaps=[*_gap_rows(gaps), *_directory_gaps(uncovered, benchmarks_root)],
    )


def _row(spec: BenchmarkSpec, problems: Sequence[str]) -> ChecklistRow:
    return ChecklistRow(
        benchmark_id=spec.id,
        directory=spec.directory,
        source="registry",
        display_name=None,
        description=spec.description or "",
        harnesses=harnesses(spec),
        required_env=spec.required_env,
        result_locator_patterns=result_locator_patterns(spec),
        trajectory_expectations=trajectory_expectations(spec),
        default_timeout_seconds=None,  # `--timeout` is per run, not per benchmark
        default_extra_config=mask_config(spec.config),
        command_cwd=str(spec.cwd),
        has_adapter=not problems,
        has_registry_entry=True,
        command=spec.command,
        format=spec.format,
        requires=spec.requires,
        required_harnesses=spec.required(),
        problems=tuple(problems),
    )


def _directories(specs: Iterable[BenchmarkSpec], root: Path | None) -> dict[str, bool]:
    """Each benchmark directory and whether a registered benchmark covers it: the
    registry's `directory` names, and the sub-directories of the benchmarks root."""
    specs = list(specs)
    found = {spec.directory: True for spec in specs}
    if root is None:
        return found
    base = root.resolve()
    cwds = {spec.cwd for spec in specs}
    for child in sorted(base.iterdir()):
        if child.is_dir() and not child.name.startswith((".", "_")):
            covered = child.name in found or any(c == child or child in c.parents for c in cwds)
            found[child.name] = covered
    return found


def _gap_rows(gaps: Sequence[Gap]) -> list[dict[str, str]]:
    return [asdict(gap) for gap in gaps]


def _directory_gaps(uncovered: Sequence[str], root: Path | None) -> list[dict[str, str]]:
    return [
        {"benchmark": "", "problem": f"directory {name} under {root} has no registered benchmark"}
        for name in uncovered
    ]


def to_json(report: Checklist) -> str:
    return json.dumps(report.as_json(), indent=2, sort_keys=True, ensure_ascii=False)


def _csv(values: Sequence[str]) -> str:
    return _cell(", ".join(values)) if values else "-"


def _cell(value: str) -> str:
    return value.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def to_markdown(report: Checklist) -> str:
    """The checklist in the orchestrator's sections, then benchledger's gaps."""
    lines = [
        "# Benchmark Inventory Checklist",
        "",
        f"- registry: `{report.registry}`",
        f"- adapters: `{report.adapter_count}`",
        f"- registry entries: `{report.registry_entry_count}`",
        f"- benchmark directories: `{report.benchmark_directory_count}`",
        f"- checklist rows: `{report.checklist_count}`",
        f"- registry entries without adapters: `{len(report.registry_entries_without_adapters)}`",
        f"- adapter-only entries: `{len(report.adapters_without_registry_entries)}`",
        "- benchmark directories without adapters: "
        f"`{len(report.benchmark_directories_without_adapters)}`",
        "",
    ]
    if report.registry_entries_without_adapters:
        lines += ["## Registry Entries Without Adapters", ""]
        entries = [gap for gap in report.gaps if gap["benchmark"]]
        lines += [f"- {_cell(gap['benchmark'])}: {_cell(gap['problem'])}" for gap in entries]
        lines.append("")
    if report.benchmark_directories_without_adapters:
        lines += ["## Benchmark Directories Without Adapters", ""]
        lines += [", ".join(report.benchmark_directories_without_adapters), ""]
    lines += [
        "| benchmark | source | directory | harnesses | required env | result locators "
        "| trajectories |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in report.rows:
        cells = [
            _cell(row.benchmark_id),
            row.source,
            _cell(row.directory),
            _csv(row.harnesses),
            _csv(row.required_env),
            _csv(row.result_locator_patterns),
            _csv(row.trajectory_expectations),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
