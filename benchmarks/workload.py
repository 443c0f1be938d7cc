"""Shared by the benchmarks: native JSONL inputs written as a stream, and the fair plain
baseline's schema, taken from the read models' own table definitions."""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any, NamedTuple

from benchledger.projections.base import DESCENDING, Table, index_columns, index_name
from benchledger.projections.cells import CellsProjection
from benchledger.projections.runs import RunsProjection

SEED = 20261001
START = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
AGENTS = ("eliza", "hermes", "opencode")
OUTCOMES = ("passed", "failed", "error", "skipped")
SQL_TYPES = {str: "TEXT", int: "INTEGER", float: "REAL"}
# A cell's metrics as the cells read model stores them: compact, in input order. One
# encoder reused (json.dumps with keyword arguments builds a new one per call).
encode_metrics = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

CELLS_TABLE: Table = CellsProjection.tables[0]
RUNS_TABLE: Table = next(t for t in RunsProjection.tables if t.name == "runs")
# What a plain importer can fill from a run line plus its cell counts.
RUN_COLUMNS = (
    "run_id",
    "run_key",
    "benchmark",
    "agent",
    "provider",
    "model",
    "status",
    "score",
    "unit",
    "higher_is_better",
    "started_at",
    "ended_at",
    "config",
    "metrics",
    "tokens",
    "cells",
    "cells_passed",
    "cells_failed",
    "cells_error",
    "cells_skipped",
    "signature",
    "run_group_id",
)
CELL_COLUMNS = tuple(CELLS_TABLE.columns)

BENCHMARKS = 5  # runs go round bench_0 .. bench_4


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def run_line(rng: random.Random, index: int, score: float) -> dict[str, Any]:
    started = START + timedelta(minutes=7 * index)
    return {
        "type": "run",
        "run_key": f"bench-{index:07d}",
        "benchmark": f"bench_{index % BENCHMARKS}",
        "agent": AGENTS[index % len(AGENTS)],
        "provider": "cerebras",
        "model": "gpt-oss-120b",
        "config": {"limit": 500, "temperature": 0.0, "seed": rng.randint(0, 9)},
        "started_at": iso(started),
        "ended_at": iso(started + timedelta(minutes=5)),
        "status": "succeeded",
        "score": score,
        "unit": "pass_rate",
        "tokens": {"input_tokens": rng.randint(10_000, 90_000), "output_tokens": 3011},
    }


def cell_lines(rng: random.Random, size: int) -> Iterator[dict[str, Any]]:
    for i in range(size):
        passed = rng.random() < 0.6
        yield {
            "type": "cell",
            "key": f"task-{i:05d}",
            "outcome": "passed" if passed else "failed",
            "score": 1.0 if passed else 0.0,
            "metrics": {
                "total_tokens": rng.randint(500, 20_000),
                "latency_ms": rng.randint(200, 60_000),
            },
        }


def write_runs(out: IO[str], rng: random.Random, first: int, n_cells: int, run_size: int) -> int:
    """Stream runs of `run_size` cells (the last one shorter) to `out`; return the run count."""
    index, left = first, n_cells
    while left > 0:
        size = min(run_size, left)
        cells = list(cell_lines(rng, size))  # one run at a time: the score heads the run
        score = round(sum(c["score"] for c in cells) / size, 6)
        out.write(json.dumps(run_line(rng, index, score)) + "\n")
        for cell in cells:
            out.write(json.dumps(cell) + "\n")
        index, left = index + 1, left - size
    return index - first


def write_inputs(
    folder: Path, n_cells: int, run_size: int, runs_per_file: int
) -> tuple[list[Path], int]:
    """Native JSONL files of `runs_per_file` runs each; return them and the run count."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    paths: list[Path] = []
    runs, left = 0, n_cells
    while left > 0:
        chunk = min(left, run_size * runs_per_file)
        path = folder / f"runs-{len(paths):05d}.jsonl"
        with path.open("w", encoding="utf-8") as out:
            runs += write_runs(out, rng, runs, chunk, run_size)
        paths.append(path)
        left -= chunk
    return paths, runs


def create_table(conn: sqlite3.Connection, table: Table, columns: tuple[str, ...]) -> None:
    cols = ", ".join(
        f"[{c}] {SQL_TYPES[table.columns[c]]}" + (" PRIMARY KEY" if table.pk == (c,) else "")
        for c in columns
    )
    conn.execute(f"CREATE TABLE [{table.name}] ({cols})")


def create_indexes(conn: sqlite3.Connection, table: Table, columns: tuple[str, ...]) -> None:
    """The read model's own indexes over `columns` (those of a plain table), named as
    the read models name them."""
    for index in table.indexes:
        if not {c.removesuffix(DESCENDING) for c in index} <= set(columns):
            continue
        conn.execute(
            f"CREATE INDEX [{index_name(table.name, index)}] ON [{table.name}] "
            f"({index_columns(index)})"
        )


def plain_schema(conn: sqlite3.Connection, indexes: bool) -> None:
    create_table(conn, RUNS_TABLE, RUN_COLUMNS)
    create_table(conn, CELLS_TABLE, CELL_COLUMNS)
    if indexes:
        create_indexes(conn, RUNS_TABLE, RUN_COLUMNS)
        create_indexes(conn, CELLS_TABLE, CELL_COLUMNS)


def connect_wal(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    return conn


def dumps(value: Any) -> str | None:
    return json.dumps(value, sort_keys=True) if value else None


def run_row(
    run: dict[str, Any], counts: dict[str, int], n: int, group: str | None = None
) -> tuple[Any, ...]:
    return (
        run.get("run_key"),
        run.get("run_key"),
        run["benchmark"],
        run["agent"],
        run.get("provider", ""),
        run["model"],
        run["status"],
        run.get("score"),
        run.get("unit"),
        int(run.get("higher_is_better", True)),
        run.get("started_at"),
        run.get("ended_at"),
        dumps(run.get("config")),
        dumps(run.get("metrics")),
        dumps(run.get("tokens")),
        n,
        *(counts.get(o, 0) for o in OUTCOMES),
        f"{run['benchmark']}|{run['agent']}|{run.get('provider', '')}|{run['model']}",
        group,
    )


def cpu_seconds() -> float:
    """User and system CPU seconds of this process and of the children it waited for
    (the forked readers and folders of a large import): for CPU spent between two calls."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class Timed(NamedTuple):
    """Wall and CPU seconds of one step (`cpu_seconds`)."""

    wall: float
    cpu: float


def db_bytes(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


RUNS_INSERT = (
    f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}) VALUES ({', '.join('?' * len(RUN_COLUMNS))})"
)
CELLS_INSERT = (
    f"INSERT INTO cells ({', '.join(CELL_COLUMNS)}) VALUES ({', '.join('?' * len(CELL_COLUMNS))})"
)


BENCHLEDGER = str(Path(sys.executable).parent / "benchledger")


class Usage(NamedTuple):
    """What one child process took: wall seconds, peak RSS (MiB), CPU seconds (user and
    system, its own children's included: they were waited for), and its stdout."""

    wall: float
    rss: float
    cpu: float
    text: str


def measured(
    command: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> tuple[Usage, int, str]:
    """`command` run to its end, with what it took, its exit code and its stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err, cwd=cwd, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read().decode(errors="replace")
        error = err.read().decode(errors="replace")
    cpu = usage.ru_utime + usage.ru_stime
    return Usage(elapsed, usage.ru_maxrss / 1024, cpu, text), code, error  # maxrss: KiB


def child_usage(args: list[str]) -> Usage:
    """What one benchledger process took (`Usage`); a failure ends the script."""
    usage, code, error = measured([BENCHLEDGER, *args])
    if code != 0:
        sys.stderr.write(error)
        raise SystemExit(f"benchledger {' '.join(args)}: exit {code}")
    return usage


def child(args: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MiB) and stdout of one benchledger process."""
    usage = child_usage(args)
    return usage.wall, usage.rss, usage.text


def parse_sizes(text: str) -> list[int]:
    """`--sizes 100000,300000`: positive integers, comma-separated (`_` allowed)."""
    sizes = [int(s.replace("_", "")) for s in text.split(",") if s.strip()]
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError("sizes must be positive integers, comma-separated")
    return sizes
