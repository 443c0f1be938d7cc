"""Ingest throughput: the full benchledger import (parse, events, projections, commit)
against a fair plain importer doing the same work in the same process, interleaved.

The plain importer json.loads the same native JSONL lines, writes one row per cell into a
`cells` table and one row per run into a `runs` table, both carrying the read models' own
indexes (from their Table definitions), in WAL mode, one commit per file. Goal: >= 0.6x.
A raw `executemany` of pre-built tuples into an unindexed table is printed as context.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import (
    CELLS_INSERT,
    RUNS_INSERT,
    connect_wal,
    db_bytes,
    encode_metrics,
    plain_schema,
    run_row,
    write_inputs,
)

from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.adapters.store.hotpath import gc_paused
from benchledger.adapters.store.importer import Importer

GOAL = 0.6


def plain_file(path: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The runs and cells rows of one native JSONL file, parsed with json.loads."""
    runs: list[tuple[Any, ...]] = []
    cells: list[tuple[Any, ...]] = []
    run: dict[str, Any] | None = None
    counts: Counter[str] = Counter()
    n = 0
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            obj = json.loads(line)
            if obj["type"] == "run":
                if run is not None:
                    runs.append(run_row(run, counts, n, path.name))
                run, counts, n = obj, Counter(), 0
                continue
            assert run is not None
            metrics = obj.get("metrics")
            cells.append(
                (
                    run["run_key"],
                    obj["key"],
                    obj["outcome"],
                    obj.get("score"),
                    encode_metrics(metrics) if metrics else None,
                    obj.get("cluster"),
                )
            )
            counts[obj["outcome"]] += 1
            n += 1
    if run is not None:
        runs.append(run_row(run, counts, n, path.name))
    return runs, cells


def plain_importer(db_path: Path, paths: list[Path]) -> float:
    """Seconds to import every file the plain way: parse, rows, indexed inserts, commit."""
    conn = connect_wal(db_path)
    plain_schema(conn, indexes=True)
    t0 = time.perf_counter()
    with gc_paused():
        for path in paths:
            runs, cells = plain_file(path)
            conn.execute("BEGIN")
            conn.executemany(RUNS_INSERT, runs)
            conn.executemany(CELLS_INSERT, cells)
            conn.execute("COMMIT")
    elapsed = time.perf_counter() - t0
    conn.close()
    return elapsed


def raw_rows(paths: list[Path]) -> list[tuple[Any, ...]]:
    return [row for path in paths for row in plain_file(path)[1]]


def raw_executemany(db_path: Path, rows: list[tuple[Any, ...]]) -> float:
    """Seconds for one executemany of pre-built cell tuples into an unindexed table."""
    conn = connect_wal(db_path)
    plain_schema(conn, indexes=False)
    t0 = time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany(CELLS_INSERT, rows)
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
    return t1 - t0, t2 - t1, events, db_bytes(db_path)


def summary(label: str, times: list[float], cells: int) -> str:
    med, best = statistics.median(times), min(times)
    return (
        f"{label:<44} median {med:7.3f} s  best {best:7.3f} s  "
        f"{cells / med:>10,.0f} cells/s (median)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=200_000, help="total cells (default 200000)")
    parser.add_argument("--run-size", type=int, default=500, help="cells per run (default 500)")
    parser.add_argument("--runs-per-file", type=int, default=10, help="runs per file (10)")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved repeats (default 5)")
    parser.add_argument("--keep", type=Path, help="work in DIR (empty or new) and keep it")
    args = parser.parse_args()
    if min(args.cells, args.run_size, args.runs_per_file, args.repeat) < 1:
        parser.error("--cells, --run-size, --runs-per-file and --repeat must be positive")
    if args.keep and args.keep.exists() and any(args.keep.iterdir()):
        parser.error(f"--keep {args.keep}: directory is not empty")
    work = args.keep or Path(tempfile.mkdtemp(prefix="benchledger-ingest-"))
    plain: list[float] = []
    full: list[float] = []
    imports: list[float] = []
    raw: list[float] = []
    try:
        paths, n_runs = write_inputs(work / "input", args.cells, args.run_size, args.runs_per_file)
        rows = raw_rows(paths)
        for k in range(args.repeat):
            # Alternate which goes first, so neither always meets a warm or a cold cache.
            first_plain = k % 2 == 0
            if first_plain:
                plain.append(plain_importer(work / f"plain-{k}.db", paths))
            t_import, t_catch_up, events, size = full_path(work / f"ledger-{k}.db", paths)
            full.append(t_import + t_catch_up)
            imports.append(t_import)
            if not first_plain:
                plain.append(plain_importer(work / f"plain-{k}.db", paths))
            raw.append(raw_executemany(work / f"raw-{k}.db", rows))
            for stale in work.glob(f"*-{k}.db*"):
                if not args.keep:
                    stale.unlink()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    n = args.cells
    ratio_med = statistics.median(plain) / statistics.median(full)
    ratio_best = min(plain) / min(full)
    pairs = sorted(p / f for p, f in zip(plain, full, strict=True))
    share = 100 * statistics.median(imports) / statistics.median(full)
    lines = [
        f"cells: {n:,} in {n_runs:,} runs of <= {args.run_size} ({len(paths)} files), "
        f"{args.repeat} interleaved repeats",
        summary("benchledger import (parse, events, projections)", full, n),
        f"  of which import (events appended): {share:.0f}%, catch_up (projections): "
        f"{100 - share:.0f}%",
        summary("plain importer (json.loads, indexed runs+cells)", plain, n),
        f"RATIO benchledger/plain: {ratio_med:.3f}x median, {ratio_best:.3f}x best "
        f"(paired {pairs[0]:.3f}..{pairs[-1]:.3f}); goal >= {GOAL}x: "
        f"{'met' if ratio_med >= GOAL else 'NOT met'}",
        "context: " + summary("raw executemany of pre-built tuples", raw, n).strip(),
        f"  benchledger/raw: {statistics.median(raw) / statistics.median(full):.3f}x median",
        f"events stored: {events:,}   ledger file (db + wal): {size / 2**20:.1f} MiB",
    ]
    print("\n".join(lines + ([f"kept: {work}"] if args.keep else [])))


if __name__ == "__main__":
    main()
