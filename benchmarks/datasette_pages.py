"""Datasette pages: every page a reader reaches, of a small and a large ledger, timed in
process.

Builds a ledger per size (native JSONL streamed to `benchledger import`, the bulk path),
then asks Datasette's in-process client for every page the navigation leads to: the index,
the database page, each table's first page (with its configured facets) and its next page,
each facet's first value selected, each canned query, row pages, the `/models` page, the
dashboards list, the dashboard unfiltered and filtered by each of its filters and by all of
them, each chart's own page, and the query each chart asks as the dashboard draws it (with
no filter, each filter it reads, and all of them). Sizes and pages are interleaved; each
page's median wall and CPU time (the whole process's, its SQL threads included) over
several rounds is printed per size, with their ratios.

Goal (issue 39): every Datasette page of a 1M-cell ledger under 300 ms, and within 2x of
the same page at 10k cells, the models page and the dashboard included. A page misses the
goal when its wall time at the largest size is 300 ms or more, or when both its wall and
CPU ratios exceed 2x (on a shared machine one of them alone is noise; CPU is the
repeatable one). Each size has runs of at most `RUN_SIZE` cells (25,000 runs at 1M cells),
fewer where that leaves a benchmark short of the score chart's 500 points (4 cells a run, 2,500
runs, at 10k cells): every page is as full at the smallest size as at the largest.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from datasette_dashboards import replace_opts_in_query
from workload import BENCHMARKS, SEED, child, parse_sizes, write_runs

from benchledger.adapters.publication.browse import datasette_for, metadata_for

SIZES = (10_000, 1_000_000)
GOAL_MS = 300.0
SPREAD_GOAL = 2.0
# 40 cells a run: 250 runs at 10k cells, 50 of each of the 5 benchmarks, so that each
# first page (50 rows) and each facet's filtered page is as full at the smallest size as
# at the largest. With fewer runs the small pages show fewer rows, and the ratio measures
# rows rendered rather than the ledger's size.
RUN_SIZE = 40
# The score chart draws a benchmark's newest 500 runs: the smallest ledger has that many runs
# of each of the workload's benchmarks, or its chart pages draw fewer points than the
# largest ledger's and the ratio again measures points drawn.
CHART_POINTS = 500


def run_size_for(cells: int, most: int) -> int:
    """Cells a run: `most`, or fewer where a benchmark would have fewer runs than a chart
    draws."""
    return max(1, min(most, cells // (BENCHMARKS * CHART_POINTS)))


def build(work: Path, cells: int, run_size: int) -> Path:
    source = work / f"cells-{cells}.jsonl"
    with source.open("w", encoding="utf-8") as out:
        runs = write_runs(out, random.Random(SEED), 0, cells, run_size)
    ledger = work / f"ledger-{cells}" / "ledger.db"
    ledger.parent.mkdir()
    wall, _, _ = child(["--db", str(ledger), "import", str(source)])
    source.unlink()
    print(
        f"ledger of {cells:,} cells: {runs:,} runs of <= {run_size} cells (built in {wall:.1f} s)"
    )
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
    found["models page"] = "/models"
    found.update(dashboard_pages(ledger))
    return found


def filter_values(ledger: Path, filters: dict[str, dict[str, str]]) -> dict[str, str]:
    """The first option of each of a dashboard's select filters, from its own query."""
    conn = sqlite3.connect(ledger)
    try:
        values = {}
        for name, flt in filters.items():
            row = conn.execute(flt["query"]).fetchone()
            if row is not None:
                values[name] = row[0]
        return values
    finally:
        conn.close()


def dashboard_pages(ledger: Path) -> dict[str, str]:
    """The dashboards list; each dashboard with no filter, with each filter's first option
    and with all of them; each chart's page; and the query each chart asks when it is
    drawn (as dashboards.js asks it: the SQL with the `[[ ... ]]` clauses of the chosen
    filters kept, the filters as parameters), with no filter, each filter its SQL reads,
    and all of them."""
    plugins = metadata_for(ledger).get("plugins", {}).get("datasette-dashboards", {})
    found: dict[str, str] = {"dashboards": "/-/dashboards"} if plugins else {}
    for slug, dashboard in plugins.items():
        values = filter_values(ledger, dashboard.get("filters", {}))
        choices: list[tuple[str, dict[str, str]]] = [("", {})]
        choices += [(f"?{name}=", {name: value}) for name, value in values.items()]
        if len(values) > 1:
            choices.append(("?all", values))
        for suffix, chosen in choices:
            query = f"?{urlencode(chosen)}" if chosen else ""
            found[f"dashboard {slug}{suffix}"] = f"/-/dashboards/{slug}{query}"
        for name, chart in dashboard.get("charts", {}).items():
            found[f"chart page {name}"] = f"/-/dashboards/{slug}/{quote(name)}"
            for suffix, chosen in choices:
                read = {k: v for k, v in chosen.items() if f":{k}" in chart["query"]}
                if read != chosen and (len(read) < 2 if suffix == "?all" else True):
                    continue  # the same query as a choice already timed
                sql = replace_opts_in_query(chart["query"], read)
                query = urlencode({"sql": sql, **chosen, "_shape": "objects"})
                found[f"chart {name}{suffix}"] = f"/{chart['db']}.json?{query}"
    return found


async def next_pages(ds: Any, paths: dict[str, str]) -> dict[str, str]:
    """Each table's second page, where its first has a link to one (keyset pagination)."""
    found: dict[str, str] = {}
    for name, path in paths.items():
        if not path.startswith("/ledger/") or path.count("/") != 2 or "?" in path:
            continue
        first = (await ds.client.get(f"{path}.json")).json()
        if first.get("next_url"):
            found[f"{name} next page"] = f"{path}?{urlsplit(first['next_url']).query}"
    return found


# A page's medians per ledger: (wall ms, CPU ms) for each size.
Medians = dict[str, list[tuple[float, float]]]
# The rows a query page (`.json?sql=`) returned per ledger: a chart draws that many points.
Rows = dict[str, list[int]]


async def time_pages(ledgers: list[Path], repeat: int) -> tuple[Medians, Rows]:
    """Median wall and CPU milliseconds of each page per ledger, the ledgers and pages
    interleaved, and the rows each query page returned. CPU is the process's
    (`time.process_time`): the SQL threads' included."""
    sites = []
    for ledger in ledgers:
        ds = datasette_for(ledger)
        await ds.invoke_startup()
        paths = pages(ledger)
        paths.update(await next_pages(ds, paths))
        sites.append((ds, paths))
    names = list(sites[0][1])
    times: dict[str, list[list[tuple[float, float]]]] = {n: [[] for _ in sites] for n in names}
    rows: Rows = {}
    for _ in range(repeat + 1):  # the first round warms caches and is not counted
        for name in names:
            for i, (ds, paths) in enumerate(sites):
                if name not in paths:
                    continue
                c0, t0 = time.process_time(), time.perf_counter()
                response = await ds.client.get(paths[name])
                elapsed = (time.perf_counter() - t0) * 1000
                cpu = (time.process_time() - c0) * 1000
                if response.status_code != 200:
                    raise SystemExit(f"{paths[name]}: HTTP {response.status_code}")
                times[name][i].append((elapsed, cpu))
                if len(times[name][i]) == 1 and ".json?sql=" in paths[name]:
                    rows.setdefault(name, []).append(len(response.json()["rows"]))
    nan = float("nan")
    medians = {
        name: [
            (
                statistics.median(w for w, _ in t[1:]) if len(t) > 1 else nan,
                statistics.median(c for _, c in t[1:]) if len(t) > 1 else nan,
            )
            for t in per_site
        ]
        for name, per_site in times.items()
        if all(per_site)  # a page only some sizes have (a next page) is not compared
    }
    return medians, rows


def ratio(big: float, small: float) -> float:
    return big / small if small > 0 else float("nan")


def report(sizes: list[int], medians: Medians, rows: Rows) -> int:
    small, big = 0, len(sizes) - 1
    width = max(len(n) for n in medians)
    print(
        f"{'page':<{width}} {f'ms at {sizes[small]:,}':>14} {f'ms at {sizes[big]:,}':>16} "
        f"{'ratio':>6} {'cpu ms':>8} {'cpu ms':>8} {'cpu ratio':>9}  goal met"
    )
    missed = 0
    grown: list[str] = []
    for name, ms in medians.items():
        (wall_small, cpu_small), (wall_big, cpu_big) = ms[small], ms[big]
        wall_ratio, cpu_ratio = ratio(wall_big, wall_small), ratio(cpu_big, cpu_small)
        met = wall_big < GOAL_MS and min(wall_ratio, cpu_ratio) <= SPREAD_GOAL
        missed += not met
        counts = rows.get(name)
        if not met and counts and counts[small] != counts[big]:
            grown.append(f"{name}: {counts[small]:,} rows, then {counts[big]:,}")
        print(
            f"{name:<{width}} {wall_small:>14.1f} {wall_big:>16.1f} {wall_ratio:>6.2f} "
            f"{cpu_small:>8.1f} {cpu_big:>8.1f} {cpu_ratio:>9.2f}  {'yes' if met else 'NO'}"
        )
    print(
        f"{len(medians) - missed} of {len(medians)} pages met the goal (< {GOAL_MS:.0f} ms at "
        f"{sizes[big]:,} cells and <= {SPREAD_GOAL}x the {sizes[small]:,}-cell page in wall "
        "or CPU time)"
    )
    if grown:  # a query returning more rows at the larger size is not the same page
        print("missed query pages returning more rows at the larger size: " + "; ".join(grown))
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
        help=(
            f"most cells per run (default {RUN_SIZE}; fewer where a benchmark would have "
            f"fewer than the score chart's {CHART_POINTS} runs)"
        ),
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
            ledger or build(work, n, run_size_for(n, args.run_size))
            for ledger, n in zip(ledgers, sizes, strict=True)
        ]
        medians, rows = asyncio.run(time_pages(built, args.repeat))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    report(sizes, medians, rows)  # the figures are the result: missed goals are printed, not raised


if __name__ == "__main__":
    main()
