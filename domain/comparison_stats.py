"""Paired statistics of two sides over the cells both scored, and the verdict they support.

A side's cells are a mapping from cell key to value (a score, or 1/0 for passed/failed).
Only keys both sides hold are paired; the rest are counted, never guessed. The methods
and their references are in docs/statistics.md. numpy and scipy stay inside this module
so the rest of the domain keeps its plain dependencies, and they are imported by the
functions that compute with them: scipy.stats alone costs most of a second, which a
command that only names ALPHA or a Bootstrap choice (or prints its --help) never pays.

Vectorised: one pass of numpy over the paired arrays, so 100,000 paired cells cost
milliseconds (benchmarks/comparison_stats.py prints the throughput).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

Bootstrap = Literal["none", "mean", "median"]
ALPHA = 0.05
POWER = 0.8
# Bootstrap draws are made in blocks of at most this many multinomial counts, to bound memory.
BLOCK_CELLS = 20_000_000


@dataclass(frozen=True)
class PairedStats:
    """A - B over the paired keys; None where the data cannot support the number."""

    n_paired: int
    n_only_a: int
    n_only_b: int
    binary: bool
    mean_a: float | None
    mean_b: float | None
    mean_diff: float | None
    se: float | None
    clustered: bool
    n_clusters: int | None
    ci95: tuple[float, float] | None
    p_value: float | None
    discordant_a: int | None
    discordant_b: int | None
    mcnemar_p: float | None
    mcnemar_midp: float | None
    mde80: float | None
    bootstrap: dict[str, Any] | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the interval as a list, every number a plain float or int."""
        data = asdict(self)
        data["ci95"] = list(self.ci95) if self.ci95 is not None else None
        return data


def paired_stats(
    a: Mapping[str, float],
    b: Mapping[str, float],
    *,
    clusters: Mapping[str, str] | None = None,
    bootstrap: Bootstrap = "none",
    seed: int = 0,
    resamples: int = 10_000,
) -> PairedStats:
    """The paired comparison of A and B; a key without a cluster is a cluster of its own."""
    if bootstrap not in ("none", "mean", "median"):
        raise ValueError(f"bootstrap must be none, mean or median, not {bootstrap!r}")
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    import numpy as np

    keys = sorted(a.keys() & b.keys())
    n = len(keys)
    x = np.fromiter((a[k] for k in keys), dtype=np.float64, count=n)
    y = np.fromiter((b[k] for k in keys), dtype=np.float64, count=n)
    binary = n > 0 and bool(np.isin(x, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all())
    group = _cluster_ids(keys, clusters)
    clustered = group is not None
    diff = x - y
    mean_diff = float(diff.mean()) if n else None
    se = _se(diff, group)
    n_clusters = int(group.max()) + 1 if group is not None and n else None
    df = (n_clusters if clustered and n_clusters is not None else n) - 1
    discordant_a = int(np.count_nonzero((x == 1) & (y == 0))) if binary else None
    discordant_b = int(np.count_nonzero((x == 0) & (y == 1))) if binary else None
    exact = midp = None
    if discordant_a is not None and discordant_b is not None:
        exact, midp = mcnemar(discordant_a, discordant_b)
    # McNemar assumes independent pairs; clustered cells are tested on the clustered SE.
    p_value = exact if binary and not clustered else _paired_test_p(mean_diff, se, df)
    return PairedStats(
        n_paired=n,
        n_only_a=len(a.keys() - b.keys()),
        n_only_b=len(b.keys() - a.keys()),
        binary=binary,
        mean_a=float(x.mean()) if n else None,
        mean_b=float(y.mean()) if n else None,
        mean_diff=mean_diff,
        se=se,
        clustered=clustered,
        n_clusters=n_clusters,
        ci95=_interval(mean_diff, se, df),
        p_value=p_value,
        discordant_a=discordant_a,
        discordant_b=discordant_b,
        mcnemar_p=exact,
        mcnemar_midp=midp,
        mde80=mde(se),
        bootstrap=(
            None
            if bootstrap == "none" or n == 0
            else bootstrap_interval(diff, statistic=bootstrap, seed=seed, resamples=resamples)
        ),
    )


def _cluster_ids(keys: list[str], clusters: Mapping[str, str] | None) -> NDArray[np.int64] | None:
    """Dense cluster numbers per paired key, or None when no paired key has a cluster."""
    if not clusters or not any(k in clusters for k in keys):
        return None
    import numpy as np

    # A key without a cluster gets a name no cluster can have, so it stands alone.
    names = [clusters.get(k, "\0" + k) for k in keys]
    _, ids = np.unique(np.array(names, dtype=object), return_inverse=True)
    return ids.astype(np.int64)


def _se(diff: NDArray[np.float64], group: NDArray[np.int64] | None) -> float | None:
    """Standard error of the mean difference (Miller 2024, eq. 1 and, clustered, eq. 4).

    Unclustered: sqrt(sum (d - mean)^2 / (n (n - 1))). Clustered adds the within-cluster
    cross products: (1/n^2) sum_c sum_{i != j in c} (d_i - mean)(d_j - mean), which is
    (1/n^2) sum_c [(sum_{i in c} r_i)^2 - sum_{i in c} r_i^2] with r the residuals.
    """
    import numpy as np

    n = diff.size
    if n < 2:
        return None
    residuals = diff - diff.mean()
    squares = float(np.dot(residuals, residuals))
    variance = squares / (n * (n - 1))
    if group is not None:
        sums = np.bincount(group, weights=residuals)
        variance += (float(np.dot(sums, sums)) - squares) / (n * n)
    return math.sqrt(max(variance, 0.0))


def _paired_test_p(mean_diff: float | None, se: float | None, df: int) -> float | None:
    """Two-sided t-test of mean_diff = 0 (df = n - 1, or clusters - 1 when clustered).

    Zero spread is decided without division: a constant non-zero difference is p = 0,
    no difference at all is p = 1.
    """
    if mean_diff is None or se is None or df < 1:
        return None
    if se == 0:
        return 1.0 if mean_diff == 0 else 0.0
    from scipy import stats as scipy_stats

    return float(2 * scipy_stats.t.sf(abs(mean_diff) / se, df))


def _interval(mean_diff: float | None, se: float | None, df: int) -> tuple[float, float] | None:
    """mean_diff +- t_{0.975, df} * se."""
    if mean_diff is None or se is None or df < 1:
        return None
    from scipy import stats as scipy_stats

    half = float(scipy_stats.t.ppf(1 - ALPHA / 2, df)) * se
    return (mean_diff - half, mean_diff + half)


def mde(se: float | None) -> float | None:
    """Minimum detectable |difference| at 80% power, two-sided alpha 0.05:
    (z_{0.975} + z_{0.8}) * se."""
    return None if se is None else mde_multiplier() * se


@cache
def mde_multiplier() -> float:
    """z_{1-alpha/2} + z_{power}: the MDE multiplier of the standard two-sided power formula."""
    from scipy import stats as scipy_stats

    return float(scipy_stats.norm.ppf(1 - ALPHA / 2) + scipy_stats.norm.ppf(POWER))


def mcnemar(discordant_a: int, discordant_b: int) -> tuple[float, float]:
    """Exact and mid-p two-sided McNemar p-values from the two discordant counts.

    Exact: 2 P(X <= min) for X ~ Binomial(b + c, 1/2), capped at 1. Mid-p halves the
    probability of the observed count: 2 P(X <= min) - P(X = min). No discordant pair is
    no evidence: both are 1.
    """
    if discordant_a < 0 or discordant_b < 0:
        raise ValueError("discordant counts cannot be negative")
    n = discordant_a + discordant_b
    if n == 0:
        return 1.0, 1.0
    from scipy import stats as scipy_stats

    k = min(discordant_a, discordant_b)
    tail = float(scipy_stats.binom.cdf(k, n, 0.5))
    point = float(scipy_stats.binom.pmf(k, n, 0.5))
    return min(1.0, 2 * tail), min(1.0, 2 * tail - point)


def bootstrap_interval(
    diff: NDArray[np.float64],
    *,
    statistic: Literal["mean", "median"],
    seed: int,
    resamples: int,
) -> dict[str, Any]:
    """Percentile 95% interval of the statistic of the paired differences, resampling cells.

    A resample only changes how often each distinct difference occurs, so it is drawn as
    multinomial counts over the distinct values: eval differences take few distinct
    values (-1, 0, 1 for pass/fail), which makes 10,000 resamples of 100,000 cells cheap.
    """
    import numpy as np

    values, counts = np.unique(diff, return_counts=True)
    n = int(diff.size)
    rng = np.random.default_rng(seed)
    block = max(1, BLOCK_CELLS // values.size)
    results = []
    for start in range(0, resamples, block):
        draws = rng.multinomial(n, counts / n, size=min(block, resamples - start))
        results.append(_resample_statistic(values, draws, n, statistic))
    ordered = np.sort(np.concatenate(results))
    low = ordered[min(resamples - 1, math.floor(ALPHA / 2 * resamples))]
    high = ordered[max(0, math.ceil((1 - ALPHA / 2) * resamples) - 1)]
    return {
        "seed": seed,
        "resamples": resamples,
        "statistic": statistic,
        "unit": "cell",
        "ci95": [float(low), float(high)],
    }


def _resample_statistic(
    values: NDArray[np.float64],
    draws: NDArray[np.int64],
    n: int,
    statistic: Literal["mean", "median"],
) -> NDArray[np.float64]:
    """Each resample's mean or median from its counts of the sorted distinct values."""
    if statistic == "mean":
        means: NDArray[np.float64] = draws @ values / n
        return means
    import numpy as np

    cumulative = np.cumsum(draws, axis=1)
    # The m-th smallest (1-based) is the first value whose cumulative count reaches m.
    lower = values[np.argmax(cumulative >= (n + 1) // 2, axis=1)]
    upper = values[np.argmax(cumulative >= n // 2 + 1, axis=1)]
    medians: NDArray[np.float64] = (lower + upper) / 2
    return medians


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values, in the order given; None stays None, uncounted.

    Sorted ascending, the i-th (0-based) of m is multiplied by m - i, then made
    non-decreasing by a running maximum and capped at 1 (Holm 1979).
    """
    present = [(p, i) for i, p in enumerate(p_values) if p is not None]
    adjusted: list[float | None] = [None] * len(p_values)
    m = len(present)
    running = 0.0
    for rank, (p, index) in enumerate(sorted(present)):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[index] = running
    return adjusted


def verdict(
    stats: PairedStats,
    *,
    tolerance: float,
    higher_is_better: bool = True,
    alpha: float = ALPHA,
    adjusted_p: float | None = None,
) -> tuple[str, str]:
    """A's status against B, and the rule that decided it.

    `comparable` needs evidence: no significant difference AND a detectable effect within
    the tolerance; a raw difference under the tolerance is not enough.
    """
    if stats.n_paired == 0:
        return "missing", "no paired cells"
    if stats.mean_a == 0 and stats.mean_b == 0:
        return "weak", "both sides measured exactly 0"
    p = adjusted_p if adjusted_p is not None else stats.p_value
    which = "Holm-adjusted p" if adjusted_p is not None else "p"
    if p is None:
        return "inconclusive", f"no test possible with {stats.n_paired} paired cell(s)"
    if p < alpha:
        a_better = (stats.mean_diff or 0) > 0 if higher_is_better else (stats.mean_diff or 0) < 0
        status = "superior" if a_better else "inferior"
        return status, f"significant: {which} {_p(p)} < {alpha:g}"
    if stats.mde80 is not None and stats.mde80 <= tolerance:
        return "comparable", (
            f"not significant ({which} {_p(p)}) and MDE80 {stats.mde80:.4f} <= "
            f"tolerance {tolerance:g}"
        )
    detectable = "unknown" if stats.mde80 is None else f"{stats.mde80:.4f}"
    return "inconclusive", (
        f"not significant ({which} {_p(p)}) but MDE80 {detectable} > tolerance {tolerance:g}"
    )


def _p(p: float) -> str:
    return "<0.0001" if p < 0.0001 else f"{p:.4f}"
