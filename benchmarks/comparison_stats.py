"""Comparison statistics throughput: `paired_stats` over N paired cells (binary outcomes,
clustered, as SWE-bench instances in repositories) against a plain baseline, numpy's
mean and standard deviation of the same two arrays, interleaved, CPU time (process).

Goal: 100,000 paired cells in under one CPU second (issue 13). The bootstrap is timed
apart (10,000 resamples of the mean), as `compare --bootstrap mean` runs it.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from benchledger.domain.comparison_stats import paired_stats

GOAL_SECONDS = 1.0


def workload(
    cells: int, seed: int = 0
) -> tuple[dict[str, float], dict[str, float], dict[str, str]]:
    """Two sides' pass/fail cells and a cluster per key (about 50 keys per cluster)."""
    rng = np.random.default_rng(seed)
    keys = [f"org__repo{i // 50}-{i}" for i in range(cells)]
    a = rng.random(cells) < 0.55
    b = rng.random(cells) < 0.5
    clusters = {k: f"org/repo{i // 50}" for i, k in enumerate(keys)}
    return (
        {k: float(v) for k, v in zip(keys, a, strict=True)},
        {k: float(v) for k, v in zip(keys, b, strict=True)},
        clusters,
    )


def cpu(task: Callable[[], object]) -> float:
    start = time.process_time()
    task()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cells", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args()
    a, b, clusters = workload(args.cells)
    xs = np.fromiter(a.values(), dtype=np.float64)
    ys = np.fromiter(b.values(), dtype=np.float64)

    def baseline() -> object:
        return (xs.mean(), ys.mean(), (xs - ys).std(ddof=1))

    times: dict[str, list[float]] = {"baseline": [], "paired": [], "clustered": []}
    for _ in range(args.repeat):
        times["baseline"].append(cpu(baseline))
        times["paired"].append(cpu(lambda: paired_stats(a, b)))
        times["clustered"].append(cpu(lambda: paired_stats(a, b, clusters=clusters)))
    boot = cpu(lambda: paired_stats(a, b, bootstrap="mean", resamples=args.resamples))
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"{args.cells:,} paired cells, CPU seconds (median of {args.repeat}, interleaved)")
    base = median["baseline"]
    print(f"  {'baseline: numpy mean/std of the arrays':44} {base:8.4f} s")
    for name, label in (("paired", "paired_stats"), ("clustered", "paired_stats, clustered")):
        seconds = median[name]
        rate = args.cells / seconds if seconds else float("inf")
        verdict = "ok" if seconds * 100_000 / args.cells <= GOAL_SECONDS else "over"
        ratio = seconds / base if base else float("inf")
        print(
            f"  {label:44} {seconds:8.4f} s  {rate:12,.0f} cells/s  {ratio:7.1f}x baseline  "
            f"(goal 100,000 cells <= {GOAL_SECONDS:g} s: {verdict})"
        )
    label = f"+ bootstrap mean, {args.resamples:,} resamples"
    print(f"  {label:44} {boot:8.4f} s")
    print(f"RATIO benchledger/plain {median['clustered'] / base if base else float('inf'):.1f}x")


if __name__ == "__main__":
    main()
