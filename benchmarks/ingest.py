"""Ingest throughput: the full benchledger import (parse, events, projections, commit)
against a fair plain importer doing the same work in the same process, interleaved.

The plain importer json.loads the same native JSONL lines, writes one row per cell into a
`cells` table and one row per run into a `runs` table, both carrying the read models' own
indexes (from their Table definitions), in WAL mode, one commit per file. Each side is
timed in wall and in CPU seconds (this process's and its waited-for children's: a large
import forks readers and folders), the two sides alternating which goes first; the ratio
is plain time / benchledger time, of the medians. Goal (issue 39): >= 0.8x.
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
    Timed,
    connect_wal,
    cpu_seconds,
    db_bytes,
    encode_metrics,
    plain_schema,
    run_row,
    write_inputs,
)

from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.adapters.store.hotpath import gc_paused
from benchledger.adapters.store.importer import Importer

GOAL = 0.8


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


def plain_importer(db_path: Path, paths: list[Path]) -> Timed:
    """Seconds to import every file the plain way: parse, rows, indexed inserts, commit."""
    conn = connect_wal(db_path)
    plain_schema(conn, indexes=True)
    c0, t0 = cpu_seconds(), time.perf_counter()
    with gc_paused():
        for path in paths:
            runs, cells = plain_file(path)
            conn.execute("BEGIN")
            conn.executemany(RUNS_INSERT, runs)
            conn.executemany(CELLS_INSERT, cells)
            conn.execute("COMMIT")
    elapsed = Timed(time.perf_counter() - t0, cpu_seconds() - c0)
    conn.close()
    return elapsed


def raw_rows(paths: list[Path]) -> list[tuple[Any, ...]]:
    return [row for path in paths for row in plain_file(path)[1]]


def raw_executemany(db_path: Path, rows: list[tuple[Any, ...]]) -> Timed:
    """Seconds for one executemany of pre-built cell tuples into an unindexed table."""
    conn = connect_wal(db_path)
    plain_schema(conn, indexes=False)
    c0, t0 = cpu_seconds(), time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany(CELLS_INSERT, rows)
    conn.execute("COMMIT")
    elapsed = Timed(time.perf_counter() - t0, cpu_seconds() - c0)
    conn.close()
    return elapsed


def full_path(db_path: Path, paths: list[Path]) -> tuple[Timed, Timed, int, int]:
    """Seconds in all (wall and CPU), seconds in import alone (wall and CPU; catch_up is
    the rest), events stored, and ledger bytes (db plus WAL)."""
    with build(Settings(db_path=db_path)) as services:
        services.runner.catch_up()  # create the read models first: time the steady state
        importer = Importer(services.ledger)
        c0, t0 = cpu_seconds(), time.perf_counter()
        for path in paths:
            report = importer.import_file(path, group=None)
            if report.state != "imported":
                raise SystemExit(f"{path}: {report.state}: {report.message}")
        t1, c1 = time.perf_counter(), cpu_seconds()
        services.runner.catch_up()
        t2, c2 = time.perf_counter(), cpu_seconds()
        events = services.runner.head_position()  # one fresh ledger: last position = count
    return Timed(t2 - t0, c2 - c0), Timed(t1 - t0, c1 - c0), events, db_bytes(db_path)


def summary(label: str, times: list[Timed], cells: int) -> str:
    walls, cpus = [t.wall for t in times], [t.cpu for t in times]
    med, best, cpu = statistics.median(walls), min(walls), statistics.median(cpus)
    return (
        f"{label:<44} median {med:7.3f} s  best {best:7.3f} s  CPU median {cpu:7.3f} s  "
        f"{cells / med:>10,.0f} cells/s (median)"
    )


def ratios(label: str, plain: list[Timed], ours: list[Timed], goal: float) -> list[str]:
    """Plain / benchledger of the medians, wall and CPU, with the range of the pairs'."""
    lines = []
    for kind in ("wall", "cpu"):
        p = [getattr(t, kind) for t in plain]
        o = [getattr(t, kind) for t in ours]
        med = statistics.median(p) / statistics.median(o)
        pairs = sorted(a / b for a, b in zip(p, o, strict=True))
        lines.append(
            f"RATIO {label} {kind.upper():<4}: {med:.3f}x median, {min(p) / min(o):.3f}x best "
            f"(paired {pairs[0]:.3f}..{pairs[-1]:.3f}, {len(pairs)} pairs); goal >= {goal}x: "
            f"{'met' if med >= goal else 'NOT met'}"
        )
    return lines


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
    plain: list[Timed] = []
    full: list[Timed] = []
    imports: list[Timed] = []
    raw: list[Timed] = []
    try:
        paths, n_runs = write_inputs(work / "input", args.cells, args.run_size, args.runs_per_file)
        rows = raw_rows(paths)
        for k in range(args.repeat):
            # Alternate which goes first, so neither always meets a warm or a cold cache.
            first_plain = k % 2 == 0
            if first_plain:
                plain.append(plain_importer(work / f"plain-{k}.db", paths))
            t_full, t_import, events, size = full_path(work / f"ledger-{k}.db", paths)
            full.append(t_full)
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
    share = (
        100 * statistics.median(t.wall for t in imports) / statistics.median(t.wall for t in full)
    )
    cpu_share = (
        100 * statistics.median(t.cpu for t in imports) / statistics.median(t.cpu for t in full)
    )
    raw_ratio = statistics.median(t.wall for t in raw) / statistics.median(t.wall for t in full)
    lines = [
        f"cells: {n:,} in {n_runs:,} runs of <= {args.run_size} ({len(paths)} files), "
        f"{args.repeat} interleaved repeats",
        summary("benchledger import (parse, events, projections)", full, n),
        f"  of which import (events appended): {share:.0f}%, catch_up (projections): "
        f"{100 - share:.0f}% (wall); {cpu_share:.0f}% and {100 - cpu_share:.0f}% (CPU)",
        summary("plain importer (json.loads, indexed runs+cells)", plain, n),
        *ratios("benchledger/plain", plain, full, GOAL),
        "context: " + summary("raw executemany of pre-built tuples", raw, n).strip(),
        f"  benchledger/raw: {raw_ratio:.3f}x median (wall)",
        f"events stored: {events:,}   ledger file (db + wal): {size / 2**20:.1f} MiB",
    ]
    print("\n".join(lines + ([f"kept: {work}"] if args.keep else [])))


if __name__ == "__main__":
    main()
