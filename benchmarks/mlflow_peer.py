"""MLflow peer: the same benchmark results logged into MLflow 3.x's SQLite tracking store
through its public API, and imported by `benchledger import DIR` (a CLI process, as a user
runs it). Prints MLflow time / benchledger time (goals: >= 50x against MLflow's metrics
variant, >= 20x against its table variant) and the time of "latest run per (benchmark,
agent)" in both.

Per run: params benchmark, agent, provider, model, attempt and 8 config keys; 4 tags; a
score; 5 token/cost metrics; per cell key, outcome and score. MLflow gets the cells two ways:
- metrics: `cell.<key>.score` and `cell.<key>.outcome` (passed=1, failed=0, error=-1,
  skipped=-2) per cell, through `log_batch` in chunks of MLflow's 1,000-entity limit. A
  user who wants to find one task's result names the metric after the task; MLflow metrics
  are numeric only, so the outcome needs a metric of its own.
- table: one `log_table` artifact (`cells.json`: key, outcome, score columns) per run, the
  params, tags and run metrics through one `log_batch`.
benchledger gets the same data as native JSONL (10 runs per file): params as header fields,
config and provenance (attempt, tags), tokens and metrics (cost).

Install MLflow with `pip install -e '.[bench]'` (it is never a runtime dependency).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest import plain_importer

BENCHLEDGER = str(Path(sys.executable).parent / "benchledger")
START = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
AGENTS = ("eliza", "hermes", "opencode", "codex")
OUTCOME_CODE = {"passed": 1.0, "failed": 0.0, "error": -1.0, "skipped": -2.0}
WORKLOADS = ((200, 500), (1_000, 100))
QUICK = ((20, 500), (100, 100))
GOALS = {"metrics": 50.0, "table": 20.0}
BATCH = 1_000  # MLflow's limit of metrics (and of entities) per log_batch


def make_runs(n_runs: int, n_cells: int) -> list[dict[str, Any]]:
    rng = random.Random(n_runs * 7919 + n_cells)
    runs = []
    for i in range(n_runs):
        started = START + timedelta(minutes=3 * i)
        cells = []
        for c in range(n_cells):
            outcome = rng.choices(("passed", "failed", "error", "skipped"), (6, 3, 1, 0.2))[0]
            score = 1.0 if outcome == "passed" else 0.0
            cells.append({"key": f"task-{c:05d}", "outcome": outcome, "score": score})
        runs.append(
            {
                "run_key": f"peer-{n_runs}x{n_cells}-{i:05d}",
                "benchmark": f"bench_{i % 10}",
                "agent": AGENTS[i % len(AGENTS)],
                "provider": "cerebras",
                "model": "gpt-oss-120b",
                "attempt": i // 40 + 1,
                "config": {f"opt_{k}": rng.choice((0, 1, 2, "a", "b")) for k in range(8)},
                "tags": {
                    "host": f"node-{i % 3}",
                    "ci": "nightly",
                    "branch": "main",
                    "commit": f"{rng.getrandbits(40):010x}",
                },
                "started_at": started,
                "ended_at": started + timedelta(minutes=2),
                "score": round(sum(c["score"] for c in cells) / n_cells, 6),
                "tokens": {
                    "input_tokens": rng.randint(10_000, 90_000),
                    "output_tokens": rng.randint(1_000, 9_000),
                    "total_tokens": rng.randint(11_000, 99_000),
                },
                "cost": {"cost_usd": round(rng.random(), 4), "latency_s": rng.randint(30, 900)},
                "cells": cells,
            }
        )
    return runs


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def write_native(folder: Path, runs: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True)
    for first in range(0, len(runs), 10):
        with (folder / f"runs-{first // 10:05d}.jsonl").open("w", encoding="utf-8") as out:
            for run in runs[first : first + 10]:
                header = {
                    "type": "run",
                    **{k: run[k] for k in ("run_key", "benchmark", "agent", "provider")},
                    "model": run["model"],
                    "config": run["config"],
                    "started_at": iso(run["started_at"]),
                    "ended_at": iso(run["ended_at"]),
                    "status": "succeeded",
                    "score": run["score"],
                    "unit": "pass_rate",
                    "tokens": run["tokens"],
                    "metrics": run["cost"],
                    "provenance": {"attempt": run["attempt"], "tags": run["tags"]},
                }
                out.write(json.dumps(header) + "\n")
                for cell in run["cells"]:
                    out.write(json.dumps({"type": "cell", **cell}) + "\n")


def cli(*args: str) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([BENCHLEDGER, *args], capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"benchledger {' '.join(args)}: exit {done.returncode}\n{done.stderr}")
    return elapsed


def benchledger_side(work: Path, runs: list[dict[str, Any]]) -> tuple[float, float, float, float]:
    """benchledger's import and latest (CLI processes), the CLI's bare start, and the
    plain importer's floor on the same files (in this process: no start at all)."""
    folder = work / "native"
    write_native(folder, runs)
    db = str(work / "ledger.db")
    t_start = cli("--version")
    t_import = cli("--db", db, "import", str(folder))
    t_latest = cli("--db", db, "latest", "--json")
    t_plain = plain_importer(work / "plain.db", sorted(folder.glob("*.jsonl")))
    return t_import, t_latest, t_start, t_plain


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def mlflow_side(
    work: Path, runs: list[dict[str, Any]], variant: str, outcomes: bool = True
) -> tuple[float, float]:
    import mlflow
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    uri = f"sqlite:///{work / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    client = MlflowClient(uri)  # creating the store (schema, migrations) is not timed
    experiment = client.create_experiment(
        f"peer-{variant}", artifact_location=(work / "artifacts").as_uri()
    )
    t0 = time.perf_counter()
    for run in runs:
        start, end = ms(run["started_at"]), ms(run["ended_at"])
        # Tags go in with create_run, as a user sets them when a run starts.
        created = client.create_run(experiment, start_time=start, tags=run["tags"])
        rid = created.info.run_id
        names = ("benchmark", "agent", "provider", "model", "attempt")
        params = [Param(k, str(run[k])) for k in names]
        params += [Param(k, str(v)) for k, v in run["config"].items()]
        metrics = [Metric("score", run["score"], end, 0)]
        metrics += [Metric(k, float(v), end, 0) for k, v in run["tokens"].items()]
        metrics += [Metric(k, float(v), end, 0) for k, v in run["cost"].items()]
        if variant == "metrics":
            for cell in run["cells"]:
                metrics.append(Metric(f"cell.{cell['key']}.score", cell["score"], end, 0))
                if outcomes:
                    code = OUTCOME_CODE[cell["outcome"]]
                    metrics.append(Metric(f"cell.{cell['key']}.outcome", code, end, 0))
        client.log_batch(rid, metrics=metrics[: BATCH - len(params)], params=params)
        for first in range(BATCH - len(params), len(metrics), BATCH):
            client.log_batch(rid, metrics=metrics[first : first + BATCH])
        if variant == "table":
            table = {k: [c[k] for c in run["cells"]] for k in ("key", "outcome", "score")}
            client.log_table(rid, data=table, artifact_file="cells.json")
        client.set_terminated(rid, status="FINISHED", end_time=end)
    t_log = time.perf_counter() - t0
    t0 = time.perf_counter()
    frame = mlflow.search_runs(
        experiment_ids=[experiment],
        filter_string="attributes.status = 'FINISHED'",
        order_by=["attributes.start_time DESC"],
    )
    latest = frame.groupby(["params.benchmark", "params.agent"], sort=False).head(1)
    t_latest = time.perf_counter() - t0
    groups = {(r["benchmark"], r["agent"]) for r in runs}
    assert len(latest) == len(groups), (len(latest), len(groups))
    return t_log, t_latest


def parse_workload(text: str) -> tuple[int, int]:
    runs, _, cells = text.lower().partition("x")
    try:
        pair = int(runs), int(cells)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected RUNSxCELLS, e.g. 200x500") from None
    if min(pair) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: runs and cells must be positive")
    return pair


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20x500 and 100x100 runs x cells")
    parser.add_argument("--repeat", type=int, default=1, help="benchledger repeats (median)")
    parser.add_argument(
        "--workload",
        type=parse_workload,
        action="append",
        metavar="RUNSxCELLS",
        help="instead of the default workloads (repeatable), e.g. 50x200",
    )
    parser.add_argument(
        "--score-only",
        action="store_true",
        help="metrics variant: log only cell.<key>.score (the outcome is lost), for context",
    )
    args = parser.parse_args()
    try:
        import mlflow
    except ImportError:
        print(
            "MLflow is not installed: this benchmark is skipped.\n"
            "Install it with: pip install -e '.[bench]'   (or: pip install 'mlflow>=3,<4')"
        )
        return
    print(f"MLflow {mlflow.__version__}, SQLite tracking store; benchledger through its CLI")
    if args.score_only:
        print("metrics variant: cell scores only, outcomes NOT logged (less data than ours)")
    for n_runs, n_cells in args.workload or (QUICK if args.quick else WORKLOADS):
        runs = make_runs(n_runs, n_cells)
        print(f"\n{n_runs:,} runs x {n_cells:,} cells ({n_runs * n_cells:,} cells)")
        ours: list[tuple[float, float, float, float]] = []
        for _ in range(args.repeat):
            work = Path(tempfile.mkdtemp(prefix="benchledger-peer-"))
            try:
                ours.append(benchledger_side(work, runs))
            finally:
                shutil.rmtree(work, ignore_errors=True)
        t_ours = statistics.median(o[0] for o in ours)
        t_ours_latest = statistics.median(o[1] for o in ours)
        t_start = statistics.median(o[2] for o in ours)
        t_plain = statistics.median(o[3] for o in ours)
        print(f"  benchledger import DIR (CLI process):    {t_ours:8.2f} s")
        print(
            f"    context: of which a bare CLI start (`benchledger --version`) {t_start:.2f} s;"
            f" the plain importer (json.loads, indexed inserts, in-process) {t_plain:.2f} s"
        )
        for variant in ("metrics", "table"):
            work = Path(tempfile.mkdtemp(prefix="benchledger-peer-mlflow-"))
            try:
                t_log, t_latest = mlflow_side(work, runs, variant, not args.score_only)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            ratio, goal = t_log / t_ours, GOALS[variant]
            print(
                f"  MLflow cells as {variant:<8} {t_log:8.2f} s   RATIO MLflow/benchledger "
                f"{ratio:6.1f}x (goal >= {goal:.0f}x: {'met' if ratio >= goal else 'NOT met'})"
            )
            print(
                f"    context: MLflow/plain importer {t_log / t_plain:6.1f}x, the most any "
                "importer of this data could show"
            )
            print(f"    latest per (benchmark, agent): MLflow search_runs {t_latest:6.3f} s")
        print(
            f"    latest per (benchmark, agent): benchledger latest --json {t_ours_latest:6.3f} s"
        )


if __name__ == "__main__":
    main()
