"""Preflight: everything a run needs, checked without running anything.

The registry and its inventory, each selected benchmark's executable, required
environment and runtime gate (`requires`: Docker, credentials, commands, paths;
unless skipped), each selected account's home and its auth file (`accounts.py`: there,
non-empty, never opened), and that the output directory can be written. The report
(`preflight.json`, `preflight.md`) names every blocker with a concrete unblock step; it
holds variable names, never their values. A blocked preflight exits 2,
`preflight_failed`, as the orchestrator's exit-code contract says (`exit_code` and
`exit_reason` in `preflight.json`).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchledger.adapters.execution.accounts import AccountChoice
from benchledger.adapters.execution.registry import (
    BenchmarkSpec,
    Gap,
    Registry,
    command_problem,
    inventory,
)
from benchledger.adapters.execution.runtime import Probe, parse

# The exit code of a blocked preflight, in `preflight` and in the `review` chain, and its
# name: the orchestrator's contract (`preflight_failed`, 2).
BLOCKED = 2
BLOCKED_REASON = "preflight_failed"


@dataclass(frozen=True)
class Blocker:
    check: str  # registry | inventory | executable | env | runtime | account | output
    subject: str
    problem: str
    unblock: str


@dataclass
class Preflight:
    """What preflight saw: each check's figures, and what blocks the run."""

    checks: dict[str, Any] = field(default_factory=dict)
    blockers: list[Blocker] = field(default_factory=list)
    plan: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.blockers

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else BLOCKED

    @property
    def reason(self) -> str | None:
        if self.ok:
            return None
        first = self.blockers[0].problem
        more = len(self.blockers) - 1
        return first + (f" (and {more} more)" if more else "")

    def block(self, check: str, subject: str, problem: str, unblock: str) -> None:
        self.blockers.append(Blocker(check, subject, problem, unblock))

    def as_json(self) -> dict[str, Any]:
        return {
            "schema_version": 1,
            "generated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "ok": self.ok,
            "exit_code": self.exit_code,
            "exit_reason": "ok" if self.ok else BLOCKED_REASON,
            "reason": self.reason,
            "unblock": list(dict.fromkeys(b.unblock for b in self.blockers)),
            "blockers": [asdict(b) for b in self.blockers],
            "checks": self.checks,
            "plan": self.plan,
        }


def unusable_registry(path: Path, problem: str) -> Preflight:
    """The report when the registry itself cannot be read or the selection is unknown."""
    report = Preflight(checks={"registry": {"file": str(path), "ok": False}})
    report.block("registry", str(path), problem, f"fix {path}: {problem}")
    return report


def check(
    registry: Registry | None,
    specs: Sequence[BenchmarkSpec],
    *,
    agent: str,
    environ: Mapping[str, str],
    accounts: AccountChoice | None,
    out_dir: Path | None,
    known_formats: Collection[str],
    skip_runtime_gates: bool = False,
    probe: Probe | None = None,
) -> Preflight:
    report = Preflight()
    _registry(report, registry, specs, known_formats)
    _executables(report, registry, specs)
    _environment(report, specs, environ, accounts)
    if skip_runtime_gates:
        report.checks["runtime"] = {"not checked": "--skip-runtime-gates"}
    else:
        _runtime(report, registry, specs, probe or Probe(environ), accounts)
    _accounts(report, accounts, agent)
    _output(report, out_dir)
    report.plan = [
        {
            "benchmark": spec.id,
            "account": accounts.at(i).id if accounts and accounts.accounts else None,
        }
        for i, spec in enumerate(specs)
    ]
    return report


def inventory_seen(registry: Registry, gaps: Sequence[Gap]) -> dict[str, Any]:
    """What the inventory check of `registry` saw (its `gaps`), as a report or a
    manifest states it."""
    return {
        "benchmarks": len(registry.benchmarks),
        "gaps": len(gaps),
        "gap_list": [asdict(g) for g in gaps],
    }


def _registry(
    report: Preflight,
    registry: Registry | None,
    specs: Sequence[BenchmarkSpec],
    known_formats: Collection[str],
) -> None:
    if registry is None:
        report.checks["registry"] = {"not checked": "no registry"}
        report.checks["inventory"] = {"not checked": "no registry"}
        return
    report.checks["registry"] = {"file": registry.path.name, "ok": True}
    gaps = inventory(registry, known_formats)
    selected = {spec.id: spec for spec in specs}
    blocking = [
        g
        for g in gaps
        if g.benchmark in selected and g.problem != command_problem(selected[g.benchmark])
    ]
    report.checks["inventory"] = {
        **inventory_seen(registry, gaps),
        "gaps_in_selection": len(blocking),
    }
    for gap in blocking:
        report.block(
            "inventory",
            gap.benchmark,
            f"{gap.benchmark}: {gap.problem}",
            f"fix [benchmarks.{gap.benchmark}] in {registry.path.name}: {gap.problem}",
        )


def _executables(
    report: Preflight, registry: Registry | None, specs: Sequence[BenchmarkSpec]
) -> None:
    missing = []
    for spec in specs:
        problem = command_problem(spec)
        if problem is None:
            continue
        program = spec.command[0] if spec.command else ""
        missing.append({"benchmark": spec.id, "command": program})
        where = registry.path.name if registry else "the registry"
        report.block(
            "executable",
            spec.id,
            f"{spec.id}: {problem}",
            f"install '{program}' or put it on PATH, or point [benchmarks.{spec.id}].command "
            f"in {where} at an existing file",
        )
    report.checks["executables"] = {"checked": len(specs), "missing": missing}


def _environment(
    report: Preflight,
    specs: Sequence[BenchmarkSpec],
    environ: Mapping[str, str],
    accounts: AccountChoice | None,
) -> None:
    given = {accounts.pool.env, accounts.pool.pool_env} if accounts else set()
    required = sorted({name for spec in specs for name in spec.required_env})
    missing: dict[str, list[str]] = {}
    for spec in specs:
        for name in spec.required_env:
            if name not in given and not environ.get(name):
                missing.setdefault(name, []).append(spec.id)
    report.checks["environment"] = {"required": required, "missing": sorted(missing)}
    for name, needed_by in sorted(missing.items()):
        report.block(
            "env",
            name,
            f"required environment variable {name} is not set (needed by {', '.join(needed_by)})",
            f"export {name}=... before running (needed by {', '.join(needed_by)})",
        )


def _runtime(
    report: Preflight,
    registry: Registry | None,
    specs: Sequence[BenchmarkSpec],
    probe: Probe,
    accounts: AccountChoice | None,
) -> None:
    given = {accounts.pool.env, accounts.pool.pool_env} if accounts else set()
    missing = [m for spec in specs for m in probe.missing(spec.id, spec.requires, spec.cwd, given)]
    report.checks["runtime"] = {
        "required": {spec.id: list(spec.requires) for spec in specs if spec.requires},
        "missing": [asdict(m) for m in missing],
    }
    where = registry.path.name if registry else "the registry"
    for item in missing:
        report.block(
            "runtime",
            item.requirement,
            f"{item.benchmark}: runtime gate {item.requirement} is not met ({item.why})",
            f"{unblock(item.requirement)} (needed by {item.benchmark}), or drop it from "
            f"[benchmarks.{item.benchmark}].requires in {where}",
        )


def unblock(requirement: str) -> str:
    """The step that meets a requirement, in words."""
    steps = []
    for kind, value in parse(requirement):
        steps.append(
            {
                "docker": "start the Docker daemon so that `docker info` answers",
                "env": f"export {value}=...",
                "command": f"install '{value}' or put it on PATH",
                "path": f"provide {value}",
            }[kind]
        )
    return " or ".join(steps)


def _accounts(report: Preflight, accounts: AccountChoice | None, agent: str) -> None:
    if accounts is None:
        report.checks["accounts"] = {"not checked": f"no account pool for agent '{agent}'"}
        return
    pool = accounts.pool
    report.checks["accounts"] = {
        "pool": pool.name,
        "env": pool.env,
        "pool_env": pool.pool_env,
        "auth_file": pool.auth_file or {"not checked": "no auth_file for this pool"},
        "available": pool.ids(),
        "selected": [a.id for a in accounts.accounts],
        "problems": list(accounts.problems),
    }
    holding = f" and holds its {pool.auth_file}" if pool.auth_file else ""
    for problem in accounts.problems:
        report.block(
            "account",
            pool.name,
            problem,
            f"authenticate the account so its home exists under {pool.root}{holding} "
            f"([accounts.{pool.name}].root), or choose others with --accounts "
            f"(available: {', '.join(pool.ids()) or 'none'})",
        )


def _output(report: Preflight, out_dir: Path | None) -> None:
    if out_dir is None:
        report.checks["output"] = {"not checked": "no --out"}
        return
    problem = writable(out_dir)
    report.checks["output"] = {"dir": str(out_dir), "writable": problem is None}
    if problem is not None:
        report.block("output", str(out_dir), problem, f"choose a writable --out ({problem})")


def writable(directory: Path) -> str | None:
    """Why files cannot be written in the directory (made if missing), if they cannot."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as e:
        return f"cannot write to {directory}: {e.strerror or e}"
    return None


def write(report: Preflight, out_dir: Path) -> list[Path]:
    """preflight.json and preflight.md in out_dir; none when it cannot be written."""
    if writable(out_dir) is not None:
        return []
    data = report.as_json()
    paths = [out_dir / "preflight.json", out_dir / "preflight.md"]
    paths[0].write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    paths[1].write_text(markdown(data), encoding="utf-8")
    return paths


def markdown(data: Mapping[str, Any]) -> str:
    lines = [
        "# Preflight",
        "",
        f"- Status: `{'ok' if data['ok'] else 'blocked'}`",
        f"- Exit code: `{data['exit_code']}` (`{data['exit_reason']}`)",
        f"- Generated at: `{data['generated_at']}`",
    ]
    if data["reason"]:
        lines.append(f"- Reason: {data['reason']}")
    if data["unblock"]:
        lines += ["", "## To unblock", ""] + [f"1. {step}" for step in data["unblock"]]
    lines += ["", "## Checks", ""]
    for name, figures in data["checks"].items():
        shown = {k: v for k, v in figures.items() if k != "gap_list"}
        lines.append(f"- {name}: `{json.dumps(shown, sort_keys=True)}`")
    if data["plan"]:
        lines += ["", "## Plan", "", "| benchmark | account |", "|---|---|"]
        lines += [f"| {p['benchmark']} | {p['account'] or ''} |" for p in data["plan"]]
    return "\n".join(lines) + "\n"
