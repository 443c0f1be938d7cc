"""Variant x prompt shape, grid weighting and pairwise counting (domain.variant_matrix)."""

from __future__ import annotations

import pytest

from benchledger.domain import variant_matrix as vm


class TestShape:
    def test_metrics_name_variant_and_prompt_before_the_key(self) -> None:
        metrics = {"variant_id": "v__x", "prompt_id": "p"}
        assert vm.shape_of("anything", metrics) == ("v__x", "p")

    def test_key_with_one_separator_names_them(self) -> None:
        assert vm.shape_of("v-cli__p-one", None) == ("v-cli", "p-one")

    @pytest.mark.parametrize("key", ["simple_0", "a__b__c", "__p", "v__"])
    def test_other_keys_are_not_shaped(self, key: str) -> None:
        assert vm.shape_of(key, {}) is None

    def test_one_unshaped_cell_makes_the_run_unshaped(self) -> None:
        rows = [("v__p1", 0.5, None), ("simple_0", 1.0, None)]
        assert vm.variant_cells(rows) is None

    def test_two_cells_for_one_variant_and_prompt_make_the_run_unshaped(self) -> None:
        rows = [("v__p", 0.5, None), ("x", 0.7, {"variant_id": "v", "prompt_id": "p"})]
        assert vm.variant_cells(rows) is None

    def test_a_run_without_cells_is_not_shaped(self) -> None:
        assert vm.variant_cells([]) is None

    def test_criteria_keep_only_finite_numbers(self) -> None:
        rows = [("v__p", 0.5, {"criteria": {"a": 0.25, "b": "x", "c": True, "d": 1}})]
        (cell,) = vm.variant_cells(rows) or []
        assert cell.criteria == {"a": 0.25, "d": 1.0}


def cell(variant: str, prompt: str, score: float | None, **criteria: float) -> vm.VariantCell:
    return vm.VariantCell(variant, prompt, score, criteria)


class TestGridWeighting:
    def test_without_weights_the_recorded_score(self) -> None:
        g = vm.grid([cell("v", "p", 0.6, a=0.0, b=1.0)])
        assert g.score("v", "p") == 0.6

    def test_weights_rescore_from_the_criteria_normalised(self) -> None:
        # (3 * 0.2 + 1 * 0.6) / (3 + 1) = 0.3
        g = vm.grid([cell("v", "p", 0.9, a=0.2, b=0.6, c=1.0)], {"a": 3, "b": 1})
        assert g.score("v", "p") == pytest.approx(0.3)

    def test_a_cell_lacking_a_weighted_criterion_has_no_score(self) -> None:
        g = vm.grid([cell("v", "p", 0.9, a=0.2)], {"a": 1, "b": 1})
        assert g.score("v", "p") is None

    def test_rows_sorted_columns_in_the_runs_prompt_order(self) -> None:
        cells = [cell("v2", "p1", 0.1), cell("v1", "p2", 0.2), cell("v1", "p1", 0.3)]
        g = vm.grid(cells, prompt_order=["p2", "p1"])
        assert g.variants == ("v1", "v2") and g.prompts == ("p2", "p1")
        assert g.scores == ((0.2, 0.3), (None, 0.1))

    def test_a_prompt_order_missing_a_prompt_falls_back_to_sorted(self) -> None:
        g = vm.grid([cell("v", "b", 0.1), cell("v", "a", 0.2)], prompt_order=["b"])
        assert g.prompts == ("a", "b")


class TestPairwiseCounting:
    def grid(self) -> vm.Grid:
        a = [0.9, 0.5, 0.30, 0.7, None]
        b = [0.1, 0.5, 0.35, None, 0.4]
        cells = [cell("a", f"p{i}", s) for i, s in enumerate(a) if s is not None]
        cells += [cell("b", f"p{i}", s) for i, s in enumerate(b) if s is not None]
        return vm.grid(cells)

    def test_wins_losses_ties_and_one_sided_prompts(self) -> None:
        p = vm.pair(self.grid(), "a", "b")
        assert (p.wins, p.losses, p.ties, p.only_a, p.only_b) == (1, 1, 1, 1, 1)
        assert p.prompts == ("p0", "p1", "p2")

    def test_tolerance_turns_small_differences_into_ties(self) -> None:
        p = vm.pair(self.grid(), "a", "b", tie_tolerance=0.05)
        assert (p.wins, p.losses, p.ties) == (1, 0, 2)

    def test_means_over_the_common_prompts(self) -> None:
        p = vm.pair(self.grid(), "a", "b")
        assert p.mean_delta == pytest.approx((0.8 + 0.0 - 0.05) / 3)
        assert p.mean_abs_delta == pytest.approx((0.8 + 0.0 + 0.05) / 3)

    def test_every_ordered_pair_mirrors_the_other(self) -> None:
        ab, ba = vm.pairwise(self.grid())
        assert (ab.a, ab.b, ba.a, ba.b) == ("a", "b", "b", "a")
        assert (ab.wins, ab.losses, ab.only_a) == (ba.losses, ba.wins, ba.only_b)

    def test_no_common_prompt_has_no_means(self) -> None:
        g = vm.grid([cell("a", "p1", 0.5), cell("b", "p2", 0.5)])
        p = vm.pair(g, "a", "b")
        assert p.mean_delta is None and p.mean_abs_delta is None
        assert (p.wins, p.losses, p.ties, p.only_a, p.only_b) == (0, 0, 0, 1, 1)
