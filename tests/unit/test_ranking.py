from __future__ import annotations

import pytest

from benchledger.domain.comparison_stats import holm, mcnemar
from benchledger.domain.ranking import Contender, tie_groups


def passes(*flags: int) -> dict[str, float]:
    return {f"q{i:02d}": float(f) for i, f in enumerate(flags)}


# 20 questions: the leader passes 16, `close` differs on two (one each way), `far` passes 4
# of the leader's 16 and nothing else: 12 discordant pairs, all for the leader.
LEADER = passes(*[1] * 16, *[0] * 4)
CLOSE = passes(*[1] * 15, 0, 1, *[0] * 3)
FAR = passes(*[1] * 4, *[0] * 16)


class TestTieGroups:
    def test_a_close_agent_is_tied_with_the_leader_and_a_far_one_is_not(self) -> None:
        rows = tie_groups(
            [
                Contender("far", 0.2, FAR),
                Contender("close", 0.8, CLOSE),
                Contender("leader", 0.8 + 1e-9, LEADER),
            ]
        )
        assert [(r["rank"], r["name"], r["group"]) for r in rows] == [
            (1, "leader", 1),
            (2, "close", 1),
            (3, "far", 2),
        ]
        # Holm over the two tests against the leader: exact McNemar (1, 1) is 1 and
        # (12, 0) is 2 / 4096; times 1 and 2.
        p_close, _ = mcnemar(1, 1)
        p_far, _ = mcnemar(0, 12)
        assert holm([p_close, p_far]) == [pytest.approx(1.0), pytest.approx(2 * p_far)]
        assert rows[1]["p_holm"] == pytest.approx(1.0)
        assert rows[1]["rule"] == "tied with leader: Holm-adjusted p 1.0000 >= 0.05"
        assert rows[2]["rule"] == "not tied with leader: Holm-adjusted p 0.0010 < 0.05"
        assert rows[0]["rule"] == "leader: the best score"

    def test_lower_is_better_puts_the_smallest_score_first(self) -> None:
        rows = tie_groups(
            [Contender("a", 0.8, LEADER), Contender("b", 0.2, FAR)], higher_is_better=False
        )
        assert [r["name"] for r in rows] == ["b", "a"]
        assert rows[1]["group"] == 2

    def test_an_agent_without_paired_cells_is_never_tied(self) -> None:
        rows = tie_groups([Contender("a", 0.8, LEADER), Contender("b", 0.7, {"other": 1.0})])
        assert rows[1]["group"] == 2
        assert rows[1]["rule"] == "not tied with a: no paired test"
        assert tie_groups([]) == []
