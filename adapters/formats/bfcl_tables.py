"""BFCL leaderboard tables: `data_overall.csv` and the section tables (`data_non_live.csv`,
`data_live.csv`, `data_multi_turn.csv`, `data_agentic.csv`, `data_format_sensitivity.csv`;
v2 `data_combined.csv`, v1 `data.csv`) that `bfcl evaluate` writes into the score
directory, one row per model it has scores for.

BFCL writes them by joining values with commas (no quoting, no trailing newline); they
are read as CSV, so a table re-saved with quotes reads the same. Values are `"74.50%"`
(kept as the fraction 0.745), plain numbers (cost in $, latency in s, format-sensitivity
spread in percentage points: kept as stated), `N/A` for what was not evaluated (kept
as null and listed in provenance `not_evaluated`), or text.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Iterator, Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from benchledger.adapters.formats.bfcl_common import header, identity
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord

FILE_NAME = re.compile(r"\Adata(?:_([a-z][a-z0-9_]*))?\.csv\Z")
OVERALL_TABLES = frozenset({None, "overall", "combined"})
# Columns that describe the model (kept in provenance) rather than measure it.
TEXT_COLUMNS = {
    "Model Link": "model_link",
    "Organization": "organization",
    "License": "license",
}
# Columns that an overall accuracy does not average over.
NOT_CATEGORIES = ("Total Cost", "Cost", "Latency", "Format Sensitivity")
PERCENT = re.compile(r"\A-?\d+(?:\.\d+)?%\Z")
NOT_EVALUATED = "N/A"


def claims(path: Path, head: bytes) -> bool:
    if FILE_NAME.match(path.name) is None:
        return False
    first = head.removeprefix(b"\xef\xbb\xbf").split(b"\n", 1)[0].rstrip(b"\r")
    columns = first.split(b",")
    return columns[0] == b"Rank" and b"Model" in columns[1:4]


def benchmark_of(path: Path) -> str:
    match = FILE_NAME.match(path.name)
    table = match.group(1) if match else None
    return "bfcl" if table in OVERALL_TABLES else f"bfcl_{table}"


def parse(path: Path, data: bytes, defaults: Mapping[str, Any]) -> Iterator[RunRecord]:
    name = str(path)
    rows = _rows(name, data)
    if not rows:
        raise InputFormatError(name, "empty: expected a header row", line=1)
    (at, columns), body = rows[0], rows[1:]
    _check_columns(name, columns, at)
    score_column = next(
        (c for c in columns if c == "Overall Acc" or c.endswith(" Overall Acc")), None
    )
    score_dir = Path(os.path.abspath(path)).parent.name
    seen: dict[str, int] = {}
    for number, values in body:
        if len(values) != len(columns):
            raise InputFormatError(
                name, f"{len(values)} values for {len(columns)} columns", line=number
            )
        row = dict(zip(columns, values, strict=True))
        model = row["Model"].strip()
        if not model:
            raise InputFormatError(name, "empty", line=number, field="Model")
        if model in seen:
            again = f"'{model}' has a row already (line {seen[model]})"
            raise InputFormatError(name, again, line=number, field="Model")
        seen[model] = number
        yield _run(path, number, row, score_column, score_dir, model, defaults)


def _rows(name: str, data: bytes) -> list[tuple[int, list[str]]]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputFormatError(name, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows = []
    try:
        for values in reader:
            if values and any(v.strip() for v in values):
                rows.append((reader.line_num, values))
    except csv.Error as e:
        raise InputFormatError(name, f"not readable as CSV: {e}", line=reader.line_num) from None
    return rows


def _check_columns(name: str, columns: list[str], line: int) -> None:
    if not columns or columns[0] != "Rank":
        raise InputFormatError(name, "expected a header row starting with Rank", line=line)
    if "Model" not in columns:
        raise InputFormatError(name, "missing (a column of the header)", line=line, field="Model")
    seen = set()
    for column in columns:
        if column in seen:
            raise InputFormatError(name, "named by two columns", line=line, field=column)
        seen.add(column)


def _run(
    path: Path,
    number: int,
    row: dict[str, str],
    score_column: str | None,
    score_dir: str,
    model: str,
    defaults: Mapping[str, Any],
) -> RunRecord:
    name = str(path)
    metrics: dict[str, Any] = {}
    provenance: dict[str, Any] = {"layout": "leaderboard_table", "table": path.name}
    provenance["score_dir"] = score_dir
    not_evaluated: list[str] = []
    texts: list[str] = []
    for column, raw in row.items():
        if column in ("Rank", "Model"):
            continue
        if column in TEXT_COLUMNS:
            provenance[TEXT_COLUMNS[column]] = raw
            continue
        value = _value(raw)
        if value is None:
            not_evaluated.append(column)
        elif isinstance(value, str):
            texts.append(column)
        metrics[column] = value
    score = metrics.get(score_column) if score_column else None
    if score_column and not (score is None or PERCENT.match(row[score_column].strip())):
        raise InputFormatError(
            name, f"expected a percentage or {NOT_EVALUATED}", line=number, field=score_column
        )
    quirks = []
    missing = [c for c in not_evaluated if c != score_column and not c.startswith(NOT_CATEGORIES)]
    if score is not None and missing:
        columns = "1 column" if len(missing) == 1 else f"{len(missing)} columns"
        quirks.append(
            f"{score_column} counts what was not evaluated as 0 ({columns} {NOT_EVALUATED})"
        )
    if texts:
        quirks.append(f"columns holding text, not numbers: {', '.join(texts)}")
    if not_evaluated:
        provenance["not_evaluated"] = not_evaluated
    if quirks:
        provenance["quirks"] = quirks
    fields = identity(model, defaults)
    fields.update(
        run_key=f"{score_dir}/{path.name}#{model}",
        benchmark=benchmark_of(path),
        score=score,
        metrics=metrics,
        provenance=provenance,
    )
    rank = row["Rank"].strip()
    # A row's rank depends on the other rows of the table, not on the run: it is kept
    # from the first table that brings the run, and a table that only re-ranks agrees.
    supplement = {"rank": int(rank) if rank.isdigit() else rank}
    return RunRecord(header=header(path, fields), supplement=supplement)


def _value(raw: str) -> float | str | None:
    text = raw.strip()
    if text == NOT_EVALUATED:
        return None
    if PERCENT.match(text):
        return float(Decimal(text[:-1]) / 100)
    try:
        number = Decimal(text)
    except InvalidOperation:
        return raw
    value = float(number)
    return value if math.isfinite(value) else raw
