"""The chain in a PostgreSQL event store: one chain for every reader, checked by each."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from benchledger.commands.cli import cli
from tests.helpers import run_json, write_json
from tests.integration.test_tamper import writers_at_once

URL = os.environ.get("BENCHLEDGER_TEST_POSTGRES_URL")
pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        not URL,
        reason="set BENCHLEDGER_TEST_POSTGRES_URL (e.g. postgresql://postgres@127.0.0.1/test) "
        "to run the PostgreSQL tests; .ci/run sets it",
    ),
]
EVENTS, CHAIN = "ledger_events", "ledger_events_chain"


@pytest.fixture
def schema() -> Iterator[str]:
    import psycopg

    assert URL
    name = f"bl_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    yield name
    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {name} CASCADE")


@pytest.fixture
def store_url(schema: str) -> str:
    assert URL
    return f"{URL}{'&' if '?' in URL else '?'}schema={schema}"


def sql(schema: str, statement: str) -> list[tuple[object, ...]]:
    import psycopg

    assert URL
    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(f"SET search_path TO {schema}")
        cursor = conn.execute(statement)
        return cursor.fetchall() if cursor.description else []


def cli_with(store_url: str, db: Path, *args: str, expect: int = 0) -> Result:
    result = CliRunner().invoke(cli, ["--db", str(db), "--event-store", store_url, *args])
    assert result.exit_code == expect, result.stdout + result.stderr + repr(result.exception)
    return result


def test_the_chain_lives_in_the_store_beside_the_events(
    store_url: str, schema: str, tmp_path: Path
) -> None:
    cli_with(store_url, tmp_path / "writer.db", "demo")
    ((events,),) = sql(schema, f"SELECT count(*) FROM {EVENTS}")
    ((chained,),) = sql(schema, f"SELECT count(*) FROM {CHAIN}")
    assert chained == events > 100
    report = json.loads(cli_with(store_url, tmp_path / "fresh.db", "verify", "--json").stdout)
    assert report["ok"] and report["checked"] == events


def test_an_edited_event_is_caught_by_a_fresh_reader(
    store_url: str, schema: str, tmp_path: Path
) -> None:
    cli_with(store_url, tmp_path / "writer.db", "demo")
    sql(schema, f"UPDATE {EVENTS} SET state = state || '\\x20'::bytea WHERE notification_id = 7")
    result = cli_with(store_url, tmp_path / "fresh.db", "verify", expect=1)
    assert "tampering detected at position 7" in result.stderr
    assert "does not match the hash recorded" in result.stderr
    read_only = CliRunner().invoke(
        cli,
        ["--db", str(tmp_path / "writer.db"), "--event-store", store_url, "--read-only", "verify"],
    )
    assert read_only.exit_code == 1 and "position 7" in read_only.stderr


def test_a_forged_event_and_deleted_chain_rows_are_caught(
    store_url: str, schema: str, tmp_path: Path
) -> None:
    cli_with(store_url, tmp_path / "writer.db", "demo")
    ((end,),) = sql(schema, f"SELECT max(notification_id) FROM {EVENTS}")
    sql(
        schema,
        f"INSERT INTO {EVENTS} (originator_id, originator_version, topic, state) "
        f"SELECT originator_id, originator_version + 1000, topic, state FROM {EVENTS} "
        f"WHERE notification_id = {end}",
    )
    report = json.loads(
        cli_with(store_url, tmp_path / "fresh.db", "verify", "--json", expect=1).stdout
    )
    assert report["bad_position"] > end and "no entry in the store's chain" in report["problem"]
    sql(schema, f"DELETE FROM {EVENTS} WHERE notification_id > {end}")
    sql(schema, f"DELETE FROM {CHAIN} WHERE position >= 9")
    again = json.loads(
        cli_with(store_url, tmp_path / "fresh2.db", "verify", "--json", expect=1).stdout
    )
    assert again["bad_position"] == 9


def test_a_truncated_tail_is_caught_by_a_reader_that_saw_it(
    store_url: str, schema: str, tmp_path: Path
) -> None:
    reader = tmp_path / "reader.db"
    cli_with(store_url, reader, "demo")
    ((end,),) = sql(schema, f"SELECT max(notification_id) FROM {EVENTS}")
    sql(schema, f"DELETE FROM {EVENTS} WHERE notification_id > {end - 10}")
    sql(schema, f"DELETE FROM {CHAIN} WHERE position > {end - 10}")
    report = json.loads(cli_with(store_url, reader, "verify", "--json", expect=1).stdout)
    assert report["bad_position"] == end - 9


def test_concurrent_writers_leave_one_unbroken_chain(
    store_url: str, schema: str, tmp_path: Path
) -> None:
    outcomes = writers_at_once(tmp_path, 8, "--event-store", store_url)
    assert [code for code, _ in outcomes] == [0] * 8, outcomes
    ((events,),) = sql(schema, f"SELECT count(*) FROM {EVENTS}")
    ((chained,),) = sql(schema, f"SELECT count(*) FROM {CHAIN}")
    assert chained == events > 8
    cli_with(store_url, tmp_path / "fresh.db", "verify")


def test_a_store_written_before_the_chain_is_upgraded_once(
    store_url: str, schema: str, tmp_path: Path
) -> None:
    reader = tmp_path / "reader.db"
    cli_with(store_url, reader, "demo")
    sql(schema, f"DELETE FROM {CHAIN}")
    assert "upgrade-chain" in cli_with(store_url, reader, "verify", expect=1).stderr
    path = write_json(tmp_path / "r.json", run_json(run_key="new"))
    assert "upgrade-chain" in cli_with(store_url, reader, "import", str(path), expect=1).stderr
    upgraded = json.loads(cli_with(store_url, reader, "upgrade-chain", "--json").stdout)
    assert upgraded["upgraded"]
    cli_with(store_url, reader, "import", str(path))
    report = json.loads(cli_with(store_url, tmp_path / "fresh.db", "verify", "--json").stdout)
    assert report["ok"] and report["head_position"] > upgraded["position"] + 1


def test_a_writer_killed_inside_its_transaction_leaves_the_chain_whole(
    store_url: str, schema: str, tmp_path: Path
) -> None:
    import signal
    import subprocess
    import sys
    import time

    from tests.e2e.test_streaming_import import write_big_file

    cli_with(store_url, tmp_path / "writer.db", "demo")
    big = write_big_file(tmp_path / "big.jsonl", runs=60)
    command = [sys.executable, "-c", "from benchledger.commands.cli import cli; cli()"]
    command += ["--db", str(tmp_path / "killed.db"), "--event-store", store_url, "import", str(big)]
    process = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    locked = (
        "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
        f"JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '{schema}' "
        f"AND c.relname = '{EVENTS}' AND l.mode = 'ExclusiveLock' AND l.granted"
    )
    try:
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:
            if sql(schema, locked)[0][0]:  # inside its insert transaction
                process.send_signal(signal.SIGKILL)
                break
            time.sleep(0.01)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
    assert process.returncode == -signal.SIGKILL, "the import ended before the kill"
    ((unchained,),) = sql(
        schema,
        f"SELECT count(*) FROM {EVENTS} e LEFT JOIN {CHAIN} c ON c.position = e.notification_id "
        "WHERE c.position IS NULL",
    )
    ((orphans,),) = sql(
        schema,
        f"SELECT count(*) FROM {CHAIN} c LEFT JOIN {EVENTS} e ON c.position = e.notification_id "
        "WHERE e.notification_id IS NULL",
    )
    assert unchained == orphans == 0
    cli_with(store_url, tmp_path / "fresh.db", "verify")
    cli_with(store_url, tmp_path / "killed.db", "import", str(big))
    cli_with(store_url, tmp_path / "fresh2.db", "verify")


def test_events_are_chained_even_where_the_stored_function_insert_is_enabled(
    store_url: str, schema: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POSTGRES_ENABLE_DB_FUNCTIONS", "y")
    cli_with(
        store_url,
        tmp_path / "writer.db",
        "import",
        str(write_json(tmp_path / "r.json", run_json())),
    )
    ((events,),) = sql(schema, f"SELECT count(*) FROM {EVENTS}")
    ((chained,),) = sql(schema, f"SELECT count(*) FROM {CHAIN}")
    assert chained == events > 0
    cli_with(store_url, tmp_path / "fresh.db", "verify")
