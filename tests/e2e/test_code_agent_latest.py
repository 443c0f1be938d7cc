"""Code-agent latest rows end to end: two agents' runs with cells and trajectory turns,
`head-to-head --publish-latest-dir`, and the directory checked by benchledger's
`validate-latest-*` (and, with BENCHLEDGER_ORCHESTRATOR_CHECKOUT, by the orchestrator's
own validators: tests/e2e/test_code_agent_parity.py).

The runs are recorded as an importer records them (`import_runs` with cells and turns),
the path the orchestrator's database takes; runs that `run` executes reach the same
`turns` read model, so `publish` can be pointed at them unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.domain.records import Cell, RunHeader, RunRecord, SourceFile, Turn
from benchledger.domain.signatures import effective_config, sha256_hex
from tests.conftest import Invoke

N = 200
Record = Callable[..., None]
# Per turn: prompt, completion, cached. The target is cheaper and caches more.
TARGET_TURNS = [(1000, 200, 600)] * 3
BASELINE_TURNS = [(1000, 250, 400)] * 4


def record_run(
    db: Path,
    benchmark: str,
    agent: str,
    right: int,
    turns: list[tuple[int, int, int | None]],
    *,
    config: dict[str, Any] | None = None,
    minute: int = 0,
    metrics: dict[str, Any] | None = None,
) -> None:
    """One finished run with N cells (`right` passed) and its trajectory's turns, recorded
    as an importer records a run its source states whole (with its `metrics`, if any)."""
    cells = tuple(
        Cell(
            key=f"task-{i:03d}", outcome="passed" if i < right else "failed", score=float(i < right)
        )
        for i in range(N)
    )
    calls = tuple(
        Turn(
            trajectory_file=f"{agent}/trajectory.jsonl",
            turn_index=i,
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=prompt + completion,
            cached_tokens=cached,
            latency_ms=900.0 + 10 * i,
            prompt_chars=4 * prompt,
        )
        for i, (prompt, completion, cached) in enumerate(turns)
    )
    header = RunHeader(
        run_key=f"{benchmark}-{agent}-{minute}",
        benchmark=benchmark,
        agent=agent,
        provider="cerebras",
        model="gpt-oss-120b",
        # As `run` states it: the agent label in `agent` and `harness` (no overrides).
        config=effective_config(benchmark, agent, config or {"limit": N}),
        started_at=f"2026-05-12T10:{minute:02d}:00+00:00",
        ended_at=f"2026-05-12T10:{minute:02d}:30+00:00",
        status="succeeded",
        score=right / N,
        metrics=metrics or {},
    )
    run = RunRecord(header=header, cells=cells, turns=calls)
    data = run.model_dump_json().encode()
    source = SourceFile(
        path=f"{header.run_key}.json", sha256=sha256_hex(data), size=len(data), format="native"
    )
    with build(Settings(db_path=db)) as services:
        services.ledger.import_runs("native", source, [run])


@pytest.fixture
def record(db: Path) -> Record:
    minutes = iter(range(60))

    def add(benchmark: str, agent: str, right: int, turns: Any, **kw: Any) -> None:
        record_run(db, benchmark, agent, right, turns, minute=next(minutes), **kw)

    return add


def publish(
    invoke: Invoke, tmp_path: Path, target: str, baseline: str, *args: str, expect: int = 0
) -> Path:
    quality = tmp_path / "guardrail.json"
    quality.write_text(json.dumps({"ok": True, "findings": []}))
    latest = tmp_path / "latest-code-agent"
    invoke(
        "head-to-head", "--target", target, "--baseline", baseline,
        "--quality-guardrail-summary", str(quality), "--out", str(tmp_path / "report"),
        "--publish-latest-dir", str(latest), *args, expect=expect,
    )  # fmt: skip
    return latest


def validate(invoke: Invoke, latest: Path, gate: str, expect: int) -> list[dict[str, Any]]:
    args = ["--skip-runtime-gates"] if gate == "readiness" else []
    result = invoke(
        f"validate-latest-{gate}", "--latest-dir", str(latest), *args, "--json", expect=expect
    )
    verdict = json.loads(result.stdout)
    assert verdict["ok"] is (expect == 0)
    findings: list[dict[str, Any]] = verdict["findings"]
    return findings


def reasons(findings: list[dict[str, Any]]) -> set[str]:
    return {f["reason"] for f in findings}


def rewrite(path: Path, **changes: Any) -> None:
    row = json.loads(path.read_text())
    path.write_text(json.dumps({**row, **changes}, indent=2))


class TestARowThatMeetsTheContract:
    @pytest.fixture
    def latest(self, invoke: Invoke, tmp_path: Path, record: Record) -> Path:
        record("alpha", "eliza", 180, TARGET_TURNS)
        record("alpha", "opencode", 100, BASELINE_TURNS)
        return publish(invoke, tmp_path, "eliza", "opencode", "--enforce-release")

    def test_is_published_flat_in_the_orchestrator_publishers_shape(self, latest: Path) -> None:
        row = json.loads((latest / "alpha__eliza_vs_opencode.json").read_text())
        assert (row["status"], row["failure_reasons"], row["failure_reason"]) == (
            "succeeded",
            [],
            "",
        )
        assert (row["benchmark_id"], row["agent"], row["unit"]) == (
            "alpha",
            "eliza_vs_opencode",
            "accuracy",
        )
        assert row["comparison_status"] == row["paired_status"] == "superior"
        assert (row["target_right"], row["target_wrong"], row["target_total"]) == (180, 20, N)
        assert row["score"] == row["target_accuracy"] == 0.9
        assert (row["target_input_tokens"], row["target_output_tokens"]) == (3000, 600)
        assert (row["baseline_total_tokens"], row["total_token_delta"]) == (5000, 3600 - 5000)
        assert row["target_cached_token_percent"] == pytest.approx(60.0)
        assert row["cached_token_percent_delta"] == pytest.approx(20.0)
        assert (row["target_llm_call_count"], row["llm_call_delta"]) == (3, -1)
        assert row["mode"] == "live" and row["release_readiness_ok"] is True
        assert row["metrics"]["target_right"] == 180
        assert row["token_metrics"]["baseline_llm_call_count"] == 4
        trajectories = Path(row["target_trajectory_dir"])
        lines = [json.loads(x) for f in trajectories.iterdir() for x in f.read_text().splitlines()]
        assert [t["prompt_tokens"] for t in lines] == [1000] * 3
        assert Path(row["baseline_command_path"]).is_file()
        result = json.loads(Path(row["target_result_path"]).read_text())
        assert result["cells"] == {"passed": 180, "failed": 20, "error": 0, "skipped": 0}

    def test_its_index_carries_the_code_agent_matrix_contract(self, latest: Path) -> None:
        index = json.loads((latest / "index.json").read_text())
        assert index["matrix_contract"]["status"] == "complete"
        assert index["matrix_contract"]["summary"]["failed_required_real_cells"] == 0
        cell = index["matrix_contract"]["benchmarks"]["alpha"]["cells"]["eliza_vs_opencode"]
        assert (cell["required"], cell["state"]) == (True, "succeeded")
        matrix = index["code_agent_matrix"]
        assert (matrix["target_adapter"], matrix["baseline_adapter"]) == ("eliza", "opencode")
        assert (matrix["row_count"], matrix["stale_row_count"]) == (1, 0)
        assert matrix["summary_json"].endswith("summary.json")
        assert index["latest"]["alpha::eliza_vs_opencode"]["status"] == "succeeded"

    @pytest.mark.parametrize("gate", ["publishability", "comparability", "readiness"])
    def test_every_validator_of_the_directory_accepts_it(
        self, invoke: Invoke, latest: Path, gate: str
    ) -> None:
        assert validate(invoke, latest, gate, expect=0) == []

    def test_figures_its_trajectories_do_not_back_are_rejected(
        self, invoke: Invoke, latest: Path
    ) -> None:
        path = latest / "alpha__eliza_vs_opencode.json"
        rewrite(path, target_input_tokens=2000, input_token_delta=2000 - 4000)
        found = validate(invoke, latest, "publishability", expect=1)
        [mismatch] = [f for f in found if f["reason"] == "code_agent_trajectory_metric_mismatch"]
        assert mismatch["path"] == "$.target_input_tokens"
        assert "target/trajectories" in mismatch["value"]

    def test_deltas_score_and_status_must_agree_with_the_sides(
        self, invoke: Invoke, latest: Path
    ) -> None:
        rewrite(
            latest / "alpha__eliza_vs_opencode.json",
            llm_call_delta=1,
            score=0.5,
            comparison_status="comparable",
        )
        found = reasons(validate(invoke, latest, "readiness", expect=1))
        assert {
            "code_agent_delta_mismatch",
            "code_agent_score_mismatch",
            "code_agent_comparison_status_mismatch",
            "code_agent_llm_calls_worse",
        } <= found

    def test_a_missing_trajectory_directory_is_named(self, invoke: Invoke, latest: Path) -> None:
        import shutil

        row = json.loads((latest / "alpha__eliza_vs_opencode.json").read_text())
        shutil.rmtree(row["baseline_trajectory_dir"])
        [found] = validate(invoke, latest, "publishability", expect=1)
        assert (found["reason"], found["path"]) == (
            "missing_code_agent_provenance_artifact",
            "$.baseline_trajectory_dir",
        )

    def test_view_head_to_head_publishes_the_same_rows_again(
        self, invoke: Invoke, latest: Path, tmp_path: Path
    ) -> None:
        report_id = json.loads((latest / "index.json").read_text())["report_id"]
        again = tmp_path / "again"
        invoke("view-head-to-head", report_id, "--publish-latest-dir", str(again))
        first = json.loads((latest / "alpha__eliza_vs_opencode.json").read_text())
        second = json.loads((again / "alpha__eliza_vs_opencode.json").read_text())
        differ = {k for k in first if first[k] != second[k] and "path" not in k}
        assert differ <= {"run_root", "target_trajectory_dir", "baseline_trajectory_dir"}
        assert validate(invoke, again, "publishability", expect=0) == []


def test_a_row_the_contract_refuses_is_written_failed_and_rejected(
    invoke: Invoke, tmp_path: Path, record: Record
) -> None:
    record("alpha", "eliza", 100, TARGET_TURNS)
    record("alpha", "opencode", 180, BASELINE_TURNS)
    latest = publish(invoke, tmp_path, "eliza", "opencode")
    row = json.loads((latest / "alpha__eliza_vs_opencode.json").read_text())
    assert row["status"] == "failed" and row["comparison_status"] == "inferior"
    assert "not comparable or better" in row["failure_reasons"]
    assert "benchmark_gate_ok is not true" in row["failure_reasons"]
    assert "paired statistics: inferior" in row["failure_reasons"]
    found = reasons(validate(invoke, latest, "publishability", expect=1))
    assert {"latest_row_not_succeeded", "code_agent_not_comparable_or_better"} <= found
    assert "code_agent_required_gate_not_true" in found
    comparability = reasons(validate(invoke, latest, "comparability", expect=1))
    assert comparability == {
        "eliza_vs_opencode_not_succeeded",
        "code_agent_not_comparable_or_better",
    }
    index = json.loads((latest / "index.json").read_text())
    assert index["matrix_contract"]["status"] == "incomplete"


def test_runs_without_turns_have_no_trajectory_to_publish(
    invoke: Invoke, tmp_path: Path, record: Record
) -> None:
    record("alpha", "eliza", 180, [])
    record("alpha", "opencode", 100, BASELINE_TURNS)
    latest = publish(invoke, tmp_path, "eliza", "opencode")
    row = json.loads((latest / "alpha__eliza_vs_opencode.json").read_text())
    assert row["target_trajectory_dir"] is None
    assert "missing target_trajectory_dir" in row["failure_reasons"]
    found = validate(invoke, latest, "publishability", expect=1)
    assert ("$.target_trajectory_dir", "missing_code_agent_provenance_field") in {
        (f.get("path"), f["reason"]) for f in found
    }
