"""The results matrix's cells and reasons, and the comparison behind `--check`."""

from __future__ import annotations

from typing import Any

import pytest

from benchledger.adapters.publication.publication import Publication
from benchledger.adapters.publication.results_markdown import compare, parse, render
from benchledger.adapters.publication.results_matrix import (
    Cell,
    Key,
    Reason,
    RecordedReview,
    ResultsMatrix,
    cell,
    coverage,
    gate_findings,
)
from benchledger.adapters.publication.review import Scope
from benchledger.domain.errors import InputFormatError

HEAD = "ab" * 32
SUCCEEDED = {"state": "succeeded"}


def row(benchmark: str, agent: str, score: float = 0.8, **extra: Any) -> dict[str, Any]:
    return {
        "benchmark": benchmark,
        "agent": agent,
        "status": "succeeded",
        "score": score,
        "unit": "accuracy",
        "run_id": f"{agent}-run-0000",
        "provider": "cerebras",
        "comparison_signature": "sig",
        "run_group_id": "g",
        "config": {},
        "metrics": {},
        "error": None,
        **extra,
    }


def publication(
    latest: dict[Key, dict[str, Any]], quarantine: dict[Key, dict[str, Any]] | None = None
) -> Publication:
    return Publication(
        position=7,
        head_sha256=HEAD,
        latest=latest,
        quarantine=quarantine or {},
        baselines={},
        benchmarks={},
        generated_at=None,
    )


def reviewed(
    review_id: str = "r1",
    *,
    include: tuple[str, ...] = ("bfcl",),
    ok: bool = True,
    stale: str | None = None,
) -> RecordedReview:
    return RecordedReview(review_id, ok, 5, Scope(list(include), [], None), stale)


def no_findings(key: Key, scope: Scope | None) -> list[Reason]:
    return []


def cell_of(pub: Publication, reviews: list[RecordedReview], key: Key = ("bfcl", "eliza")) -> Cell:
    return cell(key, SUCCEEDED, pub, reviews, no_findings)


class TestReasons:
    def test_a_row_a_current_review_covers_shows_its_score_unit_run_and_review(self) -> None:
        pub = publication({("bfcl", "eliza"): row("bfcl", "eliza", 0.8235)})
        shown = cell_of(pub, [reviewed("review-42")])
        assert shown.reasons == ()
        assert shown.text == "0.8235 accuracy (run eliza-ru, review review-4)"

    def test_no_row_at_all_reads_no_run(self) -> None:
        assert cell_of(publication({}), [reviewed()]).reasons == (Reason("no run"),)

    def test_a_quarantined_row_reads_quarantined_with_its_reason(self) -> None:
        held = row("bfcl", "eliza", status="failed", quarantine_reason="failed_run")
        got = cell_of(publication({}, {("bfcl", "eliza"): held}), [reviewed()])
        assert [str(r) for r in got.reasons] == ["quarantined: failed_run"]
        assert got.text == "not-run (quarantined)" and got.score is None

    def test_a_row_no_review_covers_reads_not_reviewed(self) -> None:
        pub = publication({("bfcl", "eliza"): row("bfcl", "eliza")})
        got = cell_of(pub, [reviewed(include=("gaia",))])
        assert [str(r) for r in got.reasons] == ["not reviewed: no passing review covers bfcl"]
        assert got.text == "not-run (not reviewed)" and got.score is None

    def test_a_row_whose_review_is_stale_reads_review_out_of_date(self) -> None:
        pub = publication({("bfcl", "eliza"): row("bfcl", "eliza")})
        got = cell_of(pub, [reviewed(stale="events after position 5")])
        assert got.reasons == (Reason("review out of date", "events after position 5"),)
        assert got.text == "not-run (review out of date)"

    def test_a_gate_finding_on_the_row_keeps_its_number_out(self) -> None:
        flagged = row("bfcl", "eliza", config={"mock": True})
        pub = publication({("bfcl", "eliza"): flagged})
        found = gate_findings(pub, None)

        def findings(key: Key, scope: Scope | None) -> list[Reason]:
            return [*found.get((key[0], None), []), *found.get(key, [])]

        got = cell(("bfcl", "eliza"), SUCCEEDED, pub, [reviewed()], findings)
        assert got.text == "not-run (gate finding)"
        [reason] = got.reasons
        assert reason.kind == "gate finding" and reason.detail.startswith("publishability/")
        assert reason.detail == "publishability/truthy_non_real_flag: $.extra_config.mock=true"

    def test_an_agent_that_cannot_run_the_benchmark_reads_unsupported(self) -> None:
        contract = {"state": "unsupported", "reason": "no tool calling"}
        got = cell(("bfcl", "eliza"), contract, publication({}), [reviewed()], no_findings)
        assert got.reasons == (Reason("unsupported", "no tool calling"),)

    def test_a_quarantined_row_under_a_stale_review_gives_both_reasons(self) -> None:
        held = row("bfcl", "eliza", quarantine_reason="invalidated_run")
        got = cell_of(publication({}, {("bfcl", "eliza"): held}), [reviewed(stale="changed")])
        assert got.text == "not-run (quarantined, review out of date)"


class TestGateFindingTargets:
    def test_a_benchmark_wide_finding_holds_for_each_cell_and_a_cell_finding_for_its_own(
        self,
    ) -> None:
        pub = publication(
            {
                ("bfcl", "eliza"): row("bfcl", "eliza", 0.9),
                ("bfcl", "hermes"): row("bfcl", "hermes", 0.1, metrics={"demo": True}),
            }
        ).requiring(["eliza", "hermes"])
        found = gate_findings(pub, None)
        assert [r.detail.split(":")[0] for r in found[("bfcl", None)]] == [
            "comparability/score_spread_exceeds_tolerance"
        ]
        assert [str(r) for r in found[("bfcl", "hermes")]] == [
            "gate finding: publishability/truthy_non_real_flag: $.metrics.demo=true"
        ]
        assert ("bfcl", "eliza") not in found

    def test_the_tolerance_given_is_the_one_used(self) -> None:
        pub = publication(
            {
                ("bfcl", "eliza"): row("bfcl", "eliza", 0.9),
                ("bfcl", "hermes"): row("bfcl", "hermes", 0.6),
            }
        ).requiring(["eliza", "hermes"])
        assert gate_findings(pub, 0.5) == {}
        assert ("bfcl", None) in gate_findings(pub, None)

    def test_agents_nobody_requires_are_not_compared(self) -> None:
        pub = publication(
            {
                ("bfcl", "eliza"): row("bfcl", "eliza", 0.9),
                ("bfcl", "hermes"): row("bfcl", "hermes", 0.1),
            }
        )
        assert gate_findings(pub, None) == {}


class TestCoverage:
    def test_the_newest_current_review_covering_the_benchmark_wins(self) -> None:
        reviews = [
            reviewed("newest", include=(), stale="changed"),
            reviewed("newer"),
            reviewed("older"),
        ]
        got = coverage(reviews, "bfcl")
        assert isinstance(got, RecordedReview) and got.review_id == "newer"

    def test_only_stale_reviews_give_the_newest_ones_staleness(self) -> None:
        reviews = [reviewed("a", stale="first"), reviewed("b", stale="second")]
        assert coverage(reviews, "bfcl") == Reason("review out of date", "first")

    def test_a_blocked_review_covers_nothing_and_says_so(self) -> None:
        got = coverage([reviewed("blocked1", ok=False)], "bfcl")
        assert got == Reason(
            "not reviewed", "no passing review covers bfcl (review blocked1 was blocked)"
        )

    def test_an_excluded_benchmark_is_not_covered(self) -> None:
        review = RecordedReview("r", True, 5, Scope([], ["bfcl"], None), None)
        assert isinstance(coverage([review], "bfcl"), Reason)
        assert coverage([review], "gaia") == review


def matrix(cells: dict[Key, Cell], position: int = 7, head: str = HEAD) -> ResultsMatrix:
    benchmarks = sorted({b for b, _ in cells})
    agents = sorted({a for _, a in cells})
    return ResultsMatrix(position, head, benchmarks, agents, cells)


SHOWN = Cell(
    "bfcl", "eliza", score=0.8, unit="accuracy", run_id="run12345678", review_id="rev12345678"
)
NOT_REVIEWED = Cell("bfcl", "hermes", (Reason("not reviewed", "no passing review covers bfcl"),))


class TestCheckComparison:
    def test_a_rendered_matrix_reads_back_as_its_cells_and_stamp(self) -> None:
        got = parse(render(matrix({("bfcl", "eliza"): SHOWN, ("bfcl", "hermes"): NOT_REVIEWED})))
        assert got.stamp == {"position": "7", "head sha256": HEAD}
        assert got.cells == {
            ("bfcl", "eliza"): "0.8 accuracy (run run12345, review rev12345)",
            ("bfcl", "hermes"): "not-run (not reviewed)",
        }
        assert got.reasons == {("bfcl", "hermes"): ("not reviewed: no passing review covers bfcl",)}

    def test_pipes_and_backslashes_in_a_reason_survive_the_round_trip(self) -> None:
        odd = Cell("bfcl", "hermes", (Reason("gate finding", r"a|b\c"),))
        got = parse(render(matrix({("bfcl", "hermes"): odd})))
        assert got.reasons[("bfcl", "hermes")] == (r"gate finding: a|b\c",)

    def test_the_same_cells_at_another_position_differ_only_in_the_stamp(self) -> None:
        cells = {("bfcl", "eliza"): SHOWN}
        result = compare(parse(render(matrix(cells))), parse(render(matrix(cells, 9, "cd" * 32))))
        assert result.changes == []
        assert result.stamp == [("position", "7", "9"), ("head sha256", HEAD, "cd" * 32)]

    def test_a_cell_that_lost_its_number_is_named_old_to_new(self) -> None:
        stale = Cell("bfcl", "eliza", (Reason("review out of date", "changed at 9"),))
        before = parse(render(matrix({("bfcl", "eliza"): SHOWN})))
        after = parse(render(matrix({("bfcl", "eliza"): stale})))
        [change] = compare(before, after).changes
        assert str(change) == (
            "bfcl/eliza: 0.8 accuracy (run run12345, review rev12345) -> "
            "not-run (review out of date) because review out of date: changed at 9"
        )

    def test_a_changed_reason_behind_the_same_text_is_a_change(self) -> None:
        other = Cell("bfcl", "hermes", (Reason("not reviewed", "something else"),))
        before = parse(render(matrix({("bfcl", "hermes"): NOT_REVIEWED})))
        [change] = compare(before, parse(render(matrix({("bfcl", "hermes"): other})))).changes
        assert change.old.endswith("because not reviewed: no passing review covers bfcl")
        assert change.new.endswith("because not reviewed: something else")

    def test_a_cell_that_is_gone_or_new_is_named(self) -> None:
        before = parse(render(matrix({("bfcl", "eliza"): SHOWN})))
        after = parse(render(matrix({("gaia", "eliza"): SHOWN})))
        changes = compare(before, after).changes
        assert [
            (c.benchmark, c.old == "(no such cell)", c.new == "(no such cell)") for c in changes
        ] == [
            ("bfcl", False, True),
            ("gaia", True, False),
        ]

    def test_a_file_that_is_no_results_matrix_is_refused(self) -> None:
        with pytest.raises(InputFormatError, match="not a results matrix"):
            parse("# Notes\n\n| a | b |\n|---|---|\n", "notes.md")
        with pytest.raises(InputFormatError, match="no benchmark x agent table"):
            parse("# Results matrix\n\nnothing here\n", "empty.md")
