"""The matrix contract: benchmarks x agents, which cells a complete benchmark needs.

A benchmark's required agents come from its rules (`AgentRules`: declared by the
registry or an imported matrix contract, or derived from the orchestrator's
incompatible-harness records). A benchmark without rules requires no agent: nobody
asked for one, so no cell of it is missing. The shape is the ElizaOS orchestrator's
`matrix_contract` (ORCHESTRATOR.md §4, §11c).

A benchmark's cells are its agents with a row, its required agents and the agents its
rules name as unable to run it (the orchestrator's canonical harnesses among them), not
every agent of the ledger: on a ledger of many harnesses the cross product is mostly
agents that never ran the benchmark and that nobody asked to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# The harnesses the orchestrator requires wherever an adapter supports them.
CANONICAL_HARNESSES = ("eliza", "hermes", "openclaw")
# Labels of runs that are no agent's cell: the orchestrator's `compare` command runs a
# benchmark for two providers side by side under the label `compare`. Its rows are
# published (latest/<b>__compare.json) but are in no matrix.
NOT_HARNESSES = frozenset({"compare"})
SUBSCRIPTION_PROVIDER = "claude-subscription"

Key = tuple[str, str]


@dataclass(frozen=True)
class AgentRules:
    """Which agents a complete row of one benchmark needs, and which may run it at all."""

    required: tuple[str, ...]
    # Every agent that may run the benchmark; None when the source does not say.
    compatible: tuple[str, ...] | None = None
    # Why an agent cannot run it, in the source's words.
    unsupported: Mapping[str, str] = field(default_factory=dict)
    source: str = ""
    # What an agent that cannot run it lacks (environment variables), where stated.
    required_env: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def supports(self, agent: str) -> bool:
        return self.compatible is None or agent in self.compatible or agent in self.required

    def unsupported_reason(self, agent: str) -> str:
        if agent in self.unsupported:
            return self.unsupported[agent]
        allowed = ", ".join(self.compatible or ()) or "none"
        return f"harness '{agent}' not in adapter compatibility ({allowed})"


def rules_from_matrix_contract(contract: Mapping[str, Any], source: str) -> dict[str, AgentRules]:
    """The rules an orchestrator `matrix_contract` (latest/index.json) states per benchmark:
    its required cells, its compatible harnesses and its unsupported cells' reasons (and
    `required_env`)."""
    out: dict[str, AgentRules] = {}
    benchmarks = contract.get("benchmarks")
    for benchmark, entry in (benchmarks if isinstance(benchmarks, dict) else {}).items():
        if not isinstance(entry, dict) or not isinstance(entry.get("cells"), dict):
            continue
        if entry.get("required_agents_stated") is False:
            continue  # benchledger's entry of a benchmark nothing requires an agent of
        cells = {h: c for h, c in entry["cells"].items() if isinstance(c, dict)}
        required = tuple(h for h, c in cells.items() if c.get("required") is True)
        listed = entry.get("compatible_harnesses")
        compatible = [str(h) for h in listed] if isinstance(listed, list) else []
        unsupported = {
            h: str(c["reason"])
            for h, c in cells.items()
            if c.get("state") == "unsupported" and isinstance(c.get("reason"), str)
        }
        required_env = {
            h: tuple(str(name) for name in c["required_env"])
            for h, c in cells.items()
            if c.get("state") == "unsupported"
            and isinstance(c.get("required_env"), list)
            and c["required_env"]
        }
        out[str(benchmark)] = AgentRules(
            required=required,
            compatible=tuple(dict.fromkeys([*compatible, *required])),
            unsupported=unsupported,
            source=source,
            required_env=required_env,
        )
    return out


SUMMARY = (
    "benchmarks",
    "required_real_cells",
    "succeeded_required_real_cells",
    "missing_required_real_cells",
    "failed_required_real_cells",
    "unsupported_real_cells",
    "complete_benchmarks",
    "incomplete_benchmarks",
    "no_required_real_harness_benchmarks",
    "invalid_subscription_cohort_benchmarks",
)


def _cell(
    required: bool, row: dict[str, Any] | None, held: dict[str, Any] | None
) -> dict[str, Any]:
    """A cell with a row (or none): succeeded, the quarantined row's status (its reason
    when it succeeded but may not be published), or missing; the score is its row's (a
    quarantined row's too, as the orchestrator's cell shows it)."""
    if row is not None:
        state, source = "succeeded", row
    elif held is not None:
        status = str(held.get("status"))
        state = str(held.get("quarantine_reason")) if status == "succeeded" else status
        source = held
    else:
        state, source = "missing", {}
    return {
        "required": required,
        "state": state,
        "status": source.get("status", "missing"),
        "score": source.get("score"),
        "run_id": source.get("run_id"),
        "run_group_id": source.get("run_group_id"),
    }


def _unsupported(reason: str, required_env: Sequence[str] = ()) -> dict[str, Any]:
    cell: dict[str, Any] = {
        "required": False,
        "state": "unsupported",
        "status": "unsupported",
        "score": None,
        "run_id": None,
        "reason": reason,
    }
    if required_env:
        cell["required_env"] = list(required_env)
    return cell


def _cohort(rows: list[dict[str, Any] | None]) -> tuple[str | None, str | None]:
    """(cohort_run_group_id, cohort_reason): required rows that all come from a
    subscription provider must come from one run group."""
    if len(rows) < 2 or not all(
        r is not None and str(r.get("provider") or "").strip().lower() == SUBSCRIPTION_PROVIDER
        for r in rows
    ):
        return None, None
    groups = {str(r.get("run_group_id") or "").strip() for r in rows if r is not None}
    if "" in groups or len(groups) != 1:
        return None, "subscription_rows_not_single_cohort"
    return next(iter(groups)), None


def _positions(harnesses: Sequence[str]) -> dict[str, list[int]]:
    """Where each harness stands in `harnesses` (every place, should it repeat)."""
    positions: dict[str, list[int]] = {}
    for i, harness in enumerate(harnesses):
        positions.setdefault(harness, []).append(i)
    return positions


def _listed(
    harnesses: Sequence[str],
    positions: dict[str, list[int]],
    rule: AgentRules | None,
    with_rows: set[str],
) -> list[str]:
    """The harnesses with a cell of this benchmark: a row (`with_rows`), required, or
    named unable; in the order of `harnesses` (`positions`: `_positions` of them). Found
    from the few wanted, not by asking of each of the many harnesses of a ledger of many
    harnesses whether it is wanted, for each of its many benchmarks."""
    wanted = with_rows
    if rule is not None:
        wanted = wanted | {*CANONICAL_HARNESSES, *rule.required, *rule.unsupported}
    return [harnesses[i] for i in sorted(i for h in wanted for i in positions.get(h, ()))]


def matrix_contract(
    benchmarks: Sequence[str],
    harnesses: Sequence[str],
    latest: Mapping[Key, dict[str, Any]],
    quarantine: Mapping[Key, dict[str, Any]],
    rules: Mapping[str, AgentRules] | None = None,
    *,
    every_cell: bool = False,
) -> dict[str, Any]:
    """Benchmarks x harnesses: which required cells have a publishable latest row. Each
    benchmark lists only the cells `_listed` gives, unless `every_cell` (harnesses asked
    for by name); one without rules requires nothing: `complete` null and
    `required_agents_stated` false (a directory read back keeps it so)."""
    summary = dict.fromkeys(SUMMARY, 0)
    # The agents with a row of each benchmark: a benchmark's cells are found without
    # asking every (benchmark, agent) pair of the matrix.
    with_rows: dict[str, set[str]] = {}
    for benchmark, agent in (*latest, *quarantine):
        with_rows.setdefault(benchmark, set()).add(agent)
    table: dict[str, Any] = {}
    positions = {} if every_cell else _positions(harnesses)
    for benchmark in benchmarks:
        rule = (rules or {}).get(benchmark)
        listed = (
            list(harnesses)
            if every_cell
            else _listed(harnesses, positions, rule, with_rows.get(benchmark, set()))
        )
        required = [h for h in listed if rule is not None and h in rule.required]
        cells: dict[str, Any] = {}
        for harness in listed:
            key = (benchmark, harness)
            if harness in required:
                cell = _cell(True, latest.get(key), quarantine.get(key))
                summary["required_real_cells"] += 1
                counter = {
                    "succeeded": "succeeded_required_real_cells",
                    "missing": "missing_required_real_cells",
                }.get(cell["state"], "failed_required_real_cells")
                summary[counter] += 1
            elif rule is not None and not rule.supports(harness):
                cell = _unsupported(
                    rule.unsupported_reason(harness), rule.required_env.get(harness, ())
                )
                summary["unsupported_real_cells"] += 1
            else:  # may run it, but a complete row does not need it
                cell = _cell(False, latest.get(key), quarantine.get(key))
            cells[harness] = cell
        summary["benchmarks"] += 1
        if rule is None:  # neither complete nor incomplete: the summary keeps its keys
            table[benchmark] = {
                "compatible_harnesses": [],
                "required_agents_stated": False,
                "complete": None,
                "cohort_run_group_id": None,
                "cohort_reason": None,
                "cells": cells,
            }
            continue
        complete = bool(required) and all(cells[h]["state"] == "succeeded" for h in required)
        cohort_group, cohort_reason = _cohort([latest.get((benchmark, h)) for h in required])
        if cohort_reason is not None:
            complete = False
            summary["invalid_subscription_cohort_benchmarks"] += 1
        summary["complete_benchmarks" if complete else "incomplete_benchmarks"] += 1
        if not required:
            summary["no_required_real_harness_benchmarks"] += 1
        table[benchmark] = {
            "compatible_harnesses": required,
            "complete": complete,
            "cohort_run_group_id": cohort_group,
            "cohort_reason": cohort_reason,
            "cells": cells,
        }
    status = "complete" if summary["incomplete_benchmarks"] == 0 else "incomplete"
    # The harnesses any benchmark lists a cell of, gathered once: asking each benchmark
    # for each harness walked the whole matrix per column.
    shown = {h for e in table.values() for h in e["cells"]}
    columns = [h for h in harnesses if every_cell or h in shown]
    return {"status": status, "harnesses": columns, "summary": summary, "benchmarks": table}
