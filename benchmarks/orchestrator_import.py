"""Orchestrator import: an ElizaOS orchestrator.sqlite of N runs through `benchledger import`.

For each size an orchestrator.sqlite of the E2 vintage (ORCHESTRATOR.md §1: run_groups,
benchmark_runs with its migration columns, benchmark_run_trajectories, their indexes; WAL
mode) is written as a stream of executemany batches from a fixed seed: ~30 benchmarks x
eliza/hermes/openclaw (and a few calibration rows of perfect_v1/random_v1), run groups of
10-50 rows, about 67% succeeded, 15% failed, 10% skipped, 5% incompatible and 3%
stale-recovered rows, attempts counted per signature (§2) and ~4 trajectory turns per
executed run (about 160k trajectory rows at 50k rows, as the issue measured).
`benchledger --db LEDGER import DB` then runs in a child process (wall time and the
child's peak RSS via os.wait4), and again on the same ledger (a re-import must
append nothing). Then the database grows by 1% (the generator goes on, as the
orchestrator's next runs would) and the grown copy is imported into a copy of the
ledger: the rows recorded as they are (their digest) are passed over unread, the
others read and compared, the new ones appended.
A plain baseline in this process copies the database, reads the same rows (SELECT *
... ORDER BY run_id) and inserts them into one table of a new SQLite file (same
columns, WAL, one commit).

With `--orchestrator CHECKOUT` (a checkout of github.com/elizaOS/benchmarks), the
orchestrator's own `export-viewer-data` of the same database is timed too, as a child
process. With `--repeat N`, the two are timed N times each, interleaved (an import,
then an export, ...), and compared pair by pair, wall and CPU (user+sys of each child
process and of the processes it waited for, from os.wait4), by the medians of the
pairs' ratios: these machines are shared, and one run of each can differ by more than
the gap measured. It runs on a private copy of the checkout's code and data files in
the work folder, because the export writes into `<its checkout>/benchmark_results/`
(and repairs the database it reads); the checkout itself is never written to.

Goal (issue 39): the import of the 50,000-row database (about 160k trajectory rows)
within 0.5x the export's wall time and 1.0x its CPU time (medians of interleaved
pairs), and a peak RSS below 250 MB at 50,000 rows and below 300 MB at 200,000;
import time growing about linearly with the rows.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import Usage, child, child_usage, connect_wal, db_bytes, measured, parse_sizes

SEED = 20261001
SIZES = (10_000, 50_000)
# Peak RSS goals (MB, 10**6 bytes) from a number of rows up.
RSS_GOALS_MB = {50_000: 250, 200_000: 300}
# The import against the orchestrator's export: at most these ratios (import / export).
WALL_GOAL = 0.5
CPU_GOAL = 1.0
LINEAR_GOAL = 1.3
BATCH = 1_000
START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
ROOT = "/srv/eliza/benchmark_results"
REPO = "/srv/eliza/benchmarks"

# benchmark_runs, as the orchestrator creates it (base) and migrates it (the rest).
BASE_COLUMNS = (
    "run_id TEXT PRIMARY KEY, run_group_id TEXT NOT NULL, benchmark_id TEXT NOT NULL, "
    "benchmark_directory TEXT NOT NULL, signature TEXT NOT NULL, status TEXT NOT NULL, "
    "attempt INTEGER NOT NULL, agent TEXT NOT NULL, provider TEXT NOT NULL, "
    "model TEXT NOT NULL, extra_config_json TEXT NOT NULL, started_at TEXT NOT NULL, "
    "ended_at TEXT, duration_seconds REAL, command_json TEXT NOT NULL, cwd TEXT NOT NULL, "
    "stdout_path TEXT NOT NULL, stderr_path TEXT NOT NULL, result_json_path TEXT, score REAL, "
    "unit TEXT, higher_is_better INTEGER, metrics_json TEXT NOT NULL, "
    "artifacts_json TEXT NOT NULL, error TEXT, high_score_label TEXT, high_score_value REAL, "
    "delta_to_high_score REAL, benchmark_version TEXT, benchmarks_commit TEXT, "
    "eliza_commit TEXT, eliza_version TEXT, created_at TEXT NOT NULL"
)
MIGRATION_COLUMNS = (
    "comparison_id TEXT, trajectory_summary_json TEXT, token_metrics_json TEXT, "
    "cache_metrics_json TEXT, performance_metrics_json TEXT, trajectory_count INTEGER, "
    "llm_call_count INTEGER, total_prompt_tokens INTEGER, total_completion_tokens INTEGER, "
    "total_cache_read_input_tokens INTEGER, total_cache_creation_input_tokens INTEGER, "
    "mean_latency_ms REAL, p95_latency_ms REAL, throughput_per_second REAL"
)
RUN_COLUMNS = tuple(c.split()[0] for c in f"{BASE_COLUMNS}, {MIGRATION_COLUMNS}".split(", "))
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS run_groups (
        run_group_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, finished_at TEXT,
        request_json TEXT NOT NULL, benchmarks_json TEXT NOT NULL, repo_meta_json TEXT NOT NULL,
        created_by TEXT NOT NULL, execution_namespace TEXT, execution_contract_json TEXT,
        checkpoint_relpath TEXT, cohort_status TEXT NOT NULL DEFAULT 'running',
        pause_retry_at TEXT, pause_reason TEXT, pause_metadata_json TEXT NOT NULL DEFAULT '{}',
        storage_preflight_json TEXT NOT NULL DEFAULT '{}', updated_at TEXT)""",
    f"""CREATE TABLE IF NOT EXISTS benchmark_runs ({BASE_COLUMNS}, {MIGRATION_COLUMNS},
        FOREIGN KEY (run_group_id) REFERENCES run_groups(run_group_id))""",
    """CREATE TABLE IF NOT EXISTS benchmark_run_trajectories (
        run_id TEXT NOT NULL, trajectory_file TEXT NOT NULL, turn_index INTEGER NOT NULL,
        prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
        total_tokens INTEGER NOT NULL DEFAULT 0, cached_tokens INTEGER NOT NULL DEFAULT 0,
        cache_creation_tokens INTEGER NOT NULL DEFAULT 0, latency_ms REAL,
        prompt_chars INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (run_id, trajectory_file, turn_index))""",
    "CREATE INDEX IF NOT EXISTS idx_run_groups_execution_namespace "
    "ON run_groups(execution_namespace, finished_at, created_at)",
    "CREATE INDEX IF NOT EXISTS idx_benchmark_runs_signature ON benchmark_runs(signature)",
    "CREATE INDEX IF NOT EXISTS idx_benchmark_runs_signature_status "
    "ON benchmark_runs(signature, status, ended_at)",
    "CREATE INDEX IF NOT EXISTS idx_benchmark_runs_group "
    "ON benchmark_runs(run_group_id, started_at)",
    "CREATE INDEX IF NOT EXISTS idx_benchmark_runs_lookup "
    "ON benchmark_runs(benchmark_id, provider, model, agent, started_at)",
    "CREATE INDEX IF NOT EXISTS idx_benchmark_runs_comparison ON benchmark_runs(comparison_id)",
    "CREATE INDEX IF NOT EXISTS idx_benchmark_run_trajectories_run "
    "ON benchmark_run_trajectories(run_id)",
)
GROUP_COLUMNS = (
    "run_group_id",
    "created_at",
    "finished_at",
    "request_json",
    "benchmarks_json",
    "repo_meta_json",
    "created_by",
    "execution_namespace",
    "execution_contract_json",
    "checkpoint_relpath",
    "cohort_status",
    "pause_retry_at",
    "pause_reason",
    "pause_metadata_json",
    "storage_preflight_json",
    "updated_at",
)
TRAJECTORY_COLUMNS = (
    "run_id",
    "trajectory_file",
    "turn_index",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "cached_tokens",
    "cache_creation_tokens",
    "latency_ms",
    "prompt_chars",
)


def insert_sql(table: str, columns: tuple[str, ...]) -> str:
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


RUNS_INSERT = insert_sql("benchmark_runs", RUN_COLUMNS)
GROUPS_INSERT = insert_sql("run_groups", GROUP_COLUMNS)
TRAJECTORIES_INSERT = insert_sql("benchmark_run_trajectories", TRAJECTORY_COLUMNS)

# benchmark id -> (directory, unit); a few carry a published high score (label, value).
BENCHMARKS: dict[str, tuple[str, str]] = {
    "bfcl": ("bfcl", "ratio"),
    "humaneval": ("humaneval", "pass_rate"),
    "mmlu": ("mmlu", "accuracy"),
    "gsm8k": ("gsm8k", "accuracy"),
    "swe_bench_lite": ("swe-bench", "resolved_rate"),
    "terminal_bench": ("terminal-bench", "ratio"),
    "tau_bench": ("tau-bench", "pass_rate"),
    "webarena": ("webarena", "success_rate"),
    "gaia": ("gaia", "accuracy"),
    "agentbench": ("agentbench", "score"),
    "lifeops_bench": ("lifeops-bench", "score"),
    "trust": ("trust", "score"),
    "abliteration-robustness": ("abliteration-robustness", "ratio"),
    "context_bench": ("context-bench", "accuracy"),
    "realm": ("realm", "score"),
    "mind2web": ("mind2web", "success_rate"),
    "osworld": ("osworld", "success_rate"),
    "solana_bench": ("solana-bench", "score"),
    "rlm_bench": ("rlm-bench", "accuracy"),
    "experience": ("experience", "score"),
    "social_alpha": ("social-alpha", "score"),
    "vending_bench": ("vending-bench", "net_worth_ratio"),
    "app_eval": ("app-eval", "pass_rate"),
    "evm_bench": ("evm-bench", "score"),
    "woobench": ("woobench", "score"),
    "configbench": ("configbench", "accuracy"),
    "loca_bench": ("loca-bench", "accuracy"),
    "clawbench": ("clawbench", "pass_rate"),
    "hyperliquid_bench": ("hyperliquid-bench", "score"),
    "adhdbench": ("adhdbench", "score"),
}
HIGH_SCORES = {
    "bfcl": ("gpt-5", 0.891),
    "humaneval": ("claude-opus-4", 0.952),
    "mmlu": ("gpt-5", 0.925),
    "gsm8k": ("o3", 0.968),
    "swe_bench_lite": ("claude-sonnet-4-5", 0.612),
    "gaia": ("gpt-5", 0.734),
}
SAMPLE_KEYS = {"lifeops_bench": "seeds"}  # besides `n`, which every run states
AGENTS = ("eliza", "hermes", "openclaw")
CALIBRATION = {"perfect_v1": "perfect", "random_v1": "random"}
CALIBRATION_SIGNED = frozenset({"perfect_v1", "wrong_v1", "half_v1"})  # §2: key added
MODELS = (
    ("cerebras", "gpt-oss-120b"),
    ("openai", "gpt-5-mini"),
    ("anthropic", "claude-sonnet-4-5"),
    ("groq", "llama-3.3-70b-versatile"),
)
CACHING = frozenset({"openai", "anthropic"})
LIMITS = (10, 25, 50)
REPO_META = {
    "benchmarks_commit": "a1b2c3d",
    "benchmarks_version": "0.4.1",
    "eliza_commit": "d4e5f6a",
    "eliza_version": "2.0.0",
}
STALE_ERROR = "Recovered stale running run from interrupted orchestrator process"


def dumps(value: Any) -> str:
    """The orchestrator's canonical JSON: compact and key-sorted."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds")


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%M%SZ")


def signature(
    benchmark: str, directory: str, agent: str, provider: str, model: str, extra: dict[str, Any]
) -> str:
    """ORCHESTRATOR.md §2: sha256 of the canonical, ASCII-escaped JSON of the identity."""
    config = dict(extra)
    if agent in CALIBRATION_SIGNED:
        config["calibration_spec_version"] = "calibration_v1"
    payload = {
        "benchmark_id": benchmark,
        "benchmark_directory": directory,
        "agent": agent,
        "provider": provider,
        "model": model,
        "extra_config": config,
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


@dataclass
class History:
    """Per signature: the highest attempt so far and the newest succeeded run."""

    attempts: dict[str, int] = field(default_factory=dict)
    succeeded: dict[str, str] = field(default_factory=dict)

    def next_attempt(self, sig: str) -> int:
        self.attempts[sig] = self.attempts.get(sig, 0) + 1
        return self.attempts[sig]


@dataclass
class Built:
    """What one generated database holds."""

    rows: int = 0
    groups: int = 0
    trajectories: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    # What wrote it, to write the rows that come after (`grown_copy`).
    generator: Generator | None = field(default=None, repr=False)


@dataclass
class Group:
    run_group_id: str
    agents: tuple[str, ...]
    provider: str
    model: str
    limit: int
    created: datetime


# A run group's row, its benchmark_runs rows, their trajectory rows, and its status counts.
GroupRows = tuple[tuple[Any, ...], list[tuple[Any, ...]], list[tuple[Any, ...]], Counter[str]]


class Generator:
    """Streams run groups, each with its rows and their trajectory turns."""

    def __init__(self, seed: int, turns_per_run: int) -> None:
        self.rng = random.Random(seed)
        self.turns_per_run = turns_per_run
        self.history = History()
        self.clock = START

    def hex8(self) -> str:
        return f"{self.rng.getrandbits(32):08x}"

    def groups(self, n_rows: int) -> Iterator[GroupRows]:
        """(group row, its run rows, their trajectory rows, status counts) until n_rows."""
        left, index = n_rows, 0
        while left > 0:
            calibration = index % 60 == 59
            size = min(left, 10 if calibration else self.rng.randint(10, 50))
            yield self.one_group(size, calibration)
            left -= size
            index += 1

    def one_group(self, size: int, calibration: bool) -> GroupRows:
        rng = self.rng
        self.clock += timedelta(seconds=rng.randint(60, 6 * 3600))
        provider, model = rng.choice(MODELS)
        if calibration:
            agents: tuple[str, ...] = (rng.choice(tuple(CALIBRATION)),)
        else:
            agents = tuple(rng.sample(AGENTS, k=max(1, math.ceil(size / len(BENCHMARKS)))))
        group = Group(
            f"rg_{stamp(self.clock)}_{self.hex8()}",
            agents,
            provider,
            model,
            rng.choice(LIMITS),
            self.clock,
        )
        cells = [(b, a) for a in agents for b in BENCHMARKS]
        chosen = rng.sample(cells, k=size)
        benchmarks = sorted({b for b, _ in chosen})
        moment = group.created + timedelta(seconds=rng.uniform(1, 5))
        runs: list[tuple[Any, ...]] = []
        turns: list[tuple[Any, ...]] = []
        statuses: Counter[str] = Counter()
        for benchmark, agent in chosen:
            row, row_turns, moment = self.one_row(group, benchmark, agent, moment)
            statuses[row["status"] if row["status"] != "failed" else self.failure_kind(row)] += 1
            runs.append(tuple(row.get(c) for c in RUN_COLUMNS))
            turns.extend(row_turns)
        finished = moment + timedelta(seconds=rng.uniform(0.2, 2))
        self.clock = finished
        failed = statuses["failed"] + statuses["stale"] > 0
        request = {
            "agent": ",".join(agents),
            "benchmarks": benchmarks,
            "extra_config": {"limit": group.limit},
            "force": False,
            "model": model,
            "provider": provider,
            "rerun_failed": False,
            "resume": False,
        }
        group_row = (
            group.run_group_id,
            iso(group.created),
            iso(finished),
            dumps(request),
            dumps(benchmarks),
            dumps(REPO_META),
            "benchmarks.orchestrator",
            None,
            None,
            None,
            "failed" if failed else "succeeded",
            None,
            None,
            "{}",
            "{}",
            iso(finished),
        )
        return group_row, runs, turns, statuses

    @staticmethod
    def failure_kind(row: dict[str, Any]) -> str:
        return "stale" if row["error"] == STALE_ERROR else "failed"

    def one_row(
        self, group: Group, benchmark: str, agent: str, moment: datetime
    ) -> tuple[dict[str, Any], list[tuple[Any, ...]], datetime]:
        """One benchmark_runs row started at `moment`, its turns, and when the next starts."""
        rng = self.rng
        directory, unit = BENCHMARKS[benchmark]
        extra: dict[str, Any] = {"agent": agent, "harness": agent, "limit": group.limit}
        if benchmark == "trust" and agent in AGENTS:
            extra["handler"] = "eliza"
        sig = signature(benchmark, directory, agent, group.provider, group.model, extra)
        u = rng.random()
        if agent in CALIBRATION:
            kind = "calibration"
        elif u < 0.67:
            kind = "succeeded"
        elif u < 0.82:
            kind = "failed"
        elif u < 0.92:
            kind = "skipped" if sig in self.history.succeeded else "succeeded"
        elif u < 0.97:
            kind = "incompatible"
        else:
            kind = "stale"
        attempt = self.history.next_attempt(sig)
        prefix = {"skipped": "skip", "incompatible": "incompat", "calibration": agent}.get(kind)
        run_id = f"{prefix or 'run'}_{benchmark}_{stamp(moment)}_{attempt}_{self.hex8()}"
        run_dir = f"{ROOT}/{group.run_group_id}/{directory}__{benchmark}/{run_id}"
        row: dict[str, Any] = {
            "run_id": run_id,
            "run_group_id": group.run_group_id,
            "benchmark_id": benchmark,
            "benchmark_directory": directory,
            "signature": sig,
            "attempt": attempt,
            "agent": agent,
            "provider": group.provider,
            "model": group.model,
            "extra_config_json": dumps(extra),
            "started_at": iso(moment),
            "created_at": iso(moment),
            "cwd": f"{REPO}/{directory}",
            "command_json": "[]",
            "stdout_path": "",
            "stderr_path": "",
            "artifacts_json": "[]",
            "benchmark_version": REPO_META["benchmarks_version"],
            "benchmarks_commit": REPO_META["benchmarks_commit"],
            "eliza_commit": REPO_META["eliza_commit"],
            "eliza_version": REPO_META["eliza_version"],
        }
        turns: list[tuple[Any, ...]] = []
        if kind == "skipped":
            row.update(
                status="skipped",
                duration_seconds=0.0,
                metrics_json=dumps(
                    {
                        "existing_succeeded_run_id": self.history.succeeded[sig],
                        "reason": "already_succeeded",
                        "signature": sig,
                    }
                ),
            )
            ended = moment + timedelta(milliseconds=rng.randint(2, 20))
        elif kind == "incompatible":
            supported = sorted(set(AGENTS) - {agent})
            row.update(
                status="incompatible",
                duration_seconds=0.0,
                metrics_json=dumps(
                    {
                        "harness": agent,
                        "reason": "harness_not_in_compatibility",
                        "supported_harnesses": supported,
                    }
                ),
                error=f"harness '{agent}' not in adapter compatibility ({', '.join(supported)})",
            )
            ended = moment + timedelta(milliseconds=rng.randint(2, 20))
        elif kind == "calibration":
            score = 1.0 if CALIBRATION[agent] == "perfect" else round(rng.random(), 4)
            row.update(
                status="succeeded",
                duration_seconds=0.0,
                command_json=dumps([f"<{agent}-synthetic>"]),
                result_json_path=f"{run_dir}/output/{benchmark}_results.json",
                score=score,
                unit=unit,
                higher_is_better=1,
                metrics_json=dumps(
                    {
                        "calibration_depth": rng.choice(("scorer_payload", "direct_score")),
                        "calibration_spec_version": "calibration_v1",
                        "n": group.limit,
                        "return_code": 0,
                        "synthetic_harness": agent,
                        "synthetic_strategy": CALIBRATION[agent],
                    }
                ),
            )
            self.history.succeeded[sig] = run_id
            ended = moment + timedelta(milliseconds=rng.randint(5, 50))
        elif kind == "stale":
            duration = round(rng.uniform(900, 7200), 6)
            row.update(
                status="failed",
                duration_seconds=duration,
                command_json=dumps(self.command(benchmark, group.limit)),
                stdout_path=f"{run_dir}/stdout.log",
                stderr_path=f"{run_dir}/stderr.log",
                metrics_json=dumps({"reason": "orchestrator_interrupted"}),
                error=STALE_ERROR,
            )
            ended = moment + timedelta(seconds=duration)
        else:
            ended, turns = self.executed(row, kind, run_dir, unit, moment, group)
            if row["status"] == "succeeded":
                self.history.succeeded[sig] = run_id
        row["ended_at"] = iso(ended)
        return row, turns, ended + timedelta(seconds=rng.uniform(0.5, 3))

    @staticmethod
    def command(benchmark: str, limit: int) -> list[str]:
        return ["python", "-m", f"benchmarks.{benchmark}", "--limit", str(limit)]

    def executed(
        self,
        row: dict[str, Any],
        kind: str,
        run_dir: str,
        unit: str,
        moment: datetime,
        group: Group,
    ) -> tuple[datetime, list[tuple[Any, ...]]]:
        """Fill a run that spawned its process; return its end and its trajectory turns."""
        rng = self.rng
        benchmark = row["benchmark_id"]
        duration = round(rng.uniform(20, 1800), 6)
        turns, groups = self.telemetry(row["run_id"], row["provider"], duration)
        metrics: dict[str, Any] = {"n": group.limit, "return_code": 0, **groups}
        if benchmark in SAMPLE_KEYS:
            metrics[SAMPLE_KEYS[benchmark]] = rng.randint(1, 5)
        score: float | None = round(rng.betavariate(4, 3), 4)
        error = None
        status = "succeeded"
        if kind == "failed":
            status = "failed"
            failure = rng.random()
            if failure < 0.6:
                metrics["return_code"], score = 1, None
                error = "Command exited with return code 1"
            elif failure < 0.85:
                metrics["return_code"], score = 124, None
                error = f"Command timed out after {int(duration)} seconds"
            else:
                metrics["return_code"] = 1
                metrics["nonzero_return_code_with_result"] = 1
                error = "Command produced a result JSON but exited with return code 1"
        high = HIGH_SCORES.get(benchmark) if status == "succeeded" else None
        row.update(
            status=status,
            duration_seconds=duration,
            command_json=dumps(self.command(benchmark, group.limit)),
            stdout_path=f"{run_dir}/stdout.log",
            stderr_path=f"{run_dir}/stderr.log",
            result_json_path=None
            if score is None
            else f"{run_dir}/output/{benchmark}_results.json",
            score=score,
            unit=None if score is None else unit,
            higher_is_better=None if score is None else 1,
            metrics_json=dumps(metrics),
            artifacts_json=dumps([f"{run_dir}/output", f"{run_dir}/process-progress.ndjson"]),
            error=error,
        )
        if high is not None and score is not None:
            row.update(
                high_score_label=high[0],
                high_score_value=high[1],
                delta_to_high_score=round(score - high[1], 4),
            )
        for name, value in groups.items():
            row[f"{name}_json"] = dumps(value)
        tokens, cache = groups["token_metrics"], groups["cache_metrics"]
        perf = groups["performance_metrics"]
        row.update(
            trajectory_count=groups["trajectory_summary"]["files"],
            llm_call_count=tokens["llm_call_count"],
            total_prompt_tokens=tokens["prompt_tokens"],
            total_completion_tokens=tokens["completion_tokens"],
            total_cache_read_input_tokens=cache["cache_read_input_tokens"],
            total_cache_creation_input_tokens=cache["cache_creation_input_tokens"],
            mean_latency_ms=perf["mean_latency_ms"],
            p95_latency_ms=perf["p95_latency_ms"],
            throughput_per_second=perf["throughput_per_second"],
        )
        return moment + timedelta(seconds=duration), turns

    def telemetry(
        self, run_id: str, provider: str, duration: float
    ) -> tuple[list[tuple[Any, ...]], dict[str, dict[str, Any]]]:
        """Trajectory turns of one run (mean `turns_per_run`) and its four telemetry groups."""
        rng = self.rng
        n = rng.randint(1, 2 * self.turns_per_run - 1) if self.turns_per_run > 0 else 0
        files = 1 if n < 4 else 2
        caching = provider in CACHING
        turns: list[tuple[Any, ...]] = []
        latencies: list[float] = []
        prompt = completion = cached = created = chars = 0
        for i in range(n):
            p, c = rng.randint(800, 12_000), rng.randint(40, 1_500)
            hit = int(p * rng.uniform(0.2, 0.8)) if caching and i > 0 else 0
            made = rng.randint(0, 2_000) if caching and i == 0 else 0
            latency = round(rng.uniform(300, 9_000), 1)
            prompt_chars = p * 4 + rng.randint(0, 400)
            name = f"output/trajectories/trajectory-{i % files}.jsonl"
            turns.append((run_id, name, i // files, p, c, p + c, hit, made, latency, prompt_chars))
            latencies.append(latency)
            prompt, completion, cached, created = (
                prompt + p,
                completion + c,
                cached + hit,
                created + made,
            )
            chars += prompt_chars
        ordered = sorted(latencies)
        groups: dict[str, dict[str, Any]] = {
            "token_metrics": {
                "completion_tokens": completion,
                "llm_call_count": n,
                "prompt_tokens": prompt,
                "telemetry_missing": n == 0,
                "total_tokens": prompt + completion,
            },
            "cache_metrics": {
                "cache_creation_input_tokens": created,
                "cache_hit_ratio": round(cached / prompt, 4) if prompt else 0.0,
                "cache_read_input_tokens": cached,
                "turns_with_cached_field": n if caching else 0,
            },
            "trajectory_summary": {
                "files": files if n else 0,
                "prompt_chars": chars,
                "repeated_prefixes": [],
                "turns": n,
            },
            "performance_metrics": {
                "duration_seconds": duration,
                "mean_latency_ms": round(sum(ordered) / n, 2) if n else None,
                "p95_latency_ms": ordered[max(0, math.ceil(0.95 * n) - 1)] if n else None,
                "throughput_per_second": round(n / duration, 4),
            },
        }
        return turns, groups


def build_db(
    path: Path, n_rows: int, turns_per_run: int, generator: Generator | None = None
) -> Built:
    """Write orchestrator.sqlite of n_rows benchmark_runs rows in executemany batches; or,
    given the generator that wrote `path`, add n_rows more rows to it, as the
    orchestrator's next runs would (new groups, attempts counted on)."""
    conn = connect_wal(path)
    if generator is None:
        for statement in SCHEMA:
            conn.execute(statement)
        generator = Generator(SEED, turns_per_run)
    built = Built(generator=generator)
    groups: list[tuple[Any, ...]] = []
    runs: list[tuple[Any, ...]] = []
    turns: list[tuple[Any, ...]] = []

    def flush() -> None:
        conn.execute("BEGIN")
        conn.executemany(GROUPS_INSERT, groups)
        conn.executemany(RUNS_INSERT, runs)
        conn.executemany(TRAJECTORIES_INSERT, turns)
        conn.execute("COMMIT")
        built.groups += len(groups)
        built.rows += len(runs)
        built.trajectories += len(turns)
        groups.clear()
        runs.clear()
        turns.clear()

    for group_row, group_runs, group_turns, statuses in generator.groups(n_rows):
        groups.append(group_row)
        runs.extend(group_runs)
        turns.extend(group_turns)
        built.statuses.update(statuses)
        if len(runs) >= BATCH:
            flush()
    flush()
    conn.close()
    return built


def grown_copy(source: Path, target: Path, built: Built, rows: int, turns: int) -> Built:
    """A copy of `source` with `rows` more rows: the database a few days later."""
    copy_with_wal(source, target)
    assert built.generator is not None
    return build_db(target, rows, turns, built.generator)


def head_position(ledger: Path) -> int:
    """The ledger's last event position (= its event count), from `benchledger verify`."""
    _, _, text = child(["--db", str(ledger), "verify", "--json"])
    report = json.loads(text)
    if not report["ok"]:
        raise SystemExit(f"benchledger verify {ledger}: {report['problem']}")
    return int(report["head_position"])


def appended_since(ledger: Path, position: int) -> int:
    """Events appended after `position`, from `benchledger events --since`."""
    _, _, text = child(["--db", str(ledger), "events", "--since", str(position), "--json"])
    return len(json.loads(text))


def copy_with_wal(source: Path, target: Path) -> None:
    """A SQLite file copied with its write-ahead log, when it has one."""
    shutil.copyfile(source, target)
    wal = source.with_name(source.name + "-wal")
    if wal.is_file():
        shutil.copyfile(wal, target.with_name(target.name + "-wal"))


def plain_copy(source: Path, target_dir: Path) -> float:
    """Seconds to copy the database (with its WAL), read its benchmark_runs rows in run_id
    order and insert them into one table of a new WAL SQLite file, in one commit."""
    target_dir.mkdir(parents=True, exist_ok=True)
    copy = target_dir / "orchestrator-copy.sqlite"
    out_path = target_dir / "plain.sqlite"
    t0 = time.perf_counter()
    copy_with_wal(source, copy)
    src = sqlite3.connect(copy)
    out = connect_wal(out_path)
    out.execute(f"CREATE TABLE benchmark_runs ({BASE_COLUMNS}, {MIGRATION_COLUMNS})")
    cursor = src.execute("SELECT * FROM benchmark_runs ORDER BY run_id")
    out.execute("BEGIN")
    out.executemany(RUNS_INSERT, cursor)
    out.execute("COMMIT")
    elapsed = time.perf_counter() - t0
    src.close()
    out.close()
    return elapsed


@dataclass
class Result:
    rows: int
    built: Built
    source_bytes: int
    first_import: Usage  # the import into a new ledger
    ledger_bytes: int
    new_runs: int
    events: int
    reimport_wall: float
    reimport_rss: float
    reimport_events: int
    reimport_states: list[str]
    plain_wall: float
    grown: Built  # the rows a copy of the database gained (`grown_copy`)
    grown_import: Usage  # its import into a copy of the ledger
    grown_new_runs: int

    @property
    def import_wall(self) -> float:
        return self.first_import.wall

    @property
    def import_rss(self) -> float:
        return self.first_import.rss


# benchledger's default limit on an imported file's size; a larger database (about
# 200,000 rows) is imported with the limit raised to its size.
FILE_SIZE_LIMIT = 512 * 2**20


def import_args(ledger: Path, source: Path) -> list[str]:
    """`benchledger import` of `source` into `ledger`, its report as JSON."""
    size = db_bytes(source)
    raised = ["--limit", f"file-size={size}"] if size > FILE_SIZE_LIMIT else []
    return ["--db", str(ledger), "import", str(source), *raised, "--json"]


def import_report(text: str) -> tuple[list[str], int]:
    reports = json.loads(text)
    return [r["state"] for r in reports], sum(r.get("new_runs", 0) for r in reports)


def one_size(work: Path, rows: int, turns_per_run: int) -> Result:
    folder = work / f"size-{rows}"
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "orchestrator.sqlite"
    built = build_db(source, rows, turns_per_run)
    ledger = folder / "ledger.db"
    args = import_args(ledger, source)
    first = child_usage(args)
    states, new_runs = import_report(first.text)
    if states != ["imported"]:
        raise SystemExit(f"benchledger import {source}: {states}")
    size = db_bytes(ledger)
    events = head_position(ledger)
    re_wall, re_rss, re_text = child(args)
    re_states, _ = import_report(re_text)
    reimport_events = appended_since(ledger, events)
    # The same database a few days later, 1% more rows: the rows recorded as they are
    # are passed over unread, the others read and compared, the new ones appended.
    grown_path = folder / "orchestrator-grown.sqlite"
    grown = grown_copy(source, grown_path, built, max(1, rows // 100), turns_per_run)
    later = folder / "ledger-grown.db"  # a copy: the ledger above stays as the re-import left it
    copy_with_wal(ledger, later)
    grown_import = child_usage(import_args(later, grown_path))
    grown_states, grown_new = import_report(grown_import.text)
    if grown_states != ["imported"]:
        raise SystemExit(f"benchledger import {grown_path}: {grown_states}")
    plain = plain_copy(source, folder / "plain")
    return Result(
        rows=rows,
        built=built,
        source_bytes=db_bytes(source),
        first_import=first,
        ledger_bytes=size,
        new_runs=new_runs,
        events=events,
        reimport_wall=re_wall,
        reimport_rss=re_rss,
        reimport_events=reimport_events,
        reimport_states=re_states,
        plain_wall=plain,
        grown=grown,
        grown_import=grown_import,
        grown_new_runs=grown_new,
    )


# The parts of an elizaOS/benchmarks checkout its orchestrator imports or discovers
# adapters from; large data files are left out of the private copy.
ORCHESTRATOR_PARTS = ("suites", "registry", "lib", "harnesses")
ORCHESTRATOR_SUFFIXES = (".py", ".json", ".toml", ".yaml", ".yml", ".md")


def orchestrator_copy(checkout: Path, target: Path) -> Path:
    """A private copy of the orchestrator's code as the package `benchmarks` under
    `target` (its top-level modules, and the code and data files of ORCHESTRATOR_PARTS)."""
    package = target / "benchmarks"
    package.mkdir(parents=True)
    for path in checkout.glob("*.py"):
        shutil.copy2(path, package / path.name)
    for part in ORCHESTRATOR_PARTS:
        for path in (checkout / part).rglob("*"):
            if path.is_file() and path.suffix in ORCHESTRATOR_SUFFIXES and ".git" not in path.parts:
                out = package / path.relative_to(checkout)
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, out)
    return package


# What the private copy must hold for the orchestrator's CLI and db code to import and
# run (ORCHESTRATOR.md §0, E2): a checkout missing one is refused by name.
ORCHESTRATOR_REQUIRED = (
    "__init__.py",
    "publication_contracts.py",
    "registry",
    "suites/orchestrator/__main__.py",
    "suites/orchestrator/cli.py",
    "suites/orchestrator/db.py",
    "suites/orchestrator/runner.py",
    "suites/orchestrator/adapters.py",
)


def missing_orchestrator_parts(checkout: Path) -> list[str]:
    """The ORCHESTRATOR_REQUIRED paths `checkout` lacks (all of them if it is no folder)."""
    return [part for part in ORCHESTRATOR_REQUIRED if not (checkout / part).exists()]


def orchestrator_results(package: Path) -> Path:
    """Where the private copy's CLI keeps its store: `<workspace>/benchmark_results`."""
    return package / "benchmark_results"


def orchestrator_export(package: Path, source: Path) -> Usage:
    """What the orchestrator's `export-viewer-data` of a copy of `source` took."""
    results = orchestrator_results(package)
    shutil.rmtree(results, ignore_errors=True)
    results.mkdir()
    shutil.copy2(source, results / "orchestrator.sqlite")
    wal = source.with_name(source.name + "-wal")
    if wal.exists():
        shutil.copy2(wal, results / "orchestrator.sqlite-wal")
    env = {**os.environ, "PYTHONPATH": str(package)}
    usage, code, error = measured(
        [sys.executable, "-m", "benchmarks.suites.orchestrator", "export-viewer-data"],
        cwd=package.parent,
        env=env,
    )
    if code != 0 or not (results / "viewer_data.json").is_file():
        raise SystemExit(f"orchestrator export-viewer-data: exit {code}\n{error[-2000:]}")
    return usage


def describe(result: Result) -> str:
    b = result.built
    mix = ", ".join(f"{n:,} {s}" for s, n in b.statuses.most_common())
    return (
        f"orchestrator.sqlite: {b.rows:,} benchmark_runs rows in {b.groups:,} run groups "
        f"({mix}), {b.trajectories:,} trajectory rows, "
        f"{result.source_bytes / 2**20:.1f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        default=list(SIZES),
        help="comma-separated benchmark_runs row counts (default 10000,50000)",
    )
    parser.add_argument("--keep", type=Path, help="work in DIR (empty or new) and keep it")
    parser.add_argument(
        "--orchestrator",
        type=Path,
        metavar="CHECKOUT",
        help="also time the orchestrator's own export-viewer-data (elizaOS/benchmarks checkout)",
    )
    parser.add_argument(
        "--trajectories-per-run",
        type=int,
        default=4,
        help="mean trajectory turns per executed run (default 4)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="time the import and the orchestrator's export N times each, interleaved, "
        "and compare their medians (default 1)",
    )
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    if args.trajectories_per_run < 0:
        parser.error("--trajectories-per-run must be >= 0")
    if args.keep and args.keep.exists() and any(args.keep.iterdir()):
        parser.error(f"--keep {args.keep}: directory is not empty")
    if args.orchestrator and (missing := missing_orchestrator_parts(args.orchestrator)):
        parser.error(f"--orchestrator {args.orchestrator}: missing {', '.join(missing)}")
    work = args.keep or Path(tempfile.mkdtemp(prefix="benchledger-orch-import-"))
    results: list[Result] = []
    exports: dict[int, list[Usage]] = {}
    imports: dict[int, list[Usage]] = {}
    header = (
        f"{'rows':>10} {'step':<10} {'wall s':>8} {'rows/s':>10} {'peak RSS MiB':>13} "
        f"{'ledger MiB':>11}"
    )
    try:
        package = (
            orchestrator_copy(args.orchestrator, work / "orchestrator")
            if args.orchestrator
            else None
        )
        for rows in args.sizes:
            r = one_size(work, rows, args.trajectories_per_run)
            results.append(r)
            if package is not None:
                source = work / f"size-{rows}" / "orchestrator.sqlite"
                exports[rows], imports[rows] = [], [r.first_import]
                for i in range(args.repeat):
                    exports[rows].append(orchestrator_export(package, source))
                    if i + 1 < args.repeat:
                        imports[rows].append(fresh_import(source, i))
            print(describe(r))
            print(header)
            for step, wall, rss in (
                ("import", r.import_wall, f"{r.import_rss:13.1f}"),
                ("re-import", r.reimport_wall, f"{r.reimport_rss:13.1f}"),
                ("plain", r.plain_wall, f"{'(in-process)':>13}"),
            ):
                ledger = f"{r.ledger_bytes / 2**20:11.1f}" if step != "plain" else f"{'-':>11}"
                print(f"{rows:>10,} {step:<10} {wall:>8.2f} {rows / wall:>10,.0f} {rss} {ledger}")
            appended = (
                "appended nothing"
                if r.reimport_events == 0
                else f"APPENDED {r.reimport_events:,} events (must append nothing)"
            )
            print(
                f"  import: {r.new_runs:,} new runs, {r.events:,} events, CPU "
                f"{r.first_import.cpu:.2f} s (all its processes); re-import "
                f"({'/'.join(r.reimport_states)}): {r.reimport_wall:.2f} s = "
                f"{r.reimport_wall / r.import_wall:.2f} of the first import, {appended} "
                f"({r.events:,} events before, {r.events + r.reimport_events:,} after)"
            )
            g = r.grown_import
            print(
                f"  grown: the database with {r.grown.rows:,} more rows, imported into a copy of "
                f"the ledger: {g.wall:.2f} s = {g.wall / r.import_wall:.2f} of the first "
                f"import, {r.grown_new_runs:,} new runs, CPU {g.cpu:.2f} s, "
                f"peak RSS {g.rss:.1f} MiB"
            )
            print(
                f"RATIO benchledger/plain at {rows:,} rows: {r.plain_wall / r.import_wall:.3f}x "
                f"(plain {r.plain_wall:.2f} s / benchledger import {r.import_wall:.2f} s)",
                flush=True,
            )
            if rows in exports:
                print(peer_line(rows, imports[rows], exports[rows]), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    summarize(results, bool(exports))
    if args.keep:
        print(f"kept: {work}")
    if any(r.reimport_events for r in results):
        raise SystemExit(1)


def fresh_import(source: Path, i: int) -> Usage:
    """What `benchledger import` of `source` into a new ledger (then removed) took."""
    ledger = source.with_name(f"repeat-{i}.db")
    usage = child_usage(import_args(ledger, source))
    states, _ = import_report(usage.text)
    if states != ["imported"]:
        raise SystemExit(f"benchledger import {source}: {states}")
    for path in source.parent.glob(f"{ledger.name}*"):
        path.unlink()
    return usage


def peer_line(rows: int, imports: list[Usage], exports: list[Usage]) -> str:
    """The import against the orchestrator's export, wall and CPU (the import's in all
    its processes: it may use two at a time, the export one), pair by pair in the order
    they ran, by the medians of the pairs' ratios: a pair ran at about the same time, so
    its ratio holds when the machine's load drifts."""
    walls = [i.wall / e.wall for i, e in zip(imports, exports, strict=False)]
    cpus = [i.cpu / e.cpu for i, e in zip(imports, exports, strict=False)]
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    runs = ""
    if len(imports) > 1:
        runs = (
            f" (medians of {len(walls)} interleaved pairs; wall s: import "
            f"{', '.join(f'{u.wall:.2f}' for u in imports)}, export "
            f"{', '.join(f'{u.wall:.2f}' for u in exports)}; CPU s: import "
            f"{', '.join(f'{u.cpu:.2f}' for u in imports)}, export "
            f"{', '.join(f'{u.cpu:.2f}' for u in exports)}; ratios by pair: wall "
            f"{', '.join(f'{r:.2f}' for r in walls)}, CPU {', '.join(f'{r:.2f}' for r in cpus)})"
        )
    verdict = ", ".join(
        f"{what} <= {goal:.2f}x: {'met' if ratio <= goal else 'NOT met'}"
        for what, goal, ratio in (("wall", WALL_GOAL, wall), ("CPU", CPU_GOAL, cpu))
    )
    return (
        f"PEER orchestrator export-viewer-data at {rows:,} rows: wall "
        f"{statistics.median(u.wall for u in exports):.2f} s, CPU "
        f"{statistics.median(u.cpu for u in exports):.2f} s; benchledger import wall "
        f"{statistics.median(u.wall for u in imports):.2f} s, CPU "
        f"{statistics.median(u.cpu for u in imports):.2f} s; import/export: wall {wall:.2f}x, "
        f"CPU {cpu:.2f}x{runs} (goals: {verdict})"
    )


def summarize(results: list[Result], peer: bool = False) -> None:
    small = min(results, key=lambda r: r.rows)
    big = max(results, key=lambda r: r.rows)
    if big.rows > small.rows:
        row_growth = big.rows / small.rows
        time_growth = big.import_wall / small.import_wall
        per_row = time_growth / row_growth
        linear = 1 / LINEAR_GOAL <= per_row <= LINEAR_GOAL
        shape = (
            "close to linear"
            if linear
            else "worse than linear"
            if per_row > LINEAR_GOAL
            else "better than linear (fixed costs dominate the small size)"
        )
        print(
            f"growth {small.rows:,} -> {big.rows:,} rows ({row_growth:.1f}x): benchledger import "
            f"time {time_growth:.2f}x, per-row time {per_row:.2f}x: {shape} "
            f"(goal: per-row times within {LINEAR_GOAL}x)"
        )
    else:
        print("growth: one size only, not measured")
    rss = max(big.import_rss, big.reimport_rss)
    applies = [n for n in RSS_GOALS_MB if n <= big.rows]
    if applies:
        goal_mb = RSS_GOALS_MB[max(applies)]
        goal_mib = goal_mb * 10**6 / 2**20
        met = "met" if rss < goal_mib else "NOT met"
        verdict = f"{met} (goal < {goal_mb} MB = {goal_mib:.0f} MiB)"
    else:
        verdict = f"n/a below {min(RSS_GOALS_MB):,} rows"
    goals = ", ".join(f"< {mb} MB at {n:,} rows" for n, mb in RSS_GOALS_MB.items())
    print(
        f"goal: peak RSS {goals}; at {big.rows:,} rows: import {big.import_rss:.1f} MiB, "
        f"re-import {big.reimport_rss:.1f} MiB: {verdict}"
    )
    if not peer:
        print(
            "not run: the orchestrator's own export-viewer-data (give --orchestrator CHECKOUT); "
            "no figure here compares against it"
        )


if __name__ == "__main__":
    main()
