"""Every Eval Ever per-sample results as the cells of an evaluation result's run.

From 0.2.0 an aggregate record points to an instance-level JSONL file
(`detailed_evaluation_results.file_path`, relative to the datastore's root); older
records hold the samples inline (`detailed_evaluation_results_per_samples`).
A JSONL row is a cell keyed by its `sample_id` ("#<n>" for a repeat): its score is
`evaluation.score` as stated, its verdict `evaluation.is_correct`, else full credit
(the score reaching the metric's maximum); a row with an `error` is an error, one
with neither a verdict nor a score is skipped. An inline sample states no score:
it passed when its `response` is its `ground_truth` (or the first of a list of them).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchledger.adapters.formats.common import DistinctKeys, loads, read_bytes
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell, CellOutcome

# Row fields kept as a cell's metrics (the prompt, messages and answers are not facts
# about the result, and would make the ledger hold the dataset).
ROW_METRICS = ("token_usage", "performance", "interaction_type", "sample_hash")
EVALUATION_METRICS = ("num_turns", "tool_calls_count")


def samples_file(aggregate: Path, file_path: str) -> Path | None:
    """The instance-level file a record points to: `file_path` from the datastore's root,
    which is one of the folders holding the record (else beside it, by name)."""
    relative = Path(file_path)
    if relative.is_absolute() or ".." in relative.parts:
        return None
    for folder in _folders(aggregate):
        candidate = folder / relative
        if candidate.is_file():
            return candidate
    beside = aggregate.parent / relative.name
    return beside if beside.is_file() else None


def _folders(aggregate: Path) -> Iterator[Path]:
    folder = aggregate.parent
    yield folder
    yield from folder.parents


def jsonl_cells(
    name: str, data: bytes, max_score: float | None
) -> tuple[list[Cell], list[dict[str, Any]]]:
    """The cells of an instance-level file, and its rows' ids (to match them to results)."""
    keys = DistinctKeys()
    cells: list[Cell] = []
    ids: list[dict[str, Any]] = []
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        row = loads(name, line, line=number)
        if not isinstance(row, dict):
            raise InputFormatError(name, "expected a JSON object (a sample)", line=number)
        cells.append(_row_cell(name, number, row, keys, max_score))
        ids.append(
            {
                "evaluation_result_id": row.get("evaluation_result_id"),
                "evaluation_name": row.get("evaluation_name"),
            }
        )
    return cells, ids


def _row_cell(
    name: str, number: int, row: dict[str, Any], keys: DistinctKeys, max_score: float | None
) -> Cell:
    sample_id = row.get("sample_id")
    if isinstance(sample_id, bool) or not isinstance(sample_id, (int, str)) or sample_id == "":
        raise InputFormatError(
            name, "must be a string or an integer", line=number, field="sample_id"
        )
    evaluation = row.get("evaluation")
    if not isinstance(evaluation, dict):
        raise InputFormatError(name, "must be an object", line=number, field="evaluation")
    score = _number(name, number, evaluation.get("score"), "evaluation.score")
    correct = evaluation.get("is_correct")
    if correct is not None and not isinstance(correct, bool):
        raise InputFormatError(
            name, "must be a boolean", line=number, field="evaluation.is_correct"
        )
    metrics = {key: row[key] for key in ROW_METRICS if row.get(key) is not None}
    metrics |= {
        key: evaluation[key] for key in EVALUATION_METRICS if evaluation.get(key) is not None
    }
    if row.get("error") is not None:
        metrics["error"] = row["error"]
    outcome = _outcome(row.get("error"), correct, score, max_score)
    metadata = row.get("metadata")
    if isinstance(metadata, dict):
        # What export-eee writes for a cell the schema cannot state: no verdict, no score.
        if metadata.get("outcome") == "skipped" and outcome == "failed":
            outcome = "skipped"
        if metadata.get("score_stated") == "false":
            score = None
    return Cell(
        key=keys.key(str(sample_id)),
        outcome=outcome,
        score=score,
        metrics=metrics,
    )


def _number(name: str, number: int, value: Any, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):  # 0.2.0 allowed a boolean score
        return float(value)
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputFormatError(name, "must be a finite number", line=number, field=field)
    return float(value)


def _outcome(
    error: Any, correct: bool | None, score: float | None, max_score: float | None
) -> CellOutcome:
    if error is not None:
        return "error"
    if correct is not None:
        return "passed" if correct else "failed"
    if score is None:
        return "skipped"
    return "passed" if score >= (1.0 if max_score is None else max_score) else "failed"


def inline_cells(name: str, samples: Any) -> list[Cell]:
    """Cells of 0.0.1/0.1.0 `detailed_evaluation_results_per_samples`."""
    field = "detailed_evaluation_results_per_samples"
    if not isinstance(samples, list):
        raise InputFormatError(name, "must be an array", field=field)
    keys = DistinctKeys()
    cells = []
    for i, sample in enumerate(samples):
        if not isinstance(sample, dict):
            raise InputFormatError(name, "must be an object", field=f"{field}[{i}]")
        sample_id = sample.get("sample_id")
        if isinstance(sample_id, bool) or not isinstance(sample_id, (int, str)) or sample_id == "":
            raise InputFormatError(
                name, "must be a string or an integer", field=f"{field}[{i}].sample_id"
            )
        truth = sample.get("ground_truth")
        expected = truth[0] if isinstance(truth, list) and truth else truth
        response = sample.get("response")
        outcome: CellOutcome
        if response is None or expected is None:
            outcome = "skipped"
        else:
            outcome = "passed" if response == expected else "failed"
        cells.append(Cell(key=keys.key(str(sample_id)), outcome=outcome))
    return cells


def checksum_agrees(data: bytes, algorithm: Any, checksum: Any) -> bool | None:
    """Whether the file's digest is the stated one (None: nothing stated to check)."""
    if not isinstance(algorithm, str) or not isinstance(checksum, str):
        return None
    try:
        digest = hashlib.new(algorithm.lower(), data).hexdigest()
    except (ValueError, TypeError):
        return None
    return digest == checksum.lower()


def result_cells(
    name: str, path: Path, record: dict[str, Any], results: list[Any]
) -> dict[int, list[Cell]]:
    """Each result's cells (by index): an instance-level file's rows, matched to results
    by `evaluation_result_id`, else `evaluation_name`, else all to a record's only result;
    inline samples belong to the record's first result."""
    inline = record.get("detailed_evaluation_results_per_samples")
    if inline is not None:
        return {0: inline_cells(name, inline)}
    pointer = record.get("detailed_evaluation_results")
    if pointer is None:
        return {}
    if not isinstance(pointer, dict):
        raise InputFormatError(name, "must be an object", field="detailed_evaluation_results")
    file_path = pointer.get("file_path")
    if not isinstance(file_path, str) or not file_path:
        return {}
    found = samples_file(path, file_path)
    if found is None:
        raise InputFormatError(
            name,
            f"the instance-level file {file_path!r} is not there",
            field="detailed_evaluation_results.file_path",
        )
    data = read_bytes(found)
    agrees = checksum_agrees(data, pointer.get("hash_algorithm"), pointer.get("checksum"))
    if agrees is False:
        raise InputFormatError(
            name,
            f"{found} does not have this checksum",
            field="detailed_evaluation_results.checksum",
        )
    first = results[0] if isinstance(results[0], dict) else {}
    max_score = (first.get("metric_config") or {}).get("max_score")
    top = (
        float(max_score)
        if isinstance(max_score, (int, float)) and not isinstance(max_score, bool)
        else None
    )
    cells, ids = jsonl_cells(str(found), data, top)
    if len(results) == 1:
        return {0: cells}
    matched: dict[int, list[Cell]] = {}
    unmatched = []
    for number, (cell, row) in enumerate(zip(cells, ids, strict=True), start=1):
        index = _result_of(row, results)
        if index is None:
            unmatched.append(number)
        else:
            matched.setdefault(index, []).append(cell)
    if unmatched and matched:
        raise InputFormatError(
            str(found),
            "names no evaluation result of its record",
            line=unmatched[0],
            field="evaluation_result_id",
        )
    # Rows that name none of the results name them otherwise (converters have written the
    # dataset for the scorer): they are the samples of the record's first result.
    return matched or {0: cells}


def _result_of(row: dict[str, Any], results: list[Any]) -> int | None:
    """The index of the result a row names: by `evaluation_result_id`, else by name."""
    for i, result in enumerate(results):
        if not isinstance(result, dict):
            continue
        if row["evaluation_result_id"] is not None:
            if row["evaluation_result_id"] == result.get("evaluation_result_id"):
                return i
        elif row["evaluation_name"] == result.get("evaluation_name"):
            return i
    return None
