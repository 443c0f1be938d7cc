"""A running benchmark's cells, with its events in PostgreSQL, seen by another reader.

`benchledger run` records into a PostgreSQL event store; a reader on this machine
keeps its own SQLite read model current with `follow`, and sees the run running and
its cells arriving before the benchmark ends.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchledger.commands.cli import cli
from tests.conftest import Invoke
from tests.e2e.test_run import BENCHLEDGER, PROCESS_TIMEOUT, eventually
from tests.e2e.test_run_live import LiveWorkspace
from tests.integration.test_postgres import pytestmark, store_url  # noqa: F401


@pytest.fixture
def lws(tmp_path: Path, invoke: Invoke) -> Iterator[LiveWorkspace]:
    workspace = LiveWorkspace(tmp_path, invoke)
    yield workspace
    workspace.cleanup()


def followed(url: str, reader: Path) -> list[tuple[str, int]]:
    """(status, cells) of every run in the reader's read model, after one poll."""
    result = CliRunner().invoke(
        cli, ["--db", str(reader), "--event-store", url, "follow", "--polls", "1"]
    )
    assert result.exit_code == 0, result.stderr + repr(result.exception)
    with closing(sqlite3.connect(reader)) as conn:
        return [tuple(row) for row in conn.execute("SELECT status, cells FROM runs")]


def test_a_followed_read_model_shows_the_running_runs_cells(
    store_url: str,  # noqa: F811
    lws: LiveWorkspace,
) -> None:
    argv = [str(BENCHLEDGER), "--event-store", store_url, *lws.argv(benchmarks="live")[1:]]
    process = subprocess.Popen(
        argv,
        cwd=lws.root,
        env=lws.environ({"LIVE_GAP": "0.5", "LIVE_CELLS": "4", "LIVE_HOLD": "3"}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lws.processes.append(process)
    reader = lws.root / "reader.db"
    eventually(lambda: followed(store_url, reader) == [("running", 4)], "4 cells", seconds=30)
    assert process.poll() is None, "the benchmark ended before its cells were seen"

    stdout, stderr = process.communicate(timeout=PROCESS_TIMEOUT)
    assert process.returncode == 0, stderr
    assert json.loads(stdout)["outcomes"][0]["state"] == "succeeded"
    assert followed(store_url, reader) == [("succeeded", 4)]
