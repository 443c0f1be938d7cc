"""The Python API's write paths mask secrets as `import` and `run` do: a started run's
command, provenance and code versions, its cells while it runs and when it finishes, its
outcome and added facts, and cells recorded on a run; scores and keys stay."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.domain.ledger import Ledger, StartedAttempt
from benchledger.domain.records import Cell, RunStatus
from benchledger.domain.secrets import MASK

KEY = "sk-proj-Api0123456789abcdefXYZ"
PASSWORD = "urlPassw0rdApi"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "ledger.db"


@pytest.fixture
def ledger(db: Path) -> Iterator[Ledger]:
    with build(Settings(db_path=db)) as services:
        yield services.ledger


def start(ledger: Ledger, run_key: str) -> StartedAttempt:
    started = ledger.start_attempt(
        None,
        benchmark="b",
        agent="a",
        provider="p",
        model="m",
        config={"api_key": KEY},
        mode="force",
        command=["bench", f"--url=https://u:{PASSWORD}@h/v1"],
        cwd=".",
        host="h",
        lease_seconds=60,
        run_key=run_key,
        run_dir="d",
        code_versions={"remote": f"https://x:{PASSWORD}@github.com/o/r"},
        provenance={"note": f"key {KEY}"},
    )
    assert isinstance(started, StartedAttempt)
    return started


def stored(db: Path) -> bytes:
    """The ledger file's bytes and its WAL's: the events as stored, blobs included."""
    with sqlite3.connect(db) as conn:
        dump = "\n".join(conn.iterdump()).encode()
    return b"\n".join([dump, *(p.read_bytes() for p in db.parent.glob(db.name + "*"))])


def test_every_api_write_path_masks_and_keeps_scores_and_keys(ledger: Ledger, db: Path) -> None:
    started = start(ledger, "k1")
    running = ledger.running_run(started.run_id)
    ledger.record_running_cells(
        running, [Cell(key="a", outcome="passed", score=1.0, metrics={"password": 1234})]
    )
    ended = ledger.finish_run(
        started.run_id,
        [
            Cell(key="a", outcome="passed", score=1.0, metrics={"password": 1234}),
            Cell(key="b", outcome="failed", score=0.0, metrics={"log": f"Bearer {KEY}"}),
        ],
        added_facts={"provenance": {"endpoint": f"https://u:{PASSWORD}@h"}},
        status=RunStatus.SUCCEEDED,
        score=0.5,
        metrics={"cookie": "abc", "total_tokens": 12},
        error=f"Authorization: Bearer {KEY}",
    )
    assert ended.status is RunStatus.SUCCEEDED  # the running cell and the final one agree
    assert (ended.score, ended.metrics) == (0.5, {"cookie": MASK, "total_tokens": 12})
    other = start(ledger, "k2")
    assert (
        ledger.record_cells(
            other.run_id, [Cell(key="c", outcome="passed", score=1.0, metrics={"t": KEY})]
        )
        == 1
    )
    held = stored(db)
    assert KEY.encode() not in held and PASSWORD.encode() not in held
    assert MASK.encode() in held
    run = ledger.get_run(started.run_id)
    assert run.score == 0.5
