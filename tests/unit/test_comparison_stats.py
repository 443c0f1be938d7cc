from __future__ import annotations

import itertools
import math

import pytest

from benchledger.domain.comparison_stats import (
    PairedStats,
    holm,
    mcnemar,
    paired_stats,
    verdict,
)


def sides(a: list[float], b: list[float]) -> tuple[dict[str, float], dict[str, float]]:
    return (
        {f"k{i}": v for i, v in enumerate(a)},
        {f"k{i}": v for i, v in enumerate(b)},
    )


def miller_clustered_se(d: list[float], cluster_of: list[str]) -> float:
    """Miller 2024, eq. 4, summed term by term: SE_CLT^2 plus the within-cluster cross
    products over n^2."""
    n = len(d)
    mean = sum(d) / n
    clt = sum((v - mean) ** 2 for v in d) / (n * (n - 1))
    cross = sum(
        (d[i] - mean) * (d[j] - mean)
        for i, j in itertools.permutations(range(n), 2)
        if cluster_of[i] == cluster_of[j]
    )
    return math.sqrt(clt + cross / n**2)


class TestMcNemar:
    def test_one_against_seven_discordant_pairs_is_18_and_10_in_256(self) -> None:
        # X ~ Binomial(8, 1/2): P(X <= 1) = 9/256, P(X = 1) = 8/256.
        exact, midp = mcnemar(1, 7)
        assert exact == pytest.approx(18 / 256)  # 0.0703
        assert midp == pytest.approx(10 / 256)  # 0.0391
        assert mcnemar(7, 1) == (exact, midp)

    def test_balanced_or_no_discordance_is_no_evidence(self) -> None:
        assert mcnemar(4, 4) == (1.0, pytest.approx(1.0))
        assert mcnemar(0, 0) == (1.0, 1.0)

    def test_ten_to_zero_is_2_in_1024(self) -> None:
        exact, midp = mcnemar(10, 0)
        assert exact == pytest.approx(2 / 1024)
        assert midp == pytest.approx(1 / 1024)

    def test_negative_counts_are_refused(self) -> None:
        with pytest.raises(ValueError):
            mcnemar(-1, 2)

    def test_binary_cells_use_the_exact_test_on_their_discordant_pairs(self) -> None:
        # 7 keys where A passes and B fails, 1 the other way, 4 where both pass.
        a, b = sides([1] * 7 + [0] + [1] * 4, [0] * 7 + [1] + [1] * 4)
        stats = paired_stats(a, b)
        assert stats.binary
        assert (stats.discordant_a, stats.discordant_b) == (7, 1)
        assert stats.p_value == stats.mcnemar_p == pytest.approx(18 / 256)
        assert stats.mcnemar_midp == pytest.approx(10 / 256)
        assert stats.mean_diff == pytest.approx(6 / 12)


class TestStandardErrors:
    def test_unclustered_se_is_the_sample_sd_over_root_n(self) -> None:
        a, b = sides([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])
        stats = paired_stats(a, b)
        assert stats.mean_diff == pytest.approx(2.0)
        assert stats.se == pytest.approx(1 / math.sqrt(3))
        assert not stats.clustered and stats.n_clusters is None
        # t = 2 sqrt(3) on 2 degrees of freedom: two-sided p = 1 - 3 / sqrt(13) (closed form,
        # t with 2 df has CDF 1/2 + t / (2 sqrt(t^2 + 2))).
        assert stats.p_value == pytest.approx(1 - 2 * math.sqrt(3) / math.sqrt(14))
        # t_{0.975, 2} = 4.302653
        half = 4.302653 / math.sqrt(3)
        assert stats.ci95 == (pytest.approx(2 - half, 1e-6), pytest.approx(2 + half, 1e-6))

    def test_two_clusters_of_two_give_sqrt_7_over_48(self) -> None:
        # d = 1, 1, 0, 0 in clusters {1, 1} and {0, 0}; residuals +-1/2: SE_CLT^2 = 1/12,
        # cross products 4 * 1/4 = 1 over n^2 = 16, so SE^2 = 1/12 + 1/16 = 7/48.
        a, b = sides([1, 1, 0, 0], [0, 0, 0, 0])
        clusters = {"k0": "x", "k1": "x", "k2": "y", "k3": "y"}
        stats = paired_stats(a, b, clusters=clusters)
        assert stats.clustered and stats.n_clusters == 2
        assert stats.se == pytest.approx(math.sqrt(7 / 48))
        assert paired_stats(a, b).se == pytest.approx(math.sqrt(1 / 12))

    def test_clustered_se_matches_millers_formula_on_uneven_clusters(self) -> None:
        d = [0.9, 0.1, 0.4, 0.7, 0.0, 0.3, 0.8, 0.25, 0.6]
        cluster_of = ["r1", "r1", "r1", "r2", "r2", "r3", "r4", "r4", "r4"]
        a, b = sides(d, [0.0] * len(d))
        clusters = {f"k{i}": c for i, c in enumerate(cluster_of)}
        stats = paired_stats(a, b, clusters=clusters)
        assert stats.se == pytest.approx(miller_clustered_se(d, cluster_of))
        assert stats.n_clusters == 4
        assert stats.se != pytest.approx(paired_stats(a, b).se)

    def test_a_key_without_a_cluster_stands_alone(self) -> None:
        a, b = sides([1, 1, 0, 0, 1], [0, 0, 0, 0, 0])
        clusters = {"k0": "x", "k1": "x", "k2": "y", "k3": "y"}
        stats = paired_stats(a, b, clusters=clusters)
        assert stats.n_clusters == 3
        d = [1.0, 1.0, 0.0, 0.0, 1.0]
        assert stats.se == pytest.approx(miller_clustered_se(d, ["x", "x", "y", "y", "alone"]))

    def test_clusters_naming_no_paired_key_leave_the_se_unclustered(self) -> None:
        a, b = sides([1, 0, 1], [0, 0, 0])
        stats = paired_stats(a, b, clusters={"other": "x"})
        assert not stats.clustered and stats.n_clusters is None

    def test_clustered_binary_cells_are_tested_on_the_clustered_se(self) -> None:
        a, b = sides([1, 1, 0, 0, 1, 1], [0, 0, 0, 0, 0, 1])
        clusters = {f"k{i}": str(i // 2) for i in range(6)}
        stats = paired_stats(a, b, clusters=clusters)
        assert stats.mcnemar_p is not None and stats.p_value != stats.mcnemar_p


class TestMinimumDetectableEffect:
    def test_mde_is_z975_plus_z80_times_the_se(self) -> None:
        a, b = sides([1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0])
        stats = paired_stats(a, b)
        assert stats.se is not None
        assert stats.mde80 == pytest.approx((1.959963985 + 0.841621234) * stats.se)

    def test_the_mde_shrinks_with_root_n(self) -> None:
        small = paired_stats(*sides([1, 0] * 50, [0] * 100))
        large = paired_stats(*sides([1, 0] * 200, [0] * 400))
        assert small.mde80 is not None and large.mde80 is not None
        assert small.mde80 / large.mde80 == pytest.approx(math.sqrt(399 / 99), rel=1e-9)


class TestHolm:
    def test_the_textbook_four_p_values(self) -> None:
        # Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04 -> 0.06.
        adjusted = holm([0.01, 0.04, 0.03, 0.005])
        assert adjusted == [
            pytest.approx(0.03),
            pytest.approx(0.06),
            pytest.approx(0.06),
            pytest.approx(0.02),
        ]

    def test_missing_p_values_are_kept_and_not_counted(self) -> None:
        assert holm([None, 0.02, None, 0.04]) == [None, pytest.approx(0.04), None, 0.04]

    def test_adjusted_values_are_capped_at_one(self) -> None:
        assert holm([0.5, 0.6, 0.9]) == [1.0, 1.0, 1.0]
        assert holm([]) == []


class TestEdges:
    def test_no_paired_key_is_counted_but_has_no_statistic(self) -> None:
        stats = paired_stats({"x": 1.0, "y": 0.0}, {"z": 1.0})
        assert (stats.n_paired, stats.n_only_a, stats.n_only_b) == (0, 2, 1)
        assert stats.mean_diff is None and stats.se is None and stats.p_value is None
        assert stats.ci95 is None and stats.mde80 is None and not stats.binary
        assert verdict(stats, tolerance=0.1)[0] == "missing"

    def test_one_paired_cell_has_a_mean_but_no_se(self) -> None:
        stats = paired_stats({"x": 0.7, "y": 1.0}, {"x": 0.2})
        assert stats.n_paired == 1 and stats.n_only_a == 1
        assert stats.mean_diff == pytest.approx(0.5)
        assert stats.se is None and stats.ci95 is None and stats.p_value is None
        assert verdict(stats, tolerance=0.1)[0] == "inconclusive"

    def test_all_ties_are_no_difference_with_zero_spread(self) -> None:
        stats = paired_stats(*sides([1, 0, 1, 1], [1, 0, 1, 1]))
        assert (stats.discordant_a, stats.discordant_b) == (0, 0)
        assert stats.mean_diff == 0 and stats.se == 0 and stats.mde80 == 0
        assert stats.p_value == 1.0 and stats.ci95 == (0.0, 0.0)
        assert verdict(stats, tolerance=0.01) == (
            "comparable",
            "not significant (p 1.0000) and MDE80 0.0000 <= tolerance 0.01",
        )

    def test_a_constant_non_zero_difference_is_significant_without_division(self) -> None:
        stats = paired_stats(*sides([0.5, 0.6, 0.7], [0.4, 0.5, 0.6]))
        assert stats.se == pytest.approx(0, abs=1e-12)
        assert stats.p_value is not None and stats.p_value < 1e-6

    def test_as_dict_is_json_ready(self) -> None:
        import json

        stats = paired_stats(*sides([1, 0, 1], [0, 0, 1]), bootstrap="mean", resamples=50)
        data = stats.as_dict()
        assert json.loads(json.dumps(data)) == data
        assert isinstance(data["ci95"], list) and data["bootstrap"]["resamples"] == 50

    def test_bad_options_are_refused(self) -> None:
        with pytest.raises(ValueError):
            paired_stats({}, {}, resamples=0)
        with pytest.raises(ValueError):
            paired_stats({}, {}, bootstrap="mode")  # type: ignore[arg-type]


class TestBootstrap:
    def test_nine_ups_and_one_down_match_the_exact_bootstrap_percentiles(self) -> None:
        # A resample's mean is (2W - 10) / 10 with W ~ Binomial(10, 0.9): the 2.5th
        # percentile is W = 7 (mean 0.4), the 97.5th W = 10 (mean 1.0).
        a, b = sides([1.0] * 9 + [0.0], [0.0] * 9 + [1.0])
        for seed in (0, 1, 2):
            boot = paired_stats(a, b, bootstrap="mean", seed=seed).bootstrap
            assert boot is not None
            assert boot["ci95"] == [pytest.approx(0.4), pytest.approx(1.0)]
            assert (boot["seed"], boot["resamples"], boot["statistic"]) == (seed, 10_000, "mean")

    def test_the_median_interval_of_a_constant_difference_is_that_difference(self) -> None:
        boot = paired_stats(*sides([3.0] * 5, [1.0] * 5), bootstrap="median").bootstrap
        assert boot is not None and boot["ci95"] == [2.0, 2.0]

    def test_the_median_of_an_even_resample_averages_the_middle_two(self) -> None:
        # Two cells, d = 0 and 1: resamples {0,0}, {0,1}, {1,1} have medians 0, 0.5, 1.
        a, b = sides([0.0, 1.0], [0.0, 0.0])
        boot = paired_stats(a, b, bootstrap="median", resamples=2000, seed=3).bootstrap
        assert boot is not None and boot["ci95"] == [0.0, 1.0]
        lone = paired_stats(a, b, bootstrap="median", resamples=1, seed=3).bootstrap
        assert lone is not None and lone["ci95"][0] in (0.0, 0.5, 1.0)

    def test_the_same_seed_gives_the_same_interval(self) -> None:
        d = [0.3, -0.1, 0.25, 0.0, 0.4, -0.2, 0.15, 0.05]
        a, b = sides(d, [0.0] * len(d))
        first = paired_stats(a, b, bootstrap="mean", seed=7).bootstrap
        assert first == paired_stats(a, b, bootstrap="mean", seed=7).bootstrap
        assert first != paired_stats(a, b, bootstrap="mean", seed=8).bootstrap
        assert first is not None
        low, high = first["ci95"]
        assert min(d) <= low < sum(d) / len(d) < high <= max(d)

    def test_no_bootstrap_unless_asked(self) -> None:
        assert paired_stats(*sides([1, 0], [0, 0])).bootstrap is None


def stats_with(**changes: object) -> PairedStats:
    base = paired_stats(*sides([1, 0, 1, 1], [0, 0, 1, 1]))
    return PairedStats(**{**base.__dict__, **changes})  # type: ignore[arg-type]


class TestVerdict:
    def test_a_significant_gain_is_superior_and_a_loss_inferior(self) -> None:
        gain = stats_with(p_value=0.001, mean_diff=0.2)
        assert verdict(gain, tolerance=0.05) == ("superior", "significant: p 0.0010 < 0.05")
        assert verdict(gain, tolerance=0.05, higher_is_better=False)[0] == "inferior"
        assert verdict(stats_with(p_value=0.001, mean_diff=-0.2), tolerance=0.05)[0] == ("inferior")

    def test_the_adjusted_p_decides_when_given(self) -> None:
        stats = stats_with(p_value=0.01, mean_diff=0.2, mde80=0.5)
        status, why = verdict(stats, tolerance=0.05, adjusted_p=0.2)
        assert status == "inconclusive" and "Holm-adjusted p 0.2000" in why

    def test_not_significant_is_comparable_only_when_the_mde_is_within_tolerance(self) -> None:
        assert verdict(stats_with(p_value=0.5, mde80=0.04), tolerance=0.05)[0] == "comparable"
        status, why = verdict(stats_with(p_value=0.5, mde80=0.3), tolerance=0.05)
        assert status == "inconclusive"
        assert why == "not significant (p 0.5000) but MDE80 0.3000 > tolerance 0.05"

    def test_both_sides_at_zero_are_weak(self) -> None:
        zero = paired_stats(*sides([0, 0], [0, 0]))
        assert verdict(zero, tolerance=0.05) == ("weak", "both sides measured exactly 0")
