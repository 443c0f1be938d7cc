"""Ranking the agents of one benchmark with tie groups a paired test supports.

Scores alone rank agents whose difference may be noise. Here an agent is tied with the
leader when the paired test of its cells against the leader's is not significant after
Holm's correction over the agents compared with that leader; the agents left form the
next group, led by the best of them, and so on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchledger.domain.comparison_stats import ALPHA, holm, paired_stats


@dataclass(frozen=True)
class Contender:
    name: str
    score: float | None
    cells: Mapping[str, float]
    clusters: Mapping[str, str] = field(default_factory=dict)


def tie_groups(
    contenders: Sequence[Contender], *, higher_is_better: bool = True, alpha: float = ALPHA
) -> list[dict[str, Any]]:
    """One row per contender, best score first: its rank, its group, the group's leader,
    the raw and Holm-adjusted p-value of its test against that leader, and the rule."""
    remaining = sorted(contenders, key=lambda c: _order(c, higher_is_better))
    rows: list[dict[str, Any]] = []
    # Why a contender left a group: its test against that group's leader (p, Holm p,
    # paired cells, rule), shown on its row when it leads a group of its own.
    left_because: dict[str, tuple[float | None, float | None, int, str]] = {}
    group = 0
    while remaining:
        leader, others = remaining[0], remaining[1:]
        group += 1
        p, p_holm, cells, rule = left_because.get(
            leader.name, (None, None, None, "leader: the best score")
        )
        rows.append(_row(leader, group, leader.name, p, p_holm, cells, rule))
        tests = [
            paired_stats(o.cells, leader.cells, clusters={**leader.clusters, **o.clusters})
            for o in others
        ]
        adjusted = holm([t.p_value for t in tests])
        left = []
        for other, stats, p_holm in zip(others, tests, adjusted, strict=True):
            if p_holm is not None and p_holm >= alpha:
                rule = f"tied with {leader.name}: Holm-adjusted p {p_holm:.4f} >= {alpha:g}"
                rows.append(
                    _row(other, group, leader.name, stats.p_value, p_holm, stats.n_paired, rule)
                )
                continue
            left.append(other)
            why = (
                "no paired test" if p_holm is None else f"Holm-adjusted p {p_holm:.4f} < {alpha:g}"
            )
            left_because.setdefault(
                other.name,
                (stats.p_value, p_holm, stats.n_paired, f"not tied with {leader.name}: {why}"),
            )
        remaining = left
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
    return rows


def _order(contender: Contender, higher_is_better: bool) -> tuple[bool, float, str]:
    score = contender.score
    if score is None:
        return (True, 0.0, contender.name)
    return (False, -score if higher_is_better else score, contender.name)


def _row(
    contender: Contender,
    group: int,
    leader: str,
    p: float | None,
    p_holm: float | None,
    cells: int | None,
    rule: str,
) -> dict[str, Any]:
    return {
        "name": contender.name,
        "score": contender.score,
        "group": group,
        "leader": leader,
        "p_vs_leader": p,
        "p_holm": p_holm,
        "paired_cells": cells,
        "rule": rule,
    }
