"""inspect samples as ledger cells: one per sample and epoch, scored by the headline scorer."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from benchledger.adapters.formats.inspect_ai_models import (
    EvalError,
    ModelUsage,
    Reduction,
    Sample,
    SampleId,
    SampleLimit,
    ScoreValue,
)
from benchledger.domain.records import Cell, CellOutcome

# inspect's value_to_float defaults: CORRECT, PARTIAL, INCORRECT, NOANSWER.
LETTER_GRADES = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}


def canonical(value: dict[str, Any]) -> dict[str, Any]:
    """Keys sorted at every depth: two writings of one log give equal records."""
    return {k: _sorted(value[k]) for k in sorted(value)}


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return canonical(value)
    return [_sorted(v) for v in value] if isinstance(value, list) else value


def value_to_float(value: ScoreValue | None) -> float | None:
    """A score value as inspect's `value_to_float` reads it; None where inspect would
    warn and guess 0 (lists, dicts, free text) and for NaN, inspect's "unscored"."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:
            return None
        return number if math.isfinite(number) else None
    if isinstance(value, str):
        if value in LETTER_GRADES:
            return LETTER_GRADES[value]
        if value.lower() in WORDS:
            return WORDS[value.lower()]
        try:
            number = float(value)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def outcome_for(score: float | None, errored: bool) -> CellOutcome:
    """Full credit passes; partial credit fails (its score keeps the 0.5); no readable
    score is `skipped`, meaning no verdict, since the sample itself did run."""
    if errored:
        return "error"
    if score is None:
        return "skipped"
    return "passed" if score >= 1.0 else "failed"


def cell_key(sample_id: SampleId, epoch: int | None) -> str:
    return str(sample_id) if epoch is None else f"{sample_id}:epoch{epoch}"


def id_order(sample_id: SampleId) -> tuple[int, int, str]:
    """Integer ids in numeric order before string ids, so every form of a log sorts alike."""
    return (0, sample_id, "") if isinstance(sample_id, int) else (1, 0, sample_id)


def usage_dump(usage: dict[str, ModelUsage]) -> dict[str, dict[str, Any]]:
    return {model: u.model_dump(exclude_none=True) for model, u in sorted(usage.items())}


def sample_cell(sample: Sample, scorer: str | None, with_epoch: bool) -> Cell:
    """The cell of one sample; `scorer` is the headline scorer (else its first score)."""
    scores = sample.scores or {}
    chosen = scorer if scorer in scores else next(iter(scores), None)
    score = value_to_float(scores[chosen].value) if chosen is not None else None
    metrics: dict[str, Any] = {"sample_id": sample.id, "epoch": sample.epoch}
    if scores:
        metrics["scores"] = {name: s.value for name, s in scores.items()}
    error = sample.error.message if isinstance(sample.error, EvalError) else sample.error
    if error is not None:
        metrics["error"] = error
    if sample.limit is not None:
        limit = sample.limit.type if isinstance(sample.limit, SampleLimit) else sample.limit
        metrics["limit"] = limit
    if sample.model_usage:
        metrics["model_usage"] = usage_dump(sample.model_usage)
    for name in ("total_time", "working_time"):
        if (value := getattr(sample, name)) is not None:
            metrics[name] = value
    if sample.error_retries:
        metrics["error_retries"] = len(sample.error_retries)
    return Cell(
        key=cell_key(sample.id, sample.epoch if with_epoch else None),
        outcome=outcome_for(score, error is not None),
        score=score,
        metrics=canonical(metrics),
    )


def sample_cells(
    samples: Iterable[tuple[str, Sample]], scorer: str | None, with_epoch: bool
) -> tuple[list[Cell], str | None]:
    """Cells in (id, epoch) order, and where a key repeats with other content, if one does
    (an exact repeat of a sample is kept once)."""
    by_key: dict[str, tuple[tuple[tuple[int, int, str], int], Cell]] = {}
    clash = None
    for where, sample in samples:
        cell = sample_cell(sample, scorer, with_epoch)
        seen = by_key.setdefault(cell.key, ((id_order(sample.id), sample.epoch), cell))
        if seen[1] != cell and clash is None:
            clash = where
    return [cell for _, cell in sorted(by_key.values(), key=lambda item: item[0])], clash


def reduction_cells(
    reductions: list[Reduction], scorer: str | None
) -> tuple[list[Cell], str | None]:
    """Cells from the per-sample, epoch-reduced values: for logs written without samples."""
    values: dict[str, tuple[SampleId, dict[str, ScoreValue]]] = {}
    clash = None
    for reduction in reductions:
        for reduced in reduction.samples:
            sample_id, scores = values.setdefault(
                cell_key(reduced.sample_id, None), (reduced.sample_id, {})
            )
            if sample_id != reduced.sample_id and clash is None:
                clash = f"sample id {reduced.sample_id!r}"
            scores[reduction.scorer] = reduced.value
    cells = []
    for key, (sample_id, scores) in values.items():
        chosen = scorer if scorer in scores else next(iter(scores))
        score = value_to_float(scores[chosen])
        cell = Cell(
            key=key,
            outcome=outcome_for(score, False),
            score=score,
            metrics=canonical({"sample_id": sample_id, "scores": scores, "reduced": True}),
        )
        cells.append((id_order(sample_id), cell))
    return [cell for _, cell in sorted(cells, key=lambda item: item[0])], clash
