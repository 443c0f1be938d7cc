from __future__ import annotations

from statistics import fmean

import pytest

from benchledger.domain.stats import bootstrap_ci, sign_test_p, winner


class TestWinner:
    def test_the_higher_score_wins_when_higher_is_better(self) -> None:
        assert winner(0.6, 0.8, True) == "B"
        assert winner(0.8, 0.6, True) == "A"

    def test_the_lower_score_wins_when_lower_is_better(self) -> None:
        assert winner(0.6, 0.8, False) == "A"
        assert winner(0.8, 0.6, False) == "B"

    def test_an_unknown_direction_counts_as_higher_is_better(self) -> None:
        assert winner(0.6, 0.8, None) == "B"

    def test_equal_scores_tie_in_either_direction(self) -> None:
        assert winner(0.7, 0.7, True) == "tie"
        assert winner(0.7, 0.7, False) == "tie"

    def test_a_missing_side_loses_even_to_a_zero_score(self) -> None:
        assert winner(0.0, None, True) == "A"
        assert winner(None, 0.0, True) == "B"
        assert winner(0.0, None, False) == "A"
        assert winner(None, 0.0, False) == "B"

    def test_two_missing_sides_have_no_winner(self) -> None:
        assert winner(None, None, True) == "n/a"


class TestSignTest:
    def test_nine_wins_and_one_loss_is_22_in_1024(self) -> None:
        assert sign_test_p(9, 1) == 22 / 1024 == 0.021484375
        assert sign_test_p(1, 9) == 0.021484375

    def test_ten_wins_and_no_loss_is_2_in_1024(self) -> None:
        assert sign_test_p(10, 0) == 2 / 1024

    def test_a_balanced_record_is_capped_at_one(self) -> None:
        assert sign_test_p(5, 5) == 1.0
        assert sign_test_p(1, 0) == 1.0

    def test_no_evidence_gives_p_one(self) -> None:
        assert sign_test_p(0, 0) == 1.0

    def test_large_counts_stay_exact_enough(self) -> None:
        assert 0 < sign_test_p(600, 400) < 1e-9

    def test_negative_counts_are_refused(self) -> None:
        with pytest.raises(ValueError):
            sign_test_p(-1, 3)


class TestBootstrap:
    def test_equal_differences_give_a_zero_width_interval(self) -> None:
        assert bootstrap_ci([0.1, 0.1, 0.1]) == (0.1, 0.1)
        assert bootstrap_ci([-2.5]) == (-2.5, -2.5)

    def test_nine_ups_and_one_down_match_the_exact_bootstrap_percentiles(self) -> None:
        # A resample's mean is (2W - 10) / 10 with W ~ Binomial(10, 0.9):
        # P(W <= 6) = 0.013 and P(W <= 7) = 0.070, so the 2.5th percentile is
        # W = 7 (mean 0.4); P(W = 10) = 0.35, so the 97.5th is W = 10 (mean 1.0).
        differences = [1.0] * 9 + [-1.0]
        for seed in (0, 1, 2):
            assert bootstrap_ci(differences, seed=seed) == (
                pytest.approx(0.4),
                pytest.approx(1.0),
            )

    def test_the_interval_brackets_the_mean_and_is_deterministic(self) -> None:
        differences = [0.3, -0.1, 0.25, 0.0, 0.4, -0.2, 0.15, 0.05]
        low, high = bootstrap_ci(differences, seed=7)
        assert low < fmean(differences) < high
        assert bootstrap_ci(differences, seed=7) == (low, high)
        assert min(differences) <= low and high <= max(differences)

    def test_a_higher_confidence_gives_a_wider_interval(self) -> None:
        differences = [0.3, -0.1, 0.25, 0.0, 0.4, -0.2, 0.15, 0.05]
        narrow = bootstrap_ci(differences, confidence=0.8)
        wide = bootstrap_ci(differences, confidence=0.99)
        assert wide[0] < narrow[0] and narrow[1] < wide[1]

    def test_no_differences_or_a_bad_confidence_are_refused(self) -> None:
        with pytest.raises(ValueError):
            bootstrap_ci([])
        with pytest.raises(ValueError):
            bootstrap_ci([0.1, 0.2], confidence=1.0)
