"""Scale: one native JSONL file of N cells imported by `benchledger import`, then
`benchledger rebuild`, each in its own child process, printing wall time, cells/s, the
child's peak RSS and the ledger's size. Goal: < 300 MB peak RSS at 1M cells, and the
1M figure within 20% of the 100k one.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import SEED, child, db_bytes, parse_sizes, write_runs

SIZES = (100_000, 300_000, 1_000_000)
RSS_GOAL_MIB = 300 * 10**6 / 2**20
SPREAD_GOAL = 1.2


def one_size(work: Path, cells: int, run_size: int) -> dict[str, tuple[float, float, int]]:
    source = work / f"cells-{cells}.jsonl"
    with source.open("w", encoding="utf-8") as out:  # streamed: never held whole
        write_runs(out, random.Random(SEED), 0, cells, run_size)
    ledger = work / f"ledger-{cells}.db"
    results = {}
    for step, args in (
        ("import", ["--db", str(ledger), "import", str(source)]),
        ("rebuild", ["--db", str(ledger), "rebuild"]),
    ):
        wall, rss, _ = child(args)
        results[step] = (wall, rss, db_bytes(ledger))
    source.unlink()
    ledger.unlink()
    for extra in work.glob(f"ledger-{cells}.db-*"):
        extra.unlink()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        default=list(SIZES),
        help="comma-separated cell counts (default 100000,300000,1000000)",
    )
    parser.add_argument("--run-size", type=int, default=500, help="cells per run (default 500)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="benchledger-scale-"))
    table: dict[int, dict[str, tuple[float, float, int]]] = {}
    print(
        f"{'cells':>10} {'step':<8} {'wall s':>8} {'cells/s':>10} {'peak RSS MiB':>13} "
        f"{'ledger MiB':>11}"
    )
    try:
        for cells in args.sizes:
            table[cells] = one_size(work, cells, args.run_size)
            for step, (wall, rss, size) in table[cells].items():
                print(
                    f"{cells:>10,} {step:<8} {wall:>8.2f} {cells / wall:>10,.0f} "
                    f"{rss:>13.1f} {size / 2**20:>11.1f}",
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    small, big = min(table), max(table)
    for step in ("import", "rebuild"):
        rss_small, rss_big = table[small][step][1], table[big][step][1]
        ratio = rss_big / rss_small
        verdict = "met" if rss_big < RSS_GOAL_MIB and ratio <= SPREAD_GOAL else "NOT met"
        print(
            f"{step}: peak RSS {big:,} vs {small:,} cells: {rss_big:.1f} / {rss_small:.1f} MiB "
            f"= {ratio:.2f}x (goal: < {RSS_GOAL_MIB:.0f} MiB at 1M and <= {SPREAD_GOAL}x): "
            f"{verdict if big >= 1_000_000 else 'n/a below 1M cells'}"
        )


if __name__ == "__main__":
    main()
