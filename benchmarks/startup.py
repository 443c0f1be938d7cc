"""Start-up cost: CPU time (user + sys) of short benchledger processes against
`python -c "import click, sqlite3"`, interleaved, median of several repeats.

Goals (issue 39): every subcommand's `--help` within 3x of the baseline's CPU; `runs`,
`latest`, `matrix` and each gate (`gate readiness` and the other kinds, recording its
verdict and with --dry-run) within 0.3 s of CPU on the corpus ledger (../shared/corpus
imported; where it is absent, a generated demo ledger); `--version` and `runs` on a
small ledger within 3x, a one-run `import` into a fresh ledger within 5x, and `run`
adding at most 0.3 s of CPU to the benchmark process it runs. Wall time is printed
beside CPU, for context: on a shared machine it is noise. The stack every writing
command loads (STACK_FLOOR) is printed for context.
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
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import click

PYTHON = sys.executable
BENCHLEDGER = str(Path(sys.executable).parent / "benchledger")
BASELINE = [PYTHON, "-c", "import click, sqlite3"]
# What any command that writes the ledger imports and builds before any code of ours: a
# pydantic model validated (with pydantic's plugin lookup skipped, as the CLI's process
# skips it: commands/plugins_skipped.py) and eventsourcing's SQLite application made.
# Printed for context: no change of ours goes below it.
STACK_FLOOR = (
    "import click, sqlite3\n"
    "from benchledger.commands import plugins_skipped\n"
    "plugins_skipped.install()\n"
    "from pydantic import BaseModel\n"
    "from eventsourcing.application import Application\n"
    "class M(BaseModel):\n    x: int\n"
    "M(x=1)\n"
    "Application(env={'PERSISTENCE_MODULE': 'eventsourcing.sqlite', 'SQLITE_DBNAME': ':memory:'})\n"
)
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
# The runtime gate (and readiness) probe the registry's `requires`.
REGISTRY = """
[benchmarks.startup]
command = [{python}, "bench.py", "{{output_dir}}"]
requires = ["command:sh", "env:HOME"]
"""

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


def cpu_seconds(argv: Sequence[str], cwd: Path, ok: Collection[int] = (0,)) -> tuple[float, float]:
    """User + sys CPU of the process and the children it waited for, and its wall time."""
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    stderr = process.stderr.read() if process.stderr else ""
    if process.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} exited {process.returncode}:\n{stderr}")
    return usage.ru_utime + usage.ru_stime, wall


@dataclass(frozen=True)
class Case:
    argv: Callable[[], list[str]]
    goal: str = ""  # "3x" (of the baseline's CPU) or "0.3s" (of CPU); "" for context
    ok: Collection[int] = (0,)  # exit codes of a normal run (a gate exits 1 on findings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="repeats per case (default 5)")
    parser.add_argument(
        "--corpus",
        type=Path,
        default=CORPUS if CORPUS.is_dir() else None,
        help="result corpus the read commands' ledger imports (default ../shared/corpus "
        "where it exists, else a generated demo ledger)",
    )
    parser.add_argument(
        "--demo", action="store_true", help="time the read commands on a demo ledger"
    )
    parser.add_argument(
        "--commands",
        metavar="A,B",
        help="only these subcommands' --help (default: every command of the CLI)",
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="benchledger-startup-"))
    try:
        only = [c for c in (args.commands or "").split(",") if c]
        report(work, args.repeat, None if args.demo else args.corpus, only)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def subcommands() -> list[str]:
    """Every subcommand, as the CLI lists them."""
    from benchledger.commands.cli import cli

    return list(cli.list_commands(click.Context(cli)))


def gate_names() -> list[str]:
    """The gates `benchledger gate NAME` evaluates, from its argument's choices."""
    from benchledger.commands.cli import cli

    gate = cli.get_command(click.Context(cli), "gate")
    assert gate is not None
    names = next(p for p in gate.params if p.name == "names")
    assert isinstance(names.type, click.Choice)
    return [str(n) for n in names.type.choices]


def read_ledger(work: Path, corpus: Path | None) -> tuple[Path, str]:
    """The ledger the read commands run on: the corpus imported (3 of its files conflict
    with others, so the import exits 1), or a demo ledger; and what it is."""
    ledger = work / "reads.db"
    if corpus is not None:
        cpu_seconds([BENCHLEDGER, "--db", str(ledger), "import", str(corpus)], work, ok=(0, 1))
        return ledger, f"the corpus ledger ({corpus})"
    cpu_seconds([BENCHLEDGER, "--db", str(ledger), "demo"], work)
    return ledger, "a generated demo ledger (no corpus)"


def report(work: Path, repeat: int, corpus: Path | None, only: Sequence[str]) -> None:
    ledger = work / "demo.db"
    cpu_seconds([BENCHLEDGER, "--db", str(ledger), "demo"], work)
    reads, reads_are = read_ledger(work, corpus)
    result = work / "result.json"
    result.write_text(json.dumps(RESULT))
    (work / "bench.py").write_text(BENCH)
    (work / "benchledger.toml").write_text(REGISTRY.format(python=json.dumps(PYTHON)))
    alone = work / "alone"
    alone.mkdir()
    counter = iter(range(10**9))

    def fresh(name: str) -> str:
        return str(work / f"{name}-{next(counter)}.db")

    def on_reads(*argv: str) -> Callable[[], list[str]]:
        return lambda: [BENCHLEDGER, "--db", str(reads), *argv]

    cases: dict[str, Case] = {
        "--version": Case(lambda: [BENCHLEDGER, "--version"], "3x"),
        "runs (demo ledger, current)": Case(
            lambda: [BENCHLEDGER, "--db", str(ledger), "runs"], "3x"
        ),
        "import (one run, fresh ledger)": Case(
            lambda: [BENCHLEDGER, "--db", fresh("import"), "import", str(result)], "5x"
        ),
        "run (ad hoc, fresh ledger)": Case(
            lambda: [
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
            ]
        ),
        "benchmark process alone": Case(lambda: [PYTHON, "bench.py", str(alone)]),
        "stack floor": Case(lambda: [PYTHON, "-c", STACK_FLOOR]),
    }
    for name in only or subcommands():
        cases[f"{name} --help"] = Case(
            lambda name=name: [BENCHLEDGER, name, "--help"],  # type: ignore[misc]
            "3x",
        )
    for argv in (["runs"], ["latest"], ["matrix"]):
        cases[f"{argv[0]} (reads ledger)"] = Case(on_reads(*argv), "0.3s")
    for gate in gate_names():
        cases[f"gate {gate} (reads ledger)"] = Case(on_reads("gate", gate), "0.3s", ok=(0, 1))
        cases[f"gate {gate} --dry-run (reads ledger)"] = Case(
            on_reads("gate", gate, "--dry-run"), "0.3s", ok=(0, 1)
        )

    cpu: dict[str, list[float]] = {name: [] for name in ["baseline", *cases]}
    wall: dict[str, list[float]] = {name: [] for name in ["baseline", *cases]}
    for case in cases.values():  # warm up: bytecode cached, files in the page cache
        cpu_seconds(case.argv(), work, case.ok)
    for _ in range(repeat):
        for name, case in cases.items():
            for key, argv, codes in (
                ("baseline", BASELINE, (0,)),
                (name, case.argv(), case.ok),
            ):
                spent, elapsed = cpu_seconds(argv, work, codes)
                cpu[key].append(spent)
                wall[key].append(elapsed)
    median = {name: statistics.median(values) for name, values in cpu.items()}
    median_wall = {name: statistics.median(values) for name, values in wall.items()}
    base, base_wall = median["baseline"], median_wall["baseline"]
    print(f"CPU time (user+sys), median of {repeat}, each case interleaved with the baseline;")
    print(f"the reads ledger is {reads_are}. Wall time beside it, for context only.")
    label = 'baseline: python -c "import click, sqlite3"'
    print(f"  {label:44} {base * 1000:7.1f} ms CPU  {base_wall * 1000:7.1f} ms wall")
    floor = median["stack floor"]
    print(
        f"  {'context: the stack alone (see STACK_FLOOR)':44} {floor * 1000:7.1f} ms CPU  "
        f"{floor / base:5.1f}x  (pydantic and eventsourcing: every writing command pays it)"
    )
    met = total = 0
    for name, case in cases.items():
        if not case.goal:
            continue
        ratio = median[name] / base
        limit = float(case.goal[:-1])
        ok = ratio <= limit if case.goal.endswith("x") else median[name] <= limit
        goal = f"goal <= {case.goal} CPU"
        met, total = met + ok, total + 1
        print(
            f"  {name:44} {median[name] * 1000:7.1f} ms CPU  {ratio:5.1f}x  "
            f"wall {median_wall[name] * 1000:7.1f} ms {median_wall[name] / base_wall:5.1f}x  "
            f"({goal}: {'ok' if ok else 'over'})"
        )
    overhead = median["run (ad hoc, fresh ledger)"] - median["benchmark process alone"]
    verdict = "ok" if overhead <= 0.3 else "over"
    met, total = met + (overhead <= 0.3), total + 1
    print(
        f"  {'run overhead beyond the benchmark process':44} {overhead * 1000:7.1f} ms CPU  "
        f"(goal <= 300 ms: {verdict})"
    )
    print(f"{met} of {total} goals met")


if __name__ == "__main__":
    main()
