"""Score units with a known range, so a correction cannot state an impossible score."""

from __future__ import annotations

from benchledger.domain.errors import RuleViolationError

# Fractions of a whole; lm-eval's metric names (acc, exact_match, ...) are fractions too.
_FRACTIONS = (
    "accuracy",
    "acc",
    "acc_norm",
    "exact_match",
    "ratio",
    "fraction",
    "pass_rate",
    "resolved_rate",
    "success_rate",
)
_PERCENTS = ("percent", "percentage", "pct", "%")

RANGES: dict[str, tuple[float, float]] = {
    **dict.fromkeys(_FRACTIONS, (0.0, 1.0)),
    **dict.fromkeys(_PERCENTS, (0.0, 100.0)),
}


def unit_range(unit: str | None) -> tuple[float, float] | None:
    """The closed range of scores in this unit; None for unbounded or unknown units."""
    return RANGES.get((unit or "").strip().lower())


def check_score(score: float | None, unit: str | None) -> None:
    """Refuse a score outside its unit's range, naming the range."""
    bounds = unit_range(unit)
    if score is None or bounds is None:
        return
    low, high = bounds
    if not low <= score <= high:
        raise RuleViolationError(f"score {score:g} is outside [{low:g}, {high:g}] for unit {unit}")
