"""Orchestrator parity: the acceptance oracle for benchledger taking over the ElizaOS
orchestrator's store.

Given a checkout of github.com/elizaOS/benchmarks (`--orchestrator CHECKOUT`), it:

1. Writes an orchestrator.sqlite of `--rows N` benchmark_runs rows (default 300) with the
   orchestrator's OWN code, in a child process that imports a private copy of it: its
   db.py (`initialize_database`, `create_run_group`, `insert_run_start`,
   `update_run_result`, `replace_run_trajectories`, `recover_stale_running_runs`, the
   repairs, `tag_run_with_comparison`, `finish_run_group`) driven the way its runner
   drives them (ORCHESTRATOR.md §1-§4): the runner's `_effective_request`,
   `_signature_for`, `_is_harness_compatible` and `_required_env_for_request` decide
   each row; attempts come from `next_attempt_for_signature`; skips from its lookups of
   earlier rows; metrics from its trajectory collector over telemetry files written for
   the run, its runtime-provenance summary and the adapter's own score extractor over a
   result file in the adapter's shape; calibration rows from its synthetic baseline.
   A fixed story (a full eliza/hermes/openclaw cohort, calibration harnesses, a
   `compare` of two models tagged with one comparison_id, an interrupted run recovered
   by the next start-up sweep, a default re-run that records `already_succeeded` skips,
   missing env, rows of an older runner that the repairs rewrite, `--rerun-failed`,
   `--force`, a single-harness re-run with another config and a newer complete cohort,
   so that cohort promotion decides picks), then random invocations, then a
   `recover-stale-runs` sweep. Everything (ids, clock, scores) follows from `--seed`;
   paths in rows sit under a fixed /srv/eliza root.
2. Runs the orchestrator's own `export-viewer-data` on a copy of it (latest/,
   quarantine/, baselines/, latest/index.json, viewer_data.json), kept under
   `--out DIR`/orchestrator.
3. Imports the orchestrator.sqlite into a fresh ledger (`benchledger --db L import`),
   then latest/, quarantine/, baselines/ and viewer_data.json into the same ledger,
   counting the events each appends (goal: 0, but latest/, whose index.json declares
   its matrix contract's rules: only those), runs `benchledger export-latest`, and
   imports everything a second time (goal: 0 events).
4. Compares, per (benchmark, agent), the orchestrator's latest/, quarantine/ and
   baselines/ picks (run ids) with benchledger's; for equal picks their `signature`,
   `comparison_signature`, `extra_config`, `publication_warnings` (absent = []) and
   `quarantine_reason`; the two latest/index.json: `latest`, `latest_by_signature`,
   `latest_by_comparison_signature` entry by entry (benchledger's run and run-group
   ids mapped to the orchestrator's by run_key and group label; host paths left
   out), `benchmark_comparability`, and `matrix_contract` benchmark by benchmark
   (two documented differences counted as equal: a quarantined success's cell state,
   and `recovered` for the orchestrator's stale-recovered `failed`); per source row
   that ran, the run in `benchledger runs --json` (matched by its run_key): status (a
   stale-recovered `failed` row is benchledger's `recovered` run by design: equal,
   counted apart), attempt, score, started_at/ended_at (to the microsecond),
   duration_seconds, config vs extra_config, signature, comparison signature (the
   orchestrator's own function over the row), and benchmark_version /
   benchmarks_commit / eliza_commit / eliza_version (a top-level field, else the
   run's provenance, else its provenance.source_columns); per source row that never
   ran (skipped, incompatible, paused, missing env), the skip in `benchledger skips
   --json` (matched by the source's run_id in its provenance): time (the row's
   started_at, to the microsecond), attempt, signature, reason (the kind of skip and
   the source's own reason) and the run it deferred to; and the distinct signatures
   of both.

Prints one line per check (`PICKS latest 18/30 equal`, `RUNS status 250/300 equal`, ...)
with the differing keys below it; `--json-out FILE` writes the whole report. Exit 0,
unless `--strict` and a check differs (exit 1). Exit 2 when the checkout lacks what the
oracle needs, naming it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parent))

from orchestrator_exports import compare_folder, compare_viewer
from orchestrator_import import (
    missing_orchestrator_parts,
    orchestrator_copy,
    orchestrator_export,
    orchestrator_results,
)

BENCHLEDGER = str(Path(sys.executable).parent / "benchledger")
DEFAULT_ROWS = 300
DEFAULT_SEED = 20261201
START = datetime(2026, 3, 2, 8, 0, 0, 120000, tzinfo=UTC)
REPO = "/srv/eliza/benchmarks"
ROOT = f"{REPO}/benchmark_results"
EXAMPLES = 5  # differing keys printed per check (the JSON report lists them all)

# Adapter ids of the orchestrator's registry (E2 @7eb1876), in order of preference. All
# but `gauntlet` support eliza, hermes and openclaw; `gauntlet` supports none of them, so
# every real harness records `incompatible` there.
BENCHMARKS = (
    "bfcl",
    "humaneval",
    "mmlu",
    "gsm8k",
    "tau_bench",
    "context_bench",
    "lifeops_bench",
    "woobench",
    "trust",
    "configbench",
    "realm",
    "mint",
    "gauntlet",
)
MIN_BENCHMARKS = 6
REAL = ("eliza", "hermes", "openclaw")
CALIBRATION = ("perfect_v1", "wrong_v1", "half_v1", "random_v1")
MODELS = (
    ("cerebras", "gpt-oss-120b"),
    ("openai", "gpt-5-mini"),
    ("groq", "llama-3.3-70b-versatile"),
)
CACHING = frozenset({"openai"})
# The keys set in the runs' environment: `anthropic` runs fail with missing env.
ENV_KEYS = frozenset({"CEREBRAS_API_KEY", "OPENAI_API_KEY", "GROQ_API_KEY", "VLLM_API_KEY"})
COMPARE_B = ("vllm", "qwen3-32b", "http://10.0.0.7:8001/v1")
# Request extras of the random invocations: each changes the signature; `timeout_s` and
# `reasoning_effort: low` leave the comparison signature as it is (ORCHESTRATOR.md §2).
EXTRAS: tuple[dict[str, Any], ...] = (
    {},
    {},
    {"limit": 10},
    {"limit": 25},
    {"timeout_s": 120},
    {"reasoning_effort": "low"},
    {"reasoning_effort": "high"},
    {"per_benchmark": {"bfcl": {"max_per_category": 3}, "tau_bench": {"domain": "airline"}}},
    {"per_benchmark": {"realm": {"use_sample_tasks": True}}},
)
REPO_METAS = (
    {
        "benchmarks_commit": "7eb18764c1d2a9b0e3f5a6c7d8e9f0a1b2c3d4e5",
        "benchmarks_version": "0.4.1",
        "eliza_commit": "d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3",
        "eliza_version": "2.0.0",
    },
    {
        "benchmarks_commit": "8f0c2a1e9d7b5c3a1f0e2d4c6b8a0f1e3d5c7b9a",
        "benchmarks_version": "0.4.2",
        "eliza_commit": "e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4",
        "eliza_version": "2.0.1",
    },
)
WORDS = ("call", "the", "weather", "tool", "for", "city", "in", "user's", "message", "and")
WORDS += ("answer", "with", "temperature", "then", "check", "calendar", "conflicts", "before")
WORDS += ("booking", "meeting", "room", "summarise", "thread", "two", "sentences", "reviewer")


def iso(moment: datetime) -> str:
    """A timestamp as the orchestrator writes one (`datetime.now(UTC).isoformat()`)."""
    return moment.isoformat()


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%M%SZ")


# ---------------------------------------------------------------------------------------
# Step 1, in the child process: the orchestrator's own code writes orchestrator.sqlite.
# ---------------------------------------------------------------------------------------

# What the child imports from the private copy; a checkout lacking one is refused by name.
CHILD_NEEDS = {
    "benchmarks.suites.orchestrator.db": (
        "connect_database",
        "initialize_database",
        "create_run_group",
        "finish_run_group",
        "insert_run_start",
        "update_run_result",
        "replace_run_trajectories",
        "next_attempt_for_signature",
        "get_latest_run_for_signature",
        "get_latest_succeeded_run_for_signature",
        "recover_stale_running_runs",
        "repair_nonzero_returncode_statuses",
        "repair_nonpublishable_success_statuses",
        "tag_run_with_comparison",
    ),
    "benchmarks.suites.orchestrator.runner": (
        "_effective_request",
        "_signature_for",
        "_comparison_signature_from_parts",
        "_is_harness_compatible",
        "_required_env_for_request",
        "_request_for_command_builder",
        "_process_deadline_policy",
        "_collect_run_trajectory_metrics",
        "_repair_current_compatibility_statuses",
        "_result_subdir",
        "DEFAULT_STALE_RECOVERY_SECONDS",
    ),
    "benchmarks.suites.orchestrator.adapters": ("discover_adapters",),
    "benchmarks.suites.orchestrator.types": ("RunRequest", "ExecutionContext"),
    "benchmarks.suites.orchestrator.leaderboard": ("delta_to_high_score",),
    "benchmarks.suites.orchestrator.runtime_provenance": ("summarize_runtime_provenance",),
    "benchmarks.suites.orchestrator.random_baseline_runner": (
        "run_synthetic_baseline",
        "SYNTHETIC_HARNESSES",
        "CALIBRATION_SPEC_VERSION",
        "_RESULT_TEMPLATES",
    ),
}


def refuse(message: str) -> NoReturn:
    """The checkout cannot serve the oracle: say what it lacks, exit 2."""
    print(message, file=sys.stderr)
    raise SystemExit(2)


class Orchestrator:
    """The orchestrator's modules, imported from the private copy on sys.path."""

    def __init__(self) -> None:
        import importlib

        missing: list[str] = []
        self.modules: dict[str, Any] = {}
        for name, attributes in CHILD_NEEDS.items():
            try:
                module = importlib.import_module(name)
            except Exception as exc:  # any import failure of the checkout's code
                missing.append(f"{name} (import failed: {type(exc).__name__}: {exc})")
                continue
            self.modules[name.rsplit(".", 1)[1]] = module
            missing += [f"{name}.{a}" for a in attributes if not hasattr(module, a)]
        if missing:
            refuse("orchestrator checkout lacks what the oracle calls:\n  " + "\n  ".join(missing))
        self.db = self.modules["db"]
        self.runner = self.modules["runner"]
        self.types = self.modules["types"]
        self.baseline = self.modules["random_baseline_runner"]
        self.high_score = self.modules["leaderboard"].delta_to_high_score
        self.provenance = self.modules["runtime_provenance"].summarize_runtime_provenance


@dataclass
class Invocation:
    """One `run` (or one side of a `compare`) as the orchestrator's CLI would start it."""

    agent: str
    provider: str
    model: str
    benchmarks: list[str]
    extra: dict[str, Any] = field(default_factory=dict)
    rerun_failed: bool = False
    force: bool = False
    gap_seconds: float = 600.0  # since the previous invocation ended
    die_at: int | None = None  # the process dies while running this benchmark (index)
    legacy: bool = False  # an older runner: a nonzero exit with a result still succeeded
    label: str = ""


class Driver:
    """Drives the orchestrator's db functions the way its runner does, on a fake clock."""

    def __init__(self, orch: Orchestrator, package_root: Path, db_path: Path, seed: int):
        self.o = orch
        self.rng = random.Random(seed)
        self.package_root = package_root
        self.scratch = Path(tempfile.mkdtemp(prefix="orch-parity-runs-"))
        discovery = orch.modules["adapters"].discover_adapters(package_root)
        self.adapters: dict[str, Any] = dict(discovery.adapters)
        self.benchmarks = [b for b in BENCHMARKS if b in self.adapters]
        real = [b for b in self.benchmarks if len(self.adapters[b].agent_compatibility) > 1]
        if len(real) < MIN_BENCHMARKS:
            refuse(
                f"orchestrator checkout: its adapter discovery found only {len(real)} of the "
                f"multi-harness benchmarks the oracle uses ({', '.join(BENCHMARKS)}); "
                f"need {MIN_BENCHMARKS}. Found: {', '.join(sorted(self.adapters)) or 'none'}"
            )
        self.real_benchmarks = real
        self.incompatible = [b for b in self.benchmarks if b not in real]
        self.conn = orch.db.connect_database(db_path)
        orch.db.initialize_database(self.conn)
        self.now = START
        self.rows = 0
        self.invocations = 0
        self.story: Counter[str] = Counter()
        self.comparison_id: str | None = None
        self.base_scores: dict[tuple[str, str, str], float] = {}

    # -- clock and ids -------------------------------------------------------------------
    def tick(self, low: float, high: float) -> datetime:
        self.now += timedelta(microseconds=self.rng.randint(int(low * 1e6), int(high * 1e6)))
        return self.now

    def hex8(self) -> str:
        return f"{self.rng.getrandbits(32):08x}"

    def repo_meta(self) -> dict[str, str]:
        return dict(REPO_METAS[0 if self.invocations < 12 else 1])

    # -- what the runner computes --------------------------------------------------------
    def cwd(self, adapter: Any) -> str:
        return self.fake_path(str(adapter.cwd))

    def fake_path(self, text: str) -> str:
        text = text.replace(str(self.package_root), REPO)
        return text.replace(sys.executable, "python")

    def command(self, adapter: Any, request: Any, run_root: Path, group: str) -> list[str]:
        """The adapter's own command line, for the run's (fake) output directory."""
        t = self.o.types
        output = run_root / "output"
        ctx = t.ExecutionContext(
            workspace_root=self.package_root,
            benchmarks_root=self.package_root / "suites",
            output_root=output,
            run_root=run_root,
            request=self.o.runner._request_for_command_builder(request),
            run_group_id=group,
            env={k: "set" for k in ENV_KEYS},
            repo_meta=self.repo_meta(),
        )
        try:
            argv = [str(a) for a in adapter.command_builder(ctx, adapter)]
        except Exception:  # a builder that needs the benchmark's own files installed
            argv = ["python", "-m", f"benchmarks.{adapter.id}"]
        return [self.fake_path(a) for a in argv]

    def start_up(self) -> None:
        """What `run` does before its group: the 6 h stale sweep and the repairs."""
        db, runner = self.o.db, self.o.runner
        cutoff = self.now - timedelta(seconds=runner.DEFAULT_STALE_RECOVERY_SECONDS)
        recovered = db.recover_stale_running_runs(
            self.conn, stale_before=iso(cutoff), ended_at=iso(self.now)
        )
        self.story["stale_recovered_at_start_up"] += len(recovered)
        self.repairs()

    def repairs(self) -> None:
        db = self.o.db
        self.story["repaired_nonzero_return_code"] += db.repair_nonzero_returncode_statuses(
            self.conn
        )
        self.story["repaired_nonpublishable_success"] += db.repair_nonpublishable_success_statuses(
            self.conn
        )
        self.story["compatibility_repair_updates"] += (
            self.o.runner._repair_current_compatibility_statuses(self.conn, self.adapters)
        )

    # -- one invocation ------------------------------------------------------------------
    def invoke(self, inv: Invocation, budget: int) -> list[str]:
        """Run `inv` over at most `budget` benchmarks; the run ids it recorded."""
        o = self.o
        benchmarks = inv.benchmarks[:budget]
        if not benchmarks:
            return []
        self.tick(inv.gap_seconds, inv.gap_seconds + 30)
        self.start_up()
        group = f"rg_{stamp(self.now)}_{self.hex8()}"
        request = o.types.RunRequest(
            benchmarks=tuple(benchmarks),
            agent=inv.agent,
            provider=inv.provider,
            model=inv.model,
            extra_config=dict(inv.extra),
            rerun_failed=inv.rerun_failed,
            force=inv.force,
        )
        o.db.create_run_group(
            self.conn,
            run_group_id=group,
            created_at=iso(self.now),
            request=asdict(request),
            benchmarks=list(benchmarks),
            repo_meta=self.repo_meta(),
        )
        self.invocations += 1
        self.story[f"invocation:{inv.label or 'random'}"] += 1
        run_ids: list[str] = []
        statuses: list[str] = []
        for index, benchmark in enumerate(benchmarks):
            self.tick(0.2, 3.0)
            dies = inv.die_at == index
            run_id, status = self.one_benchmark(inv, request, benchmark, group, dies)
            run_ids.append(run_id)
            statuses.append(status)
            self.rows += 1
            if dies:
                self.story["interrupted_invocations"] += 1
                return run_ids  # the process died: the group stays open
        self.story["repaired_nonzero_return_code"] += o.db.repair_nonzero_returncode_statuses(
            self.conn
        )
        self.tick(0.05, 1.5)
        o.db.finish_run_group(
            self.conn,
            run_group_id=group,
            finished_at=iso(self.now),
            status="failed" if "failed" in statuses else "succeeded",
        )
        self.repairs()
        return run_ids

    def one_benchmark(
        self, inv: Invocation, request: Any, benchmark: str, group: str, dies: bool
    ) -> tuple[str, str]:
        o = self.o
        db, runner = o.db, o.runner
        adapter = self.adapters[benchmark]
        effective = runner._effective_request(adapter, request)
        signature = runner._signature_for(adapter, effective)
        harness = inv.agent.strip().lower()
        attempt = db.next_attempt_for_signature(self.conn, signature)
        if not runner._is_harness_compatible(adapter, harness):
            supported = list(adapter.agent_compatibility)
            return self.record_nonexecution(
                "incompat",
                adapter,
                effective,
                signature,
                attempt,
                group,
                status="incompatible",
                metrics={
                    "reason": "harness_not_in_compatibility",
                    "harness": harness,
                    "supported_harnesses": supported,
                },
                error=(
                    f"Benchmark '{adapter.id}' is not compatible with harness '{harness}' "
                    f"(supported: {', '.join(supported)})"
                ),
            )
        if not inv.force and not inv.rerun_failed:
            done = db.get_latest_succeeded_run_for_signature(self.conn, signature)
            if done is not None:
                return self.record_nonexecution(
                    "skip",
                    adapter,
                    effective,
                    signature,
                    attempt,
                    group,
                    status="skipped",
                    metrics={
                        "reason": "already_succeeded",
                        "signature": signature,
                        "existing_succeeded_run_id": done.run_id,
                    },
                )
        if inv.rerun_failed and not inv.force:
            newest = db.get_latest_run_for_signature(self.conn, signature)
            if newest is not None and newest.status == "succeeded":
                return self.record_nonexecution(
                    "skip",
                    adapter,
                    effective,
                    signature,
                    attempt,
                    group,
                    status="skipped",
                    metrics={
                        "reason": "latest_status_succeeded",
                        "signature": signature,
                        "latest_run_id": newest.run_id,
                    },
                )
        if harness in o.baseline.SYNTHETIC_HARNESSES:
            return self.record_synthetic(adapter, effective, signature, attempt, group)
        required = runner._required_env_for_request(adapter, effective)
        missing = [k for k in required if k not in ENV_KEYS]
        if missing:
            return self.record_nonexecution(
                "missing_env",
                adapter,
                effective,
                signature,
                attempt,
                group,
                status="failed",
                metrics={"missing_env": missing},
                error=f"Missing required env vars: {', '.join(missing)}",
            )
        return self.record_execution(inv, adapter, effective, signature, attempt, group, dies)

    def new_run(self, prefix: str, adapter: Any, attempt: int, group: str) -> tuple[str, Path]:
        """A run id in the runner's shape, and the run's directory under the fixed root."""
        run_id = f"{prefix}_{adapter.id}_{stamp(self.now)}_{attempt}_{self.hex8()}"
        return run_id, self.o.runner._result_subdir(Path(ROOT) / group, adapter, run_id)

    def insert(
        self,
        run_id: str,
        run_root: Path,
        adapter: Any,
        effective: Any,
        signature: str,
        attempt: int,
        group: str,
        *,
        command: list[str],
        logs: bool = False,
    ) -> None:
        meta = self.repo_meta()
        self.o.db.insert_run_start(
            self.conn,
            run_id=run_id,
            run_group_id=group,
            benchmark_id=adapter.id,
            benchmark_directory=adapter.directory,
            signature=signature,
            attempt=attempt,
            agent=effective.agent,
            provider=effective.provider,
            model=effective.model,
            extra_config=effective.extra_config,
            started_at=iso(self.now),
            command=command,
            cwd=self.cwd(adapter),
            stdout_path=str(run_root / "stdout.log") if logs else "",
            stderr_path=str(run_root / "stderr.log") if logs else "",
            benchmark_version=meta.get("benchmarks_version"),
            benchmarks_commit=meta.get("benchmarks_commit"),
            eliza_commit=meta.get("eliza_commit"),
            eliza_version=meta.get("eliza_version"),
        )

    def finish_row(self, run_id: str, status: str, **fields: Any) -> None:
        values: dict[str, Any] = {
            "duration_seconds": 0.0,
            "score": None,
            "unit": None,
            "higher_is_better": None,
            "result_json_path": None,
            "artifacts": [],
            "error": None,
            "high_score_label": None,
            "high_score_value": None,
            "delta_to_high_score": None,
        }
        values.update(fields)
        self.o.db.update_run_result(
            self.conn, run_id=run_id, status=status, ended_at=iso(self.now), **values
        )

    def record_nonexecution(
        self,
        prefix: str,
        adapter: Any,
        effective: Any,
        signature: str,
        attempt: int,
        group: str,
        *,
        status: str,
        metrics: dict[str, Any],
        error: str | None = None,
    ) -> tuple[str, str]:
        run_id, run_root = self.new_run(prefix, adapter, attempt, group)
        self.insert(run_id, run_root, adapter, effective, signature, attempt, group, command=[])
        self.tick(0.002, 0.04)
        self.finish_row(run_id, status, metrics=metrics, error=error)
        self.story[f"row:{status}:{metrics.get('reason', prefix)}"] += 1
        return run_id, status

    def record_synthetic(
        self, adapter: Any, effective: Any, signature: str, attempt: int, group: str
    ) -> tuple[str, str]:
        """A calibration harness: the orchestrator's synthetic baseline, scored by the
        adapter's own extractor when it writes a result file."""
        o = self.o
        harness = effective.agent.strip().lower()
        run_id, run_root = self.new_run(harness, adapter, attempt, group)
        command = [f"<{harness}-synthetic>"]
        self.insert(
            run_id, run_root, adapter, effective, signature, attempt, group, command=command
        )
        scratch = self.scratch / run_id / "output"
        outcome = o.baseline.run_synthetic_baseline(
            benchmark_id=adapter.id, output_dir=scratch, harness=harness
        )
        metrics: dict[str, Any] = {
            "synthetic_harness": harness,
            "synthetic_strategy": outcome.strategy_name,
            "synthetic_is_meaningful": outcome.is_meaningful,
            "calibration_spec_version": o.baseline.CALIBRATION_SPEC_VERSION,
            "calibration_depth": "scorer_payload" if outcome.result_path else "direct_score",
            "return_code": 0,
        }
        if harness == "random_v1":
            metrics["random_baseline_strategy"] = outcome.strategy_name
            metrics["random_baseline_is_meaningful"] = outcome.is_meaningful
        if outcome.score is not None:
            metrics["synthetic_expected_score"] = outcome.score
        if outcome.note:
            metrics["synthetic_note"] = outcome.note
        status = outcome.status
        score = unit = hib = error = None
        result_path: str | None = None
        if status == "incompatible":
            error = outcome.note
        elif outcome.result_path is not None and Path(outcome.result_path).exists():
            try:
                summary = adapter.score_extractor(Path(outcome.result_path))
                score, unit, hib = summary.score, summary.unit, summary.higher_is_better
                metrics.update(summary.metrics)
            except Exception as exc:  # the extractor's failure is the row's failure
                status = "failed"
                error = f"{harness} score extraction failed: {exc}"
                metrics["score_extraction_error"] = str(exc)
            result_path = str(run_root / "output" / Path(outcome.result_path).name)
        elif status == "succeeded":
            score, unit, hib = outcome.score, "ratio", True
        label, value, delta = o.high_score(adapter.id, score)
        self.tick(0.01, 0.2)
        self.finish_row(
            run_id,
            status,
            score=score,
            unit=unit,
            higher_is_better=hib,
            metrics=metrics,
            result_json_path=result_path,
            artifacts=[str(run_root / "output")],
            error=error,
            high_score_label=label,
            high_score_value=value,
            delta_to_high_score=delta,
        )
        o.db.replace_run_trajectories(self.conn, run_id=run_id, trajectories=[])
        self.story[f"row:{status}:synthetic"] += 1
        return run_id, status

    def score_for(self, benchmark: str, agent: str, model: str) -> float:
        key = (benchmark, agent, model)
        if key not in self.base_scores:
            self.base_scores[key] = self.rng.uniform(0.2, 0.9)
        return round(min(1.0, max(0.0, self.base_scores[key] + self.rng.gauss(0, 0.05))), 4)

    def result_payload(self, adapter: Any, effective: Any, score: float) -> tuple[str, Any]:
        """(file name, payload) of a result in the adapter's shape: the orchestrator's
        own calibration template for it, sized to the run."""
        templates = self.o.baseline._RESULT_TEMPLATES
        name, factory = templates.get(adapter.id, (f"{adapter.id}-results.json", None))
        extra = effective.extra_config
        size = extra.get("limit") or extra.get("max_tasks") or self.rng.randint(5, 40)
        if factory is None:
            return name, {"metrics": {"score": score, "n": size}}
        payload = factory(score)
        metrics = payload.get("metrics") if isinstance(payload, dict) else None
        if isinstance(metrics, dict) and set(metrics) == {"score", "n"}:
            metrics["n"] = size  # humaneval, mmlu, gsm8k: n = the samples evaluated
        for holder in (payload, metrics):
            if isinstance(holder, dict) and "use_sample_tasks" in holder:
                holder["use_sample_tasks"] = extra.get("use_sample_tasks") is True
        if adapter.id == "woobench" and self.rng.random() < 0.25:
            payload["failed_scenarios"] = 1
        return name, payload

    def telemetry(self, path: Path, provider: str) -> None:
        rng = self.rng
        lines = []
        for turn in range(rng.randint(1, 6)):
            prompt_words = rng.randint(60, 400)
            prompt = " ".join(rng.choice(WORDS) for _ in range(prompt_words))
            usage: dict[str, Any] = {
                "prompt_tokens": prompt_words * 3 + rng.randint(200, 1500),
                "completion_tokens": rng.randint(20, 700),
            }
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            if provider in CACHING:
                usage["cached_tokens"] = rng.randint(0, usage["prompt_tokens"] // 2)
            lines.append(
                json.dumps(
                    {
                        "turn": turn,
                        "prompt": prompt,
                        "usage": usage,
                        "latency_ms": round(rng.uniform(300, 9000), 1),
                    }
                )
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def record_execution(
        self,
        inv: Invocation,
        adapter: Any,
        effective: Any,
        signature: str,
        attempt: int,
        group: str,
        dies: bool,
    ) -> tuple[str, str]:
        """A real run: the adapter's command, then (unless the process dies) its result,
        telemetry and exit code as the runner records them."""
        o, rng = self.o, self.rng
        runner = o.runner
        run_id, run_root = self.new_run("run", adapter, attempt, group)
        command = self.command(adapter, effective, run_root, group)
        self.insert(
            run_id,
            run_root,
            adapter,
            effective,
            signature,
            attempt,
            group,
            command=command,
            logs=True,
        )
        if dies:
            self.story["row:running:interrupted"] += 1
            return run_id, "running"
        policy = runner._process_deadline_policy(adapter, effective)
        roll = rng.random()
        if inv.legacy and adapter.id == "humaneval":
            kind = "zero_samples"
        elif inv.legacy and roll < 0.6:
            kind = "nonzero_with_result"
        elif roll < 0.72:
            kind = "succeeded"
        elif roll < 0.82:
            kind = "no_result"
        elif roll < 0.87:
            kind = "timeout"
        elif roll < 0.93:
            kind = "nonzero_with_result"
        else:
            kind = "no_result_exit_0"
        return_code = {"timeout": 124, "no_result": 1, "nonzero_with_result": 2}.get(kind, 0)
        duration = (
            float(policy.wall_timeout_seconds or 3600)
            if kind == "timeout"
            else rng.uniform(20, 1500)
        )
        scratch = self.scratch / run_id
        telemetry = scratch / "output" / "telemetry.jsonl"
        if kind != "no_result_exit_0" and rng.random() < 0.85:
            self.telemetry(telemetry, effective.provider)
        result_name: str | None = None
        if kind in ("succeeded", "nonzero_with_result", "zero_samples"):
            score = self.score_for(adapter.id, effective.agent, effective.model)
            result_name, payload = self.result_payload(adapter, effective, score)
            if kind == "zero_samples":
                payload = {"metrics": {"score": 0.0, "n": 0}}
            out = scratch / "output" / result_name
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(payload, indent=2), encoding="utf-8")
        scratch.mkdir(parents=True, exist_ok=True)
        status = "failed"
        score_value = unit = hib = None
        error: str | None = None
        metrics: dict[str, Any]
        if kind == "zero_samples":  # an older extractor took n=0 as a success
            score_value, unit, hib = 0.0, "ratio", True
            metrics = {"n": 0, "score": 0.0}
            status = "succeeded"
        elif result_name is not None:
            try:
                summary = adapter.score_extractor(scratch / "output" / result_name)
            except Exception as exc:  # the runner records the extractor's failure
                metrics = {"score_extraction_error": str(exc)}
                error = f"Score extraction failed: {exc}"
            else:
                score_value, unit, hib = summary.score, summary.unit, summary.higher_is_better
                metrics = dict(summary.metrics)
                status = "succeeded"
            if status == "succeeded" and return_code != 0 and not inv.legacy:
                metrics["nonzero_return_code_with_result"] = return_code
                status = "failed"
                error = f"Command produced a result JSON but exited with return code {return_code}"
        else:
            metrics = {"result_locator": "not_found"}
            if kind == "timeout":
                error = f"Command exceeded wall timeout after {policy.wall_timeout_seconds:g}s"
            elif return_code == 0:
                error = "Command succeeded but no result JSON found"
            else:
                error = f"Command exited with return code {return_code} and no result JSON found"
        progress = run_root / "process-progress.ndjson"
        metrics["return_code"] = return_code
        metrics["execution_cancelled"] = False
        metrics["execution_deadline"] = {
            "wall_timeout_seconds": policy.wall_timeout_seconds,
            "silent_timeout_seconds": policy.silent_timeout_seconds,
            "progress_event_count": rng.randint(1, 60),
            "progress_path": str(progress),
        }
        summary_tuple = runner._collect_run_trajectory_metrics(scratch, duration_seconds=duration)
        trajectory_summary, token_metrics, cache_metrics, performance, turns = summary_tuple
        metrics["trajectory_summary"] = trajectory_summary
        metrics["token_metrics"] = token_metrics
        metrics["cache_metrics"] = cache_metrics
        metrics["performance_metrics"] = performance
        provenance = dict(o.provenance(telemetry))
        provenance["stub_embedding_enabled"] = False
        metrics["runtime_provenance"] = provenance
        if status == "succeeded":
            metrics["canonical_entries"] = len(turns)
        label, value, delta = o.high_score(adapter.id, score_value)
        self.now += timedelta(seconds=duration)
        self.tick(0.01, 0.6)  # scoring and trajectory collection after the process
        self.finish_row(
            run_id,
            status,
            duration_seconds=duration,
            score=score_value,
            unit=unit,
            higher_is_better=hib,
            metrics=metrics,
            result_json_path=str(run_root / "output" / result_name) if result_name else None,
            artifacts=[str(run_root / "output"), str(progress)],
            error=error,
            high_score_label=label,
            high_score_value=value,
            delta_to_high_score=delta,
            trajectory_summary=trajectory_summary,
            token_metrics=token_metrics,
            cache_metrics=cache_metrics,
            performance_metrics=performance,
        )
        o.db.replace_run_trajectories(self.conn, run_id=run_id, trajectories=turns)
        self.story[f"row:{status}:{kind}"] += 1
        return run_id, status

    # -- the story -----------------------------------------------------------------------
    def story_invocations(self) -> Iterable[Invocation | Callable[[int], int]]:
        """The fixed opening, so that every path the oracle checks occurs; each element is
        an invocation or a step that records rows itself (returns how many)."""
        rng = self.rng
        real = self.real_benchmarks
        everything = [*real, *self.incompatible]
        provider, model = MODELS[0]
        for agent in REAL:  # a complete cohort, config A
            yield Invocation(agent, provider, model, list(everything), label="cohort_a")
        for agent in CALIBRATION:
            yield Invocation(agent, provider, model, real[:3], gap_seconds=120, label="calibration")
        yield self.compare_step
        yield Invocation(  # the process dies on the third benchmark
            "eliza", provider, model, real[:4], {"limit": 25}, die_at=2, label="interrupted"
        )
        yield Invocation(  # > 6 h later: its start-up sweep recovers the row; skips
            "eliza", provider, model, list(everything), gap_seconds=7 * 3600, label="rerun_default"
        )
        yield Invocation("hermes", "anthropic", "claude-sonnet-4-5", real[:3], label="missing_env")
        legacy = [b for b in ("humaneval", "mmlu", "bfcl") if b in real] or real[:3]
        yield Invocation("openclaw", *MODELS[2], legacy, legacy=True, label="older_runner")
        yield Invocation(
            "hermes", provider, model, list(real), rerun_failed=True, label="rerun_failed"
        )
        yield Invocation(
            "openclaw", provider, model, rng.sample(real, 4), force=True, label="force"
        )
        yield Invocation(  # one harness, another config: cohort promotion keeps config A
            "eliza", provider, model, real[:4], {"limit": 25}, label="single_harness_config_b"
        )
        yield Invocation(  # same comparison signature as config A (timeout_s is dropped)
            "hermes", provider, model, real[4:7], {"timeout_s": 120}, label="runtime_key_only"
        )
        for agent in REAL:  # a newer complete cohort with config C on a subset
            yield Invocation(agent, provider, model, real[2:6], {"limit": 10}, label="cohort_c")

    def compare_step(self, budget: int) -> int:
        """`compare --a cerebras:gpt-oss-120b --b vllm:qwen3-32b@URL --max-examples 5`:
        two forced `compare` runs, each side's rows then tagged with one comparison_id."""
        benchmarks = self.real_benchmarks[:3]
        per_side = min(len(benchmarks), budget // 2)
        if per_side == 0:
            return 0
        self.comparison_id = f"cmp_{stamp(self.now)}_{self.hex8()}"
        examples = 5
        shared = {
            "max_examples": examples,
            "max_tasks": examples,
            "max_questions": examples,
            "sample": examples,
        }
        sides = (
            (MODELS[0][0], MODELS[0][1], dict(shared)),
            (COMPARE_B[0], COMPARE_B[1], {"vllm_base_url": COMPARE_B[2], **shared}),
        )
        recorded = 0
        for provider, model, extra in sides:
            inv = Invocation(
                "compare",
                provider,
                model,
                benchmarks[:per_side],
                extra,
                force=True,
                gap_seconds=5,
                label="compare",
            )
            for run_id in self.invoke(inv, per_side):
                self.o.db.tag_run_with_comparison(
                    self.conn, run_id=run_id, comparison_id=self.comparison_id
                )
                recorded += 1
        return recorded

    def random_invocation(self) -> Invocation:
        rng = self.rng
        roll = rng.random()
        agent = rng.choice(CALIBRATION) if roll < 0.08 else rng.choice(REAL)
        provider, model = rng.choice(MODELS) if rng.random() < 0.4 else MODELS[0]
        pool = [*self.real_benchmarks, *self.incompatible]
        benchmarks = rng.sample(pool, k=rng.randint(3, min(8, len(pool))))
        flag = rng.random()
        return Invocation(
            agent,
            provider,
            model,
            benchmarks,
            dict(rng.choice(EXTRAS)),
            rerun_failed=0.6 <= flag < 0.8,
            force=flag >= 0.8,
            gap_seconds=rng.uniform(60, 4 * 3600),
            die_at=rng.randrange(len(benchmarks)) if rng.random() < 0.04 else None,
        )

    def run(self, rows: int) -> None:
        for step in self.story_invocations():
            left = rows - self.rows
            if left <= 0:
                break
            if isinstance(step, Invocation):
                self.invoke(step, left)
            else:
                step(left)
        # The last invocation dies on its second benchmark, which only the final sweep
        # below recovers (the start-up sweeps take rows older than 6 h).
        last = 2 if rows - self.rows >= 2 else 0
        while self.rows < rows - last:
            self.invoke(self.random_invocation(), rows - last - self.rows)
        if last:
            provider, model = MODELS[0]
            benchmarks = self.real_benchmarks[-2:]
            self.invoke(
                Invocation(
                    "openclaw",
                    provider,
                    model,
                    benchmarks,
                    {"limit": 10},
                    die_at=1,
                    force=True,
                    label="interrupted_last",
                ),
                last,
            )
        # `recover-stale-runs` (CLI default 300 s) an hour later, then its repairs.
        self.tick(3600, 3700)
        recovered = self.o.db.recover_stale_running_runs(
            self.conn, stale_before=iso(self.now - timedelta(seconds=300)), ended_at=iso(self.now)
        )
        self.story["stale_recovered_by_recover_stale_runs"] += len(recovered)
        self.repairs()

    def expected(self) -> dict[str, Any]:
        """Per run, the orchestrator's comparison signature (its own function)."""
        comparison = self.o.runner._comparison_signature_from_parts
        rows = self.conn.execute(
            "SELECT run_id, benchmark_id, benchmark_directory, agent, provider, model, "
            "extra_config_json FROM benchmark_runs"
        ).fetchall()
        return {
            "benchmarks": self.benchmarks,
            "comparison_id": self.comparison_id,
            "story": dict(sorted(self.story.items())),
            "comparison_signatures": {
                r["run_id"]: comparison(
                    benchmark_id=r["benchmark_id"],
                    benchmark_directory=r["benchmark_directory"],
                    agent=r["agent"],
                    provider=r["provider"],
                    model=r["model"],
                    extra_config=json.loads(r["extra_config_json"]),
                )
                for r in rows
            },
        }


def child_build(spec_file: Path) -> None:
    """The child process: write orchestrator.sqlite with the orchestrator's own code."""
    spec = json.loads(spec_file.read_text())
    orch = Orchestrator()
    driver = Driver(orch, Path(spec["package_root"]), Path(spec["db"]), spec["seed"])
    try:
        driver.run(spec["rows"])
        Path(spec["expected"]).write_text(json.dumps(driver.expected(), indent=1, sort_keys=True))
    finally:
        driver.conn.close()
        shutil.rmtree(driver.scratch, ignore_errors=True)


def build_orchestrator_db(package: Path, db: Path, rows: int, seed: int) -> dict[str, Any]:
    """Run the child in the private copy; the expectations it computed."""
    spec = {
        "package_root": str(package),
        "db": str(db),
        "expected": str(db.with_name("orchestrator-expected.json")),
        "rows": rows,
        "seed": seed,
    }
    spec_file = db.with_name("orchestrator-build.json")
    spec_file.write_text(json.dumps(spec))
    env = {**os.environ, "PYTHONPATH": str(package.parent), "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child-build", str(spec_file)],
        cwd=package.parent,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        print(
            f"writing orchestrator.sqlite with the orchestrator's code failed (exit "
            f"{done.returncode}):\n{done.stderr[-4000:]}",
            file=sys.stderr,
        )
        raise SystemExit(2 if done.returncode == 2 else 1)
    expected: dict[str, Any] = json.loads(Path(spec["expected"]).read_text())
    return expected


# ---------------------------------------------------------------------------------------
# Step 3: benchledger.
# ---------------------------------------------------------------------------------------


@dataclass
class Step:
    """One benchledger command: its exit code, stdout and stderr tail."""

    args: list[str]
    code: int
    out: str
    err: str


def benchledger(*args: str) -> Step:
    done = subprocess.run([BENCHLEDGER, *args], capture_output=True, text=True)
    return Step(list(args), done.returncode, done.stdout, done.stderr[-2000:])


def head_position(ledger: Path) -> int | None:
    """The ledger's event count (None when `verify` cannot tell)."""
    if not ledger.exists():
        return 0
    step = benchledger("--db", str(ledger), "verify", "--json")
    try:
        return int(json.loads(step.out)["head_position"])
    except (ValueError, KeyError, TypeError):
        return None


def appended_types(ledger: Path, since: int | None) -> dict[str, int]:
    """The types of the events after position `since`, counted."""
    if since is None:
        return {}
    step = benchledger("--db", str(ledger), "events", "--since", str(since), "--json")
    try:
        events = json.loads(step.out)
    except ValueError:
        return {}
    return dict(sorted(Counter(str(e.get("type")) for e in events if isinstance(e, dict)).items()))


def import_into(ledger: Path, what: str, path: Path) -> dict[str, Any]:
    before = head_position(ledger)
    step = benchledger("--db", str(ledger), "import", str(path), "--json")
    after = head_position(ledger)
    try:
        reports = json.loads(step.out)
    except ValueError:
        reports = []
    states = Counter(str(r.get("state")) for r in reports if isinstance(r, dict) and "state" in r)
    appended = after - before if before is not None and after is not None else None
    return {
        "what": what,
        "path": str(path),
        "exit_code": step.code,
        "events_before": before,
        "events_after": after,
        "events_appended": appended,
        "event_types": appended_types(ledger, before) if appended else {},
        "states": dict(sorted(states.items())),
        "stderr": step.err.strip()[-600:] if step.code else "",
    }


# What importing latest/ may append to a ledger that holds its rows already: the rules of
# its index's matrix contract (each benchmark's required agents; a benchmark the ledger
# does not know yet is registered with them).
RULE_EVENTS = frozenset({"BenchmarkRegistered", "RequiredAgentsDeclared"})


def import_checks(imports: list[dict[str, Any]], again: list[dict[str, Any]]) -> list[Check]:
    """The snapshot files add nothing to the ledger the database was imported into (but
    the rules of latest/index.json), and importing everything again appends nothing."""
    checks = []
    for item in imports[1:]:
        appended, code = item["events_appended"], item["exit_code"]
        if item["what"] == "latest/":
            types = set(item["event_types"]) if appended else set()
            ok = code == 0 and appended is not None and types <= RULE_EVENTS
            checks.append(
                Check(
                    "IMPORT latest/ appended-only-rules",
                    int(ok),
                    1,
                    [] if ok else [item],
                    note=f"appended {appended} events {item['event_types']}, exit {code} "
                    "(goal: its index's rules only)",
                )
            )
            continue
        ok = appended == 0 and code == 0
        checks.append(
            Check(
                f"IMPORT {item['what']} appended-nothing",
                int(ok),
                1,
                [] if ok else [item],
                note=f"appended {appended} events, exit {code} (goal: 0 events)",
            )
        )
    bad = [i for i in again if i["events_appended"] != 0 or i["exit_code"] != 0]
    checks.append(
        Check(
            "IMPORT again appended-nothing",
            len(again) - len(bad),
            len(again),
            bad,
            note="orchestrator.sqlite, latest/, quarantine/, baselines/, viewer_data.json "
            "imported a second time (goal: 0 events each)",
        )
    )
    return checks


def json_list(step: Step, what: str, notes: list[str]) -> list[dict[str, Any]]:
    if step.code != 0:
        notes.append(f"benchledger {what}: exit {step.code}: {step.err.strip()[-300:]}")
        return []
    try:
        value = json.loads(step.out)
    except ValueError as exc:
        notes.append(f"benchledger {what}: not JSON ({exc})")
        return []
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


# ---------------------------------------------------------------------------------------
# Step 4: the comparison.
# ---------------------------------------------------------------------------------------


@dataclass
class Check:
    name: str
    equal: int
    total: int
    differing: list[Any] = field(default_factory=list)
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.equal == self.total and not self.differing

    def line(self) -> str:
        note = f" ({self.note})" if self.note else ""
        return f"{self.name} {self.equal}/{self.total} equal{note}"

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "equal": self.equal,
            "total": self.total,
            "ok": self.ok,
            "note": self.note,
            "differing": self.differing,
        }


def read_picks(directory: Path, problems: list[str]) -> dict[str, dict[str, Any]]:
    """`<benchmark>::<agent>` -> row of every <b>__<a>.json in `directory`."""
    picks: dict[str, dict[str, Any]] = {}
    if not directory.is_dir():
        return picks
    for path in sorted(directory.glob("*.json")):
        if path.name == "index.json":
            continue
        try:
            row = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(f"{path}: unreadable ({exc})")
            continue
        if not isinstance(row, dict):
            problems.append(f"{path}: not a JSON object")
            continue
        benchmark = str(row.get("benchmark_id") or path.stem.split("__")[0])
        agent = str(row.get("agent") or path.stem.split("__")[-1])
        picks[f"{benchmark}::{agent}"] = row
    return picks


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None or isinstance(a, bool) or isinstance(b, bool):
            return False
        try:
            return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-9)
        except (TypeError, ValueError):
            return False
    return bool(a == b)


def compare_picks(
    kind: str,
    orch: dict[str, dict[str, Any]],
    ours: dict[str, dict[str, Any]],
    source_id: Callable[[Any], Any],
) -> list[Check]:
    keys = sorted(set(orch) | set(ours))
    equal_keys: list[str] = []
    differing: list[dict[str, Any]] = []
    for key in keys:
        a = orch.get(key, {}).get("run_id") if key in orch else None
        b = source_id(ours[key].get("run_id")) if key in ours else None
        if key in orch and key in ours and a == b:
            equal_keys.append(key)
        else:
            differing.append(
                {
                    "key": key,
                    "orchestrator": a if key in orch else "(no file)",
                    "benchledger": b if key in ours else "(no file)",
                }
            )
    checks = [Check(f"PICKS {kind}", len(equal_keys), len(keys), differing)]
    for name in (
        "signature",
        "comparison_signature",
        "extra_config",
        "publication_warnings",
        "quarantine_reason",
    ):
        diffs = []
        for key in equal_keys:
            a, b = orch[key].get(name), ours[key].get(name)
            if name == "publication_warnings":
                a, b = a or [], b or []
            if not same(a, b):
                diffs.append({"key": key, "orchestrator": a, "benchledger": b})
        checks.append(
            Check(
                f"FIELDS {kind} {name}",
                len(equal_keys) - len(diffs),
                len(equal_keys),
                diffs,
                note="over equal picks",
            )
        )
    return checks


def micros(value: Any) -> int | None:
    """An ISO-8601 instant as integer microseconds since the epoch (naive = UTC)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


VERSION_FIELDS = ("benchmark_version", "benchmarks_commit", "eliza_commit", "eliza_version")


def version_field(run: dict[str, Any], name: str) -> tuple[Any, str]:
    """A version/commit of a benchledger run, and where it was found."""
    if name in run:
        return run[name], "field"
    provenance = run.get("provenance")
    if isinstance(provenance, str):
        try:
            provenance = json.loads(provenance)
        except ValueError:
            provenance = None
    if isinstance(provenance, dict):
        if name in provenance:
            return provenance[name], "provenance"
        columns = provenance.get("source_columns")
        if isinstance(columns, dict) and name in columns:
            return columns[name], "provenance.source_columns"
    return None, "absent"


def source_rows(db: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return [
            dict(r)
            for r in conn.execute("SELECT * FROM benchmark_runs ORDER BY started_at, run_id")
        ]
    finally:
        conn.close()


STALE_ERROR = "Recovered stale running run"
SKIP_STATUSES = ("skipped", "incompatible", "paused", "paused_unknown")


def metrics_of(row: dict[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(row.get("metrics_json") or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def stale_recovered(row: dict[str, Any]) -> bool:
    """A row the orchestrator's stale sweep ended (`failed`, or `paused_unknown`)."""
    interrupted = metrics_of(row).get("reason") == "orchestrator_interrupted"
    return row["status"] in ("failed", "paused_unknown") and (
        interrupted or (row["error"] or "").startswith(STALE_ERROR)
    )


def skip_kind(row: dict[str, Any]) -> str | None:
    """What benchledger records a source row that never ran as (a skip's reason), or None
    for a run: skipped, incompatible and paused rows, and missing-env rows (E2 `failed`,
    E1 `incompatible`); a stale-recovered row is a run that was interrupted."""
    if stale_recovered(row):
        return None
    missing = row["run_id"].startswith("missing_env_") or (
        "missing_env" in metrics_of(row) and row["status"] in ("failed", "incompatible")
    )
    if missing:
        return "missing_env"
    return row["status"] if row["status"] in SKIP_STATUSES else None


def compare_runs(
    rows: list[dict[str, Any]],
    runs: list[dict[str, Any]],
    skips: list[dict[str, Any]],
    comparison_signatures: dict[str, str],
) -> tuple[list[Check], dict[str, Any]]:
    """The source rows that are runs against `benchledger runs --json`; a stale-recovered
    `failed` row is benchledger's `recovered` run by design: equal, but counted apart."""
    by_key = {str(r.get("run_key")): r for r in runs if r.get("run_key")}
    all_rows = rows
    rows = [r for r in rows if skip_kind(r) is None]
    total = len(rows)
    absent = [r for r in rows if r["run_id"] not in by_key]
    checks = [
        Check(
            "RUNS present",
            total - len(absent),
            total,
            [{"run_id": r["run_id"], "orchestrator_status": r["status"]} for r in absent],
            note="source rows that are runs (not skips), a run of `benchledger runs --json` "
            "(by run_key)",
        )
    ]
    recovered = [
        r["run_id"]
        for r in rows
        if stale_recovered(r) and by_key.get(r["run_id"], {}).get("status") == "recovered"
    ]

    def status(source: dict[str, Any]) -> Any:
        return "recovered" if source["run_id"] in recovered else source["status"]

    getters: dict[str, tuple[Callable[[dict[str, Any]], Any], Callable[[dict[str, Any]], Any]]]
    getters = {
        "status": (status, lambda b: b.get("status")),
        "attempt": (lambda s: s["attempt"], lambda b: b.get("attempt")),
        "score": (lambda s: s["score"], lambda b: b.get("score")),
        "started_at": (lambda s: micros(s["started_at"]), lambda b: micros(b.get("started_at"))),
        "ended_at": (lambda s: micros(s["ended_at"]), lambda b: micros(b.get("ended_at"))),
        "duration_seconds": (
            lambda s: s["duration_seconds"],
            lambda b: b.get("duration_seconds"),
        ),
        "extra_config": (lambda s: json.loads(s["extra_config_json"]), lambda b: b.get("config")),
        "signature": (lambda s: s["signature"], lambda b: b.get("signature")),
        "comparison_signature": (
            lambda s: comparison_signatures.get(s["run_id"]),
            lambda b: b.get("comparison_signature"),
        ),
    }
    for name, (of_source, of_ours) in getters.items():
        diffs = []
        for row in rows:
            ours = by_key.get(row["run_id"])
            a = of_source(row)
            b = of_ours(ours) if ours is not None else "(no run)"
            if ours is None or not same(a, b):
                diffs.append({"run_id": row["run_id"], "orchestrator": a, "benchledger": b})
        note = "microseconds" if name.endswith("_at") else ""
        if name == "extra_config":
            note = "benchledger `config`"
        if name == "status":
            note = (
                f"{len(recovered)} of them stale-recovered `failed` rows, benchledger "
                "`recovered` runs by design"
            )
        checks.append(Check(f"RUNS {name}", total - len(diffs), total, diffs, note=note))
    where: Counter[str] = Counter()
    for name in VERSION_FIELDS:
        diffs = []
        for row in rows:
            ours = by_key.get(row["run_id"])
            if ours is None:
                diffs.append(
                    {"run_id": row["run_id"], "orchestrator": row[name], "benchledger": "(no run)"}
                )
                continue
            value, found = version_field(ours, name)
            where[f"{name}:{found}"] += 1
            if not same(row[name], value):
                diffs.append(
                    {"run_id": row["run_id"], "orchestrator": row[name], "benchledger": value}
                )
        checks.append(Check(f"RUNS {name}", total - len(diffs), total, diffs))
    pairs = Counter(
        f"{r['status']}->{by_key[r['run_id']].get('status') if r['run_id'] in by_key else '-'}"
        for r in rows
    )
    orch_sigs = {r["signature"] for r in all_rows}
    our_sigs = {str(r["signature"]) for r in [*runs, *skips] if r.get("signature")}
    shared = orch_sigs & our_sigs
    checks.append(
        Check(
            "SIGNATURES distinct",
            len(shared),
            len(orch_sigs | our_sigs),
            sorted(orch_sigs ^ our_sigs),
            note=(
                f"orchestrator {len(orch_sigs)}, benchledger {len(our_sigs)} (runs and skips), "
                f"shared {len(shared)}"
            ),
        )
    )
    extra = {
        "status_pairs": dict(sorted(pairs.items())),
        "recovered": len(recovered),
        "version_fields_found_at": dict(sorted(where.items())),
        "skips_in_benchledger": len(skips),
        "source_rows_absent_by_status": dict(Counter(r["status"] for r in absent)),
    }
    return checks, extra


def provenance_of(record: dict[str, Any]) -> dict[str, Any]:
    value = record.get("provenance")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = None
    return value if isinstance(value, dict) else {}


def compare_skips(rows: list[dict[str, Any]], skips: list[dict[str, Any]]) -> list[Check]:
    """The source rows that never ran against `benchledger skips --json` (by the source's
    run_id in the skip's provenance): when it decided (started_at, to the microsecond),
    the attempt it counted, the signature, why (the kind of skip and the source's own
    reason) and the run it deferred to (`existing_succeeded_run_id`)."""
    by_source: dict[str, dict[str, Any]] = {}
    for skip in skips:
        source_id = provenance_of(skip).get("run_id")
        if isinstance(source_id, str):
            by_source[source_id] = skip
    kinds = {r["run_id"]: skip_kind(r) for r in rows}
    rows = [r for r in rows if kinds[r["run_id"]] is not None]
    total = len(rows)
    absent = [r for r in rows if r["run_id"] not in by_source]
    checks = [
        Check(
            "SKIPS present",
            total - len(absent),
            total,
            [{"run_id": r["run_id"], "orchestrator_status": r["status"]} for r in absent],
            note="source rows that never ran (skipped, incompatible, paused, missing env), "
            "a skip of `benchledger skips --json`",
        )
    ]

    def ours_metrics(skip: dict[str, Any]) -> dict[str, Any]:
        value = provenance_of(skip).get("metrics")
        return value if isinstance(value, dict) else {}

    getters: dict[str, tuple[Callable[[dict[str, Any]], Any], Callable[[dict[str, Any]], Any]]]
    getters = {
        "time": (lambda s: micros(s["started_at"]), lambda b: micros(b.get("time"))),
        "attempt": (lambda s: s["attempt"], lambda b: b.get("attempt")),
        "signature": (lambda s: s["signature"], lambda b: b.get("signature")),
        "reason": (
            lambda s: [kinds[s["run_id"]], metrics_of(s).get("reason")],
            lambda b: [b.get("reason"), ours_metrics(b).get("reason")],
        ),
        "existing_succeeded_run_id": (
            lambda s: metrics_of(s).get("existing_succeeded_run_id"),
            lambda b: ours_metrics(b).get("existing_succeeded_run_id"),
        ),
    }
    for name, (of_source, of_ours) in getters.items():
        diffs = []
        for row in rows:
            ours = by_source.get(row["run_id"])
            a = of_source(row)
            b = of_ours(ours) if ours is not None else "(no skip)"
            if ours is None or not same(a, b):
                diffs.append({"run_id": row["run_id"], "orchestrator": a, "benchledger": b})
        note = {
            "time": "microseconds",
            "reason": "[kind, the source's metrics.reason]",
            "existing_succeeded_run_id": "in the source's metrics",
        }.get(name, "")
        checks.append(Check(f"SKIPS {name}", total - len(diffs), total, diffs, note=note))
    return checks


def group_labels(ledger: Path) -> dict[str, str]:
    """benchledger run group id -> its label (an orchestrator group's run_group_id), read
    from the ledger's `run_groups` read model."""
    if not ledger.exists():
        return {}
    conn = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
    try:
        return {
            str(g): str(label)
            for g, label in conn.execute(
                "SELECT run_group_id, label FROM run_groups WHERE kind = 'source'"
            )
        }
    except sqlite3.Error:
        return {}
    finally:
        conn.close()


def read_index(directory: Path, problems: list[str]) -> dict[str, Any]:
    path = directory / "latest" / "index.json"
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        problems.append(f"{path}: unreadable ({exc})")
        return {}
    return value if isinstance(value, dict) else {}


# The entry fields each index section is compared on. Left out: `path` (the orchestrator
# writes an absolute host path; compared by file name) and `result_json_path` (a host
# path benchledger does not publish, ORCHESTRATOR.md §10.8).
ENTRY_FIELDS = {
    "latest": (
        *("run_id", "run_group_id", "signature", "comparison_signature"),
        *("score", "status", "updated_at"),
    ),
    "latest_by_signature": (
        *("run_id", "run_group_id", "benchmark_id", "agent", "signature"),
        *("score", "status", "updated_at"),
    ),
    "latest_by_comparison_signature": (
        *("run_id", "run_group_id", "benchmark_id", "agent", "signature"),
        *("comparison_signature", "score", "status", "updated_at"),
    ),
}
CELL_FIELDS = (
    *("required", "state", "status", "score", "run_id", "run_group_id", "reason"),
    *("required_env", "transient_runtime_gate_preserved"),
)


@dataclass
class Ids:
    """benchledger's ids in the orchestrator's terms: runs by run_key, groups by label."""

    runs: dict[str, str]
    groups: dict[str, str]

    def run(self, value: Any) -> Any:
        return self.runs.get(str(value), value) if value is not None else None

    def group(self, value: Any) -> Any:
        return self.groups.get(str(value), value) if value is not None else None


def index_entry(entry: Any, section: str, ids: Ids | None) -> dict[str, Any]:
    if not isinstance(entry, dict):
        return {"(not an object)": entry}
    out = {k: entry.get(k) for k in ENTRY_FIELDS[section]}
    out["updated_at"] = micros(out["updated_at"])
    if ids is not None:
        out["run_id"], out["run_group_id"] = ids.run(out["run_id"]), ids.group(out["run_group_id"])
    if section == "latest":
        out["file"] = Path(str(entry.get("path") or "")).name
    return out


def compare_sections(orch: dict[str, Any], ours: dict[str, Any], ids: Ids) -> list[Check]:
    checks = []
    for section in ENTRY_FIELDS:
        a = orch.get(section) if isinstance(orch.get(section), dict) else {}
        b = ours.get(section) if isinstance(ours.get(section), dict) else {}
        keys = sorted(set(a) | set(b))
        diffs = []
        for key in keys:
            x = index_entry(a[key], section, None) if key in a else "(no entry)"
            y = index_entry(b[key], section, ids) if key in b else "(no entry)"
            if not isinstance(x, dict) or not isinstance(y, dict):
                diffs.append({"key": key, "orchestrator": x, "benchledger": y})
                continue
            fields = [k for k in x if not same(x[k], y.get(k))]
            if fields:
                diffs.append(
                    {
                        "key": key,
                        "fields": fields,
                        "orchestrator": {k: x[k] for k in fields},
                        "benchledger": {k: y.get(k) for k in fields},
                    }
                )
        checks.append(
            Check(
                f"INDEX {section}",
                len(keys) - len(diffs),
                len(keys),
                diffs,
                note="entries; ids mapped, updated_at in microseconds, path by file name",
            )
        )
    a, b = orch.get("benchmark_comparability") or {}, ours.get("benchmark_comparability") or {}
    keys = sorted(set(a) | set(b))
    diffs = [
        {"key": k, "orchestrator": a.get(k, "(none)"), "benchledger": b.get(k, "(none)")}
        for k in keys
        if a.get(k) != b.get(k)
    ]
    checks.append(Check("INDEX benchmark_comparability", len(keys) - len(diffs), len(keys), diffs))
    return checks


def compare_matrix(
    orch: dict[str, Any],
    ours: dict[str, Any],
    ids: Ids,
    orch_quarantine: dict[str, dict[str, Any]],
    recovered: set[str],
) -> Check:
    """The matrix contracts, benchmark by benchmark (and one item for status, harnesses
    and summary). Two documented differences are equal but counted: a required cell whose
    row the orchestrator quarantined although it succeeded has the orchestrator's state
    `succeeded` and benchledger's the quarantine reason; a stale-recovered row is
    benchledger's `recovered` where the orchestrator says `failed`."""
    a = orch.get("matrix_contract") if isinstance(orch.get("matrix_contract"), dict) else {}
    b = ours.get("matrix_contract") if isinstance(ours.get("matrix_contract"), dict) else {}
    diffs: list[dict[str, Any]] = []
    known: Counter[str] = Counter()
    top = ("status", "harnesses", "summary")
    head = [k for k in top if a.get(k) != b.get(k)]
    if head:
        diffs.append(
            {
                "key": "(contract)",
                "orchestrator": {k: a.get(k) for k in head},
                "benchledger": {k: b.get(k) for k in head},
            }
        )
    ab, bb = a.get("benchmarks") or {}, b.get("benchmarks") or {}
    keys = sorted(set(ab) | set(bb))
    for benchmark in keys:
        x, y = ab.get(benchmark), bb.get(benchmark)
        if not isinstance(x, dict) or not isinstance(y, dict):
            diffs.append({"key": benchmark, "orchestrator": x, "benchledger": y})
            continue
        found: dict[str, Any] = {}
        for name in ("compatible_harnesses", "complete", "cohort_reason"):
            if x.get(name) != y.get(name):
                found[name] = (x.get(name), y.get(name))
        if x.get("cohort_run_group_id") != ids.group(y.get("cohort_run_group_id")):
            found["cohort_run_group_id"] = (
                x.get("cohort_run_group_id"),
                y.get("cohort_run_group_id"),
            )
        xc, yc = x.get("cells") or {}, y.get("cells") or {}
        for harness in sorted(set(xc) | set(yc)):
            c, d = xc.get(harness), yc.get(harness)
            if not isinstance(c, dict) or not isinstance(d, dict):
                found[f"cells.{harness}"] = (c, d)
                continue
            d = {
                **d,
                "run_id": ids.run(d.get("run_id")),
                "run_group_id": ids.group(d.get("run_group_id")),
            }
            held = orch_quarantine.get(f"{benchmark}::{harness}", {})
            if (
                c.get("state") == "succeeded"
                and c.get("run_id") == held.get("run_id")
                and d.get("state") == held.get("quarantine_reason")
            ):
                d["state"] = "succeeded"
                known["quarantined_success_state"] += 1
            if c.get("run_id") in recovered and d.get("status") == "recovered":
                d = {**d, "status": c.get("status"), "state": c.get("state")}
                known["recovered_as_failed"] += 1
            for name in CELL_FIELDS:
                if not same(c.get(name), d.get(name)):
                    found[f"cells.{harness}.{name}"] = (c.get(name), d.get(name))
        if found:
            diffs.append(
                {
                    "key": benchmark,
                    "orchestrator": {k: v[0] for k, v in found.items()},
                    "benchledger": {k: v[1] for k, v in found.items()},
                }
            )
    counted = ", ".join(f"{n} {k}" for k, n in sorted(known.items())) or "none"
    return Check(
        "INDEX matrix_contract",
        len(keys) + 1 - len(diffs),
        len(keys) + 1,
        diffs,
        note=f"benchmarks + the contract's status/harnesses/summary; documented differences "
        f"counted equal: {counted}",
    )


def export_repairs(source: Path, exported: Path) -> int:
    """Rows the orchestrator's export changed in its copy (its repairs), which benchledger
    never sees; 0 when the store was at the repairs' fixed point."""
    if not exported.exists():
        return 0
    keys = ("status", "score", "metrics_json", "error", "ended_at", "result_json_path")
    a = {r["run_id"]: tuple(r[k] for k in keys) for r in source_rows(source)}
    b = {r["run_id"]: tuple(r[k] for k in keys) for r in source_rows(exported)}
    return sum(1 for k in a if b.get(k) != a[k])


def older_than_newest_success(
    rows: list[dict[str, Any]], latest: dict[str, dict[str, Any]]
) -> list[str]:
    """The latest/ keys whose pick is not the key's newest succeeded, scored row: where the
    orchestrator's cohort promotion (or a quarantine rule) decided the pick."""
    newest: dict[str, tuple[str, str]] = {}
    for row in rows:  # started_at order
        if row["status"] == "succeeded" and isinstance(row["score"], (int, float)):
            newest[f"{row['benchmark_id']}::{row['agent']}"] = (row["started_at"], row["run_id"])
    return sorted(
        key
        for key, pick in latest.items()
        if key in newest and newest[key][1] != pick.get("run_id")
    )


def describe_source(rows: list[dict[str, Any]], db: Path, expected: dict[str, Any]) -> str:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        groups = conn.execute("SELECT COUNT(*) FROM run_groups").fetchone()[0]
        turns = conn.execute("SELECT COUNT(*) FROM benchmark_run_trajectories").fetchone()[0]
    finally:
        conn.close()
    statuses = Counter(r["status"] for r in rows)
    stale = sum(1 for r in rows if (r["error"] or "").startswith("Recovered stale running"))
    skips = Counter(
        json.loads(r["metrics_json"]).get("reason") for r in rows if r["status"] == "skipped"
    )
    tagged = sum(1 for r in rows if r.get("comparison_id"))
    agents = sorted({r["agent"] for r in rows})
    mix = ", ".join(f"{n} {s}" for s, n in statuses.most_common())
    skip_mix = ", ".join(f"{n} {s}" for s, n in skips.most_common()) or "none"
    return (
        f"orchestrator.sqlite: {len(rows)} benchmark_runs rows in {groups} run groups ({mix}; "
        f"{stale} stale-recovered; skips: {skip_mix}), {turns} trajectory rows, "
        f"{len({r['signature'] for r in rows})} signatures, {len(expected['benchmarks'])} "
        f"benchmarks, agents {', '.join(agents)}; comparison {expected.get('comparison_id')} "
        f"tags {tagged} rows"
    )


def parity(args: argparse.Namespace, work: Path, code_dir: Path) -> dict[str, Any]:
    package = orchestrator_copy(args.orchestrator, code_dir)
    source = work / "orchestrator.sqlite"
    expected = build_orchestrator_db(package, source, args.rows, args.seed)
    rows = source_rows(source)
    print(describe_source(rows, source, expected), flush=True)

    seconds = orchestrator_export(package, source).wall
    exported = work / "orchestrator"
    shutil.copytree(orchestrator_results(package), exported)
    repaired = export_repairs(source, exported / "orchestrator.sqlite")
    problems: list[str] = []
    orch_picks = {
        k: read_picks(exported / k, problems) for k in ("latest", "quarantine", "baselines")
    }
    older = older_than_newest_success(rows, orch_picks["latest"])
    print(
        f"orchestrator export-viewer-data: {seconds:.2f} s; "
        + ", ".join(f"{k}/ {len(v)} rows" for k, v in orch_picks.items())
        + f"; {len(older)} latest picks are older than their key's newest succeeded row "
        f"(cohort promotion or a quarantine rule); repaired {repaired} rows of its copy",
        flush=True,
    )

    ledger = work / "ledger.db"
    imports = [import_into(ledger, "orchestrator.sqlite", source)]
    for name in ("latest", "quarantine", "baselines", "viewer_data.json"):
        path = exported / name
        if path.exists():
            imports.append(import_into(ledger, f"{name}{'/' if path.is_dir() else ''}", path))
    ours_dir = work / "benchledger"
    export = benchledger("--db", str(ledger), "export-latest", str(ours_dir), "--json")
    notes: list[str] = []
    if export.code != 0:
        notes.append(f"benchledger export-latest: exit {export.code}: {export.err.strip()[-300:]}")
    runs = json_list(benchledger("--db", str(ledger), "runs", "--json"), "runs --json", notes)
    skips = json_list(benchledger("--db", str(ledger), "skips", "--json"), "skips --json", notes)
    our_picks = {
        k: read_picks(ours_dir / k, problems) for k in ("latest", "quarantine", "baselines")
    }

    to_source = {str(r.get("run_id")): r.get("run_key") for r in runs if r.get("run_key")}

    def source_id(run_id: Any) -> Any:
        return to_source.get(str(run_id), run_id)

    checks: list[Check] = []
    for kind in ("latest", "quarantine", "baselines"):
        checks += compare_picks(kind, orch_picks[kind], our_picks[kind], source_id)
    orch_index = read_index(exported, problems)
    our_index = read_index(ours_dir, problems)
    ids = Ids({k: str(v) for k, v in to_source.items() if v is not None}, group_labels(ledger))
    checks += compare_sections(orch_index, our_index, ids)
    recovered_rows = {r["run_id"] for r in rows if stale_recovered(r)}
    checks.append(
        compare_matrix(orch_index, our_index, ids, orch_picks["quarantine"], recovered_rows)
    )
    run_checks, run_extra = compare_runs(rows, runs, skips, expected["comparison_signatures"])
    checks += run_checks
    checks += compare_skips(rows, skips)
    checks += export_checks(ledger, exported, ours_dir, notes)
    checks += database_only_checks(source, work, orch_picks)
    again = [import_into(ledger, i["what"], Path(i["path"])) for i in imports]
    checks += import_checks(imports, again)
    return {
        "checkout": str(args.orchestrator),
        "rows": args.rows,
        "seed": args.seed,
        "work": str(work),
        "orchestrator": {
            "db": str(source),
            "export_dir": str(exported),
            "export_seconds": round(seconds, 3),
            "export_repaired_rows": repaired,
            "latest_picks_older_than_newest_success": older,
            "statuses": dict(Counter(r["status"] for r in rows)),
            "benchmarks": expected["benchmarks"],
            "comparison_id": expected["comparison_id"],
            "story": expected["story"],
            "picks": {k: len(v) for k, v in orch_picks.items()},
        },
        "benchledger": {
            "ledger": str(ledger),
            "export_dir": str(ours_dir),
            "export_exit_code": export.code,
            "runs": len(runs),
            "skips": len(skips),
            "picks": {k: len(v) for k, v in our_picks.items()},
            **run_extra,
        },
        "imports": imports,
        "imports_again": again,
        "problems": problems,
        "notes": notes,
        "checks": [c.as_json() for c in checks],
        "ok": all(c.ok for c in checks),
        "_checks": checks,
    }


def export_checks(ledger: Path, exported: Path, ours: Path, notes: list[str]) -> list[Check]:
    """benchledger's exports of the imported folder against the orchestrator's own files,
    field by field (`orchestrator_exports`)."""
    viewer = benchledger(
        "--db", str(ledger), "export-viewer-data", "--out", str(ours / "viewer_data.json")
    )
    if viewer.code != 0:
        notes.append(f"benchledger export-viewer-data: exit {viewer.code}: {viewer.err[-300:]}")
    checks = []
    for kind in ("latest", "quarantine", "baselines"):
        equal, total, diffs = compare_folder(kind, exported, ours)
        checks.append(
            Check(
                f"EXPORT {kind}/",
                equal,
                total,
                diffs,
                note="files, every field (additions allowed)",
            )
        )
    equal, total, diffs = compare_viewer(exported / "viewer_data.json", ours / "viewer_data.json")
    checks.append(
        Check(
            "EXPORT viewer_data.json",
            equal,
            total,
            diffs,
            note="members; runs and run_groups item by item (additions allowed)",
        )
    )
    return checks


def database_only_checks(
    source: Path, work: Path, orch_picks: dict[str, dict[str, dict[str, Any]]]
) -> list[Check]:
    """The orchestrator's picks from its database alone: a fresh ledger imports only
    orchestrator.sqlite (no latest/index.json to state the required agents)."""
    ledger, out = work / "ledger-database-only.db", work / "benchledger-database-only"
    step = benchledger("--db", str(ledger), "import", str(source))
    exported = benchledger("--db", str(ledger), "export-latest", str(out))
    runs = benchledger("--db", str(ledger), "runs", "--json")
    problems = [s.err[-300:] for s in (step, exported, runs) if s.code != 0]
    to_source = {
        str(r.get("run_id")): r.get("run_key")
        for r in (json.loads(runs.out) if not problems else [])
    }
    checks = []
    for kind in ("latest", "quarantine", "baselines"):
        ours = read_picks(out / kind, problems)
        [picks] = [
            c
            for c in compare_picks(kind, orch_picks[kind], ours, lambda i: to_source.get(str(i), i))
            if c.name.startswith("PICKS")
        ]
        differing = [*picks.differing, *problems]
        checks.append(
            Check(
                f"PICKS database-only {kind}",
                picks.equal,
                picks.total,
                differing,
                note="orchestrator.sqlite imported alone",
            )
        )
    return checks


def print_report(report: dict[str, Any]) -> None:
    """The differing items of each check, then one summary line per check."""
    checks: list[Check] = report["_checks"]
    for check in checks:
        if check.differing:
            print(f"DIFF {check.name}: {len(check.differing)} differing")
        for item in check.differing[:EXAMPLES]:
            print(f"    {json.dumps(item, sort_keys=True, default=str)[:300]}")
        if len(check.differing) > EXAMPLES:
            print(f"    ... {len(check.differing) - EXAMPLES} more (see --json-out)")
    for line in [*report["problems"], *report["notes"]]:
        print(f"NOTE {line}")
    for item in report["imports"]:
        print(
            f"IMPORT {item['what']}: exit {item['exit_code']}, appended "
            f"{item['events_appended']} events ({item['events_before']} -> "
            f"{item['events_after']}), states {item['states'] or '{}'}"
            + (f"; {item['stderr'][-200:]}" if item["stderr"] else "")
        )
    bl = report["benchledger"]
    print(f"status orchestrator->benchledger: {bl['status_pairs']}")
    print(f"versions/commits found at: {bl['version_fields_found_at'] or 'nowhere (no runs)'}")
    for check in checks:
        print(check.line())
    failing = sum(1 for c in checks if not c.ok)
    print(
        f"PARITY {'complete' if report['ok'] else 'NOT complete'}: "
        f"{len(checks) - failing}/{len(checks)} checks equal"
    )


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.rows < 1:
        parser.error("--rows must be >= 1")
    if args.out and args.out.exists() and (not args.out.is_dir() or any(args.out.iterdir())):
        parser.error(f"--out {args.out}: not an empty directory")
    if not Path(BENCHLEDGER).exists():
        parser.error(f"no benchledger CLI beside {sys.executable} (pip install -e .)")
    missing = missing_orchestrator_parts(args.orchestrator)
    if missing:
        print(
            f"--orchestrator {args.orchestrator}: not a usable elizaOS/benchmarks checkout; "
            f"missing {', '.join(missing)}",
            file=sys.stderr,
        )
        raise SystemExit(2)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child-build":
        child_build(Path(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0],
        epilog="Step by step: see the module docstring of benchmarks/orchestrator_parity.py.",
    )
    parser.add_argument(
        "--orchestrator",
        type=Path,
        required=True,
        metavar="CHECKOUT",
        help="a checkout of github.com/elizaOS/benchmarks (never written to)",
    )
    parser.add_argument(
        "--rows",
        type=int,
        default=DEFAULT_ROWS,
        help=f"benchmark_runs rows to write (default {DEFAULT_ROWS})",
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed")
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="keep everything in DIR (empty or new): orchestrator.sqlite, orchestrator/ "
        "(its export), ledger.db, benchledger/ (export-latest)",
    )
    parser.add_argument("--json-out", type=Path, metavar="FILE", help="write the report as JSON")
    parser.add_argument("--strict", action="store_true", help="exit 1 when any check differs")
    args = parser.parse_args()
    check_args(parser, args)
    work = args.out or Path(tempfile.mkdtemp(prefix="benchledger-orch-parity-"))
    work.mkdir(parents=True, exist_ok=True)
    # The orchestrator's code is copied outside `work`: its adapter discovery asks git
    # which benchmark directories are visible, and `work` may lie inside a repository.
    code_dir = Path(tempfile.mkdtemp(prefix="benchledger-orch-code-"))
    try:
        report = parity(args, work, code_dir)
    finally:
        shutil.rmtree(code_dir, ignore_errors=True)
        if not args.out:
            shutil.rmtree(work, ignore_errors=True)
    print_report(report)
    checks = report.pop("_checks")
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=1, sort_keys=True, default=str) + "\n")
    if args.out:
        print(f"kept: {work}")
    if args.strict and not all(c.ok for c in checks):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
