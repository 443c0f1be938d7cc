"""Code-agent latest rows checked by the orchestrator's own validators and by ours: both
accept a directory `head-to-head --publish-latest-dir` writes for rows that meet the
contract, and both reject a row that does not, for the same reasons. The orchestrator's
modules are imported from a private copy of BENCHLEDGER_ORCHESTRATOR_CHECKOUT in a
subprocess; without it the tests are skipped. Also: the comparison signature is the
orchestrator's for its own agents, and `opencode` lines up with `eliza` only in ours."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Invoke
from tests.e2e.test_code_agent_latest import (
    BASELINE_TURNS,
    TARGET_TURNS,
    Record,
    publish,
    record,  # noqa: F401 (a fixture)
    rewrite,
    validate,
)

CHECKOUT = os.environ.get("BENCHLEDGER_ORCHESTRATOR_CHECKOUT", "")
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
pytestmark = pytest.mark.skipif(
    not CHECKOUT,
    reason="set BENCHLEDGER_ORCHESTRATOR_CHECKOUT to a checkout of elizaOS/benchmarks",
)
ROW = "alpha__elizaos_vs_opencode.json"
GATES = ("publishability", "comparability", "readiness")
# The orchestrator's validators over a directory, and its runner's comparison signature
# (ORCHESTRATOR.md section 2; its calibration report's own copy knows fewer agents).
CHILD = """
import json, sys
from pathlib import Path
from benchmarks.suites.orchestrator import latest_comparability as c
from benchmarks.suites.orchestrator import latest_publishability as p
from benchmarks.suites.orchestrator import latest_readiness as r
from benchmarks.suites.orchestrator.runner import _comparison_signature_from_parts
ask = json.loads(sys.argv[1])
out = {}
if ask.get("latest_dir"):
    root, latest = Path(ask["root"]), Path(ask["latest_dir"])
    reports = {
        "publishability": p.validate_latest_publishability(root, latest_dir=latest),
        "comparability": c.validate_latest_comparability(root, latest_dir=latest),
        "readiness": r.validate_latest_readiness(
            root, latest_dir=latest, check_runtime_gates=False
        ),
    }
    out["gates"] = {gate: json.loads(report.to_json()) for gate, report in reports.items()}
out["signatures"] = [
    _comparison_signature_from_parts(
        benchmark_id=row["benchmark_id"],
        benchmark_directory=row["benchmark_directory"],
        agent=row["agent"],
        provider=row["provider"],
        model=row["model"],
        extra_config=row["extra_config"],
    )
    for row in ask.get("rows", [])
]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = importlib.util.spec_from_file_location(
        "orchestrator_import_copy", BENCHMARKS / "orchestrator_import.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    copied: Path = module.orchestrator_copy(Path(CHECKOUT), tmp_path_factory.mktemp("orchestrator"))
    return copied


def orchestrator(package: Path, **ask: Any) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps({"root": str(package), **ask})],
        cwd=package.parent,
        env={**os.environ, "PYTHONPATH": str(package.parent)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def both(invoke: Invoke, package: Path, latest: Path) -> dict[str, dict[str, Any]]:
    """Per gate: each side's verdict and its reasons."""
    theirs = orchestrator(package, latest_dir=str(latest))["gates"]
    out = {}
    for gate in GATES:
        ok = theirs[gate]["ok"]
        ours = validate(invoke, latest, gate, expect=0 if ok else 1)
        out[gate] = {
            "ok": ok,
            "theirs": {f["reason"] for f in theirs[gate]["findings"]},
            "ours": {f["reason"] for f in ours},
            "their_paths": _contract(theirs[gate]["findings"]),
            "our_paths": _contract(ours),
        }
    return out


def _contract(findings: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """The code-agent contract's findings, with the JSON path each names."""
    return {(f.get("path", ""), f["reason"]) for f in findings if "code_agent" in f["reason"]}


@pytest.fixture
def latest(invoke: Invoke, tmp_path: Path, record: Record) -> Path:  # noqa: F811
    record("alpha", "elizaos", 180, TARGET_TURNS)
    record("alpha", "opencode", 100, BASELINE_TURNS)
    return publish(invoke, tmp_path, "elizaos", "opencode")


def test_both_validators_accept_a_row_that_meets_the_contract(
    invoke: Invoke, package: Path, latest: Path
) -> None:
    row = json.loads((latest / ROW).read_text())
    assert row["status"] == "succeeded" and row["agent"] == "elizaos_vs_opencode"
    for gate, verdicts in both(invoke, package, latest).items():
        assert verdicts["ok"], (gate, verdicts["theirs"])  # and ours exited 0 with it


def _tampered_trajectory(latest: Path) -> None:
    rewrite(latest / ROW, target_input_tokens=2000, input_token_delta=-2000)


def _inconsistent(latest: Path) -> None:
    rewrite(latest / ROW, llm_call_delta=1, score=0.5, comparison_status="comparable")


def _not_live(latest: Path) -> None:
    rewrite(latest / ROW, mode="smoke", release_readiness_ok=False, status="failed")


def _no_baseline_trajectory(latest: Path) -> None:
    shutil.rmtree(json.loads((latest / ROW).read_text())["baseline_trajectory_dir"])


def _no_provenance(latest: Path) -> None:
    rewrite(latest / ROW, target_command_path="", baseline_right=None)


def _uncached(latest: Path) -> None:
    row = json.loads((latest / ROW).read_text())
    for path in Path(row["target_trajectory_dir"]).iterdir():
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        for line in lines:
            line.pop("cached_tokens")
        path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.mark.parametrize(
    "breach",
    [
        _tampered_trajectory,
        _inconsistent,
        _not_live,
        _no_baseline_trajectory,
        _no_provenance,
        _uncached,
    ],
)
def test_both_reject_a_row_that_breaks_the_contract_for_the_same_reasons(
    invoke: Invoke, package: Path, latest: Path, breach: Any
) -> None:
    breach(latest)
    verdicts = both(invoke, package, latest)
    publishability = verdicts["publishability"]
    assert not publishability["ok"]
    assert publishability["ours"] == publishability["theirs"]
    assert publishability["our_paths"] == publishability["their_paths"]
    assert verdicts["comparability"]["ours"] == verdicts["comparability"]["theirs"]
    readiness = verdicts["readiness"]
    assert not readiness["ok"]
    assert publishability["theirs"] <= readiness["theirs"]
    assert publishability["ours"] <= readiness["ours"]


def test_a_row_the_publisher_fails_is_rejected_by_both(
    invoke: Invoke,
    package: Path,
    tmp_path: Path,
    record: Record,  # noqa: F811
) -> None:
    record("alpha", "elizaos", 100, TARGET_TURNS)
    record("alpha", "opencode", 180, BASELINE_TURNS)
    latest = publish(invoke, tmp_path, "elizaos", "opencode")
    verdicts = both(invoke, package, latest)
    for gate in GATES:
        assert not verdicts[gate]["ok"]
    for gate in ("publishability", "comparability"):
        assert verdicts[gate]["ours"] == verdicts[gate]["theirs"], gate


def test_comparison_signatures_are_the_orchestrators_for_its_agents(package: Path) -> None:
    from benchledger.domain.signatures import comparison_signature, effective_config

    agents = ("eliza", "hermes", "openclaw", "random_v1", "half_v1", "compare", "smithers")
    agents += ("codex", "mini-swe-agent")
    rows = [
        {
            "benchmark_id": "bfcl",
            "benchmark_directory": "bfcl",
            "agent": agent,
            "provider": "cerebras",
            "model": "gpt-oss-120b",
            "extra_config": effective_config("bfcl", agent, {"limit": 10}),
        }
        for agent in (*agents, "opencode", "elizaos")
    ]
    theirs = orchestrator(package, rows=rows)["signatures"]
    ours = [
        comparison_signature(
            "bfcl", "cerebras", "gpt-oss-120b", r["extra_config"], agent=r["agent"]
        )
        for r in rows
    ]
    assert ours[: len(agents)] == theirs[: len(agents)]
    # Our addition: the code-agent adapters line up with eliza; the orchestrator keeps them.
    assert ours[-2:] == [ours[0], ours[0]]
    assert theirs[-2] != theirs[0] and theirs[-1] != theirs[0]
