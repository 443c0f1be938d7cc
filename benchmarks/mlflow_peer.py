"""MLflow peer: the same benchmark results logged into MLflow 3.x's SQLite tracking store
through its public API, and imported by `benchledger import DIR` (a CLI process, as a user
runs it), interleaved: each repeat imports with benchledger, then logs with MLflow.

Goals (issue 39): the import >= 50x faster than MLflow's metrics variant and >= 20x than
its table variant, and the latest run per (benchmark, agent) faster than MLflow's query on
the same data (its table store, where MLflow's search is fastest). Ratios are printed on
CPU (user + sys) and on wall time; on a shared machine CPU is the figure to judge by.

How the sides are made fair:
- import, two ways. As a user runs it: benchledger as a whole CLI process (its start-up, its
  commit and its read models included) against MLflow from its first `create_run`, in this
  process, its store already created and its modules already imported (CPU:
  `time.process_time`). Like for like: benchledger's `import DIR` in this process too, its
  modules imported by a warm-up import of another folder, into a ledger file it creates
  (its tables made inside the timing, where MLflow's store is made outside it), its
  commit and read models included (CPU: this process's and any child's). The goal is
  judged like for like; the CLI figure is printed beside it.
- latest, two ways, each interleaved with the other side: in one process, warm (MLflow's
  `search_runs` plus a pandas groupby; `benchledger latest --json` invoked in this process
  through click's test runner: the command's own code, no interpreter start), and as whole
  processes, cold (`benchledger latest --json` against `python -c` doing MLflow's query).

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
import logging
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import chdir, contextmanager
from dataclasses import dataclass
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


def write_native(folder: Path, runs: list[dict[str, Any]], per_file: int = 10) -> None:
    folder.mkdir(parents=True)
    for first in range(0, len(runs), per_file):
        name = f"runs-{first // per_file:05d}.jsonl"
        with (folder / name).open("w", encoding="utf-8") as out:
            for run in runs[first : first + per_file]:
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


@dataclass(frozen=True)
class Spent:
    """CPU (user + sys) and wall seconds."""

    cpu: float
    wall: float


def process(argv: Sequence[str]) -> Spent:
    """A whole process: its CPU as the kernel counted it, and its wall time."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        stderr = child.stderr.read().decode(errors="replace") if child.stderr else ""
        raise SystemExit(f"{' '.join(argv)}: exit {code}\n{stderr}")
    return Spent(usage.ru_utime + usage.ru_stime, wall)


@contextmanager
def in_process() -> Iterator[list[Spent]]:
    """What the block spent in this process (CPU of every thread)."""
    spent: list[Spent] = []
    cpu, wall = time.process_time(), time.perf_counter()
    yield spent
    spent.append(Spent(time.process_time() - cpu, time.perf_counter() - wall))


def benchledger_import(
    work: Path, runs: list[dict[str, Any]]
) -> tuple[Path, Spent, Spent, Spent, Spent]:
    """The ledger `benchledger import DIR` wrote (a CLI process), what the import spent
    as a CLI process and in this process, what a bare CLI start spent, and the plain
    importer's floor on the same files (in this process: no start at all)."""
    folder = work / "native"
    write_native(folder, runs)
    db = work / "ledger.db"
    start = process([BENCHLEDGER, "--version"])
    spent = process([BENCHLEDGER, "--db", str(db), "import", str(folder)])
    here = benchledger_in_process(work, folder)
    t_plain = plain_importer(work / "plain.db", sorted(folder.glob("*.jsonl")))
    return db, spent, here, start, Spent(t_plain.cpu, t_plain.wall)


def benchledger_in_process(work: Path, folder: Path) -> Spent:
    """`benchledger import DIR` in this process, into a new ledger: the command's code, its
    modules already imported (see `warm_up`); CPU of this process and of any child it
    forked and reaped."""
    from click.testing import CliRunner

    from benchledger.commands.cli import cli

    db = work / "in-process.db"
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    with in_process() as spent:
        result = CliRunner().invoke(cli, ["--db", str(db), "import", str(folder)])
    assert result.exit_code == 0, result.output
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    forked = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    return Spent(spent[0].cpu + forked, spent[0].wall)


def warm_up(runs: list[dict[str, Any]]) -> None:
    """Import a small folder of the same shape in this process, once: what MLflow's side
    has before its timing (its modules imported) benchledger then has too."""
    work = Path(tempfile.mkdtemp(prefix="benchledger-warm-"))
    try:
        write_native(work / "native", runs[:10])
        benchledger_in_process(work, work / "native")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


@dataclass(frozen=True)
class MlflowStore:
    uri: str
    experiment: str
    logged: Spent


def mlflow_side(
    work: Path, runs: list[dict[str, Any]], variant: str, outcomes: bool = True
) -> MlflowStore:
    import mlflow
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    uri = f"sqlite:///{work / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    client = MlflowClient(uri)  # creating the store (schema, migrations) is not timed
    experiment = client.create_experiment(
        f"peer-{variant}", artifact_location=(work / "artifacts").as_uri()
    )
    with in_process() as spent:
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
    return MlflowStore(uri, experiment, spent[0])


def mlflow_latest(uri: str, experiment: str, groups: int) -> None:
    """MLflow's latest run per (benchmark, agent): newest finished run of each pair."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    frame = mlflow.search_runs(
        experiment_ids=[experiment],
        filter_string="attributes.status = 'FINISHED'",
        order_by=["attributes.start_time DESC"],
    )
    latest = frame.groupby(["params.benchmark", "params.agent"], sort=False).head(1)
    assert len(latest) == groups, (len(latest), groups)


# The same query as a whole process: python, MLflow's imports, the query.
MLFLOW_LATEST = (
    "import sys, mlflow; mlflow.set_tracking_uri(sys.argv[1]); "
    "frame = mlflow.search_runs(experiment_ids=[sys.argv[2]], "
    "filter_string=\"attributes.status = 'FINISHED'\", "
    "order_by=['attributes.start_time DESC']); "
    "frame.groupby(['params.benchmark', 'params.agent'], sort=False).head(1)"
)


def benchledger_latest(db: Path, groups: int) -> None:
    """`benchledger latest --json` in this process: the command's code, no interpreter."""
    from click.testing import CliRunner

    from benchledger.commands.cli import cli

    result = CliRunner().invoke(cli, ["--db", str(db), "latest", "--json"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)) == groups


def latest_pairs(
    db: Path, store: MlflowStore, groups: int, repeat: int
) -> dict[str, dict[str, list[Spent]]]:
    """Latest per (benchmark, agent), benchledger then MLflow, `repeat` times each way,
    after one warm-up of each in this process."""
    times: dict[str, dict[str, list[Spent]]] = {
        way: {"benchledger": [], "MLflow": []} for way in ("in one process", "whole process")
    }
    benchledger_latest(db, groups)
    mlflow_latest(store.uri, store.experiment, groups)
    for _ in range(repeat):
        with in_process() as ours:
            benchledger_latest(db, groups)
        with in_process() as theirs:
            mlflow_latest(store.uri, store.experiment, groups)
        times["in one process"]["benchledger"] += ours
        times["in one process"]["MLflow"] += theirs
        times["whole process"]["benchledger"].append(
            process([BENCHLEDGER, "--db", str(db), "latest", "--json"])
        )
        times["whole process"]["MLflow"].append(
            process([sys.executable, "-c", MLFLOW_LATEST, store.uri, store.experiment])
        )
    return times


def median_ratio(over: list[Spent], under: list[Spent], figure: str) -> float:
    """The median of the pairwise ratios over/under of one figure (cpu or wall)."""
    return statistics.median(
        float(getattr(a, figure)) / float(getattr(b, figure))
        for a, b in zip(over, under, strict=True)
    )


def median_of(spent: list[Spent], figure: str) -> float:
    return statistics.median(float(getattr(s, figure)) for s in spent)


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
    parser.add_argument(
        "--repeat", type=int, default=1, help="interleaved import pairs per variant (median)"
    )
    parser.add_argument(
        "--latest-repeat",
        type=int,
        default=5,
        help="interleaved pairs of the latest query, each way (default 5)",
    )
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
    # MLflow's store creation runs alembic's migrations, whose logging configuration sets
    # its own levels (dozens of INFO lines per store): below WARNING, nothing is printed.
    logging.disable(logging.INFO)
    print(
        f"MLflow {mlflow.__version__}, SQLite tracking store; benchledger's import in process "
        "and through its CLI"
    )
    print("Ratios: MLflow / benchledger, median of interleaved pairs; CPU first, wall beside")
    if args.score_only:
        print("metrics variant: cell scores only, outcomes NOT logged (less data than ours)")
    for n_runs, n_cells in args.workload or (QUICK if args.quick else WORKLOADS):
        runs = make_runs(n_runs, n_cells)
        warm_up(runs)
        groups = len({(r["benchmark"], r["agent"]) for r in runs})
        print(f"\n{n_runs:,} runs x {n_cells:,} cells ({n_runs * n_cells:,} cells)")
        for variant in ("metrics", "table"):
            ours: list[Spent] = []
            here: list[Spent] = []
            theirs: list[Spent] = []
            starts: list[Spent] = []
            plain: list[Spent] = []
            latest: dict[str, dict[str, list[Spent]]] = {}
            for index in range(args.repeat):
                work = Path(tempfile.mkdtemp(prefix="benchledger-peer-"))
                # MLflow's SQLite store makes ./mlruns wherever it is opened: there, in work.
                try:
                    with chdir(work):
                        db, spent, inside, start, t_plain = benchledger_import(work, runs)
                        store = mlflow_side(work, runs, variant, not args.score_only)
                        ours.append(spent)
                        here.append(inside)
                        starts.append(start)
                        plain.append(t_plain)
                        theirs.append(store.logged)
                        if variant == "table" and index == args.repeat - 1:
                            latest = latest_pairs(db, store, groups, args.latest_repeat)
                        elif variant == "metrics" and index == args.repeat - 1:
                            with in_process() as search:
                                mlflow_latest(store.uri, store.experiment, groups)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
            report_import(variant, ours, here, theirs, starts, plain)
            if variant == "metrics":
                print(
                    f"    context: latest per (benchmark, agent) on this store, MLflow "
                    f"search_runs {search[0].cpu:.3f} s CPU {search[0].wall:.3f} s wall"
                )
            else:
                report_latest(latest)


def report_import(
    variant: str,
    ours: list[Spent],
    here: list[Spent],
    theirs: list[Spent],
    starts: list[Spent],
    plain: list[Spent],
) -> None:
    goal = GOALS[variant]
    print(
        f"  import, MLflow cells as {variant:<8} MLflow {median_of(theirs, 'cpu'):7.2f} s CPU "
        f"{median_of(theirs, 'wall'):7.2f} s wall (in process, modules loaded, store made)"
    )
    for way, spent in (("in process, like MLflow", here), ("as a CLI process", ours)):
        cpu, wall = median_ratio(theirs, spent, "cpu"), median_ratio(theirs, spent, "wall")
        verdict = f"goal >= {goal:.0f}x: {'met' if cpu >= goal else 'NOT met'} on CPU"
        print(
            f"    benchledger import DIR {way:<23} {median_of(spent, 'cpu'):5.2f} s CPU "
            f"{median_of(spent, 'wall'):5.2f} s wall   RATIO MLflow/benchledger CPU "
            f"{cpu:6.1f}x  wall {wall:6.1f}x"
            + (f"  ({verdict})" if spent is here else "  (context)")
        )
    plain_cpu = median_of(plain, "cpu")
    print(
        f"    context: a bare CLI start (`benchledger --version`) "
        f"{median_of(starts, 'cpu'):.2f} s CPU; the plain importer (json.loads, indexed "
        f"inserts, in-process) {plain_cpu:.2f} s CPU {median_of(plain, 'wall'):.2f} s wall, "
        f"MLflow/plain {median_of(theirs, 'cpu') / plain_cpu:.1f}x CPU: the most any "
        "importer could show"
    )


def report_latest(latest: dict[str, dict[str, list[Spent]]]) -> None:
    for way, sides in latest.items():
        ours, theirs = sides["benchledger"], sides["MLflow"]
        cpu, wall = median_ratio(theirs, ours, "cpu"), median_ratio(theirs, ours, "wall")
        print(
            f"  latest per (benchmark, agent), {way}: MLflow {median_of(theirs, 'cpu'):.3f} s "
            f"CPU {median_of(theirs, 'wall'):.3f} s wall; benchledger latest --json "
            f"{median_of(ours, 'cpu'):.3f} s CPU {median_of(ours, 'wall'):.3f} s wall"
        )
        print(
            f"    RATIO MLflow/benchledger CPU {cpu:6.1f}x  wall {wall:6.1f}x  "
            f"(goal > 1x: {'met' if cpu > 1 else 'NOT met'} on CPU; {len(ours)} pairs)"
        )


if __name__ == "__main__":
    main()
