"""Ingest throughput: full import path (parse, events, projections) vs a plain SQLite insert."""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import sqlite3
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchledger.adapters.formats import native
from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.adapters.store.importer import Importer
from benchledger.domain.records import Cell, RunHeader, RunRecord, RunStatus

SEED = 20261001
RUNS_PER_FILE = 10
START = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
AGENTS = ("eliza", "hermes", "opencode")
Row = tuple[str, str, str, float, str]


def make_run(rng: random.Random, index: int, size: int) -> RunRecord:
    cells = []
    for i in range(size):
        passed = rng.random() < 0.6
        metrics = {"total_tokens": rng.randint(500, 20_000), "latency_ms": rng.randint(200, 60_000)}
        outcome = "passed" if passed else "failed"
        cells.append(
            Cell(key=f"task-{i:05d}", outcome=outcome, score=float(passed), metrics=metrics)
        )
    started = START + timedelta(minutes=7 * index)
    header = RunHeader(
        run_key=f"ingest-{index:06d}",
        benchmark=f"bench_{index % 5}",
        agent=AGENTS[index % len(AGENTS)],
        started_at=started,
        ended_at=started + timedelta(minutes=5),
        provider="cerebras",
        model="gpt-oss-120b",
        status=RunStatus.SUCCEEDED,
        score=sum(c.score or 0.0 for c in cells) / size,
        unit="pass_rate",
    )
    return RunRecord(header=header, cells=tuple(cells))


def write_inputs(folder: Path, n_cells: int, run_size: int) -> tuple[list[Path], list[Row], int]:
    """Write the runs as native JSONL files; return them, the baseline rows, and the run count."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    sizes = [min(run_size, n_cells - start) for start in range(0, n_cells, run_size)]
    paths: list[Path] = []
    rows: list[Row] = []
    for first in range(0, len(sizes), RUNS_PER_FILE):
        records = [
            make_run(rng, i, sizes[i]) for i in range(first, min(first + RUNS_PER_FILE, len(sizes)))
        ]
        for r in records:
            key = r.header.run_key or ""
            rows.extend(
                (key, c.key, c.outcome, c.score or 0.0, json.dumps(c.metrics)) for c in r.cells
            )
        path = folder / f"runs-{first // RUNS_PER_FILE:04d}.jsonl"
        path.write_text(native.dump_jsonl(records), encoding="utf-8")
        paths.append(path)
    return paths, rows, len(sizes)


def baseline(db_path: Path, rows: list[Row]) -> float:
    """Seconds for one executemany of every row plus its commit, in a WAL database."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(
        "CREATE TABLE cells(run_id TEXT, key TEXT, outcome TEXT, score REAL, metrics TEXT)"
    )
    t0 = time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO cells VALUES (?, ?, ?, ?, ?)", rows)
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - t0
    conn.close()
    return elapsed


def plain_importer(db_path: Path, paths: list[Path]) -> float:
    """Seconds for a minimal importer without the ledger: json.loads each line, build the
    rows, executemany into the same indexed cells table, commit per file."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(
        "CREATE TABLE cells(run_id TEXT, key TEXT, outcome TEXT, score REAL, metrics TEXT)"
    )
    conn.execute("CREATE INDEX idx_cells_run_id_key ON cells(run_id, key)")
    t0 = time.perf_counter()
    for path in paths:
        rows, run = [], ""
        for line in path.read_text(encoding="utf-8").splitlines():
            obj = json.loads(line)
            if obj["type"] == "run":
                run = obj["run_key"]
            else:
                rows.append(
                    (
                        run,
                        obj["key"],
                        obj["outcome"],
                        obj.get("score"),
                        json.dumps(obj.get("metrics", {})),
                    )
                )
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO cells VALUES (?, ?, ?, ?, ?)", rows)
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - t0
    conn.close()
    return elapsed


def full_path(db_path: Path, paths: list[Path]) -> tuple[float, float, int, int]:
    """Seconds in import and in catch_up, events stored, and ledger bytes (db plus WAL)."""
    with build(Settings(db_path=db_path)) as services:
        services.runner.catch_up()  # create the read models first: time the steady state
        importer = Importer(services.ledger)
        t0 = time.perf_counter()
        for path in paths:
            report = importer.import_file(path, group=None)
            if report.state != "imported":
                raise SystemExit(f"{path}: {report.state}: {report.message}")
        t1 = time.perf_counter()
        services.runner.catch_up()
        t2 = time.perf_counter()
        events = services.runner.head_position()  # one fresh ledger: last position = count
    wal = db_path.with_name(db_path.name + "-wal")
    size = db_path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
    return t1 - t0, t2 - t1, events, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=200_000, help="total cells (default 200000)")
    parser.add_argument("--run-size", type=int, default=500, help="cells per run (default 500)")
    parser.add_argument("--repeat", type=int, default=1, help="repeat both, keep the best of each")
    parser.add_argument("--keep", type=Path, help="work in DIR (empty or new) and keep it")
    args = parser.parse_args()
    if args.cells < 1 or args.run_size < 1 or args.repeat < 1:
        parser.error("--cells, --run-size and --repeat must be positive")
    if args.keep and args.keep.exists() and any(args.keep.iterdir()):
        parser.error(f"--keep {args.keep}: directory is not empty")
    work = args.keep or Path(tempfile.mkdtemp(prefix="benchledger-ingest-"))
    try:
        paths, rows, n_runs = write_inputs(work / "input", args.cells, args.run_size)
        base_best = plain_best = float("inf")
        full_best: tuple[float, float, int, int] | None = None
        for k in range(args.repeat):
            base_best = min(base_best, baseline(work / f"baseline-{k}.db", rows))
            plain_best = min(plain_best, plain_importer(work / f"plain-{k}.db", paths))
            result = full_path(work / f"ledger-{k}.db", paths)
            if full_best is None or sum(result[:2]) < sum(full_best[:2]):
                full_best = result
        assert full_best is not None
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    t_import, t_catch_up, events, size = full_best
    t_full = t_import + t_catch_up
    base_rate, full_rate = len(rows) / base_best, args.cells / t_full
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    share_i, share_c = (
        f"({100 * t / t_full:.0f}%)  {args.cells / t:,.0f} cells/s" for t in full_best[:2]
    )
    lines = [
        f"cells: {args.cells:,} in {n_runs:,} runs of <= {args.run_size} "
        f"({len(paths)} files), best of {args.repeat}",
        f"baseline (sqlite3 executemany + commit): {base_best:8.3f} s  {base_rate:>10,.0f} rows/s",
        f"full path (parse, events, projections):  {t_full:8.3f} s  {full_rate:>10,.0f} cells/s",
        f"  import (parse, events appended):       {t_import:8.3f} s  {share_i}",
        f"  catch_up (projections):                {t_catch_up:8.3f} s  {share_c}",
        f"ratio full/baseline: {full_rate / base_rate:.4f}x (goal >= 0.5x)",
        f"context: a plain importer (json.loads, rows, indexed executemany): {plain_best:.3f} s"
        f"  {args.cells / plain_best:,.0f} cells/s; full/plain {plain_best / t_full:.4f}x",
        f"events stored: {events:,}   ledger file (db + wal): {size / 2**20:.1f} MB",
        f"peak RSS: {rss_mb:.1f} MB",
    ]
    print("\n".join(lines + ([f"kept: {work}"] if args.keep else [])))


if __name__ == "__main__":
    main()
