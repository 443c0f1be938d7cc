"""The code-agent release path on runs benchledger executes: two agents run through `run`,
their native results stating cells and a turn per model call; `head-to-head
--publish-latest-dir` writes rows that benchledger's `validate-latest-*` accept, and (with
BENCHLEDGER_ORCHESTRATOR_CHECKOUT) the orchestrator's own validators too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Invoke
from tests.e2e.test_code_agent_latest import publish, validate
from tests.e2e.test_code_agent_parity import CHECKOUT, orchestrator
from tests.e2e.test_code_agent_parity import package as package  # a fixture
from tests.e2e.test_run_turns import TurnsWorkspace, _start


@pytest.fixture
def published(tmp_path: Path, invoke: Invoke) -> Iterator[Path]:
    workspace = TurnsWorkspace(tmp_path, invoke)
    try:
        # The target is cheaper per call (100 input tokens to 200), as accurate, caches alike.
        for agent, prompt in (("eliza", "100"), ("opencode", "200")):
            argv = workspace.argv(benchmarks="agentic")
            argv[argv.index("--agent") + 1] = agent
            process = _start(workspace, argv, {"TURNS_PROMPT": prompt, "TURNS_N": "6"})
            workspace.processes.append(process)
            assert workspace.finish(process)["outcomes"][0]["state"] == "succeeded"
        (tmp_path / "published").mkdir()
        yield publish(invoke, tmp_path / "published", "eliza", "opencode")
    finally:
        workspace.cleanup()


def row(latest: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((latest / "agentic__eliza_vs_opencode.json").read_text())
    return loaded


def test_executed_runs_publish_a_row_that_meets_the_contract(
    published: Path, invoke: Invoke
) -> None:
    published_row = row(published)
    assert (published_row["status"], published_row["comparison_status"]) == (
        "succeeded",
        "comparable",
    )
    assert (published_row["target_llm_call_count"], published_row["baseline_llm_call_count"]) == (
        6,
        6,
    )
    assert published_row["target_input_tokens"] == 600
    for gate in ("publishability", "readiness"):
        assert validate(invoke, published, gate, expect=0) == []


@pytest.mark.skipif(
    not CHECKOUT,
    reason="set BENCHLEDGER_ORCHESTRATOR_CHECKOUT to a checkout of elizaOS/benchmarks",
)
def test_the_orchestrators_validators_accept_the_rows_of_executed_runs(
    published: Path, package: Path
) -> None:
    gates = orchestrator(package, latest_dir=str(published))["gates"]
    assert {gate: (v["ok"], v["findings"]) for gate, v in gates.items()} == {
        gate: (True, []) for gate in ("publishability", "comparability", "readiness")
    }
