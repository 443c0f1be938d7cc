"""inspect_ai evals recorded live through benchledger's inspect hooks (an entry point).

Each test runs `inspect eval` of a small offline task (tests/fixtures/inspect/live_task.py,
on the mock model) in a subprocess, as a user does: the hooks are found through the
installed entry point, never imported by the test. The run they record must be the run
importing the eval's log records: the log's import appends nothing.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from benchledger.adapters.integrations import inspect_hooks
from benchledger.commands.cli import cli

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "tests" / "fixtures" / "inspect" / "live_task.py"
INSPECT = Path(sys.executable).parent / "inspect"
POSTGRES_URL = os.environ.get("BENCHLEDGER_TEST_POSTGRES_URL")
# Bounds a test waits for an eval: generous, never asserted as a duration.
EVAL_TIMEOUT = 300


def ledger_cli(db: Path, *args: str, store: str | None = None, expect: int = 0) -> Result:
    prefix = ["--db", str(db), *(["--event-store", store] if store else [])]
    result = CliRunner().invoke(cli, [*prefix, *args])
    assert result.exit_code == expect, f"{result.output}\n{result.exception!r}"
    return result


def runs(db: Path, store: str | None = None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(ledger_cli(db, "runs", "--json", store=store).stdout)
    return rows


def runs_once_created(db: Path) -> list[dict[str, Any]]:
    """`runs` while another process may be creating the ledger: until its first commit the
    file is empty, which a reader is told plainly ("no ledger at ..."), and that means not yet."""
    result = CliRunner().invoke(cli, ["--db", str(db), "runs", "--json"])
    if result.exit_code != 0 and "no ledger at" in result.output:
        return []
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


def eval_env(ledger: str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHLEDGER", "LIVE_"))}
    if ledger is not None:
        env["BENCHLEDGER_INSPECT"] = ledger
    return {**env, "LIVE_SLEEP": "0", **extra}


def start_eval(folder: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """`inspect eval` of the fixture task in `folder`, its log written to folder/logs."""
    shutil.copy(TASK, folder / TASK.name)
    command = [str(INSPECT), "eval", TASK.name, "--model", "mockllm/model"]
    command += ["--log-dir", "logs", "--display", "plain", *args]
    return subprocess.Popen(
        command,
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def run_eval(folder: Path, env: dict[str, str], *args: str) -> str:
    process = start_eval(folder, env, *args)
    output, _ = process.communicate(timeout=EVAL_TIMEOUT)
    assert process.returncode == 0, output
    return output


def the_log(folder: Path) -> Path:
    [log] = (folder / "logs").glob("*.eval")
    return log


def stored_events(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        (count,) = conn.execute("SELECT count(*) FROM stored_events").fetchone()
    return int(count)


def cells(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT run_id, key, outcome, score, metrics FROM cells ORDER BY run_id, key"
        ).fetchall()


def imported_alone(log: Path, db: Path) -> list[dict[str, Any]]:
    """The runs an import of `log` into a ledger of its own records."""
    ledger_cli(db, "import", str(log))
    return runs(db)


class TestTheEntryPoint:
    def test_inspect_finds_the_hooks_through_the_installed_entry_point(self) -> None:
        [point] = [e for e in entry_points(group="inspect_ai") if e.name == "benchledger"]
        assert point.value == "benchledger.adapters.integrations.inspect_hooks"

    def test_the_hooks_are_enabled_only_when_a_ledger_is_named(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        hooks = inspect_hooks.BenchledgerHooks()
        monkeypatch.delenv("BENCHLEDGER_INSPECT", raising=False)
        assert not hooks.enabled()
        monkeypatch.setenv("BENCHLEDGER_INSPECT", "")
        assert not hooks.enabled()
        monkeypatch.setenv("BENCHLEDGER_INSPECT", "ledger.db")
        assert hooks.enabled()


@pytest.mark.slow
class TestALiveEval:
    def test_the_run_is_seen_while_it_runs_and_its_log_adds_nothing(self, tmp_path: Path) -> None:
        db, gate = tmp_path / "live.db", tmp_path / "go"
        env = eval_env(str(db), LIVE_GATE=str(gate), LIVE_SAMPLES="6")
        process = start_eval(tmp_path, env, "--max-samples", "6")
        seen: dict[str, Any] | None = None
        give_up = time.monotonic() + EVAL_TIMEOUT
        try:
            # The last sample waits for the gate: the eval cannot end before it opens.
            while process.poll() is None and time.monotonic() < give_up:
                if db.exists():
                    rows = runs_once_created(db)
                    if rows and rows[0]["cells"] >= 1:
                        seen = rows[0]
                        break
                time.sleep(0.2)
        finally:
            gate.touch()
            output, _ = process.communicate(timeout=EVAL_TIMEOUT)
        assert process.returncode == 0, output
        assert seen is not None, output
        assert seen["status"] == "running" and 1 <= seen["cells"] <= 5
        [run] = runs(db)
        assert run["run_id"] == seen["run_id"]
        assert run["status"] == "succeeded" and run["cells"] == 6 and run["score"] == 0.5
        assert "could not record" not in output

        before, state = stored_events(db), cells(db)
        result = ledger_cli(db, "import", str(the_log(tmp_path)))
        assert "1 unchanged" in result.stderr and "0 imported" in result.stderr
        assert stored_events(db) == before
        assert cells(db) == state and runs(db) == [run]

        # A ledger that only imports the log records the same run, cells and facts.
        alone = tmp_path / "alone.db"
        [imported] = imported_alone(the_log(tmp_path), alone)
        for field in ("run_id", "run_key", "status", "score", "cells", "signature", "tokens"):
            assert imported[field] == run[field], field
        assert cells(alone) == state
        shown = json.loads(ledger_cli(db, "show", run["run_id"], "--json").stdout)
        again = json.loads(ledger_cli(alone, "show", run["run_id"], "--json").stdout)
        for field in ("config", "metrics", "provenance", "started_at", "ended_at", "unit"):
            assert shown["run"][field] == again["run"][field], field

    def test_epochs_and_an_errored_sample_are_recorded_as_the_log_states_them(
        self, tmp_path: Path
    ) -> None:
        db = tmp_path / "live.db"
        output = run_eval(tmp_path, eval_env(str(db), LIVE_FAIL="3"), "--epochs", "2")
        [run] = runs(db)
        assert run["status"] == "error", output
        state = cells(db)
        assert ("3:epoch1", "error") in [(c[1], c[2]) for c in state]
        before = stored_events(db)
        result = ledger_cli(db, "import", str(the_log(tmp_path)))
        assert "1 unchanged" in result.stderr
        assert stored_events(db) == before and cells(db) == state
        imported_alone(the_log(tmp_path), tmp_path / "alone.db")
        assert cells(tmp_path / "alone.db") == state

    def test_a_secret_given_to_the_task_is_masked_as_its_import_masks_it(
        self, tmp_path: Path
    ) -> None:
        db, secret = tmp_path / "live.db", "Xq7mP2vLr9Tz4Wk8nB3c"
        env = eval_env(str(db), LIVE_SAMPLES="2", LIVE_FAIL="2")
        run_eval(tmp_path, env, "-T", f"api_key={secret}", "--max-samples", "1")
        [run] = runs(db)
        assert run["status"] == "error" and run["cells"] == 2
        shown = json.loads(ledger_cli(db, "show", run["run_id"], "--json").stdout)["run"]
        assert shown["config"]["task_args"]["api_key"] != secret
        # The plan's parameters and the failed sample's error (which quotes it) are masked.
        assert secret not in json.dumps(shown["provenance"]) and secret not in str(cells(db))
        assert "fails on purpose" in str(cells(db))
        before = stored_events(db)
        assert "1 unchanged" in ledger_cli(db, "import", str(the_log(tmp_path))).stderr
        assert stored_events(db) == before
        # Whatever an import of the log keeps of it (the run's error quotes it), no more.
        alone = tmp_path / "alone.db"
        imported_alone(the_log(tmp_path), alone)
        held = ledger_cli(db, "events", "--json").stdout.count(secret)
        assert held == ledger_cli(alone, "events", "--json").stdout.count(secret)

    def test_a_later_eval_is_another_run(self, tmp_path: Path) -> None:
        db = tmp_path / "live.db"
        for folder in ("a", "b"):
            (tmp_path / folder).mkdir()
            run_eval(tmp_path / folder, eval_env(str(db), LIVE_SAMPLES="2"))
        assert [r["status"] for r in runs(db)] == ["succeeded", "succeeded"]
        assert len({r["run_id"] for r in runs(db)}) == 2


@pytest.mark.slow
class TestTheEvalNeverBreaks:
    def test_a_ledger_it_cannot_open_leaves_the_eval_and_its_log_whole(
        self, tmp_path: Path
    ) -> None:
        not_a_ledger = tmp_path / "notes.txt"
        not_a_ledger.write_text("shopping list\n")
        output = run_eval(tmp_path, eval_env(str(not_a_ledger), LIVE_SAMPLES="3"))
        assert the_log(tmp_path).stat().st_size > 0
        assert output.count("could not record") == 1, output
        assert not_a_ledger.read_text() == "shopping list\n"

    def test_without_the_variable_no_ledger_is_made(self, tmp_path: Path) -> None:
        env = eval_env(None, LIVE_SAMPLES="2", BENCHLEDGER_DB=str(tmp_path / "env.db"))
        output = run_eval(tmp_path, env)
        assert the_log(tmp_path).is_file()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["live_task.py", "logs"], output
        assert "benchledger" not in output


class FailingRecorder:
    target = "ledger.db"
    evals: dict[str, Any] = {}

    def sample_end(self, eval_id: str, sample: dict[str, Any]) -> None:
        raise OSError("disk full")

    def close(self) -> None:
        pass


class TestAFailureInsideAHook:
    def test_is_a_warning_once_and_never_raised(
        self, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        import asyncio
        from types import SimpleNamespace

        monkeypatch.setenv("BENCHLEDGER_INSPECT", "ledger.db")
        hooks = inspect_hooks.BenchledgerHooks()
        hooks._recorder = FailingRecorder()  # type: ignore[assignment]
        sample = SimpleNamespace(id=1, model_dump=lambda **_: {"id": 1})
        data = SimpleNamespace(eval_id="e1", sample=sample)
        with caplog.at_level(logging.WARNING):
            for _ in range(3):
                asyncio.run(hooks.on_sample_end(data))  # type: ignore[arg-type]
        warnings = [r.getMessage() for r in caplog.records]
        assert len(warnings) == 1 and "OSError: disk full" in warnings[0]


def doc_session() -> list[str]:
    """The commands of docs/inspect.md's session, as shown."""
    page = (ROOT / "docs" / "inspect.md").read_text()
    found = re.search(r"<!-- inspect-session -->\n```console\n(.*?)```", page, re.S)
    assert found, "docs/inspect.md shows no inspect session"
    return [line.removeprefix("$ ") for line in found[1].splitlines() if line.startswith("$ ")]


@pytest.mark.slow
def test_the_documented_session_runs_as_shown(tmp_path: Path) -> None:
    commands = doc_session()
    assert any(c.startswith("inspect eval") for c in commands)
    shutil.copy(TASK, tmp_path / TASK.name)
    env = eval_env(None)
    env["PATH"] = f"{INSPECT.parent}{os.pathsep}{env.get('PATH', '')}"
    script = "set -e\n" + "\n".join(commands) + "\n"
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=EVAL_TIMEOUT,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    [run] = runs(tmp_path / "ledger.db")
    assert run["status"] == "succeeded" and run["cells"] == 6 and run["score"] == 0.5
    assert "1 unchanged" in output and "0 imported" in output
    assert "could not record" not in output


@pytest.fixture
def store_url() -> Iterator[str]:
    """A fresh schema of the test database, as tests/integration/test_postgres.py uses."""
    import psycopg

    if not POSTGRES_URL:
        if os.environ.get("BENCHLEDGER_REQUIRE_POSTGRES"):
            pytest.fail("BENCHLEDGER_REQUIRE_POSTGRES is set, BENCHLEDGER_TEST_POSTGRES_URL is not")
        pytest.skip("set BENCHLEDGER_TEST_POSTGRES_URL to record an eval in PostgreSQL")
    schema = f"bl_inspect_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    yield f"{POSTGRES_URL}{'&' if '?' in POSTGRES_URL else '?'}schema={schema}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.mark.slow
@pytest.mark.postgres
def test_an_eval_is_recorded_in_postgresql(store_url: str, tmp_path: Path) -> None:
    run_eval(tmp_path, eval_env(store_url, LIVE_SAMPLES="3"))
    reader = tmp_path / "reader.db"
    [run] = runs(reader, store_url)
    assert run["status"] == "succeeded" and run["cells"] == 3
    result = ledger_cli(reader, "import", str(the_log(tmp_path)), store=store_url)
    assert "1 unchanged" in result.stderr
    assert runs(reader, store_url) == [run]
