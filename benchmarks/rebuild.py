"""Rebuild throughput: `benchledger rebuild` of every projection against a fair plain
rebuild of the same log, in the same process, interleaved.

The plain rebuild reads the stored events (SELECT topic, state FROM stored_events ORDER BY
rowid), json.loads each, folds runs and cells into rows with the read models' columns,
inserts them into fresh tables, builds the read models' indexes and commits (WAL mode).
Each side is timed in wall and in CPU seconds (this process's and its waited-for
children's: a large rebuild folds in a forked child), the two sides alternating which
goes first; the ratio is plain time / benchledger time, of the medians. Goal (issue 39):
>= 0.9x. A raw `executemany` of pre-built cell tuples is printed as context.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest import ratios, raw_executemany, raw_rows, summary
from workload import (
    CELL_COLUMNS,
    CELLS_INSERT,
    CELLS_TABLE,
    RUN_COLUMNS,
    RUNS_INSERT,
    RUNS_TABLE,
    Timed,
    connect_wal,
    cpu_seconds,
    create_indexes,
    create_table,
    db_bytes,
    encode_metrics,
    write_inputs,
)

from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.adapters.store.hotpath import gc_paused
from benchledger.adapters.store.importer import Importer

GOAL = 0.9
HEADER = ("run_key", "benchmark", "agent", "provider", "model", "started_at", "config")
FINISH = ("status", "score", "unit", "higher_is_better", "ended_at", "metrics", "tokens")
JSON_COLUMNS = frozenset({"config", "metrics", "tokens"})


def dumps(value: Any) -> str | None:
    return json.dumps(value, sort_keys=True) if value else None


def plain_rebuild(ledger: Path, db_path: Path) -> Timed:
    """Seconds to fold the stored events into indexed runs and cells tables the plain way."""
    conn = connect_wal(db_path)
    source = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
    c0, t0 = cpu_seconds(), time.perf_counter()
    with gc_paused():
        fold_into(conn, source)
    elapsed = Timed(time.perf_counter() - t0, cpu_seconds() - c0)
    source.close()
    conn.close()
    return elapsed


def fold_into(conn: sqlite3.Connection, source: sqlite3.Connection) -> None:
    conn.execute("BEGIN")
    create_table(conn, RUNS_TABLE, RUN_COLUMNS)
    create_table(conn, CELLS_TABLE, tuple(CELLS_TABLE.columns))
    runs: dict[str, dict[str, Any]] = {}
    counts: dict[str, Counter[str]] = {}
    for topic, state in source.execute("SELECT topic, state FROM stored_events ORDER BY rowid"):
        event = json.loads(state)
        kind = topic.rpartition(":")[2]
        stream = event["originator_id"]
        if kind in ("RunStarted", "RunImported"):
            runs[stream] = {"run_id": stream, **{k: event.get(k) for k in HEADER}}
            runs[stream]["signature"] = event.get("signature")
            runs[stream]["run_group_id"] = event.get("run_group_id")
            counts[stream] = Counter()
            if kind == "RunImported":  # its end too
                runs[stream].update({k: event.get(k) for k in FINISH})
        elif kind == "RunFinished":
            runs[stream].update({k: event.get(k) for k in FINISH})
        elif kind == "CellsRecorded":
            tally = counts[stream]
            rows = []
            for cell in event["cells"]:
                metrics = cell.get("metrics")
                rows.append(
                    (
                        stream,
                        cell["key"],
                        cell["outcome"],
                        cell.get("score"),
                        encode_metrics(metrics) if metrics else None,
                        cell.get("cluster"),
                    )
                )
                tally[cell["outcome"]] += 1
            conn.executemany(CELLS_INSERT, rows)
    conn.executemany(RUNS_INSERT, (run_tuple(run, counts[rid]) for rid, run in runs.items()))
    create_indexes(conn, RUNS_TABLE, RUN_COLUMNS)
    create_indexes(conn, CELLS_TABLE, CELL_COLUMNS)
    conn.execute("COMMIT")


def run_tuple(run: dict[str, Any], tally: Counter[str]) -> tuple[Any, ...]:
    outcomes = {"cells": sum(tally.values())} | {f"cells_{o}": n for o, n in tally.items()}
    values = []
    for column in RUN_COLUMNS:
        value = outcomes.get(column, 0) if column.startswith("cells") else run.get(column)
        values.append(dumps(value) if column in JSON_COLUMNS else value)
    return tuple(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=200_000, help="total cells (default 200000)")
    parser.add_argument("--run-size", type=int, default=500, help="cells per run (default 500)")
    parser.add_argument("--runs-per-file", type=int, default=10, help="runs per file (10)")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved repeats (default 5)")
    args = parser.parse_args()
    if min(args.cells, args.run_size, args.runs_per_file, args.repeat) < 1:
        parser.error("--cells, --run-size, --runs-per-file and --repeat must be positive")
    work = Path(tempfile.mkdtemp(prefix="benchledger-rebuild-"))
    ledger = work / "ledger.db"
    rebuilds: list[Timed] = []
    plain: list[Timed] = []
    raw: list[Timed] = []
    sizes: list[int] = []
    try:
        paths, n_runs = write_inputs(work / "input", args.cells, args.run_size, args.runs_per_file)
        rows = raw_rows(paths)
        with build(Settings(db_path=ledger)) as services:
            importer = Importer(services.ledger)
            for path in paths:
                importer.import_file(path, group=None)
            services.runner.catch_up()
            events = services.runner.head_position()
            sizes.append(db_bytes(ledger))
            for k in range(args.repeat):
                first_plain = k % 2 == 0
                if first_plain:
                    plain.append(plain_rebuild(ledger, work / f"plain-{k}.db"))
                c0, t0 = cpu_seconds(), time.perf_counter()
                services.runner.rebuild()  # what `benchledger rebuild` runs, then catch_up
                services.runner.catch_up()
                rebuilds.append(Timed(time.perf_counter() - t0, cpu_seconds() - c0))
                sizes.append(db_bytes(ledger))
                if not first_plain:
                    plain.append(plain_rebuild(ledger, work / f"plain-{k}.db"))
                raw.append(raw_executemany(work / f"raw-{k}.db", rows))
                for stale in work.glob(f"*-{k}.db*"):
                    stale.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    n = args.cells
    growth = " -> ".join(f"{s / 2**20:.1f}" for s in sizes)
    raw_ratio = statistics.median(t.wall for t in raw) / statistics.median(t.wall for t in rebuilds)
    lines = [
        f"cells: {n:,} in {n_runs:,} runs ({events:,} events), {args.repeat} interleaved repeats",
        summary("benchledger rebuild (all projections)", rebuilds, n),
        summary("plain rebuild (json.loads, rows, indexes)", plain, n),
        *ratios("benchledger/plain", plain, rebuilds, GOAL),
        "context: " + summary("raw executemany of pre-built tuples", raw, n).strip(),
        f"  benchledger/raw: {raw_ratio:.3f}x median (wall)",
        f"ledger file (db + wal) MiB after import and each rebuild: {growth}",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
