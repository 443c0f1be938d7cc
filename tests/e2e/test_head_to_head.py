"""`benchledger head-to-head` end to end: native result files with cells and token
metrics, two agents on the same provider and model, the report, its gates, its files,
its latest-style rows and its re-render from the recorded event."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Invoke
from tests.helpers import run_json, write_json

Add = Callable[..., None]
TARGET, BASELINE = "eliza", "opencode"
N = 200


def cells(passed: Sequence[bool]) -> list[dict[str, Any]]:
    return [
        {"key": f"task-{i:03d}", "outcome": "passed" if p else "failed", "score": float(p)}
        for i, p in enumerate(passed)
    ]


def outcomes(right: int, n: int = N) -> list[bool]:
    return [i < right for i in range(n)]


def usage(total: int, cached: int, calls: int) -> dict[str, Any]:
    input_tokens = total * 3 // 4
    return {
        "tokens": {
            "input_tokens": input_tokens,
            "output_tokens": total - input_tokens,
            "total_tokens": total,
            "cached_tokens": cached,
        },
        "metrics": {"llm_calls": calls},
    }


@pytest.fixture
def add(invoke: Invoke, tmp_path: Path) -> Add:
    """Import one native run; each call starts a minute later than the last."""
    minutes = count()

    def add_run(benchmark: str, agent: str, passed: Sequence[bool], **fields: Any) -> None:
        minute = next(minutes)
        fields.setdefault("started_at", f"2026-05-12T10:{minute:02d}:00+00:00")
        fields.setdefault("ended_at", f"2026-05-12T10:{minute:02d}:30+00:00")
        fields.setdefault("config", {"limit": N})
        doc = run_json(
            benchmark, agent, score=sum(passed) / len(passed), cells=cells(passed), **fields
        )
        invoke("import", str(write_json(tmp_path / f"run-{minute}.json", doc)))

    return add_run


@pytest.fixture
def matrix(add: Add) -> None:
    """superior on alpha, comparable on beta (the target costs more tokens there),
    inferior on gamma, and delta only the target ran."""
    add("alpha", TARGET, outcomes(180), **usage(1000, 400, 10))
    add("alpha", BASELINE, outcomes(100), **usage(1000, 400, 10))
    # 150 right each, two discordant pairs each way: no difference, a small detectable effect.
    target_beta = outcomes(150)
    target_beta[0] = target_beta[1] = False
    target_beta[198] = target_beta[199] = True
    add("beta", TARGET, target_beta, **usage(5000, 500, 12))
    add("beta", BASELINE, outcomes(150), **usage(3000, 900, 8))
    add("gamma", TARGET, outcomes(100), **usage(1000, 400, 10))
    add("gamma", BASELINE, outcomes(180), **usage(1000, 400, 10))
    add("delta", TARGET, outcomes(120), **usage(1000, 400, 10))


def h2h(invoke: Invoke, *args: str, expect: int = 0) -> dict[str, Any]:
    result = invoke(
        "head-to-head", "--target", TARGET, "--baseline", BASELINE, *args, "--json", expect=expect
    )
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def by_benchmark(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["benchmark"]: row for row in data["report_rows"]}


@pytest.mark.usefixtures("matrix")
class TestTheReport:
    def test_statuses_follow_the_paired_statistics(self, invoke: Invoke) -> None:
        rows = by_benchmark(h2h(invoke))
        assert {b: r["comparison_status"] for b, r in rows.items()} == {
            "alpha": "superior",
            "beta": "comparable",
            "delta": "missing",
            "gamma": "inferior",
        }
        beta = rows["beta"]
        assert beta["paired"]["n_paired"] == N
        assert beta["paired"]["mde80"] <= 0.05
        assert "MDE80" in beta["status_reason"]
        assert rows["delta"]["baseline_run_id"] is None
        assert rows["delta"]["paired"] is None

    def test_rows_carry_outcomes_tokens_calls_and_deltas(self, invoke: Invoke) -> None:
        beta = by_benchmark(h2h(invoke))["beta"]
        assert (beta["target_right"], beta["target_wrong"], beta["target_total"]) == (150, 50, N)
        assert beta["baseline_right"] == 150 and beta["accuracy_delta"] == 0.0
        assert (beta["target_total_tokens"], beta["baseline_total_tokens"]) == (5000, 3000)
        assert beta["total_tokens_delta"] == 2000
        assert beta["target_input_tokens"] == 3750 and beta["target_output_tokens"] == 1250
        assert beta["target_cached_pct"] == pytest.approx(100 * 500 / 3750)
        assert beta["cached_pct_delta"] == pytest.approx(100 * 500 / 3750 - 100 * 900 / 2250)
        assert (beta["target_llm_calls"], beta["llm_calls_delta"]) == (12, 4)
        assert beta["target_run_id"] and beta["baseline_run_id"]

    def test_the_comparable_gate_exits_3_and_names_the_blocking_benchmarks(
        self, invoke: Invoke
    ) -> None:
        result = invoke(
            "head-to-head", "--target", TARGET, "--baseline", BASELINE,
            "--enforce-comparable", expect=3,
        )  # fmt: skip
        assert "Comparable gate: blocked by delta, gamma" in result.stdout
        assert result.stdout.rstrip().endswith("Exit: 3 comparable_gate_failed")
        data = h2h(invoke, "--enforce-comparable", expect=3)
        assert data["benchmark_gate"] == {"ok": False, "blocking_benchmarks": ["delta", "gamma"]}
        assert (data["exit_code"], data["exit_reason"]) == (3, "comparable_gate_failed")

    def test_the_efficiency_gate_exits_8_when_the_target_uses_more_tokens(
        self, invoke: Invoke
    ) -> None:
        data = h2h(invoke, "--enforce-efficiency", expect=8)
        assert data["exit_reason"] == "efficiency_gate_failed"
        [entry] = data["efficiency_queue"]
        assert entry["benchmark"] == "beta"
        assert entry["regressions"][0] == "total tokens +2000"
        # Accuracy is comparable there: only efficiency blocks it.
        assert data["gates"]["efficiency"]["blocking"] == ["beta"]
        assert h2h(invoke, "--benchmarks", "alpha", "--enforce-efficiency")["exit_code"] == 0

    def test_the_first_failing_enforced_gate_decides(self, invoke: Invoke) -> None:
        data = h2h(invoke, "--enforce-efficiency", "--enforce-comparable", expect=3)
        assert data["exit_codes"]["efficiency_gate_failed"] == 8
        assert h2h(invoke, "--benchmarks", "alpha", "--enforce-comparable")["exit_code"] == 0

    def test_the_improvement_queue_has_locations_and_reruns(self, invoke: Invoke) -> None:
        queue = h2h(invoke)["improvement_queue"]
        # By priority (p0 inferior or weak, p1 missing), then benchmark.
        assert [(e["benchmark"], e["priority"]) for e in queue] == [
            ("gamma", "p0"),
            ("delta", "p1"),
        ]
        gamma, delta = queue
        assert gamma["target"]["results"].endswith(".json")
        assert gamma["rerun_commands"][0] == (
            "benchledger run --benchmarks gamma --agent eliza --provider cerebras "
            "--model gpt-oss-120b --extra '{\"limit\":200}' --force"
        )
        assert "--enforce-coverage" not in gamma["report_command"]
        # Native imports without turns: no trajectory telemetry on either side.
        assert gamma["diagnosis"] == [
            "target accuracy is below baseline",
            "target failure class: tests_failed",
            "baseline failure class: tests_failed",
            "target trajectory telemetry is missing",
            "baseline trajectory telemetry is missing",
        ]
        assert gamma["primary_diagnosis"] == "target accuracy is below baseline"
        assert (gamma["accuracy_delta"], gamma["right_delta"]) == (-0.4, -80)
        assert delta["diagnosis"] == [
            "missing comparable outcome evidence",
            "target failure class: tests_failed",
            "baseline cell result is missing",
            "baseline right/wrong/total evidence is incomplete",
            "target trajectory telemetry is missing",
            "baseline trajectory telemetry is missing",
        ]
        assert (delta["target_failure_class"], delta["baseline_failure_class"]) == (
            "tests_failed",
            None,
        )
        assert delta["baseline_trajectory_review"]["review_notes"] == [
            "no run recorded",
            "no cached-token telemetry found",
        ]

    def test_no_regression_against_a_previous_summary(self, invoke: Invoke, tmp_path: Path) -> None:
        before = h2h(invoke)
        for row in before["report_rows"]:
            if row["benchmark"] == "alpha":
                row["target_accuracy"] = 0.95
        previous = write_json(tmp_path / "prev.json", before)
        data = h2h(invoke, "--compare-summary", str(previous), "--enforce-no-regression", expect=9)
        assert data["gates"]["no_regression"]["blocking"] == ["alpha"]
        invoke(
            "head-to-head", "--target", TARGET, "--baseline", BASELINE,
            "--enforce-no-regression", expect=2,
        )  # fmt: skip

    def test_an_unknown_agent_is_a_preflight_failure(self, invoke: Invoke) -> None:
        result = invoke("head-to-head", "--target", "nobody", "--baseline", BASELINE, expect=2)
        assert "unknown agent: nobody" in result.stderr


@pytest.mark.usefixtures("matrix")
def test_files_are_written_and_the_recorded_report_re_renders_byte_for_byte(
    invoke: Invoke, tmp_path: Path
) -> None:
    first = invoke(
        "head-to-head", "--target", TARGET, "--baseline", BASELINE, "--enforce-comparable",
        "--out", str(tmp_path / "made"), expect=3,
    )  # fmt: skip
    report_id = first.stdout.split()[1]
    made = tmp_path / "made"
    names = ["summary.json", "summary.md", "report-rows.jsonl", "report-rows.csv"]
    assert sorted(p.name for p in made.iterdir()) == sorted(names)
    summary = json.loads((made / "summary.json").read_text())
    assert summary["report_id"] == report_id
    assert {"report_rows", "benchmark_gate", "exit_codes", "exit_code", "exit_reason"} <= set(
        summary
    )
    lines = (made / "report-rows.jsonl").read_text().splitlines()
    assert [json.loads(line)["benchmark"] for line in lines] == ["alpha", "beta", "delta", "gamma"]
    with (made / "report-rows.csv").open() as f:
        assert [r["comparison_status"] for r in csv.DictReader(f)] == [
            "superior", "comparable", "missing", "inferior",
        ]  # fmt: skip
    assert "## Run Result" in (made / "summary.md").read_text()
    again = invoke("view-head-to-head", report_id, "--out", str(tmp_path / "again"))
    assert again.stdout == first.stdout
    for name in names:
        assert (tmp_path / "again" / name).read_bytes() == (made / name).read_bytes()


@pytest.mark.usefixtures("matrix")
def test_publish_latest_prunes_stale_rows_and_keeps_unrelated_files(
    invoke: Invoke, tmp_path: Path
) -> None:
    latest = tmp_path / "latest"
    latest.mkdir()
    (latest / "retired__eliza_vs_opencode.json").write_text("{}")
    (latest / "bfcl__hermes_vs_opencode.json").write_text("{}")
    (latest / "notes.txt").write_text("keep me")
    h2h(invoke, "--publish-latest-dir", str(latest))
    assert not (latest / "retired__eliza_vs_opencode.json").exists()
    assert (latest / "bfcl__hermes_vs_opencode.json").read_text() == "{}"
    assert (latest / "notes.txt").read_text() == "keep me"
    index = json.loads((latest / "index.json").read_text())
    assert index["code_agent_matrix"]["stale_row_count"] == 1
    assert index["matrix_contract"]["status"] == "incomplete"
    alpha = json.loads((latest / "alpha__eliza_vs_opencode.json").read_text())
    # The orchestrator publisher's flat row: stats at the top, not nested.
    assert (alpha["benchmark_id"], alpha["agent"]) == ("alpha", "eliza_vs_opencode")
    assert (alpha["target_right"], alpha["baseline_right"]) == (180, 100)
    assert alpha["score"] == alpha["target_accuracy"] == 0.9
    assert alpha["unit"] == "accuracy" and alpha["comparison_status"] == "superior"
    assert alpha["target_llm_call_count"] == 10 and alpha["llm_call_delta"] == 0
    # Native imports without turns: a superior row is still not publishable.
    assert alpha["status"] == "failed"
    assert "missing target_trajectory_dir" in alpha["failure_reasons"]
    assert alpha["failure_reason"] == ", ".join(alpha["failure_reasons"])
    assert alpha["target_trajectory_dir"] is None
    assert Path(alpha["target_command_path"]).is_file()
    gamma = json.loads((latest / "gamma__eliza_vs_opencode.json").read_text())
    assert "not comparable or better" in gamma["failure_reasons"]
    assert gamma["comparison_status"] == gamma["paired_status"] == "inferior"
    delta = index["matrix_contract"]["benchmarks"]["delta"]["cells"]["eliza_vs_opencode"]
    assert delta["state"] == "failed" and "missing numeric baseline_right" in delta["reason"]


def test_published_rows_of_the_demo_ledger_are_stamped_demo_data(
    invoke: Invoke, tmp_path: Path
) -> None:
    invoke("demo")
    latest = tmp_path / "latest"
    rows = by_benchmark(h2h(invoke, "--publish-latest-dir", str(latest)))
    assert rows and all(r["demo_data"] for r in rows.values())
    for path in latest.glob("*__eliza_vs_opencode.json"):
        document = json.loads(path.read_text())
        assert document["status"] == "failed" and document["demo_data"] is True
        assert "demo data" in document["failure_reasons"]
    index = json.loads((latest / "index.json").read_text())
    assert index["matrix_contract"]["status"] == "incomplete"


@pytest.mark.usefixtures("matrix")
def test_rows_of_ordinary_imports_are_not_demo_data(invoke: Invoke) -> None:
    rows = by_benchmark(h2h(invoke))
    assert rows and not any(r["demo_data"] for r in rows.values())


def test_a_baseline_on_another_config_is_not_comparable(invoke: Invoke, add: Add) -> None:
    add("alpha", TARGET, outcomes(150), config={"limit": N, "temperature": 0.0})
    add("alpha", BASELINE, outcomes(150), config={"limit": N, "temperature": 0.7})
    [row] = h2h(invoke, "--enforce-comparable", expect=3)["report_rows"]
    assert row["comparison_status"] == "not comparable"
    assert row["differing_keys"] == ["temperature"]
    assert row["paired"] is None


def test_as_of_reports_what_the_ledger_held_then(invoke: Invoke, add: Add) -> None:
    add("zeta", BASELINE, outcomes(150))
    add("alpha", TARGET, outcomes(150))
    position = json.loads(invoke("events", "--json").stdout)[-1]["position"]
    add("alpha", BASELINE, outcomes(150))
    assert by_benchmark(h2h(invoke))["alpha"]["baseline_run_id"] is not None
    then = by_benchmark(h2h(invoke, "--as-of", str(position)))
    assert then["alpha"]["comparison_status"] == "missing"


@pytest.mark.usefixtures("matrix")
def test_the_rows_are_a_read_model(invoke: Invoke, db: Path) -> None:
    import sqlite3

    report_id = h2h(invoke)["report_id"]
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT benchmark, comparison_status, total_tokens_delta FROM head_to_head_rows "
            "WHERE report_id = ? ORDER BY benchmark",
            (report_id,),
        ).fetchall()
    assert rows == [
        ("alpha", "superior", 0),
        ("beta", "comparable", 2000),
        ("delta", "missing", None),
        ("gamma", "inferior", 0),
    ]


def test_tokens_cache_and_calls_come_from_the_trajectory_turns(
    invoke: Invoke, tmp_path: Path
) -> None:
    """Orchestrator runs of both agents with their model calls: the row's tokens, cache
    and LLM calls are the turns' sums and count, which back the trajectory review."""
    import sqlite3
    from contextlib import closing

    from tests.unit.test_format_orchestrator import db_row, make_db

    opencode_id = "run_bfcl_20260512T103000Z_1_0000aaaa"
    rows = [
        db_row(),
        db_row(
            run_id=opencode_id,
            agent=BASELINE,
            signature="ab" * 32,
            extra_config_json=json.dumps({"agent": BASELINE, "harness": BASELINE, "limit": 10}),
            started_at="2026-05-12T10:30:00+00:00",
            ended_at="2026-05-12T10:35:00+00:00",
        ),
    ]
    source = make_db(tmp_path / "orchestrator.sqlite", rows)
    turns = {db_row()["run_id"]: [(10, 2, 12, 4)] * 3, opencode_id: [(10, 2, 12, 6)] * 2}
    with closing(sqlite3.connect(source)) as conn, conn:
        conn.execute(
            "CREATE TABLE benchmark_run_trajectories (run_id TEXT, trajectory_file TEXT, "
            "turn_index INTEGER, prompt_tokens INTEGER, completion_tokens INTEGER, "
            "total_tokens INTEGER, cached_tokens INTEGER, cache_creation_tokens INTEGER, "
            "latency_ms REAL, prompt_chars INTEGER)"
        )
        for run_id, calls in turns.items():
            for i, (p, c, t, cached) in enumerate(calls):
                conn.execute(
                    "INSERT INTO benchmark_run_trajectories VALUES (?, 't.jsonl', ?, ?, ?, ?, "
                    "?, 0, 5.0, 40)",
                    (run_id, i, p, c, t, cached),
                )
    invoke("import", str(source))
    [bfcl] = h2h(invoke, "--enforce-trajectory-reviews", "--enforce-efficiency", expect=8)[
        "report_rows"
    ]
    assert (bfcl["target_llm_calls"], bfcl["baseline_llm_calls"]) == (3, 2)
    assert (bfcl["target_input_tokens"], bfcl["target_total_tokens"]) == (30, 36)
    assert bfcl["target_cached_pct"] == pytest.approx(40.0)
    assert bfcl["baseline_cached_pct"] == pytest.approx(60.0)
    assert bfcl["trajectory_review"] is True
    assert bfcl["efficiency_regressions"] == [
        "total tokens +12",
        "LLM calls +1",
        "cached-token % -20.00",
    ]


def test_cells_with_a_cluster_get_clustered_statistics(
    invoke: Invoke, tmp_path: Path, add: Add
) -> None:
    def clustered(passed: Sequence[bool]) -> list[dict[str, Any]]:
        return [{**c, "cluster": f"repo-{i % 10}"} for i, c in enumerate(cells(passed))]

    for agent, right in ((TARGET, 120), (BASELINE, 100)):
        doc = run_json("swe", agent, score=right / N, cells=clustered(outcomes(right)))
        invoke("import", str(write_json(tmp_path / f"{agent}-swe.json", doc)))
    [row] = h2h(invoke)["report_rows"]
    assert row["paired"]["clustered"] is True and row["paired"]["n_clusters"] == 10


def test_both_sides_measured_zero_is_weak_and_queued(invoke: Invoke, add: Add) -> None:
    add("alpha", TARGET, outcomes(0))
    add("alpha", BASELINE, outcomes(0))
    data = h2h(invoke, "--enforce-comparable", expect=3)
    [row] = data["report_rows"]
    assert (row["comparison_status"], row["target_accuracy"]) == ("weak", 0.0)
    assert [e["comparison_status"] for e in data["improvement_queue"]] == ["weak"]
