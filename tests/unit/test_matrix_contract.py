"""The matrix contract's columns: the harnesses some benchmark lists a cell of, in the
order they were given (every harness given when every cell is asked for)."""

from __future__ import annotations

from typing import Any

from benchledger.domain.matrix import matrix_contract


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
