"""Start-up cost: CPU time (user + sys) of short benchledger processes against
`python -c "import click, sqlite3"`, interleaved, median of several repeats.

Goals: `--version` and `runs` on a small ledger within 3x, a one-run `import`
into a fresh ledger within 5x, and `run` adding at most 0.3 s of CPU to the
benchmark process it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

PYTHON = sys.executable
BENCHLEDGER = str(Path(sys.executable).parent / "benchledger")
BASELINE = [PYTHON, "-c", "import click, sqlite3"]

RESULT = {
    "schema": "benchledger/run@1",
    "benchmark": "startup",
    "agent": "a",
    "provider": "p",
    "model": "m",
    "status": "succeeded",
    "score": 0.5,
    "unit": "accuracy",
    "cells": [{"key": "q1", "outcome": "passed", "score": 1.0}],
}

BENCH = (
    "import json, sys, pathlib; pathlib.Path(sys.argv[1], 'result.json').write_text("
    "json.dumps({'schema': 'benchledger/run@1', 'score': 1.0, 'unit': 'accuracy', "
    "'cells': [{'key': 'q1', 'outcome': 'passed', 'score': 1.0}]}))"
)


# As installed: modules load from cached bytecode (a checkout run with
# PYTHONDONTWRITEBYTECODE would compile every module of ours on every start).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def cpu_seconds(argv: Sequence[str], cwd: Path) -> float:
    """User + sys CPU of the process and the children it waited for."""
    process = subprocess.Popen(
        argv, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    stderr = process.stderr.read() if process.stderr else ""
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {process.returncode}:\n{stderr}")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="repeats per case (default 7)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="benchledger-startup-"))
    try:
        report(work, args.repeat)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(work: Path, repeat: int) -> None:
    ledger = work / "demo.db"
    cpu_seconds([BENCHLEDGER, "--db", str(ledger), "demo"], work)
    result = work / "result.json"
    result.write_text(json.dumps(RESULT))
    (work / "bench.py").write_text(BENCH)
    alone = work / "alone"
    alone.mkdir()
    counter = iter(range(10**9))

    def fresh(name: str) -> str:
        return str(work / f"{name}-{next(counter)}.db")

    cases: dict[str, Callable[[], list[str]]] = {
        "--version": lambda: [BENCHLEDGER, "--version"],
        "runs (demo ledger, current)": lambda: [BENCHLEDGER, "--db", str(ledger), "runs"],
        "import (one run, fresh ledger)": lambda: [
            BENCHLEDGER,
            "--db",
            fresh("import"),
            "import",
            str(result),
        ],
        "run (ad hoc, fresh ledger)": lambda: [
            BENCHLEDGER,
            "--db",
            fresh("run"),
            "run",
            "--benchmark",
            "startup",
            "--agent",
            "a",
            "--model",
            "m",
            "--results-root",
            str(work / "results"),
            "--",
            PYTHON,
            "bench.py",
            "{output_dir}",
        ],
        "benchmark process alone": lambda: [PYTHON, "bench.py", str(alone)],
    }
    times: dict[str, list[float]] = {name: [] for name in ["baseline", *cases]}
    for argv in cases.values():  # warm up: bytecode cached, files in the page cache
        cpu_seconds(argv(), work)
    for _ in range(repeat):
        for name, argv in cases.items():
            times["baseline"].append(cpu_seconds(BASELINE, work))
            times[name].append(cpu_seconds(argv(), work))
    median = {name: statistics.median(values) for name, values in times.items()}
    base = median["baseline"]
    print(f"CPU time (user+sys), median of {repeat}, interleaved with the baseline")
    label = 'baseline: python -c "import click, sqlite3"'
    print(f"  {label:44} {base * 1000:7.1f} ms")
    goals = {
        "--version": 3.0,
        "runs (demo ledger, current)": 3.0,
        "import (one run, fresh ledger)": 5.0,
    }
    for name, goal in goals.items():
        ratio = median[name] / base
        verdict = "ok" if ratio <= goal else "over"
        print(
            f"  {name:44} {median[name] * 1000:7.1f} ms  {ratio:5.1f}x  "
            f"(goal <= {goal:.0f}x: {verdict})"
        )
    overhead = median["run (ad hoc, fresh ledger)"] - median["benchmark process alone"]
    verdict = "ok" if overhead <= 0.3 else "over"
    print(
        f"  {'run overhead beyond the benchmark process':44} {overhead * 1000:7.1f} ms  "
        f"(goal <= 300 ms: {verdict})"
    )


if __name__ == "__main__":
    main()
