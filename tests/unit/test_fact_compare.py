"""Which restated facts are the same fact (`facts.compare`): a float written at another
precision is; a number that differs in what it reports is a conflict."""

from __future__ import annotations

from benchledger.domain.facts import compare


def conflicts(recorded: object, stated: object) -> list[str]:
    return [c.path for c in compare({"metrics": {"v": recorded}}, {"metrics": {"v": stated}})[1]]


class TestFloatPrecision:
    def test_a_sum_taken_in_another_order_is_the_same_fact(self) -> None:
        # A leaderboard's cost on two days: the same sum, its last bits differing.
        assert conflicts(279.1673704500001, 279.16737045) == []
        assert conflicts(0.3714531678000002, 0.37145316780000004) == []

    def test_a_number_differing_in_its_reported_digits_conflicts(self) -> None:
        assert conflicts(0.884, 0.826) == ["metrics.v"]
        assert conflicts(18.2, 15.8) == ["metrics.v"]
        assert conflicts(565.63522349, 565.63522350) == ["metrics.v"]

    def test_a_zero_is_not_a_tiny_number(self) -> None:
        assert conflicts(0.0, 1e-300) == ["metrics.v"]

    def test_a_flag_is_not_a_number(self) -> None:
        assert conflicts(True, 1.0) == ["metrics.v"]


class TestMaskedRestatements:
    """A ledger written before imports masked secrets holds them as the source stated
    them; the same source read again states them masked: the same fact."""

    def test_a_value_stated_masked_is_the_recorded_one_masked(self) -> None:
        assert (
            conflicts("https://u:hunter2pw@h.example/v1", "https://u:[REDACTED]@h.example/v1") == []
        )
        recorded = {"metrics": {"password": 12345678, "n": 2}}
        assert compare(recorded, {"metrics": {"password": "[REDACTED]", "n": 2}}) == ({}, [])

    def test_a_masked_value_that_is_not_the_recorded_one_masked_conflicts(self) -> None:
        assert conflicts("plain text", "[REDACTED]") == ["metrics.v"]
        assert conflicts("https://u:pw@a.example", "https://u:[REDACTED]@b.example") == [
            "metrics.v"
        ]
        recorded = {"metrics": {"password": 1}}
        assert compare(recorded, {"metrics": {"password": 2}})[1]
