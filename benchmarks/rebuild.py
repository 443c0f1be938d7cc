"""Rebuild throughput: every projection folded again from the event log, against a plain
SQLite executemany of the same cell rows, in one process (ratio printed; goal >= 0.5x)."""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path

from ingest import baseline, write_inputs

from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.adapters.store.importer import Importer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=200_000, help="total cells (default 200000)")
    parser.add_argument("--run-size", type=int, default=500, help="cells per run (default 500)")
    parser.add_argument("--repeat", type=int, default=1, help="rebuild K times, keep the best")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="benchledger-rebuild-"))
    try:
        paths, rows, n_runs = write_inputs(work / "input", args.cells, args.run_size)
        with build(Settings(db_path=work / "ledger.db")) as services:
            importer = Importer(services.ledger)
            for path in paths:
                importer.import_file(path, group=None)
            services.runner.catch_up()
            events = services.runner.head_position()
            best_rebuild = best_base = float("inf")
            for k in range(args.repeat):
                best_base = min(best_base, baseline(work / f"baseline-{k}.db", rows))
                t0 = time.perf_counter()
                services.runner.rebuild()
                best_rebuild = min(best_rebuild, time.perf_counter() - t0)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base_rate, rebuild_rate = len(rows) / best_base, args.cells / best_rebuild
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"cells: {args.cells:,} in {n_runs:,} runs ({events:,} events), best of {args.repeat}")
    print(
        f"baseline (sqlite3 executemany + commit): {best_base:8.3f} s  {base_rate:>10,.0f} rows/s"
    )
    print(
        f"rebuild (all projections, swapped in):   {best_rebuild:8.3f} s  "
        f"{rebuild_rate:>10,.0f} cells/s"
    )
    print(f"ratio rebuild/baseline: {rebuild_rate / base_rate:.4f}x (goal >= 0.5x)")
    print(f"peak RSS: {rss_mb:.1f} MB")


if __name__ == "__main__":
    main()
