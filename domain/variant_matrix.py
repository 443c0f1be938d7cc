"""Variants x prompts: the grid and pairwise matrices of one run's cells.

A run is *variant x prompt shaped* when each of its cells names a variant and a
prompt: its metrics carry `variant_id` and `prompt_id` (alwm imports do), or, when
they do not, its key is `<variant>__<prompt>` with exactly one `__` (alwm's cell
directory name). A cell's score is its weighted rubric score (alwm's
`total_weighted_score`); its metrics may carry `criteria` (criterion -> score),
from which other weights can re-score it. One cell that is not shaped like that
makes the run not shaped: a half-read grid would hide cells.

Pure functions: the ledger's cells in, matrices out; statistics live elsewhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SEPARATOR = "__"


@dataclass(frozen=True)
class VariantCell:
    """One cell of a variant x prompt run: its recorded score and criterion scores."""

    variant: str
    prompt: str
    score: float | None
    criteria: Mapping[str, float] = field(default_factory=dict)


def shape_of(key: str, metrics: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """(variant, prompt) a cell names, or None when it names neither way."""
    metrics = metrics or {}
    variant, prompt = metrics.get("variant_id"), metrics.get("prompt_id")
    if isinstance(variant, str) and isinstance(prompt, str) and variant and prompt:
        return variant, prompt
    if key.count(SEPARATOR) != 1:
        return None
    variant, prompt = key.split(SEPARATOR)
    return (variant, prompt) if variant and prompt else None


def variant_cells(
    rows: Iterable[tuple[str, float | None, Mapping[str, Any] | None]],
) -> list[VariantCell] | None:
    """The run's cells as variant x prompt cells; None when any cell is not shaped so
    (or the run has none, or two cells claim the same variant and prompt)."""
    out: list[VariantCell] = []
    seen: set[tuple[str, str]] = set()
    for key, score, metrics in rows:
        shape = shape_of(key, metrics)
        if shape is None or shape in seen:
            return None
        seen.add(shape)
        criteria = (metrics or {}).get("criteria")
        numeric = (
            {str(k): float(v) for k, v in criteria.items() if _number(v)}
            if isinstance(criteria, Mapping)
            else {}
        )
        out.append(VariantCell(shape[0], shape[1], score, numeric))
    return out or None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def weighted(cell: VariantCell, weights: Mapping[str, float] | None) -> float | None:
    """The cell's weighted rubric score: the recorded one, or, given weights, the
    weight-normalised mean of the criteria those weights name (sum w*s / sum w).
    A cell lacking a weighted criterion has no score under those weights: a
    partial sum would read as a low score."""
    if not weights:
        return cell.score
    if any(name not in cell.criteria for name in weights):
        return None
    total = sum(weights.values())
    if total <= 0:
        return None
    return sum(w * cell.criteria[name] for name, w in weights.items()) / total


@dataclass(frozen=True)
class Grid:
    """variants (rows) x prompts (columns) -> score, or None where the run has no cell
    (or, re-weighted, the cell lacks a weighted criterion)."""

    variants: tuple[str, ...]
    prompts: tuple[str, ...]
    scores: tuple[tuple[float | None, ...], ...]

    def score(self, variant: str, prompt: str) -> float | None:
        return self.scores[self.variants.index(variant)][self.prompts.index(prompt)]


def grid(
    cells: Iterable[VariantCell],
    weights: Mapping[str, float] | None = None,
    prompt_order: Sequence[str] = (),
) -> Grid:
    """The run's grid. Prompts follow `prompt_order` (the run's own prompt list, as
    alwm orders its columns) when it names every prompt, else sorted; variants sorted."""
    cells = list(cells)
    variants = tuple(sorted({c.variant for c in cells}))
    named = {c.prompt for c in cells}
    ordered = list(dict.fromkeys(p for p in prompt_order if p in named))
    prompts = tuple(ordered) if set(ordered) == named else tuple(sorted(named))
    by = {(c.variant, c.prompt): weighted(c, weights) for c in cells}
    return Grid(
        variants,
        prompts,
        tuple(tuple(by.get((v, p)) for p in prompts) for v in variants),
    )


@dataclass(frozen=True)
class Pair:
    """Variant a against variant b over the prompts both have a score for."""

    a: str
    b: str
    prompts: tuple[str, ...]
    a_scores: tuple[float, ...]
    b_scores: tuple[float, ...]
    wins: int
    losses: int
    ties: int
    only_a: int
    only_b: int

    @property
    def mean_delta(self) -> float | None:
        """Mean of a - b per prompt (positive: a scored higher)."""
        n = len(self.prompts)
        deltas = [x - y for x, y in zip(self.a_scores, self.b_scores, strict=True)]
        return sum(deltas) / n if n else None

    @property
    def mean_abs_delta(self) -> float | None:
        """alwm's own pairwise metric (`mean_abs_total_score_delta`)."""
        n = len(self.prompts)
        return (
            sum(abs(x - y) for x, y in zip(self.a_scores, self.b_scores, strict=True)) / n
            if n
            else None
        )


def pair(g: Grid, a: str, b: str, tie_tolerance: float = 0.0) -> Pair:
    """a vs b per prompt: a win when a's score exceeds b's by more than the
    tolerance, a loss when b's exceeds a's so, else a tie. A prompt only one side
    has a score for is counted apart (`only_a` / `only_b`), never as a win."""
    ra, rb = g.scores[g.variants.index(a)], g.scores[g.variants.index(b)]
    prompts, xs, ys = [], [], []
    wins = losses = ties = only_a = only_b = 0
    for prompt, x, y in zip(g.prompts, ra, rb, strict=True):
        if x is None or y is None:
            only_a += x is not None and y is None
            only_b += y is not None and x is None
            continue
        prompts.append(prompt)
        xs.append(x)
        ys.append(y)
        if x - y > tie_tolerance:
            wins += 1
        elif y - x > tie_tolerance:
            losses += 1
        else:
            ties += 1
    return Pair(a, b, tuple(prompts), tuple(xs), tuple(ys), wins, losses, ties, only_a, only_b)


def pairwise(g: Grid, tie_tolerance: float = 0.0) -> list[Pair]:
    """Every ordered pair of distinct variants (a's wins are b's losses, both shown,
    as alwm's square matrix does)."""
    return [pair(g, a, b, tie_tolerance) for a in g.variants for b in g.variants if a != b]
