from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Invoke
from tests.helpers import create_empty_ledger, run_json, write_json

Add = Callable[..., None]


@pytest.fixture
def add(invoke: Invoke, tmp_path: Path) -> Add:
    """Import one hand-built run; each call starts a minute later than the last."""
    minutes = count()

    def add_run(benchmark: str = "bfcl", agent: str = "eliza", **fields: Any) -> None:
        minute = next(minutes)
        fields.setdefault("started_at", f"2026-05-12T10:{minute:02d}:00+00:00")
        fields.setdefault("ended_at", f"2026-05-12T10:{minute:02d}:30+00:00")
        path = write_json(tmp_path / f"run-{minute}.json", run_json(benchmark, agent, **fields))
        invoke("import", str(path))

    return add_run


def compared(invoke: Invoke, *args: str, expect: int = 0) -> dict[str, Any]:
    command = ("compare",) if args[0].startswith("--") else ()
    result = invoke(*command, *args, "--json", expect=expect)
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def rows_by_benchmark(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["benchmark_id"]: row for row in data["rows"]}


def cells(*values: float) -> list[dict[str, Any]]:
    return [
        {"key": f"task-{i:02d}", "outcome": "passed" if v else "failed", "score": v}
        for i, v in enumerate(values)
    ]


A, B = "cerebras:gpt-oss-120b", "openai:gpt-4.1-mini"
OPENAI = {"provider": "openai", "model": "gpt-4.1-mini"}


class TestWinnerRules:
    def test_the_higher_score_wins_when_higher_is_better(self, invoke: Invoke, add: Add) -> None:
        add(score=0.6)
        add(score=0.8, **OPENAI)
        [row] = compared(invoke, "--a", A, "--b", B)["rows"]
        assert (row["winner"], row["higher_is_better"]) == ("B", True)
        assert row["delta"] == pytest.approx(0.2)

    def test_the_lower_score_wins_when_lower_is_better(self, invoke: Invoke, add: Add) -> None:
        add("latency", score=0.6, higher_is_better=False, unit="seconds")
        add("latency", score=0.8, higher_is_better=False, unit="seconds", **OPENAI)
        [row] = compared(invoke, "--a", A, "--b", B)["rows"]
        assert (row["winner"], row["higher_is_better"], row["unit"]) == ("A", False, "seconds")
        assert row["delta"] == pytest.approx(0.2)

    def test_equal_scores_tie(self, invoke: Invoke, add: Add) -> None:
        add(score=0.7)
        add(score=0.7, **OPENAI)
        [row] = compared(invoke, "--a", A, "--b", B)["rows"]
        assert (row["winner"], row["delta"]) == ("tie", 0.0)

    def test_a_benchmark_one_side_ran_is_missing_never_a_win(
        self, invoke: Invoke, add: Add
    ) -> None:
        add("bfcl", score=0.0)
        add("gaia", score=0.3, **OPENAI)
        add("tau_bench", agent="hermes", provider="anthropic", model="claude-sonnet-4.5")
        table = invoke("compare", "--a", A, "--b", B, "--benchmarks", "bfcl,gaia,tau_bench")
        comparison_id = table.stdout.split()[1]
        rows = rows_by_benchmark(compared(invoke, "view-comparison", comparison_id))
        assert {b: (r["winner"], r["status"]) for b, r in rows.items()} == {
            "bfcl": ("n/a", "missing"),
            "gaia": ("n/a", "missing"),
            "tau_bench": ("n/a", "missing"),
        }
        assert rows["bfcl"]["status_rule"] == "only A ran it"
        assert rows["gaia"]["status_rule"] == "only B ran it"
        assert rows["bfcl"]["b_run_id"] is None and rows["bfcl"]["delta"] is None
        assert rows["gaia"]["a_score"] is None and rows["gaia"]["b_score"] == 0.3
        assert " A " not in table.stdout.split("\n\n")[1].split("\n", 2)[2]
        assert "bfcl: missing: only A ran it" in table.stdout

    def test_a_newer_failed_or_invalidated_run_does_not_displace_a_good_one(
        self, invoke: Invoke, add: Add
    ) -> None:
        add(score=0.4)
        add(score=0.9, run_key="leaky")
        add(score=None, status="failed")
        leaky = json.loads(invoke("show", "leaky", "--json").stdout)["run"]["run_id"]
        invoke("invalidate", leaky, "--reason", "leak")
        add(score=0.5, **OPENAI)
        [row] = compared(invoke, "--a", A, "--b", B)["rows"]
        assert (row["a_score"], row["winner"]) == (0.4, "B")


class TestSides:
    def test_sides_sharing_provider_and_model_stay_distinct_by_agent(
        self, invoke: Invoke, add: Add
    ) -> None:
        add(agent="eliza", score=0.9)
        add(agent="hermes", score=0.5)
        data = compared(invoke, "--a", f"eliza@{A}", "--b", f"hermes@{A}")
        [row] = data["rows"]
        assert (row["a_score"], row["b_score"], row["winner"]) == (0.9, 0.5, "A")
        assert row["a_run_id"] != row["b_run_id"]
        assert (data["a"]["agent"], data["b"]["agent"]) == ("eliza", "hermes")
        assert data["a"]["spec"] == f"eliza@{A}" and data["b"]["model"] == "gpt-oss-120b"
        table = invoke("view-comparison", data["comparison_id"]).stdout
        assert f"A: eliza@{A}" in table and f"B: hermes@{A}" in table

    def test_without_an_agent_a_side_takes_its_newest_acceptable_run(
        self, invoke: Invoke, add: Add
    ) -> None:
        add(agent="eliza", score=0.9)
        add(agent="hermes", score=0.5)
        add(score=0.7, **OPENAI)
        [row] = compared(invoke, "--a", "Cerebras:gpt-oss-120b", "--b", B)["rows"]
        assert (row["a_score"], row["winner"]) == (0.5, "B")

    def test_a_malformed_or_repeated_side_is_a_usage_error(self, invoke: Invoke) -> None:
        result = invoke("compare", "--a", "gpt-4.1-mini", "--b", B, expect=2)
        assert "[agent@]provider:model" in result.stderr
        invoke("compare", "--a", B, "--b", "OpenAI:gpt-4.1-mini", expect=2)


class TestBenchmarks:
    def test_by_default_every_benchmark_either_side_ran_acceptably(
        self, invoke: Invoke, add: Add
    ) -> None:
        add("bfcl", score=0.5)
        add("gaia", score=0.5, **OPENAI)
        add("tau_bench", score=None, status="failed")
        add("swe_bench_verified", provider="anthropic", model="claude-sonnet-4.5")
        data = compared(invoke, "--a", A, "--b", B)
        assert [r["benchmark_id"] for r in data["rows"]] == ["bfcl", "gaia"]

    def test_benchmarks_split_commas_and_repeat(self, invoke: Invoke, add: Add) -> None:
        for benchmark in ("bfcl", "gaia", "tau_bench"):
            add(benchmark, score=0.5)
        data = compared(
            invoke, "--a", A, "--b", B, "--benchmarks", "gaia, bfcl", "--benchmarks", "tau_bench"
        )
        assert [r["benchmark_id"] for r in data["rows"]] == ["gaia", "bfcl", "tau_bench"]

    def test_an_unknown_benchmark_or_nothing_to_compare_is_an_error(
        self, invoke: Invoke, add: Add
    ) -> None:
        add(score=0.5)
        result = invoke("compare", "--a", A, "--b", B, "--benchmarks", "bfcl,nope", expect=1)
        assert result.stderr.startswith("Error: unknown benchmark: nope")
        result = invoke("compare", "--a", "x:y", "--b", B, expect=1)
        assert "has an acceptable run" in result.stderr

    def test_as_of_compares_the_runs_the_ledger_held_then(self, invoke: Invoke, add: Add) -> None:
        add(score=0.4)
        add(score=0.5, **OPENAI)
        position = json.loads(invoke("events", "--json").stdout)[-1]["position"]
        add(score=0.9)
        data = compared(invoke, "--a", A, "--b", B, "--as-of", str(position))
        [row] = data["rows"]
        assert (row["a_score"], row["winner"]) == (0.4, "B")
        event = json.loads(invoke("events", "--json").stdout)[-1]
        assert event["data"]["position"] == position


class TestPairedCells:
    def test_nine_cell_wins_and_one_loss_give_the_exact_mcnemar_test_and_interval(
        self, invoke: Invoke, add: Add
    ) -> None:
        add(score=0.1, cells=cells(0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0.5))
        add(score=0.9, cells=cells(1, 1, 1, 1, 1, 1, 1, 1, 1, 0), **OPENAI)
        data = compared(invoke, "--a", A, "--b", B, "--bootstrap", "mean", "--seed", "3")
        [row] = data["rows"]
        paired, stats = row["paired"], row["stats"]
        assert paired["cells"] == 10 and stats["n_only_b"] == 1 and stats["n_only_a"] == 0
        assert paired["mean_difference"] == pytest.approx(0.8)
        # B - A: 9 discordant pairs for B, 1 for A: exact McNemar 22 / 1024.
        assert (stats["discordant_a"], stats["discordant_b"]) == (9, 1)
        assert paired["p"] == pytest.approx(0.021484375) and paired["test"] == "mcnemar_exact"
        assert paired["p_holm"] == paired["p"]
        assert (row["status"], row["status_rule"]) == (
            "superior",
            "significant: Holm-adjusted p 0.0215 < 0.05",
        )
        # The bootstrap of nine +1 and one -1 has exact percentiles 0.4 and 1.0.
        boot = stats["bootstrap"]
        assert boot["ci95"] == [pytest.approx(0.4), pytest.approx(1.0)]
        assert (boot["seed"], boot["resamples"]) == (3, 10_000)
        assert data["statistics"]["seed"] == 3 and data["statistics"]["bootstrap"] == "mean"

    def test_lower_is_better_cells_count_a_smaller_value_as_a_win(
        self, invoke: Invoke, add: Add
    ) -> None:
        lower = {"higher_is_better": False}
        add(score=5.0, cells=cells(5, 5, 5, 5, 5, 5, 5, 5, 5, 5), **lower)
        add(score=3.0, cells=cells(3, 3, 3, 3, 3, 3, 3, 3, 3, 3), **lower, **OPENAI)
        [row] = compared(invoke, "--a", A, "--b", B)["rows"]
        assert row["winner"] == "B" and row["status"] == "superior"
        assert row["paired"] == {
            "cells": 10,
            "mean_difference": -2.0,
            "ci95_low": -2.0,
            "ci95_high": -2.0,
            "p": 0.0,
            "p_holm": 0.0,
            "test": "paired_t",
        }

    def test_runs_without_common_cells_have_no_paired_difference(
        self, invoke: Invoke, add: Add
    ) -> None:
        add(score=0.5, cells=cells(1, 0))
        add(score=0.5, **OPENAI)
        [row] = compared(invoke, "--a", A, "--b", B)["rows"]
        assert row["paired"] is None
        assert (row["status"], row["status_rule"]) == ("missing", "no paired cells")

    def test_cells_without_scores_count_passed_as_one_and_failed_as_zero(
        self, invoke: Invoke, add: Add
    ) -> None:
        outcomes = [{"key": "t1", "outcome": "passed"}, {"key": "t2", "outcome": "failed"}]
        add(score=0.5, cells=outcomes)
        add(score=0.0, cells=[{"key": k, "outcome": "failed"} for k in ("t1", "t2")], **OPENAI)
        [row] = compared(invoke, "--a", A, "--b", B)["rows"]
        assert row["paired"]["cells"] == 2
        assert row["paired"]["mean_difference"] == -0.5


class TestRecording:
    def test_compare_appends_a_comparison_recorded_event(self, invoke: Invoke, add: Add) -> None:
        add(score=0.6)
        add(score=0.8, **OPENAI)
        head = json.loads(invoke("events", "--json").stdout)[-1]["position"]
        data = compared(invoke, "--a", A, "--b", B, "--by", "ana")
        assert re.fullmatch(r"cmp_\d{8}T\d{6}Z_[0-9a-f]{8}", data["comparison_id"])
        events = json.loads(invoke("events", "--since", str(head), "--json").stdout)
        assert [e["type"] for e in events] == ["ComparisonRecorded"]
        recorded = events[0]["data"]
        assert recorded["comparison_id"] == data["comparison_id"]
        assert (recorded["position"], recorded["actor"]) == (head, "ana")
        assert recorded["benchmarks"] == ["bfcl"] and recorded["rows"] == data["rows"]
        assert set(data) == {"comparison_id", "a", "b", "rows", "statistics"}
        assert (
            recorded["statistics"]
            == data["statistics"]
            == {
                "tolerance": 0.05,
                "alpha": 0.05,
                "bootstrap": "none",
                "seed": 0,
                "resamples": 10_000,
                "correction": "holm",
                "orientation": "B - A",
            }
        )

    def test_view_comparison_prints_the_same_bytes_as_compare(
        self, invoke: Invoke, add: Add
    ) -> None:
        add(score=0.6, cells=cells(1, 0, 1))
        add(score=0.8, cells=cells(1, 1, 1), **OPENAI)
        table = invoke("compare", "--a", A, "--b", B).stdout
        comparison_id = table.split()[1]
        assert invoke("view-comparison", comparison_id).stdout == table
        as_json = invoke("compare", "--a", A, "--b", B, "--json").stdout
        comparison_id = json.loads(as_json)["comparison_id"]
        assert invoke("view-comparison", comparison_id, "--json").stdout == as_json

    def test_a_recorded_comparison_is_never_recomputed(self, invoke: Invoke, add: Add) -> None:
        add(score=0.6, run_key="a-run")
        add(score=0.8, **OPENAI)
        as_json = invoke("compare", "--a", A, "--b", B, "--json").stdout
        invoke("correct-score", "a-run", "--score", "0.95", "--reason", "grader bug")
        comparison_id = json.loads(as_json)["comparison_id"]
        assert invoke("view-comparison", comparison_id, "--json").stdout == as_json
        assert compared(invoke, "--a", A, "--b", B)["rows"][0]["winner"] == "A"

    def test_an_unknown_comparison_is_an_error(self, invoke: Invoke, db: Path) -> None:
        create_empty_ledger(db)
        result = invoke("view-comparison", "cmp_nope", expect=1)
        assert result.stderr.startswith("Error: no comparison 'cmp_nope'")


class TestDemo:
    def test_the_table_shows_every_benchmark_with_scores_delta_and_interval(
        self, invoke: Invoke
    ) -> None:
        invoke("demo")
        lines = invoke("compare", "--a", A, "--b", B).stdout.splitlines()
        assert lines[1:3] == [f"A: {A}", f"B: {B}"]
        assert lines[4].split() == [
            "benchmark", "A", "B", "delta", "winner", "unit", "cells", "ci95", "p", "p_holm",
            "status", "a_run", "b_run",
        ]  # fmt: skip
        body = [line.split() for line in lines[6:11]]
        assert len(body) == 5
        for fields in body:
            a_score, b_score, delta, won = float(fields[1]), float(fields[2]), fields[3], fields[4]
            assert won == ("A" if a_score > b_score else "B" if b_score > a_score else "tie")
            assert delta.startswith("+") == (b_score > a_score)
            assert re.fullmatch(r"\[-?\d\.\d{4},", fields[7])


class TestHonestPairing:
    def test_runs_of_different_configs_are_not_paired_and_the_keys_are_named(
        self, invoke: Invoke, add: Add
    ) -> None:
        setup = {"temperature": 0, "max_turns": 20, "split": "dev"}
        add(score=0.6, cells=cells(1, 0, 1), config=setup)
        add(
            score=0.9,
            cells=cells(1, 1, 1),
            config={**setup, "temperature": 0.7, "max_turns": 40},
            **OPENAI,
        )
        add("gaia", score=0.5, cells=cells(1, 0), config=setup)
        add("gaia", score=0.5, cells=cells(1, 0), config=setup, **OPENAI)
        table = invoke("compare", "--a", A, "--b", B).stdout
        rows = rows_by_benchmark(compared(invoke, "view-comparison", table.split()[1]))
        bfcl = rows["bfcl"]
        assert (bfcl["status"], bfcl["winner"], bfcl["paired"]) == ("not comparable", "n/a", None)
        assert bfcl["config_differs"] == ["max_turns", "temperature"]
        assert "bfcl: not comparable: config differs: max_turns, temperature" in table
        assert rows["gaia"]["paired"]["cells"] == 2 and rows["gaia"]["status"] != "not comparable"

    def test_holm_adjusts_the_p_values_across_the_benchmarks(
        self, invoke: Invoke, add: Add, db: Path
    ) -> None:
        add("bfcl", score=0.1, cells=cells(*[0] * 10))
        add("bfcl", score=0.9, cells=cells(*[1] * 10), **OPENAI)
        add("gaia", score=0.4, cells=cells(*[0] * 6, *[1] * 4))
        add("gaia", score=0.6, cells=cells(*[0] * 4, *[1] * 6), **OPENAI)
        rows = rows_by_benchmark(compared(invoke, "--a", A, "--b", B))
        p = {b: r["paired"]["p"] for b, r in rows.items()}
        # bfcl: 10 discordant pairs all for B, exact 2/1024; gaia: 2 to 0, exact 0.5.
        assert p == {"bfcl": pytest.approx(2 / 1024), "gaia": pytest.approx(0.5)}
        assert rows["bfcl"]["paired"]["p_holm"] == pytest.approx(2 * 2 / 1024)
        assert rows["gaia"]["paired"]["p_holm"] == pytest.approx(0.5)
        assert rows["bfcl"]["status"] == "superior"
        assert rows["gaia"]["status"] == "inconclusive"
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
            stored = conn.execute(
                "SELECT benchmark_id, p_value, p_holm, status FROM comparison_rows "
                "ORDER BY benchmark_id"
            ).fetchall()
        assert stored == [
            ("bfcl", pytest.approx(2 / 1024), pytest.approx(4 / 1024), "superior"),
            ("gaia", pytest.approx(0.5), pytest.approx(0.5), "inconclusive"),
        ]

    def test_cells_with_clusters_get_a_clustered_standard_error(
        self, invoke: Invoke, add: Add
    ) -> None:
        def clustered(*values: float) -> list[dict[str, Any]]:
            return [{**c, "cluster": f"repo-{i // 2}"} for i, c in enumerate(cells(*values))]

        add(score=0.5, cells=clustered(0, 0, 1, 1, 0, 1))
        add(score=0.5, cells=clustered(1, 1, 1, 1, 0, 0), **OPENAI)
        [row] = compared(invoke, "--a", A, "--b", B)["rows"]
        stats = row["stats"]
        assert stats["clustered"] and stats["n_clusters"] == 3
        # d = B - A = 1, 1, 0, 0, 0, -1 in clusters of two: Miller's eq. 4 by hand.
        d = [1, 1, 0, 0, 0, -1]
        mean = sum(d) / 6
        r = [v - mean for v in d]
        clt = sum(x * x for x in r) / (6 * 5)
        cross = sum(2 * r[i] * r[i + 1] for i in (0, 2, 4))
        assert stats["se"] == pytest.approx((clt + cross / 36) ** 0.5)
        assert row["paired"]["test"] == "paired_t_clustered"


class TestRecordedBefore:
    def test_a_comparison_recorded_before_statuses_is_shown_as_recorded(
        self, invoke: Invoke, db: Path
    ) -> None:
        from benchledger.adapters.store.bootstrap import Settings, build

        row = {
            "benchmark_id": "bfcl",
            "a_score": 0.1,
            "b_score": 0.9,
            "delta": 0.8,
            "higher_is_better": True,
            "winner": "B",
            "a_run_id": "11111111-aaaa-4aaa-8aaa-aaaaaaaaaaaa",
            "b_run_id": "22222222-bbbb-4bbb-8bbb-bbbbbbbbbbbb",
            "unit": "accuracy",
            "paired": {
                "cells": 10,
                "mean_difference": 0.8,
                "ci95_low": 0.4,
                "ci95_high": 1.0,
                "sign_test_p": 0.021484375,
            },
        }
        side = {"spec": A, "agent": None, "provider": "cerebras", "model": "gpt-oss-120b"}
        with build(Settings(db_path=db)) as services:
            services.ledger.record_comparison(
                "cmp_20260101T000000Z_00000000",
                a=side,
                b={**side, "spec": B, "provider": "openai", "model": "gpt-4.1-mini"},
                benchmarks=["bfcl"],
                rows=[row],
                position=0,
                head_sha256="0" * 64,
                actor="ana",
            )
        shown = invoke("view-comparison", "cmp_20260101T000000Z_00000000").stdout
        assert shown.splitlines()[3:] == [
            "",
            "benchmark    A       B       delta    winner    unit      cells    ci95"
            "              p       a_run     b_run",
            "-----------  ------  ------  -------  --------  --------  -------  ----------------"
            "  ------  --------  --------",
            "bfcl         0.1000  0.9000  +0.8000  B         accuracy  10       [0.4000, 1.0000]"
            "  0.0215  11111111  22222222",
        ]
        as_json = json.loads(
            invoke("view-comparison", "cmp_20260101T000000Z_00000000", "--json").stdout
        )
        assert as_json["rows"] == [row] and "statistics" not in as_json
