"""Native result files with trajectory turns, imported: the turns are the run's rows of
the `turns` read model, as an imported orchestrator run's are, and a re-import of the
same file appends nothing."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from tests.conftest import Invoke
from tests.helpers import run_json, write_json, write_jsonl


def stored_events(db: Path) -> int:
    with closing(sqlite3.connect(db)) as conn:
        return int(conn.execute("SELECT count(*) FROM stored_events").fetchone()[0])


def turn_rows(db: Path) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(
            "SELECT trajectory_file, turn_index, prompt_tokens, completion_tokens, "
            "total_tokens, cached_tokens, cache_creation_tokens, latency_ms, prompt_chars "
            "FROM turns ORDER BY trajectory_file, turn_index"
        ).fetchall()


TURNS = [
    {"trajectory": "task-1", "input_tokens": 100, "output_tokens": 20, "cached_tokens": 60},
    {"trajectory": "task-1", "input_tokens": 140, "output_tokens": 9, "latency_ms": 812.5},
    {"trajectory": "task-2", "index": 3, "prompt_tokens": 7, "completion_tokens": 1,
     "total_tokens": 8, "cache_creation_tokens": 5, "prompt_chars": 30},
]  # fmt: skip
ROWS = [
    ("task-1", 0, 100, 20, None, 60, None, None, None),
    ("task-1", 1, 140, 9, None, None, None, 812.5, None),
    ("task-2", 3, 7, 1, 8, None, 5, None, 30),
]


class TestImportingTurns:
    def test_the_turns_of_a_json_result_are_rows_of_the_turns_read_model(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        path = write_json(tmp_path / "run.json", run_json(turns=TURNS))
        invoke("import", str(path))
        assert turn_rows(db) == ROWS
        [run] = json.loads(invoke("runs", "--json").stdout)
        shown = json.loads(invoke("show", run["run_id"], "--json").stdout)
        assert [(t["trajectory_file"], t["turns"]) for t in shown["trajectories"]] == [
            ("task-1", 2),
            ("task-2", 1),
        ]

    def test_reimporting_the_same_file_appends_nothing(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        path = write_json(tmp_path / "run.json", run_json(turns=TURNS))
        invoke("import", str(path))
        before = stored_events(db)
        result = invoke("import", str(path))
        assert "unchanged" in result.stdout
        assert stored_events(db) == before
        assert turn_rows(db) == ROWS

    def test_the_turn_lines_of_a_jsonl_result_are_its_runs_turns(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        header = {k: v for k, v in run_json().items() if k not in ("schema", "cells")}
        lines = [{"type": "run", **header}, *({"type": "turn", **t} for t in TURNS)]
        path = write_jsonl(tmp_path / "run.jsonl", lines)
        invoke("import", str(path))
        assert turn_rows(db) == ROWS
        before = stored_events(db)
        invoke("import", str(path))
        assert stored_events(db) == before

    def test_a_bad_turn_names_file_and_field_and_appends_nothing(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        bad = [*TURNS[:1], {"input_tokens": 1.5}]
        path = write_json(tmp_path / "run.json", run_json(turns=bad))
        result = invoke("import", str(path), expect=1)
        assert "run.json" in result.stderr and "turns[1].input_tokens" in result.stderr
        assert json.loads(invoke("runs", "--json").stdout) == []
