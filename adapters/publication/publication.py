"""What the publication commands read: one consistent view of latest, quarantine,
baselines, benchmarks and their required agents at one ledger position (live, or
replayed with --as-of)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, partial
from pathlib import Path
from typing import Any, Literal

from benchledger.adapters.publication.queries import Queries
from benchledger.adapters.publication.source_rows import source_rows
from benchledger.adapters.store.read_side import latest_checkpoint
from benchledger.domain.matrix import NOT_HARNESSES, AgentRules, matrix_contract
from benchledger.domain.publication import group_marker, high_score_delta

Key = tuple[str, str]
# `cohort`: the newest complete cohort of each benchmark's required agents where their
# newest rows would mix comparison signatures (the default, as the orchestrator
# publishes); `newest`: every (benchmark, agent)'s own newest acceptable row.
Selection = Literal["cohort", "newest"]
SELECTIONS: tuple[Selection, ...] = ("cohort", "newest")
# The source of the rules `--required-agents` states for a check.
REQUIRED_OPTION = "--required-agents"
TABLE_OF: dict[Selection, str] = {"cohort": "latest", "newest": "latest_per_agent"}


@dataclass(frozen=True)
class PublishedFile:
    """One latest/ file as a gate reads it: its name and JSON payload, or `error`
    (`invalid_json`, the payload then the parser's message; `non_object_json`)."""

    name: str
    payload: Any
    error: str | None = None
    key: Key | None = None
    full_path: Path | None = None


@dataclass(frozen=True)
class Publication:
    position: int
    head_sha256: str
    latest: dict[Key, dict[str, Any]]
    quarantine: dict[Key, dict[str, Any]]
    baselines: dict[Key, dict[str, Any]]
    benchmarks: dict[str, dict[str, Any]]
    generated_at: str | None
    # Registered benchmarks in scope (by the registry or by an import): with or without
    # rows, each is part of the matrix, as the orchestrator's matrix covers every
    # benchmark it knows.
    registered: frozenset[str] = frozenset()
    # The benchmarks whose required agents are known (declared or derived).
    rules: dict[str, AgentRules] = field(default_factory=dict)
    selection: Selection = "cohort"
    # Each run group's kind (`run`, `import`, `demo`, `source`), by run group id.
    group_kinds: dict[str, str] = field(default_factory=dict)
    # The benchmark filters (--include-benchmarks / --exclude-benchmarks) of the scope.
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    # A latest/ directory read from disk: where, its files as they are (the ledger's
    # are its latest rows as export-latest writes them: None), and its index's
    # matrix_contract as stated (None: it states none), its benchmarks filtered.
    latest_dir: str | None = None
    files: tuple[PublishedFile, ...] | None = None
    stated_contract: dict[str, Any] | None = None
    # The orchestrator's own rows of the picks imported from it, by ledger run id
    # (`source_rows`), read when an export or a gate first asks for them.
    sources: Callable[[], dict[str, dict[str, Any]]] = lambda: {}
    # The latest signed checkpoint recorded up to `position`; None when none was made.
    checkpoint: dict[str, Any] | None = None

    @property
    def filtered(self) -> bool:
        return bool(self.include or self.exclude)

    def selects(self, benchmark: str) -> bool:
        return (not self.include or benchmark in self.include) and benchmark not in self.exclude

    @property
    def checked_files(self) -> int:
        """The latest/ files a publishability check reads (the orchestrator's count)."""
        return len(self.files) if self.files is not None else len(self.latest)

    def contract(self) -> dict[str, Any] | None:
        """The matrix contract the readiness gate reads: a directory's as its index.json
        states it (None without one), the ledger's as computed now."""
        if self.latest_dir is not None:
            return self.stated_contract
        return self.matrix()

    def group_marker(self, row: dict[str, Any]) -> str | None:
        """`demo_data` for a row of a run recorded in the demo's run group, else None."""
        return group_marker(self.group_kinds.get(str(row.get("run_group_id"))))

    @property
    def benchmark_ids(self) -> list[str]:
        keys = set(self.latest) | set(self.quarantine) | set(self.baselines)
        return sorted({b for b, _ in keys} | self.registered)

    @property
    def harnesses(self) -> list[str]:
        """The real agents with a row anywhere in the scope (but `compare`, no agent), and
        every required agent."""
        required = {a for rule in self.rules.values() for a in rule.required}
        seen = {a for _, a in set(self.latest) | set(self.quarantine)} - NOT_HARNESSES
        return sorted(seen | required)

    def required_agents(self, benchmark: str) -> list[str]:
        """The agents a complete row of this benchmark needs: its rules', else none (nobody
        asked for any: no agent is missing)."""
        rule = self.rules.get(benchmark)
        return list(rule.required) if rule is not None else []

    def requiring(self, agents: Sequence[str]) -> Publication:
        """This publication with `agents` required of every benchmark in scope (as asked
        with --required-agents), whatever its rules require; what they say of the agents
        that cannot run a benchmark stays."""
        asked = tuple(dict.fromkeys(agents))

        def rule(benchmark: str) -> AgentRules:
            held = self.rules.get(benchmark)
            if held is None:
                return AgentRules(required=asked, source=REQUIRED_OPTION)
            return replace(held, required=asked, source=REQUIRED_OPTION)

        return replace(self, rules={b: rule(b) for b in self.benchmark_ids if self.selects(b)})

    def unsupported(self, benchmark: str, agent: str) -> bool:
        rule = self.rules.get(benchmark)
        return rule is not None and not rule.supports(agent)

    def matrix(self, harnesses: Sequence[str] | None = None) -> dict[str, Any]:
        """The matrix contract over the harnesses asked for by name (every cell of each),
        else over the agents with a row or required (the cells each benchmark has)."""
        return matrix_contract(
            self.benchmark_ids,
            list(harnesses or self.harnesses),
            self.latest,
            self.quarantine,
            self.rules,
            every_cell=bool(harnesses),
        )

    def with_high_score(self, row: dict[str, Any]) -> dict[str, Any]:
        """The row plus its benchmark's high-score reference and the delta, computed now."""
        bench = self.benchmarks.get(row["benchmark"], {})
        reference = bench.get("high_score_value")
        return {
            **row,
            "high_score_label": bench.get("high_score_label"),
            "high_score_value": reference,
            "delta_to_high_score": high_score_delta(
                row.get("score"),
                row.get("unit"),
                bool(row.get("higher_is_better", True)),
                reference,
                bench.get("high_score_unit"),
            ),
        }


def rules(queries: Queries) -> dict[str, AgentRules]:
    """Each benchmark's required agents, as the `required_agents` read model holds them."""
    out: dict[str, AgentRules] = {}
    cursor = queries.conn.execute(
        "SELECT benchmark, required, compatible, unsupported, required_env, source "
        "FROM required_agents ORDER BY benchmark"
    )
    for benchmark, required, compatible, unsupported, required_env, source in cursor:
        listed = json.loads(compatible) if compatible is not None else None
        out[benchmark] = AgentRules(
            required=tuple(json.loads(required)),
            compatible=tuple(listed) if listed is not None else None,
            unsupported=json.loads(unsupported or "{}"),
            source=source or "",
            required_env={a: tuple(n) for a, n in json.loads(required_env or "{}").items()},
        )
    return out


def load(
    queries: Queries,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    selection: Selection = "cohort",
) -> Publication:
    def keep(name: str) -> bool:
        return (not include or name in include) and name not in exclude

    def keyed(table: str) -> dict[Key, dict[str, Any]]:
        return {
            (r["benchmark"], r["agent"]): r
            for r in queries.publication(table)
            if keep(r["benchmark"])
        }

    position, head = queries.head()
    benchmarks = queries.benchmarks()
    latest = keyed(TABLE_OF[selection])
    quarantine, baselines = keyed("quarantine"), keyed("baselines")
    picked = [row["run_id"] for rows in (latest, quarantine, baselines) for row in rows.values()]
    times = queries.conn.execute(
        "SELECT max(time) FROM events WHERE position <= ?", (position,)
    ).fetchone()
    return Publication(
        position=position,
        head_sha256=head,
        checkpoint=latest_checkpoint(queries.conn, position),
        latest=latest,
        quarantine=quarantine,
        baselines=baselines,
        benchmarks={b["benchmark"]: b for b in benchmarks},
        generated_at=times[0] if times else None,
        registered=frozenset(b["benchmark"] for b in benchmarks if keep(b["benchmark"])),
        rules={b: r for b, r in rules(queries).items() if keep(b)},
        selection=selection,
        group_kinds=dict(queries.conn.execute("SELECT run_group_id, kind FROM run_groups")),
        include=tuple(include),
        exclude=tuple(exclude),
        sources=cache(partial(source_rows, queries.conn, picked)),
    )
