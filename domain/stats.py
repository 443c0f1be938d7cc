"""The arithmetic of comparing two sides: who wins, and how sure a paired difference is.

Pure and deterministic: the bootstrap draws from a seeded generator, so a
comparison recomputed from the same cells gives the same interval.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from statistics import fmean
from typing import Literal

Winner = Literal["A", "B", "tie", "n/a"]


def winner(a: float | None, b: float | None, higher_is_better: bool | None) -> Winner:
    """A missing score loses to any score; an unknown direction counts as higher is better."""
    if a is None and b is None:
        return "n/a"
    if a is None:
        return "B"
    if b is None:
        return "A"
    if a == b:
        return "tie"
    a_wins = a < b if higher_is_better is False else a > b
    return "A" if a_wins else "B"


def sign_test_p(wins: int, losses: int) -> float:
    """Exact two-sided binomial sign test (ties already dropped); 1.0 without evidence."""
    if wins < 0 or losses < 0:
        raise ValueError("wins and losses cannot be negative")
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(wins, losses) + 1))
    # Exact integer arithmetic until the one division: no rounding in the tail sum.
    return min(1.0, 2 * tail / (1 << n))


def bootstrap_ci(
    differences: Sequence[float],
    *,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `differences`."""
    if not differences:
        raise ValueError("a confidence interval needs at least one difference")
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    values = list(differences)
    if min(values) == max(values):
        # Every resample has the same mean; skip the draws and their rounding.
        return values[0], values[0]
    rng = random.Random(seed)
    n = len(values)
    means = sorted(fmean(rng.choices(values, k=n)) for _ in range(resamples))
    tail = (1 - confidence) / 2
    low = means[min(resamples - 1, math.floor(tail * resamples))]
    high = means[max(0, math.ceil((1 - tail) * resamples) - 1)]
    return low, high
