"""The orchestrator's own run groups, recorded as such, with their runs in them."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from tests.conftest import Invoke
from tests.unit.test_format_orchestrator import db_row, make_db, viewer, write

GROUP = "rg_20260512T101455Z_9b1e7a40"
REQUEST = {
    "agent": "eliza",
    "benchmarks": ["bfcl"],
    "extra_config": {"limit": 10},
    "force": False,
    "model": "gpt-oss-120b",
    "provider": "cerebras",
    "rerun_failed": False,
    "resume": False,
}
REPO_META = {
    "benchmarks_commit": "a1b2c3d",
    "benchmarks_version": "0.4.1",
    "eliza_commit": "d4e5f6a",
    "eliza_version": "2.0.0",
}


def group_row(**changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "run_group_id": GROUP,
        "created_at": "2026-05-12T10:14:55.001000+00:00",
        "finished_at": "2026-05-12T10:21:42.300000+00:00",
        "request_json": json.dumps(REQUEST),
        "benchmarks_json": '["bfcl"]',
        "repo_meta_json": json.dumps(REPO_META),
        "created_by": "benchmarks.orchestrator",
        "execution_namespace": None,
        "cohort_status": "succeeded",
        "pause_metadata_json": "{}",
        "storage_preflight_json": "{}",
        "updated_at": "2026-05-12T10:21:42.300000+00:00",
    }
    row.update(changes)
    return row


def with_groups(path: Path, groups: list[dict[str, Any]]) -> Path:
    with closing(sqlite3.connect(path)) as conn, conn:  # closed: no WAL left to vanish
        conn.execute("DROP TABLE run_groups")
        conn.execute(
            "CREATE TABLE run_groups (run_group_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, "
            "finished_at TEXT, request_json TEXT NOT NULL, benchmarks_json TEXT NOT NULL, "
            "repo_meta_json TEXT NOT NULL, created_by TEXT NOT NULL, execution_namespace TEXT, "
            "cohort_status TEXT, pause_metadata_json TEXT, storage_preflight_json TEXT, "
            "updated_at TEXT)"
        )
        for g in groups:
            marks = ", ".join("?" * len(g))
            conn.execute(
                f"INSERT INTO run_groups ({', '.join(g)}) VALUES ({marks})", list(g.values())
            )
    return path


def read_model(db: Path, sql: str, *params: Any) -> list[dict[str, Any]]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute(sql, params)]


def stored(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM stored_events").fetchone()[0])


class TestSourceGroups:
    def test_a_group_is_recorded_with_what_the_orchestrator_states_and_holds_its_runs(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        source = with_groups(
            make_db(tmp_path / "o" / "orchestrator.sqlite", [db_row()]), [group_row()]
        )
        invoke("import", str(source))
        [group] = read_model(db, "SELECT * FROM run_groups WHERE kind = 'source'")
        assert group["label"] == GROUP
        assert (group["opened_at"], group["closed_at"]) == (
            "2026-05-12T10:14:55.001000+00:00",
            "2026-05-12T10:21:42.300000+00:00",
        )
        assert group["status"] == "succeeded"
        assert json.loads(group["request"]) == REQUEST
        assert json.loads(group["selection"]) == ["bfcl"]
        assert json.loads(group["repo_meta"]) == REPO_META
        assert json.loads(group["source"])["created_by"] == "benchmarks.orchestrator"
        assert group["runs"] == 1
        [run] = json.loads(invoke("runs", "--json").stdout)
        assert run["run_group_id"] == group["run_group_id"]
        before = stored(db)
        invoke("import", str(source))
        viewer_doc = viewer([db_row()])
        viewer_doc["run_groups"] = [
            {
                "run_group_id": GROUP,
                "created_at": "2026-05-12T10:14:55.001000+00:00",
                "finished_at": "2026-05-12T10:21:42.300000+00:00",
                "request": REQUEST,
                "benchmarks": ["bfcl"],
                "repo_meta": REPO_META,
                "cohort_status": "succeeded",
            }
        ]
        invoke("import", str(write(tmp_path / "viewer_data.json", viewer_doc)))
        assert stored(db) == before

    def test_a_group_open_in_one_snapshot_is_closed_by_a_later_one(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        early = make_db(tmp_path / "a" / "orchestrator.sqlite", [])
        with_groups(early, [group_row(finished_at=None, cohort_status="running")])
        invoke("import", str(early))
        [open_group] = read_model(db, "SELECT * FROM run_groups WHERE kind = 'source'")
        assert open_group["closed_at"] is None and open_group["status"] == "running"
        later = with_groups(
            make_db(tmp_path / "b" / "orchestrator.sqlite", [db_row()]), [group_row()]
        )
        invoke("import", str(later))
        [closed] = read_model(db, "SELECT * FROM run_groups WHERE kind = 'source'")
        assert closed["closed_at"] == "2026-05-12T10:21:42.300000+00:00"
        assert closed["status"] == "succeeded"

    def test_a_malformed_group_refuses_the_database_naming_the_column(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        bad = with_groups(
            make_db(tmp_path / "o" / "orchestrator.sqlite", [db_row()]),
            [group_row(request_json="{not json")],
        )
        result = invoke("import", str(bad), expect=1)
        assert "run_groups.request_json" in result.stdout + result.stderr
        assert json.loads(invoke("runs", "--json").stdout) == []


CMP = "cmp_20260512T101455Z_0a1b2c3d"


def compare_row(n: int, provider: str, model: str, score: float, **changes: Any) -> dict[str, Any]:
    return db_row(
        run_id=f"run_bfcl_20260512T1015{n:02d}Z_1_0000000{n}",
        agent="compare",
        provider=provider,
        model=model,
        score=score,
        comparison_id=CMP,
        started_at=f"2026-05-12T10:15:{n:02d}.000000+00:00",
        signature=f"{n:064x}",
        **changes,
    )


class TestImportedComparisons:
    def test_view_comparison_shows_the_runs_the_orchestrator_tagged(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        rows = [
            compare_row(1, "cerebras", "gpt-oss-120b", 0.8),
            compare_row(2, "vllm", "qwen3", 0.85),
            compare_row(3, "cerebras", "gpt-oss-120b", 0.5, benchmark_id="mint"),
            db_row(run_id="run_bfcl_20260512T101504Z_1_00000009", score=0.1),  # not tagged
        ]
        invoke("import", str(make_db(tmp_path / "o" / "orchestrator.sqlite", rows)))
        shown = json.loads(invoke("view-comparison", CMP, "--json").stdout)
        assert (shown["a"]["spec"], shown["b"]["spec"]) == ("cerebras:gpt-oss-120b", "vllm:qwen3")
        by_benchmark = {r["benchmark_id"]: r for r in shown["rows"]}
        bfcl, mint = by_benchmark["bfcl"], by_benchmark["mint"]
        assert (bfcl["a_score"], bfcl["b_score"], bfcl["winner"]) == (0.8, 0.85, "B")
        assert round(bfcl["delta"], 6) == 0.05
        assert (mint["a_score"], mint["b_score"], mint["b_status"]) == (0.5, None, "missing")
        assert mint["winner"] == "A"
        text = invoke("view-comparison", CMP).stdout
        assert "imported" in text and "+0.0500" in text

    def test_one_side_only_or_no_runs_is_an_error(self, invoke: Invoke, tmp_path: Path) -> None:
        invoke(
            "import",
            str(make_db(tmp_path / "o" / "orchestrator.sqlite", [compare_row(1, "c", "m", 0.8)])),
        )
        assert "one side only" in invoke("view-comparison", CMP, expect=1).stderr
        assert "no comparison" in invoke("view-comparison", "cmp_x", expect=1).stderr
