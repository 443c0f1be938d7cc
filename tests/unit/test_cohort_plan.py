"""The work an agent cohort plans: which benchmark runs under which agent's request."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import click
import pytest

from benchledger.adapters.execution.registry import work_config
from benchledger.commands.work import Work, plan
from benchledger.domain.signatures import comparison_signature

REGISTRY = """\
[benchmarks.pair]
command = ["bench"]
config = { limit = 4 }
agents = ["eliza", "hermes"]

[benchmarks.open]
command = ["bench"]

[accounts.hermes]
root = "homes"
env = "HERMES_HOME"
"""


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    path = tmp_path / "benchledger.toml"
    path.write_text(textwrap.dedent(REGISTRY))
    for account in ("h1", "h2"):
        (tmp_path / "homes" / account).mkdir(parents=True)
    return path


def planned(registry: Path, benchmarks: str, **options: Any) -> Work:
    fields: dict[str, Any] = {
        "agent": None,
        "provider": "cerebras",
        "model": "m",
        "model_profile": None,
        "extra": '{"temperature": 0}',
        "accounts": None,
        "account_pool": None,
        "results_root": None,
    }
    fields.update((k, options.pop(k)) for k in list(options) if k in fields)
    return plan(registry, (benchmarks,), False, **fields, **options)


def items(work: Work) -> list[tuple[str, str, int]]:
    return [(spec.id, request.agent, index) for spec, request, index in work.items()]


def test_agents_run_every_benchmark_for_each_agent_in_order(registry: Path) -> None:
    work = planned(registry, "pair,open", agents=("openclaw,eliza",))
    assert [r.agent for r in work.cohort] == ["openclaw", "eliza"]
    assert items(work) == [
        ("pair", "openclaw", 0),
        ("pair", "eliza", 0),
        ("open", "openclaw", 1),
        ("open", "eliza", 1),
    ]
    # The requests differ in their agent only: one config, one comparison signature.
    assert [(r.provider, r.model, r.extras, r.mode) for r in work.cohort] == [
        ("cerebras", "m", ({"temperature": 0},), "default")
    ] * 2
    spec = work.specs[0]
    signatures = {
        comparison_signature(
            "pair",
            r.provider,
            r.model,
            work_config(spec, r.agent, r.provider, *r.extras),
            directory="pair",
            agent=r.agent,
        )
        for r in work.cohort
    }
    assert len(signatures) == 1


def test_all_agents_are_each_benchmarks_compatible_agents_else_the_three(registry: Path) -> None:
    work = planned(registry, "pair,open", all_agents=True)
    assert work.cohort_agents == {
        "pair": ("eliza", "hermes"),
        "open": ("eliza", "hermes", "openclaw"),
    }
    assert [r.agent for r in work.cohort] == ["eliza", "hermes", "openclaw"]
    assert items(work) == [
        ("pair", "eliza", 0),
        ("pair", "hermes", 0),
        ("open", "eliza", 1),
        ("open", "hermes", 1),
        ("open", "openclaw", 1),
    ]


def test_one_agent_is_no_cohort(registry: Path) -> None:
    work = planned(registry, "pair,open", agent="eliza")
    assert work.cohort == () and work.requests() == (work.request,)
    assert items(work) == [("pair", "eliza", 0), ("open", "eliza", 1)]


def test_each_agent_of_a_cohort_uses_its_own_account_pool(registry: Path) -> None:
    work = planned(registry, "pair,open", agents=("eliza,hermes",))
    pools = {r.agent: r.accounts for r in work.cohort}
    assert pools["eliza"] is None
    hermes = pools["hermes"]
    assert hermes is not None and [a.id for a in hermes.accounts] == ["h1", "h2"]
    assert [hermes.at(i).id for _, r, i in work.items() if r.agent == "hermes"] == ["h1", "h2"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"agent": "eliza", "agents": ("hermes",)}, "--agent and --agents exclude each other"),
        ({"agent": "eliza", "all_agents": True}, "--agent and --all-agents exclude each other"),
        ({"agents": ("eliza",), "all_agents": True}, "--agents and --all-agents exclude"),
        ({}, "Missing option '--agent'"),
    ],
)
def test_agent_options_exclude_each_other(
    registry: Path, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(click.UsageError, match=message):
        planned(registry, "pair", **options)


def test_an_empty_agents_list_is_refused(registry: Path) -> None:
    with pytest.raises(click.BadParameter, match="names no agent"):
        planned(registry, "pair", agents=(" , ",))
