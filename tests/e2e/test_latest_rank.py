from __future__ import annotations

import json
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from benchledger.domain.comparison_stats import holm, mcnemar
from tests.conftest import Invoke
from tests.helpers import run_json, write_json


def flags(*values: int) -> list[dict[str, Any]]:
    return [
        {"key": f"q{i:02d}", "outcome": "passed" if v else "failed", "score": float(v)}
        for i, v in enumerate(values)
    ]


@pytest.fixture
def ledger(invoke: Invoke, tmp_path: Path) -> None:
    """bfcl, 20 questions: eliza passes 16; hermes 16 too, differing on two (one each
    way): tied; opencode passes 4 of eliza's 16: 12 discordant pairs, not tied."""
    minutes = count()
    for agent, cells in (
        ("eliza", flags(*[1] * 16, *[0] * 4)),
        ("hermes", flags(*[1] * 15, 0, 1, *[0] * 3)),
        ("opencode", flags(*[1] * 4, *[0] * 16)),
    ):
        minute = next(minutes)
        score = sum(c["score"] for c in cells) / len(cells)
        doc = run_json(
            "bfcl",
            agent,
            score=score,
            cells=cells,
            started_at=f"2026-05-12T10:{minute:02d}:00+00:00",
            ended_at=f"2026-05-12T10:{minute:02d}:30+00:00",
        )
        invoke("import", str(write_json(tmp_path / f"{agent}.json", doc)))


@pytest.mark.usefixtures("ledger")
class TestRank:
    def test_two_statistically_tied_agents_share_the_first_group(self, invoke: Invoke) -> None:
        rows = json.loads(invoke("latest", "--benchmark", "bfcl", "--rank", "--json").stdout)
        assert [(r["rank"], r["group"]) for r in rows] == [(1, 1), (2, 1), (3, 2)]
        assert {r["agent"] for r in rows[:2]} == {"eliza", "hermes"}
        assert rows[2]["agent"] == "opencode"
        expected = holm([mcnemar(1, 1)[0], mcnemar(12, 0)[0]])
        assert [r["p_holm"] for r in rows[1:]] == [pytest.approx(p) for p in expected]
        assert rows[2]["rule"].startswith(f"not tied with {rows[0]['agent']}: Holm-adjusted p")
        assert all(r["leader"] == rows[0]["agent"] for r in rows[:2])

    def test_the_table_names_the_rule_per_agent(self, invoke: Invoke) -> None:
        table = invoke("latest", "--benchmark", "bfcl", "--rank").stdout
        assert "tied with" in table and "not tied with" in table
        header = table.splitlines()[0].split()
        assert header[:3] == ["rank", "group", "agent"] and "rule" in header

    def test_rank_needs_a_benchmark(self, invoke: Invoke) -> None:
        result = invoke("latest", "--rank", expect=2)
        assert "--rank needs --benchmark" in result.stderr


@pytest.mark.usefixtures("ledger")
class TestRecordedRanking:
    def test_a_recorded_ranking_is_served_by_the_tie_groups_query(
        self, invoke: Invoke, db: Path
    ) -> None:
        shown = invoke("latest", "--benchmark", "bfcl", "--rank", "--record", "--json")
        assert shown.stderr.startswith("Recorded ranking rank_")
        ranked = json.loads(shown.stdout)
        [event] = json.loads(invoke("events", "--json").stdout)[-1:]
        assert event["type"] == "RankingRecorded" and event["data"]["rows"] == ranked

        from benchledger.adapters.publication.browse import datasette_for
        from tests.e2e.test_datasette import get_json

        rows = get_json(datasette_for(db), "/ledger/tie_groups.json?benchmark=bfcl&_shape=array")
        assert [(r["rank"], r["tie_group"], r["agent"]) for r in rows] == [
            (r["rank"], r["group"], r["agent"]) for r in ranked
        ]
        assert [r["tie_group"] for r in rows] == [1, 1, 2]

    def test_record_needs_rank(self, invoke: Invoke) -> None:
        assert "needs --rank" in invoke("latest", "--record", expect=2).stderr
