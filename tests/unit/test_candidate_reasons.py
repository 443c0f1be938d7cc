"""What a candidate's metrics say against its publication is worked out by SQLite when
the metrics are written (generated columns), and read by `latest_select.REASON`: the
orchestrator's reasons, in its order, whether a candidate's metrics arrive with it or
are patched in later (a fact added, a run finished)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchledger.projections.latest import LatestProjection
from benchledger.projections.latest_select import GENERATED, REASON
from benchledger.projections.store import ReadModelStore


@pytest.fixture
def store(tmp_path: Path) -> ReadModelStore:
    store = ReadModelStore(tmp_path / "ledger.db")
    with store.write():
        store.create_tables(LatestProjection())
    return store


def add(
    store: ReadModelStore, run_id: str, metrics: dict[str, Any], *, score: float | None = 1.0
) -> None:
    store.conn.execute(
        "INSERT INTO candidates (run_id, benchmark, agent, status, score, config, metrics, "
        "invalidated, superseded, synthetic, stale, kind) "
        "VALUES (?, 'b', 'eliza', 'succeeded', ?, '{}', ?, 0, 0, 0, 0, 'run')",
        (run_id, score, json.dumps(metrics)),
    )


def reason_of(store: ReadModelStore, run_id: str) -> str | None:
    row = store.conn.execute(
        f"SELECT ({REASON}) FROM candidates WHERE run_id = ?", (run_id,)
    ).fetchone()
    return None if row[0] is None else str(row[0])


CASES: list[tuple[dict[str, Any], float | None, str | None]] = [
    ({}, 1.0, None),
    ({"n": 50, "score": 0.4}, 1.0, None),
    ({"sample": True}, 1.0, "sample_task_set"),
    ({"sample": "true"}, 1.0, None),  # only JSON true
    ({"dataset_source": " Sample-Files\n"}, 1.0, "sample_task_set"),
    ({"dataset_source": "full"}, 1.0, None),
    ({"use_sample_tasks": True}, 1.0, "sample_task_set"),
    ({"demo_mode": True}, 1.0, "demo_mode"),
    ({"demoMode": True}, 1.0, "demo_mode"),
    ({"publishable_three_harness": False}, 1.0, "benchmark_not_publishable_three_harness"),
    ({"publishable_three_harness": 0}, 1.0, None),
    ({"failed_scenarios": 2}, 1.0, "failed_scenarios"),
    ({"failed_scenarios": 0}, 1.0, None),
    ({"failed_scenarios": "2"}, 1.0, None),
    ({"total_runs": 3, "successful_runs": 0}, 1.0, "zero_successful_runs"),
    ({"total_runs": 3, "successful_runs": 1}, 1.0, None),
    (
        {"avg_net_worth": 0, "avg_items_sold": 0.0, "avg_orders_placed": False, "total_revenue": 0},
        0.0,
        "no_activity_zero_score",
    ),
    (
        {"avg_net_worth": 0, "avg_items_sold": 0.0, "avg_orders_placed": False, "total_revenue": 0},
        0.5,
        None,
    ),
    ({"avg_net_worth": 0, "avg_items_sold": 0, "avg_orders_placed": 0}, 0.0, None),
    ({"interrupted": True}, 1.0, "interrupted_run"),
    ({"interrupted": "true"}, 1.0, None),
    # The order: the first reason that holds.
    ({"interrupted": True, "failed_scenarios": 1}, 1.0, "failed_scenarios"),
    ({"demo_mode": True, "sample": True}, 1.0, "sample_task_set"),
    (
        {
            "interrupted": True,
            "avg_net_worth": 0,
            "avg_items_sold": 0,
            "avg_orders_placed": 0,
            "total_revenue": 0,
        },
        0.0,
        "no_activity_zero_score",
    ),
    # A score the metrics cannot excuse comes first.
    ({"sample": True}, None, "missing_score"),
]


@pytest.mark.parametrize(("metrics", "score", "expected"), CASES)
def test_a_candidate_s_metrics_give_the_orchestrator_s_reason(
    store: ReadModelStore, metrics: dict[str, Any], score: float | None, expected: str | None
) -> None:
    add(store, "r", metrics, score=score)
    assert reason_of(store, "r") == expected


def test_metrics_patched_in_later_are_worked_out_again(store: ReadModelStore) -> None:
    add(store, "r", {"n": 5})
    assert reason_of(store, "r") is None
    store.conn.execute(
        "UPDATE candidates SET metrics = json_patch(coalesce(metrics, json_object()), ?) "
        "WHERE run_id = ?",
        (json.dumps({"interrupted": True}), "r"),
    )
    assert reason_of(store, "r") == "interrupted_run"
    store.conn.execute("UPDATE candidates SET metrics = ? WHERE run_id = ?", ("{}", "r"))
    assert reason_of(store, "r") is None


def test_the_worked_out_columns_are_the_candidates_own_and_never_written() -> None:
    (candidates,) = [t for t in LatestProjection.tables if t.name == "candidates"]
    assert candidates.generated == GENERATED
    assert not set(candidates.columns) & {name for name, _, _ in GENERATED}
