"""An orchestrator.sqlite is read in batches of rows (where it is, or from a copy when a
write-ahead log lies beside it), and gives what reading it whole gives; a database
written to while it is imported records nothing."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters import formats
from benchledger.adapters.formats import orchestrator_sources
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord
from tests.conftest import Invoke
from tests.unit.test_format_orchestrator import db_row, make_db


def many_rows(n: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        status = ("succeeded", "failed", "skipped", "incompatible")[i % 4]
        prefix = {"skipped": "skip", "incompatible": "incompat"}.get(status, "run")
        metrics = {"n": 10, "return_code": 0} if prefix == "run" else {"reason": "x"}
        rows.append(
            db_row(
                run_id=f"{prefix}_bench{i % 3}_20260512T1015{i % 60:02d}Z_{1 + i // 60}_{i:08x}",
                benchmark_id=f"bench{i % 3}",
                benchmark_directory=f"bench{i % 3}",
                status=status,
                metrics=metrics,
            )
        )
    return rows


def stored_events(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM stored_events").fetchone()[0])


class TestStreamedDatabase:
    def test_batches_of_rows_give_what_the_whole_database_gives(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        db = make_db(tmp_path / "orchestrator.sqlite", many_rows(23))
        fmt = formats.load("orchestrator")
        monkeypatch.setattr(orchestrator_sources, "ROW_BATCH", 4)
        streamed = list(formats.stream(fmt, db))
        whole = formats.parse(fmt, db, db.read_bytes())
        assert streamed == whole and len(whole) == 23

    def test_rows_still_in_the_write_ahead_log_are_read(self, tmp_path: Path) -> None:
        db = make_db(tmp_path / "orchestrator.sqlite", many_rows(2))
        keep = sqlite3.connect(db)  # holds the log open: it is not checkpointed away
        keep.execute("PRAGMA wal_autocheckpoint=0")
        row = many_rows(3)[2]
        names = ", ".join(row)
        keep.execute(
            f"INSERT INTO benchmark_runs ({names}) VALUES ({', '.join('?' * len(row))})",
            list(row.values()),
        )
        keep.commit()
        try:
            assert db.with_name(db.name + "-wal").stat().st_size > 0
            records = list(formats.stream(formats.load("orchestrator"), db))
        finally:
            keep.close()
        assert len(records) == 3

    def test_a_database_without_a_log_is_read_where_it_is_and_left_untouched(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        db = make_db(tmp_path / "orchestrator.sqlite", many_rows(9))
        assert not db.with_name(db.name + "-wal").exists()
        with closing(sqlite3.connect(db)) as conn:
            conn.execute("PRAGMA journal_mode=DELETE")
        before = (db.read_bytes(), db.stat().st_mtime_ns)

        def no_copy(*args: Any, **kwargs: Any) -> None:
            raise AssertionError("a database with no log beside it is not copied")

        monkeypatch.setattr(orchestrator_sources.shutil, "copyfile", no_copy)
        # The orchestrator holds its file locked (a write begun in a rollback-journal
        # database): an immutable reader takes no lock, so it neither waits nor fails.
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            records = list(formats.stream(formats.load("orchestrator"), db))
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert len(records) == 9
        assert sorted(p.name for p in tmp_path.iterdir()) == ["orchestrator.sqlite"]
        assert (db.read_bytes(), db.stat().st_mtime_ns) == before

    def test_a_database_read_in_place_that_is_overwritten_meanwhile_is_refused_as_changed(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        db = make_db(tmp_path / "orchestrator.sqlite", many_rows(300))
        monkeypatch.setattr(orchestrator_sources, "ROW_BATCH", 2)
        stream = formats.stream(formats.load("orchestrator"), db)
        next(stream)
        # Rewritten under the reader (what no orchestrator write does in place, but a
        # copy over the file might): the pages still to read are no database any more.
        size = db.stat().st_size
        with open(db, "r+b") as f:
            f.seek(4096)
            f.write(b"\xff" * (size - 4096))
        with pytest.raises(InputFormatError, match="changed while it was being imported"):
            list(stream)

    def test_a_database_written_to_while_it_is_imported_records_nothing(
        self, invoke: Invoke, db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        source = make_db(tmp_path / "src" / "orchestrator.sqlite", many_rows(8))
        streamed = formats.stream

        def stream_while_the_orchestrator_writes(*args: Any, **kwargs: Any) -> Iterator[Any]:
            for i, record in enumerate(streamed(*args, **kwargs)):
                if i == 0 and args[1] == source:  # the orchestrator records a run meanwhile
                    conn = sqlite3.connect(source)
                    conn.execute("PRAGMA wal_autocheckpoint=0")
                    conn.execute("UPDATE benchmark_runs SET score = 0.1")
                    conn.commit()
                    conn.close()
                yield record

        invoke("demo")
        monkeypatch.setattr(formats, "stream", stream_while_the_orchestrator_writes)
        before = stored_events(db)
        result = invoke("import", str(source), expect=1)
        assert "orchestrator.sqlite: changed while it was being imported" in result.stderr
        assert stored_events(db) == before

    def test_a_log_that_grows_or_appears_while_it_is_imported_records_nothing(
        self, invoke: Invoke, db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        source = make_db(tmp_path / "src" / "orchestrator.sqlite", many_rows(8))
        writer = sqlite3.connect(source)  # stays open: its writes stay in the log
        writer.execute("PRAGMA wal_autocheckpoint=0")
        streamed = formats.stream

        def stream_while_the_orchestrator_writes(*args: Any, **kwargs: Any) -> Iterator[Any]:
            for i, record in enumerate(streamed(*args, **kwargs)):
                if i == 0 and args[1] == source:
                    writer.execute("UPDATE benchmark_runs SET score = 0.2")
                    writer.commit()
                yield record

        invoke("demo")
        monkeypatch.setattr(formats, "stream", stream_while_the_orchestrator_writes)
        before = stored_events(db)
        try:
            result = invoke("import", str(source), expect=1)
        finally:
            writer.close()
        assert "changed while it was being imported" in result.stderr
        assert stored_events(db) == before


class TestSkipsKeepTheirFacts:
    def test_a_skip_keeps_its_time_attempt_signature_and_the_run_it_points_to(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        skip = db_row(
            run_id="skip_bfcl_20260512T101500Z_3_0000abcd",
            status="skipped",
            attempt=3,
            started_at="2026-05-12T10:15:00.123456+00:00",
            metrics={
                "reason": "already_succeeded",
                "signature": "51c42ab1",
                "existing_succeeded_run_id": "run_bfcl_20260511T090000Z_2_00001234",
            },
            command_json="[]",
            duration_seconds=0,
        )
        source = make_db(tmp_path / "src" / "orchestrator.sqlite", [skip])
        invoke("import", str(source))
        with sqlite3.connect(db) as conn:
            conn.row_factory = sqlite3.Row
            [row] = conn.execute("SELECT * FROM skips").fetchall()
        assert row["time"] == "2026-05-12T10:15:00.123456+00:00"
        assert row["attempt"] == 3 and row["recorded_at"] != row["time"]
        provenance = json.loads(row["provenance"])
        assert provenance["run_id"] == "skip_bfcl_20260512T101500Z_3_0000abcd"
        assert provenance["signature"] == skip["signature"]
        assert provenance["metrics"]["existing_succeeded_run_id"] == (
            "run_bfcl_20260511T090000Z_2_00001234"
        )


TRAJECTORIES = (
    "CREATE TABLE benchmark_run_trajectories (run_id TEXT NOT NULL, trajectory_file TEXT "
    "NOT NULL, turn_index INTEGER NOT NULL, prompt_tokens INTEGER NOT NULL DEFAULT 0, "
    "completion_tokens INTEGER NOT NULL DEFAULT 0, total_tokens INTEGER NOT NULL DEFAULT 0, "
    "cached_tokens INTEGER NOT NULL DEFAULT 0, cache_creation_tokens INTEGER NOT NULL "
    "DEFAULT 0, latency_ms REAL, prompt_chars INTEGER NOT NULL DEFAULT 0, "
    "PRIMARY KEY (run_id, trajectory_file, turn_index))"
)


def with_turns(db: Path, turns: list[tuple[Any, ...]]) -> Path:
    conn = sqlite3.connect(db)
    conn.execute(TRAJECTORIES)
    conn.executemany(
        "INSERT INTO benchmark_run_trajectories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", turns
    )
    conn.commit()
    conn.close()
    return db


class TestTrajectories:
    def test_every_turn_of_the_database_is_a_row_of_turns_and_shown_with_its_run(
        self, invoke: Invoke, db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(orchestrator_sources, "ROW_BATCH", 3)  # turns fetched per batch
        rows = many_rows(8)
        runs = [r["run_id"] for r in rows if r["run_id"].startswith("run_")]
        turns = [
            (run_id, f"t{f}.jsonl", i, 100 * i, 10, 100 * i + 10, 5 * i, 2, 250.5 + i, 1000)
            for run_id in runs
            for f in range(2)
            for i in range(3)
        ]
        source = with_turns(make_db(tmp_path / "src" / "orchestrator.sqlite", rows), turns)
        invoke("import", str(source))
        with sqlite3.connect(db) as conn:
            stored = conn.execute(
                "SELECT r.run_key, t.trajectory_file, t.turn_index, t.prompt_tokens, "
                "t.completion_tokens, t.total_tokens, t.cached_tokens, "
                "t.cache_creation_tokens, t.latency_ms, t.prompt_chars "
                "FROM turns t JOIN runs r USING (run_id) ORDER BY 1, 2, 3"
            ).fetchall()
        assert stored == sorted(turns)
        shown = json.loads(invoke("show", runs[0], "--json").stdout)["trajectories"]
        assert [(t["trajectory_file"], t["turns"], t["prompt_tokens"]) for t in shown] == [
            ("t0.jsonl", 3, 300),
            ("t1.jsonl", 3, 300),
        ]
        before = stored_events(db)
        invoke("import", str(source))
        assert stored_events(db) == before

    def test_a_malformed_turn_refuses_the_database_naming_the_field(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        rows = many_rows(4)
        bad = [(rows[0]["run_id"], "t.jsonl", 0, "many", 1, 1, 0, 0, 1.0, 0)]
        source = with_turns(make_db(tmp_path / "src" / "orchestrator.sqlite", rows), bad)
        invoke("demo")
        before = stored_events(db)
        result = invoke("import", str(source), expect=1)
        assert "benchmark_run_trajectories.prompt_tokens" in result.stdout + result.stderr
        assert stored_events(db) == before


class _CountingValidator:
    """A model's validator that counts the validations it does."""

    def __init__(self, validator: Any) -> None:
        self.validator = validator
        self.calls = 0

    def validate_python(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.validator.validate_python(*args, **kwargs)


class TestTrajectoriesParsed:
    def test_a_run_with_trajectory_rows_is_validated_as_a_record_once(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        [row] = [r for r in many_rows(1) if r["run_id"].startswith("run_")]
        turns = [(row["run_id"], "t.jsonl", i, 10, 2, 12, 0, 0, 5.0, 40) for i in range(3)]
        source = with_turns(make_db(tmp_path / "orchestrator.sqlite", [row]), turns)
        [unit] = orchestrator_sources.stream_units(source)
        counting = _CountingValidator(RunRecord.__pydantic_validator__)
        monkeypatch.setattr(RunRecord, "__pydantic_validator__", counting)
        record = orchestrator_sources.parse_unit(str(source), unit)
        assert isinstance(record, RunRecord)
        assert [(t.turn_index, t.prompt_chars) for t in record.turns] == [(0, 40), (1, 40), (2, 40)]
        assert counting.calls == 1


class TestDatabaseFactsAreKept:
    def test_the_columns_the_header_does_not_hold_are_kept_in_the_runs_provenance(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        row = db_row(comparison_id="cmp_20260512_ab12", attempt=4)
        source = make_db(tmp_path / "src" / "orchestrator.sqlite", [row])
        invoke("import", str(source))
        [run] = json.loads(invoke("runs", "--json").stdout)
        shown = json.loads(invoke("show", run["run_id"], "--json").stdout)["run"]
        provenance = shown["provenance"]
        assert provenance["attempt"] == 4
        assert run["attempt"] == 4  # the attempt the orchestrator counted, as a column
        # The times and duration are the run's own columns, to the microsecond.
        assert run["started_at"] == row["started_at"]
        assert run["ended_at"] == row["ended_at"]
        assert run["duration_seconds"] == row["duration_seconds"]
        assert run["config"] == json.loads(row["extra_config_json"])
        columns = provenance["source_columns"]
        for name in ("comparison_id", "benchmark_version", "benchmarks_commit", "eliza_commit"):
            assert columns[name] == row[name], name
        assert columns["command"] == json.loads(row["command_json"])
        assert columns["high_score_value"] == row["high_score_value"]
        assert columns["stdout_path"].endswith("stdout.log")
