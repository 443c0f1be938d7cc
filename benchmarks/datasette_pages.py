"""Datasette pages: every default page of a small and a large ledger, timed in process.

Builds a ledger per size (native JSONL streamed to `benchledger import`, the bulk path),
then asks Datasette's in-process client for the index, the database page, each table's
first page (with its configured facets), each facet's first value selected, each canned
query and a row page, interleaving sizes and pages, and prints the median of several
rounds. Goal: every page under 300 ms at the largest size and within 2x of the smallest.
Each size has runs of `RUN_SIZE` cells (25,000 runs at 1M cells).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote, urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import SEED, child, parse_sizes, write_runs

from benchledger.adapters.publication.browse import datasette_for, metadata_for

SIZES = (10_000, 1_000_000)
GOAL_MS = 300.0
SPREAD_GOAL = 2.0
# 40 cells a run: 250 runs at 10k cells, 50 of each of the 5 benchmarks, so that each
# first page (50 rows) and each facet's filtered page is as full at the smallest size as
# at the largest. With fewer runs the small pages show fewer rows, and the ratio measures
# rows rendered rather than the ledger's size.
RUN_SIZE = 40


def build(work: Path, cells: int, run_size: int) -> Path:
    source = work / f"cells-{cells}.jsonl"
    with source.open("w", encoding="utf-8") as out:
        write_runs(out, random.Random(SEED), 0, cells, run_size)
    ledger = work / f"ledger-{cells}" / "ledger.db"
    ledger.parent.mkdir()
    wall, _, _ = child(["--db", str(ledger), "import", str(source)])
    source.unlink()
    print(f"built {cells:,} cells in {wall:.1f} s", file=sys.stderr, flush=True)
    return ledger


def pages(ledger: Path) -> dict[str, str]:
    """Every default page, by a name the same for every size: what a reader opens first."""
    database = metadata_for(ledger)["databases"]["ledger"]
    conn = sqlite3.connect(ledger)
    try:
        visible = [
            name
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if name in database["tables"] and not database["tables"][name].get("hidden")
        ]
        found: dict[str, str] = {"index": "/", "database": "/ledger"}
        for table in sorted(visible):
            found[table] = f"/ledger/{table}"
            for facet in database["tables"][table].get("facets", []):
                row = conn.execute(
                    f"SELECT [{facet}] FROM [{table}] WHERE [{facet}] IS NOT NULL LIMIT 1"
                ).fetchone()
                if row is not None:
                    query = urlencode({facet: row[0]})
                    found[f"{table}?{facet}="] = f"/ledger/{table}?{query}"
        (run_id,) = conn.execute("SELECT run_id FROM runs ORDER BY run_id LIMIT 1").fetchone()
        (benchmark,) = conn.execute("SELECT benchmark FROM runs LIMIT 1").fetchone()
    finally:
        conn.close()
    found["runs/<run_id>"] = f"/ledger/runs/{quote(run_id)}"
    found["cells/<rowid>"] = "/ledger/cells/1"
    arguments = {"benchmark": benchmark, "run_id": run_id[:8], "q": "timeout"}
    for name, query in database["queries"].items():
        params = {k: v for k, v in arguments.items() if f":{k}" in query["sql"]}
        found[f"query {name}"] = f"/ledger/{name}" + (f"?{urlencode(params)}" if params else "")
    found.update(dashboard_pages(ledger))
    return found


def dashboard_pages(ledger: Path) -> dict[str, str]:
    """The dashboard page, and the query each of its charts asks when it is drawn, with no
    filter chosen (its optional `[[ ... ]]` clauses left out, as the dashboard leaves them)."""
    plugins = metadata_for(ledger).get("plugins", {}).get("datasette-dashboards", {})
    found: dict[str, str] = {}
    for slug, dashboard in plugins.items():
        found[f"dashboard {slug}"] = f"/-/dashboards/{slug}"
        for name, chart in dashboard.get("charts", {}).items():
            sql = re.sub(r"\[\[.*?\]\]", "", chart["query"], flags=re.S)
            query = urlencode({"sql": sql, "_shape": "array"})
            found[f"chart {name}"] = f"/{chart['db']}.json?{query}"
    return found


async def time_pages(ledgers: list[Path], repeat: int) -> dict[str, list[float]]:
    """Median milliseconds of each page per ledger, the ledgers and pages interleaved."""
    sites = [(datasette_for(ledger), pages(ledger)) for ledger in ledgers]
    for ds, _ in sites:
        await ds.invoke_startup()
    names = list(sites[0][1])
    times: dict[str, list[list[float]]] = {n: [[] for _ in sites] for n in names}
    for _ in range(repeat + 1):  # the first round warms caches and is not counted
        for name in names:
            for i, (ds, paths) in enumerate(sites):
                if name not in paths:
                    continue
                t0 = time.perf_counter()
                response = await ds.client.get(paths[name])
                elapsed = (time.perf_counter() - t0) * 1000
                if response.status_code != 200:
                    raise SystemExit(f"{paths[name]}: HTTP {response.status_code}")
                times[name][i].append(elapsed)
    return {
        name: [statistics.median(t[1:]) if len(t) > 1 else float("nan") for t in per_site]
        for name, per_site in times.items()
    }


def report(sizes: list[int], medians: dict[str, list[float]]) -> int:
    small, big = 0, len(sizes) - 1
    width = max(len(n) for n in medians)
    print(
        f"{'page':<{width}} {f'ms at {sizes[small]:,}':>14} {f'ms at {sizes[big]:,}':>16} "
        f"{'ratio':>6}  goal met"
    )
    missed = 0
    for name, ms in medians.items():
        ratio = ms[big] / ms[small] if ms[small] > 0 else float("nan")
        met = ms[big] < GOAL_MS and ratio <= SPREAD_GOAL
        missed += not met
        print(
            f"{name:<{width}} {ms[small]:>14.1f} {ms[big]:>16.1f} {ratio:>6.2f}  "
            f"{'yes' if met else 'NO'}"
        )
    print(
        f"{len(medians) - missed} of {len(medians)} pages met the goal (< {GOAL_MS:.0f} ms at "
        f"{sizes[big]:,} cells and <= {SPREAD_GOAL}x the {sizes[small]:,}-cell page)"
    )
    return missed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        default=list(SIZES),
        help="comma-separated cell counts, smallest first (default 10000,1000000)",
    )
    parser.add_argument(
        "--run-size",
        type=int,
        default=RUN_SIZE,
        help=f"cells per run (default {RUN_SIZE}: the smallest ledger fills each first page)",
    )
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds (default 5)")
    parser.add_argument("--keep", type=Path, help="build the ledgers here and keep them")
    args = parser.parse_args()
    sizes = sorted(args.sizes)
    work = args.keep or Path(tempfile.mkdtemp(prefix="benchledger-pages-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        ledgers = [
            existing if (existing := work / f"ledger-{n}" / "ledger.db").exists() else None
            for n in sizes
        ]
        built = [
            ledger or build(work, n, args.run_size)
            for ledger, n in zip(ledgers, sizes, strict=True)
        ]
        medians = asyncio.run(time_pages(built, args.repeat))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    report(sizes, medians)  # the figures are the result: missed goals are printed, not raised


if __name__ == "__main__":
    main()
