"""The event store on PostgreSQL (eventsourcing's postgres module), read models in SQLite."""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.commands.cli import cli
from benchledger.domain.errors import ConcurrencyError
from benchledger.domain.records import RunHeader, RunRecord, SourceFile
from tests.helpers import run_json, write_json

URL = os.environ.get("BENCHLEDGER_TEST_POSTGRES_URL")
if os.environ.get("BENCHLEDGER_REQUIRE_POSTGRES") and not URL:
    raise RuntimeError(
        "BENCHLEDGER_REQUIRE_POSTGRES is set but BENCHLEDGER_TEST_POSTGRES_URL is not"
    )
pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        not URL,
        reason="set BENCHLEDGER_TEST_POSTGRES_URL (e.g. postgresql://postgres@127.0.0.1/test) "
        "to run the PostgreSQL tests; .ci/run sets it",
    ),
]


@pytest.fixture
def store_url() -> Iterator[str]:
    import psycopg

    assert URL
    schema = f"bl_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in URL else "?"
    yield f"{URL}{sep}schema={schema}"
    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def cli_with(store_url: str, db: Path, *args: str, expect: int = 0) -> Result:
    result = CliRunner().invoke(cli, ["--db", str(db), "--event-store", store_url, *args])
    assert result.exit_code == expect, result.stderr + repr(result.exception)
    return result


def test_imports_reimports_and_verifies_with_events_in_postgres(
    store_url: str, tmp_path: Path
) -> None:
    db = tmp_path / "reader.db"
    path = write_json(tmp_path / "run.json", run_json(cells=[{"key": "a", "outcome": "passed"}]))
    cli_with(store_url, db, "import", str(path))
    assert "1 unchanged" in cli_with(store_url, db, "import", str(path)).stderr
    [run] = json.loads(cli_with(store_url, db, "runs", "--json").stdout)
    assert run["cells"] == 1 and run["score"] == 0.5
    assert json.loads(cli_with(store_url, db, "verify", "--json").stdout)["ok"]


def test_a_verdict_is_appended_to_the_ledgers_own_events(store_url: str, tmp_path: Path) -> None:
    """A gate opens the ledger as `Publishing` (what records verdicts): its verdict joins
    the events every other command appends to, and is found by another reader."""
    db = tmp_path / "reader.db"
    path = write_json(tmp_path / "run.json", run_json(cells=[{"key": "a", "outcome": "passed"}]))
    cli_with(store_url, db, "import", str(path))
    cli_with(store_url, db, "gate", "comparability")
    for reader in (db, tmp_path / "other.db"):
        [verdict] = json.loads(cli_with(store_url, reader, "gates", "--json").stdout)
        assert verdict["gate"] == "comparability"
    log = json.loads(cli_with(store_url, db, "events", "--json").stdout)
    assert [e["type"] for e in log][-1] == "GateEvaluated"
    assert json.loads(cli_with(store_url, db, "verify", "--json").stdout)["ok"]


def test_a_second_reader_builds_its_own_read_model_from_the_shared_store(
    store_url: str, tmp_path: Path
) -> None:
    cli_with(store_url, tmp_path / "writer.db", "demo")
    mine = json.loads(cli_with(store_url, tmp_path / "writer.db", "runs", "--json").stdout)
    theirs = json.loads(cli_with(store_url, tmp_path / "other.db", "runs", "--json").stdout)
    assert len(theirs) == len(mine) == 79
    assert [r["run_id"] for r in theirs] == [r["run_id"] for r in mine]


def test_two_writers_cannot_both_record_the_same_run(store_url: str, tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "a.db", event_store_url=store_url)
    record = RunRecord(
        header=RunHeader(run_key="r", benchmark="b", agent="a", model="m", status="succeeded")
    )
    with build(settings) as first, build(settings) as second:
        # Both decide the run is new before either appends: the store must refuse one.
        events_a = first.ledger._run_events(
            "native",
            uuid.UUID(int=1),
            record,
            SourceFile(path="a", sha256="0", size=1, format="native"),
            "c",
            None,
        )
        events_b = second.ledger._run_events(
            "native",
            uuid.UUID(int=1),
            record,
            SourceFile(path="b", sha256="1", size=1, format="native"),
            "d",
            None,
        )
        first.ledger._save(events_a)
        with pytest.raises(ConcurrencyError):
            second.ledger._save(events_b)


def test_follow_brings_a_readers_model_up_to_date(store_url: str, tmp_path: Path) -> None:
    reader = tmp_path / "reader.db"
    waiting = cli_with(store_url, reader, "follow", "--polls", "1")
    assert waiting.stderr.startswith("Following the event store at postgresql://")
    assert f"into the read models of {reader}, polling every 2 s" in waiting.stderr
    assert json.loads(cli_with(store_url, reader, "runs", "--json").stdout) == []
    cli_with(store_url, tmp_path / "writer.db", "demo")
    result = cli_with(store_url, reader, "follow", "--polls", "2", "--interval", "0.05")
    assert "applied" in result.stderr
    with sqlite3.connect(reader) as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone() == (79,)


# Each process loads everything, then waits for the same moment to open the store.
AT_ONCE = """
import sys, time
from pathlib import Path
from benchledger.commands.cli import cli
go = Path(sys.argv.pop(1))
while not go.exists():
    time.sleep(0.005)
cli()
"""


def test_eight_processes_opening_a_fresh_store_at_once_all_succeed(
    store_url: str, tmp_path: Path
) -> None:
    import subprocess
    import sys
    import time

    go = tmp_path / "go"
    procs = []
    for i in range(8):
        path = write_json(tmp_path / f"run{i}.json", run_json(benchmark=f"b{i}", run_key=f"k{i}"))
        db = tmp_path / f"r{i}.db"
        command = [sys.executable, "-c", AT_ONCE, str(go), "--db", str(db)]
        command += ["--event-store", store_url, "import", str(path)]
        procs.append(subprocess.Popen(command, stderr=subprocess.PIPE, text=True))
    time.sleep(3)  # let every process finish its imports and wait at the start line
    go.touch()
    outcomes = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in procs]
    assert [code for code, _ in outcomes] == [0] * 8, outcomes
    runs = json.loads(cli_with(store_url, tmp_path / "reader.db", "runs", "--json").stdout)
    assert sorted(r["benchmark"] for r in runs) == [f"b{i}" for i in range(8)]


def jsonl_runs(path: Path, *runs: tuple[str, float]) -> Path:
    lines = []
    for key, score in runs:
        head = {"type": "run", "run_key": key, "benchmark": "bfcl", "agent": "eliza"}
        head |= {"model": "m", "status": "succeeded", "score": score}
        lines.append(json.dumps(head))
        lines += [
            json.dumps({"type": "cell", "key": f"c{i}", "outcome": "passed"}) for i in range(3)
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_conflict_late_in_a_streamed_file_appends_none_of_it(
    store_url: str, tmp_path: Path
) -> None:
    db = tmp_path / "reader.db"
    cli_with(store_url, db, "import", str(jsonl_runs(tmp_path / "b.jsonl", ("b", 0.5))))
    before = json.loads(cli_with(store_url, db, "events", "--json").stdout)
    both = jsonl_runs(tmp_path / "ab.jsonl", ("a", 0.1), ("b", 0.9))
    result = cli_with(store_url, db, "import", str(both), expect=1)
    assert "already recorded with other facts: score: recorded 0.5" in result.stderr
    assert json.loads(cli_with(store_url, db, "events", "--json").stdout) == before
    assert [r["run_key"] for r in json.loads(cli_with(store_url, db, "runs", "--json").stdout)] == [
        "b"
    ]
