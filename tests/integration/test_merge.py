"""One run stated by several files of its source: later files add facts, never change one."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from tests.conftest import Invoke
from tests.unit.test_format_orchestrator import (
    RUN_ID,
    db_row,
    latest_row,
    make_db,
    viewer,
    write,
)


def stored(db: Path) -> list[tuple[str, bytes]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute("SELECT topic, state FROM stored_events ORDER BY rowid"))


def facts_added(db: Path) -> list[dict[str, Any]]:
    return [json.loads(state) for topic, state in stored(db) if topic.endswith("RunFactsAdded")]


def add_turns(path: Path, n: int) -> None:
    with closing(sqlite3.connect(path)) as conn, conn:  # closed: the database stays as it is
        conn.execute(
            "CREATE TABLE benchmark_run_trajectories (run_id TEXT, trajectory_file TEXT, "
            "turn_index INTEGER, prompt_tokens INTEGER, completion_tokens INTEGER, "
            "total_tokens INTEGER, cached_tokens INTEGER, cache_creation_tokens INTEGER, "
            "latency_ms REAL, prompt_chars INTEGER)"
        )
        for i in range(n):
            conn.execute(
                "INSERT INTO benchmark_run_trajectories VALUES (?, 't.jsonl', ?, 10, 2, 12, "
                "0, 0, 5.5, 40)",
                (RUN_ID, i),
            )


class TestASparserFileFirst:
    def test_the_database_adds_what_the_latest_row_did_not_state(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        row = db_row()
        invoke("import", str(write(tmp_path / "latest" / "bfcl__eliza.json", latest_row(row))))
        [sparse] = json.loads(invoke("runs", "--json").stdout)
        assert sparse["started_at"] is None and sparse["duration_seconds"] is None
        source = make_db(tmp_path / "db" / "orchestrator.sqlite", [row])
        add_turns(source, 3)
        invoke("import", str(source))
        [event] = facts_added(db)
        added = event["facts"]
        assert added["started_at"].startswith("2026-05-12T10:15:00.12")
        assert added["duration_seconds"] == 401.68
        # What the latest row stated already is not repeated.
        assert "score" not in added and "config" not in added
        assert added["provenance"]["source_columns"]["command"] == json.loads(row["command_json"])
        [run] = json.loads(invoke("runs", "--json").stdout)
        assert run["run_id"] == sparse["run_id"]  # the same run: identity is the run key
        assert (run["started_at"], run["ended_at"]) == (row["started_at"], row["ended_at"])
        assert run["duration_seconds"] == 401.68
        assert run["provenance"]["source_columns"]["eliza_version"] == "2.0.0"
        assert run["provenance"]["source_columns"]["run_group_id"] == row["run_group_id"]
        # The trajectory the database holds joins the run it belongs to.
        shown = json.loads(invoke("show", run["run_id"], "--json").stdout)
        assert [(t["turns"], t["total_tokens"]) for t in shown["trajectories"]] == [(3, 36)]
        before = stored(db)
        invoke("import", str(source))
        invoke("import", str(tmp_path / "latest" / "bfcl__eliza.json"))
        assert stored(db) == before

    def test_the_viewer_after_the_latest_row_adds_times_and_the_database_then_nothing_else(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        row = db_row()
        invoke("import", str(write(tmp_path / "latest" / "bfcl__eliza.json", latest_row(row))))
        invoke("import", str(write(tmp_path / "viewer_data.json", viewer([row]))))
        [from_viewer] = facts_added(db)
        assert "started_at" in from_viewer["facts"]
        invoke("import", str(make_db(tmp_path / "db" / "orchestrator.sqlite", [row])))
        later = facts_added(db)[1]["facts"]
        # Only the columns the viewer does not export (created_at, comparison_id, the
        # flattened call count it overwrites) were left to add.
        assert set(later) == {"provenance"}
        assert set(later["provenance"]["source_columns"]) == {"created_at", "llm_call_count"}


class TestADifferingFact:
    def test_is_a_conflict_naming_the_field_and_both_values_and_appends_nothing(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        row = db_row()
        invoke("import", str(make_db(tmp_path / "db" / "orchestrator.sqlite", [row])))
        before = stored(db)
        changed = latest_row(db_row(score=0.9, model="gpt-oss-20b"))
        path = write(tmp_path / "l" / "bfcl__eliza.json", changed)
        message = invoke("import", str(path), expect=1).stderr
        assert f"run '{RUN_ID}' is already recorded with other facts" in message
        assert "model: recorded 'gpt-oss-120b', this file states 'gpt-oss-20b'" in message
        assert "score: recorded 0.8, this file states 0.9" in message
        assert stored(db) == before

    def test_a_nested_fact_is_named_by_its_path(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        invoke("import", str(make_db(tmp_path / "db" / "orchestrator.sqlite", [db_row()])))
        other = latest_row(db_row(extra_config={"agent": "eliza", "harness": "eliza", "limit": 5}))
        result = invoke("import", str(write(tmp_path / "l" / "bfcl__eliza.json", other)), expect=1)
        assert "config.limit: recorded 10, this file states 5" in result.stderr

    def test_amend_records_the_other_version_as_a_correction(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        invoke("import", str(make_db(tmp_path / "db" / "orchestrator.sqlite", [db_row()])))
        changed = write(tmp_path / "l" / "bfcl__eliza.json", latest_row(db_row(score=0.9)))
        invoke("import", str(changed), "--amend")
        runs = json.loads(invoke("runs", "--json").stdout)
        assert sorted((r["score"], bool(r["superseded_by"])) for r in runs) == [
            (0.8, True),
            (0.9, False),
        ]


class TestARecoveredRun:
    def test_keeps_what_its_source_states_after_the_recovery(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        row = db_row(
            status="failed",
            score=None,
            metrics={"reason": "orchestrator_interrupted"},
            error="Recovered stale running run from interrupted orchestrator process",
            duration_seconds=900.0,
        )
        invoke("import", str(make_db(tmp_path / "db" / "orchestrator.sqlite", [row])))
        [run] = json.loads(invoke("runs", "--json").stdout)
        assert run["status"] == "recovered"
        assert run["metrics"]["reason"] == "orchestrator_interrupted"
        assert run["duration_seconds"] == 900.0 and run["ended_at"] == row["ended_at"]

    def test_the_viewer_after_the_database_agrees_about_a_recovered_run(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        row = db_row(
            status="failed",
            score=None,
            metrics={"reason": "orchestrator_interrupted"},
            error="Recovered stale running run from interrupted orchestrator process",
        )
        invoke("import", str(make_db(tmp_path / "db" / "orchestrator.sqlite", [row])))
        before = stored(db)
        invoke("import", str(write(tmp_path / "viewer_data.json", viewer([row]))))
        assert stored(db) == before


class TestTheLatestRowsOfAMergedRun:
    def test_carry_the_facts_a_later_file_added(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        row = db_row()
        e1 = latest_row(row, vintage="e1")  # no signature, no config
        invoke("import", str(write(tmp_path / "latest" / "bfcl__eliza.json", e1)))
        invoke("import", str(make_db(tmp_path / "db" / "orchestrator.sqlite", [row])))
        with sqlite3.connect(db) as conn:
            conn.row_factory = sqlite3.Row
            [latest] = [dict(r) for r in conn.execute("SELECT * FROM latest")]
            [run] = [dict(r) for r in conn.execute("SELECT * FROM runs")]
        assert latest["started_at"] == row["started_at"]
        assert json.loads(latest["config"]) == json.loads(row["extra_config_json"])
        # The signatures follow the config the database brought.
        assert latest["signature"] == run["signature"] == row["signature"]
        assert latest["comparison_signature"] == run["comparison_signature"]


class TestShownToAUser:
    def test_show_prints_the_provenance_and_events_name_the_added_facts(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        row = db_row()
        invoke("import", str(write(tmp_path / "latest" / "bfcl__eliza.json", latest_row(row))))
        invoke("import", str(make_db(tmp_path / "db" / "orchestrator.sqlite", [row])))
        [run] = json.loads(invoke("runs", "--json").stdout)
        shown = invoke("show", run["run_id"]).stdout
        assert '"eliza_commit": "d4e5f6a"' in shown and "provenance" in shown
        events = invoke("events").stdout
        assert "added duration_seconds, ended_at, metrics, provenance, started_at from" in events
