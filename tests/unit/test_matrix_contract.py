"""The matrix contract's columns: the harnesses some benchmark lists a cell of, in the
order they were given (every harness given when every cell is asked for)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from benchledger.domain.matrix import (
    CANONICAL_HARNESSES,
    AgentRules,
    _listed,
    _positions,
    matrix_contract,
)


def row(benchmark: str, agent: str) -> dict[str, Any]:
    return {"status": "succeeded", "score": 0.5, "run_id": f"{benchmark}-{agent}"}


HARNESSES = ["alpha", "zeta", "beta", "omega"]
LATEST = {("b1", "zeta"): row("b1", "zeta"), ("b2", "beta"): row("b2", "beta")}
HELD = {("b3", "alpha"): {"status": "failed", "score": None, "run_id": "b3-alpha"}}


def test_columns_are_the_harnesses_a_benchmark_lists_in_their_given_order() -> None:
    contract = matrix_contract(["b1", "b2", "b3"], HARNESSES, LATEST, HELD)
    # omega has no row of any benchmark: no column; the others keep the order given.
    assert contract["harnesses"] == ["alpha", "zeta", "beta"]
    assert {b: list(e["cells"]) for b, e in contract["benchmarks"].items()} == {
        "b1": ["zeta"],
        "b2": ["beta"],
        "b3": ["alpha"],
    }
    assert contract["benchmarks"]["b3"]["cells"]["alpha"]["state"] == "failed"


def test_every_cell_lists_every_harness_given() -> None:
    contract = matrix_contract(["b1"], HARNESSES, LATEST, {}, every_cell=True)
    assert contract["harnesses"] == HARNESSES
    assert list(contract["benchmarks"]["b1"]["cells"]) == HARNESSES


def test_no_benchmark_no_column() -> None:
    assert matrix_contract([], HARNESSES, LATEST, HELD)["harnesses"] == []


_NAMES = st.sampled_from(["alpha", "beta", "zeta", "omega", "eliza", "codex", "hermes"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_NAMES, max_size=12),
    st.sets(_NAMES),
    st.none() | st.tuples(st.sets(_NAMES), st.dictionaries(_NAMES, st.just("why"))),
)
def test_a_benchmark_lists_what_filtering_every_harness_would(
    harnesses: list[str],
    with_rows: set[str],
    rule_of: tuple[set[str], dict[str, str]] | None,
) -> None:
    """Found from the wanted harnesses, in the given order, repeats kept where given."""
    rule = None if rule_of is None else AgentRules(tuple(sorted(rule_of[0])), None, rule_of[1])
    wanted = set(with_rows)
    if rule is not None:
        wanted |= {*CANONICAL_HARNESSES, *rule.required, *rule.unsupported}
    listed = _listed(harnesses, _positions(harnesses), rule, with_rows)
    assert listed == [h for h in harnesses if h in wanted]
