"""Where an import's CPU goes: its cost per file, per run and per cell, each against the
plain importer's.

Four native JSONL workloads, each differing from the first in one count:

- base:  F files of 10 runs of 1 cell
- files: 10 F files of 1 run of 1 cell (the same runs and cells, ten times the files)
- runs:  F files of 100 runs of 1 cell (ten times the runs and cells)
- cells: F files of 10 runs of 100 cells (a hundred times the cells)

Each is imported into a new ledger by `benchledger import DIR` in this process (its
modules loaded by a warm-up import, its commits, catch-up and read models included, as
`mlflow_peer.py` times it; CPU of this process and of any child it forks) and by the plain
importer of `ingest.py` (json.loads, one indexed runs row per run and one cells row per
cell, a commit per file), interleaved, --repeat times. From the medians' differences:
per file = (files - base) / 9 F, per cell = (cells - base) / 990 F, per run = (runs - base)
/ 90 F - per cell, and what is left of the base is the fixed cost (a new ledger's tables,
a catch-up). Each figure is printed for both importers and as a multiple of the plain
one's; then the shares of the four in `mlflow_peer.py`'s 1,000 runs x 100 cells (100
files), as these figures predict it.

No goal of its own: it tells which of issue 39's goals a change can move (the MLflow
workload is 1,000 runs in 100 files; the orchestrator's 50,000 rows are runs). A
difference of two medians carries both their noise: on a shared machine, read a figure
beside its repeat's spread, and a small one (a few µs a cell) as within it.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest import plain_importer
from mlflow_peer import benchledger_in_process, make_runs, warm_up, write_native

# (files per base file, runs per file, cells per run), as multiples of the base's.
SHAPES = {
    "base": (1, 10, 1),
    "files": (10, 1, 1),
    "runs": (1, 100, 1),
    "cells": (1, 10, 100),
}
# The MLflow peer's workload: files, runs, cells.
MLFLOW = (100, 1_000, 100_000)


def workload(work: Path, name: str, files: int) -> tuple[Path, tuple[int, int, int]]:
    """The folder of a workload's files and its counts (files, runs, cells)."""
    many, per_file, cells = SHAPES[name]
    n_files = files * many
    runs = make_runs(n_files * per_file, cells)
    for i, run in enumerate(runs):  # keys of their own: each workload is one ledger
        run["run_key"] = f"costs-{name}-{i:06d}"
    folder = work / name
    write_native(folder, runs, per_file=per_file)
    return folder, (n_files, len(runs), len(runs) * cells)


def timed(work: Path, folder: Path, k: int) -> tuple[float, float]:
    """CPU seconds of benchledger's import of `folder` and of the plain importer's."""
    place = work / f"ledger-{folder.name}-{k}"
    place.mkdir()
    ours = benchledger_in_process(place, folder).cpu
    plain = plain_importer(place / "plain.db", sorted(folder.glob("*.jsonl"))).cpu
    shutil.rmtree(place)
    return ours, plain


def unit_costs(medians: dict[str, float], files: int) -> dict[str, float]:
    """Seconds per file, run and cell and the fixed rest, from the workloads' medians."""
    per_file = (medians["files"] - medians["base"]) / (9 * files)
    per_cell = (medians["cells"] - medians["base"]) / (990 * files)
    per_run = (medians["runs"] - medians["base"]) / (90 * files) - per_cell
    fixed = medians["base"] - files * per_file - 10 * files * (per_run + per_cell)
    return {"file": per_file, "run": per_run, "cell": per_cell, "fixed": fixed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=50, help="files of the base (default 50)")
    parser.add_argument("--repeat", type=int, default=3, help="repeats, interleaved (default 3)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="benchledger-costs-"))
    try:
        folders = {name: workload(work / "in", name, args.files) for name in SHAPES}
        warm_up(make_runs(10, 1))
        ours: dict[str, list[float]] = {name: [] for name in SHAPES}
        plain: dict[str, list[float]] = {name: [] for name in SHAPES}
        for k in range(args.repeat):
            for name, (folder, _) in folders.items():
                a, b = timed(work, folder, k)
                ours[name].append(a)
                plain[name].append(b)
        report(folders, ours, plain, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(
    folders: dict[str, tuple[Path, tuple[int, int, int]]],
    ours: dict[str, list[float]],
    plain: dict[str, list[float]],
    args: argparse.Namespace,
) -> None:
    print(f"CPU (user + sys) of one import, median of {args.repeat} interleaved repeats")
    print(f"  {'workload':9} {'files':>6} {'runs':>7} {'cells':>8}  {'benchledger':>19}  plain")
    for name, (_, (n_files, n_runs, n_cells)) in folders.items():
        spread = f"{min(ours[name]):.3f}-{max(ours[name]):.3f}"
        print(
            f"  {name:9} {n_files:6,} {n_runs:7,} {n_cells:8,}  "
            f"{statistics.median(ours[name]):7.3f} s ({spread})  "
            f"{statistics.median(plain[name]):.3f} s"
        )
    mine = unit_costs({n: statistics.median(v) for n, v in ours.items()}, args.files)
    theirs = unit_costs({n: statistics.median(v) for n, v in plain.items()}, args.files)
    print("Unit costs (from the differences of those medians):")
    for unit, scale, shown in (
        ("per file", 1e3, "ms"),
        ("per run", 1e3, "ms"),
        ("per cell", 1e6, "µs"),
        ("fixed", 1e3, "ms"),
    ):
        key = unit.removeprefix("per ")
        # A plain figure at or below 0 is a difference lost in the noise: no multiple of it.
        multiple = (
            f"{mine[key] / theirs[key]:.1f}x the plain importer's"
            if theirs[key] > 0
            else "the plain importer's within the noise of 0"
        )
        print(
            f"  {unit:9}  benchledger {mine[key] * scale:8.3f} {shown}  "
            f"plain {theirs[key] * scale:8.3f} {shown}  ({multiple})"
        )
    print(prediction(mine))


def prediction(costs: dict[str, float]) -> str:
    """mlflow_peer.py's workload as the unit costs predict its CPU, with each unit's share.

    A unit cost below 0 is a difference lost in the noise (few files, one repeat, a busy
    machine); shares of such a sum mean nothing, so the line says so instead.
    """
    n_files, n_runs, n_cells = MLFLOW
    parts = {
        "files": n_files * costs["file"],
        "runs": n_runs * costs["run"],
        "cells": n_cells * costs["cell"],
        "fixed": costs["fixed"],
    }
    whole = sum(parts.values())
    head = (
        f"mlflow_peer.py's workload ({n_runs:,} runs x {n_cells // n_runs:,} cells in {n_files} "
        "files) as these"
    )
    if min(parts.values()) < 0:
        lost = ", ".join(name for name, part in parts.items() if part < 0)
        return (
            f"{head} predict it: nothing: the {lost} cost is below 0, a difference within the "
            "noise (more --files or --repeat)"
        )
    shares = ", ".join(f"{name} {100 * part / whole:.0f}%" for name, part in parts.items())
    return f"{head} predict it: {whole:.2f} s of CPU: {shares}"


if __name__ == "__main__":
    main()
