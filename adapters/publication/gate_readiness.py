"""The readiness gate, as the orchestrator's `validate-latest-readiness` composes it:
the matrix contract (its status, its summary counters and every cell that did not
succeed), then the publishability and comparability findings, then the runtime gates.

A directory's contract is read as its index.json states it; the ledger's is computed at
the position read. Without filters a contract that is not `complete` and its non-zero
counters are findings of their own, as in the orchestrator; with filters only the
selected benchmarks' cells are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchledger.adapters.publication.gate_comparability import comparability
from benchledger.adapters.publication.gate_findings import Finding, named
from benchledger.adapters.publication.gate_publishability import publishability
from benchledger.adapters.publication.publication import Publication

SUMMARY_FINDINGS = (
    "unsupported_real_cells",
    "missing_required_real_cells",
    "failed_required_real_cells",
    "no_required_real_harness_benchmarks",
)
NO_CONTRACT = "latest/index.json has no matrix_contract object"
FILTERED_OUT = "filters excluded every benchmark in latest/index.json"
NO_ROW = "no_publishable_row"


def readiness(
    pub: Publication, tolerance: float | None = None, extra: Sequence[Finding] = ()
) -> list[Finding]:
    """The contract's findings, then publishability's (scope `publishability:<file><path>`)
    and comparability's (`comparability:<benchmark>`), then `extra`: the runtime gates of
    the benchmarks in scope (scope `runtime_gate:<benchmark>`)."""
    out = contract_findings(pub)
    # A cell the contract already names needs no second finding of benchledger's own
    # saying its key has no publishable row: one defect, one finding.
    named_cells = {str(f["scope"]) for f in out if "::" in str(f["scope"])}
    for item in publishability(pub):
        if item.get("extra") and item["reason"] == NO_ROW and item["scope"] in named_cells:
            continue
        out.append(_with_metadata({**item, "scope": f"publishability:{item['scope']}"}))
    for item in comparability(pub, tolerance):
        out.append(_with_metadata({**item, "scope": f"comparability:{item['scope']}"}))
    return out + [_with_metadata(item) for item in extra]


def _with_metadata(item: Finding) -> Finding:
    return {**item, "metadata": item.get("metadata")}


def contract_findings(pub: Publication) -> list[Finding]:
    contract = pub.contract()
    out: list[Finding] = []
    if contract is None:
        return [named("matrix_contract", "missing_matrix_contract", NO_CONTRACT, metadata=None)]
    if contract.get("status") != "complete" and not pub.filtered:
        out.append(
            named(
                "matrix_contract",
                "matrix_contract_incomplete",
                str(contract.get("status")),
                metadata=None,
            )
        )
    summary = contract.get("summary")
    if isinstance(summary, dict) and not pub.filtered:
        for key in SUMMARY_FINDINGS:
            count = summary.get(key)
            if isinstance(count, int) and count > 0:
                out.append(named("matrix_contract.summary", key, str(count), metadata=None))
    benchmarks = contract.get("benchmarks")
    selected = 0
    for benchmark, entry in sorted((benchmarks if isinstance(benchmarks, dict) else {}).items()):
        if not pub.selects(str(benchmark)):
            continue
        selected += 1
        cells = entry.get("cells") if isinstance(entry, dict) else None
        for harness, cell in sorted((cells if isinstance(cells, dict) else {}).items()):
            if isinstance(cell, dict) and _blocks(cell):
                out.append(_cell_finding(str(benchmark), str(harness), cell))
    if pub.filtered and selected == 0:
        scope = "matrix_contract.benchmarks"
        out.append(named(scope, "no_selected_benchmarks", FILTERED_OUT, metadata=None))
    return out


def _blocks(cell: dict[str, Any]) -> bool:
    """Every cell that did not succeed, but one benchledger's matrix adds for an agent that
    may run the benchmark and is not required (the orchestrator's contract has none)."""
    if cell.get("state") == "succeeded":
        return False
    return cell.get("required") is not False or cell.get("state") == "unsupported"


def _cell_finding(benchmark: str, harness: str, cell: dict[str, Any]) -> Finding:
    listed = cell.get("required_env")
    names = [str(v) for v in listed if str(v).strip()] if isinstance(listed, list) else []
    return named(
        f"{benchmark}::{harness}",
        str(cell.get("state") or "unknown_state"),
        str(cell.get("reason") or cell.get("status") or ""),
        metadata={"required_env": names} if names else None,
        run_id=cell.get("run_id"),
    )
