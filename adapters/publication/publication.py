"""What the publication commands read: one consistent view of latest, quarantine,
baselines and benchmarks at one ledger position (live, or replayed with --as-of)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchledger.adapters.publication.queries import Queries
from benchledger.domain.publication import high_score_delta, matrix_contract

Key = tuple[str, str]


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

    @property
    def benchmark_ids(self) -> list[str]:
        keys = set(self.latest) | set(self.quarantine) | set(self.baselines)
        return sorted({b for b, _ in keys} | self.registered)

    @property
    def harnesses(self) -> list[str]:
        """The real agents with a row anywhere in the scope."""
        return sorted({a for _, a in set(self.latest) | set(self.quarantine)})

    def matrix(self, harnesses: Sequence[str] | None = None) -> dict[str, Any]:
        return matrix_contract(
            self.benchmark_ids, list(harnesses or self.harnesses), self.latest, self.quarantine
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


def load(
    queries: Queries,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> Publication:
    def keep(row: dict[str, Any]) -> bool:
        name = row["benchmark"]
        return (not include or name in include) and name not in exclude

    def keyed(table: str) -> dict[Key, dict[str, Any]]:
        return {(r["benchmark"], r["agent"]): r for r in queries.publication(table) if keep(r)}

    position, head = queries.head()
    benchmarks = queries.benchmarks()
    times = queries.conn.execute(
        "SELECT max(time) FROM events WHERE position <= ?", (position,)
    ).fetchone()
    return Publication(
        position=position,
        head_sha256=head,
        latest=keyed("latest"),
        quarantine=keyed("quarantine"),
        baselines=keyed("baselines"),
        benchmarks={b["benchmark"]: b for b in benchmarks},
        generated_at=times[0] if times else None,
        registered=frozenset(b["benchmark"] for b in benchmarks if keep(b)),
    )
