"""`show-runs`: the orchestrator's quick audit of the runs, sorted by (agent, run id)."""

from __future__ import annotations

import json
import re

from tests.conftest import Invoke

LINE = re.compile(
    r"^(\S+) benchmark=(\S+) run_id=(\S+) agent=(\S+) provider=(\S*) model=(\S+) "
    r"status=(\S+) score=(\S+)$"
)


def listed(invoke: Invoke, *args: str) -> list[tuple[str, ...]]:
    lines = invoke("show-runs", *args).stdout.splitlines()
    found = [LINE.match(line) for line in lines]
    assert all(found), lines
    return [m.groups() for m in found if m]


def test_runs_are_sorted_by_agent_and_run_key_and_limited(invoke: Invoke) -> None:
    invoke("demo")
    runs = json.loads(invoke("runs", "--json").stdout)
    expected = sorted((r["agent"], r["run_key"]) for r in runs)

    shown = listed(invoke, "--limit", "1000")
    assert [(row[3], row[2]) for row in shown] == expected
    assert listed(invoke, "--desc", "--limit", "1000") == shown[::-1]
    assert listed(invoke, "--limit", "5") == shown[:5]
    assert len(listed(invoke)) == min(200, len(runs))  # the orchestrator's default

    by_key = {r["run_key"]: r for r in runs}
    started, benchmark, key, agent, provider, model, status, score = shown[0]
    run = by_key[key]
    assert (started, benchmark, agent, provider, model, status) == (
        run["started_at"],
        run["benchmark"],
        run["agent"],
        run["provider"],
        run["model"],
        run["status"],
    )
    assert score == str(run["score"])


def test_json_gives_the_same_runs_in_the_same_order(invoke: Invoke) -> None:
    invoke("demo")
    shown = [row[2] for row in listed(invoke, "--desc", "--limit", "7")]
    rows = json.loads(invoke("show-runs", "--desc", "--limit", "7", "--json").stdout)
    assert [r["run_key"] for r in rows] == shown
    assert {"run_id", "benchmark", "score", "status"} <= set(rows[0])


def test_a_negative_limit_is_a_usage_error(invoke: Invoke) -> None:
    assert "--limit" in invoke("show-runs", "--limit", "-1", expect=2).stderr
