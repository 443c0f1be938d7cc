"""How the ledger's cells read in Datasette's HTML pages.

Only the HTML changes: Datasette's render_cell never touches JSON or CSV, so exports and
the API keep every score's exact value and every payload byte for byte. Markdown notes are
left to datasette-render-markdown (configured in metadata.yml).
"""

from __future__ import annotations

import json
import math
import sqlite3
from typing import Any

from markupsafe import Markup

from datasette import hookimpl

SIGNIFICANT_DIGITS = 4

# Score-like REAL columns of the read models besides `score` and `*_score`: accuracies,
# rates, differences, intervals and p-values, whose float noise is all a reader sees.
SCORE_LIKE = frozenset(
    {
        "value",
        "high_score_value",
        "delta",
        "mean_difference",
        "ci_low",
        "ci_high",
        "sign_test_p",
        "p_value",
        "p_holm",
        "p_vs_leader",
        "target_accuracy",
        "baseline_accuracy",
        "accuracy_delta",
        "target_cached_pct",
        "baseline_cached_pct",
        "cached_pct_delta",
    }
)


def is_score_column(column: str) -> bool:
    """A column whose floats are scores or statistics, shown rounded."""
    return column == "score" or column.endswith("_score") or column in SCORE_LIKE


def rounded(value: float) -> str:
    """`value` to SIGNIFICANT_DIGITS significant digits in positional notation (0.6667,
    12.35), never rounding away a digit before the point (98765): a score never reads
    as 9.877e+04."""
    if value == 0 or not math.isfinite(value):
        return repr(value)
    decimals = max(SIGNIFICANT_DIGITS - 1 - math.floor(math.log10(abs(value))), 0)
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def status_with_flags(status: str, row: sqlite3.Row) -> str:
    """The status, saying when the row is invalidated or superseded: an invalidated run
    never reads as a plain "succeeded" on its own page."""
    columns = row.keys()
    flags = [
        flag
        for flag, column in (
            ("invalidated", "invalidated"),
            ("superseded", "superseded_by"),
            ("superseded", "superseded"),
        )
        if column in columns and row[column]
    ]
    return f"{status} ({', '.join(dict.fromkeys(flags))})" if flags else status


def pretty_json(value: str, longest: int = 0) -> Markup | None:
    """A JSON object or array indented in a <pre>; None for any other text, and for one
    longer than `longest` characters (0: no limit), which Datasette then cuts to that
    length in a table page (its `truncate_cells_html`) and shows whole on its row page:
    one event can state thousands of run ids, and a page of them indented is megabytes."""
    if not value.startswith(("{", "[")) or (longest and len(value) > longest):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    if not isinstance(parsed, dict | list) or not parsed:
        return None
    text = json.dumps(parsed, indent=2, ensure_ascii=False)
    return Markup('<pre class="benchledger-json">{}</pre>').format(text)


@hookimpl
def render_cell(
    value: Any, column: str, row: sqlite3.Row | None, datasette: Any
) -> Markup | str | None:
    if isinstance(value, float) and is_score_column(column):
        return Markup('<span title="{}">{}</span>').format(repr(value), rounded(value))
    if column == "status" and isinstance(value, str) and row is not None:
        flagged = status_with_flags(value, row)
        return flagged if flagged != value else None
    if isinstance(value, str):
        return pretty_json(value, datasette.setting("truncate_cells_html") or 0)
    return None
