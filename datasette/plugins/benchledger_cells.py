"""How the ledger's cells read in Datasette's HTML pages.

Only the HTML changes: Datasette's render_cell never touches JSON or CSV, so exports and
the API keep every score's exact value and every payload byte for byte. Markdown notes are
rendered here with datasette-render-markdown's renderer and sanitiser, as its plugin
config in metadata.yml says; its own render_cell hook is not registered
(`adapters.publication.browse`): it merged that config, resolved its secrets and matched
its patterns for every text cell of every page, most of what a page of runs spent on its
cells.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from fnmatch import translate
from typing import Any
from weakref import WeakKeyDictionary

from datasette_render_markdown import render_markdown
from markupsafe import Markup

from datasette import hookimpl

SIGNIFICANT_DIGITS = 4
# A table or query page shows a JSON payload or a long text as one line of at most this many
# characters: a row one line tall, whatever the payload. The row page shows it whole.
SHORTENED_CHARS = 80

# Whether the page being rendered is a row page: render_cell is not told which page it
# draws, so asgi_wrapper notes it for the request being served (one context per request).
ON_ROW_PAGE: ContextVar[bool] = ContextVar("benchledger_on_row_page", default=False)

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


def shortened(value: str, limit: int = SHORTENED_CHARS) -> Markup | None:
    """A JSON payload on one line, or a text longer than `limit` cut to it, its first
    `limit` characters then an ellipsis; None for a short plain text, shown as it is."""
    text = value
    is_json = False
    if value.startswith(("{", "[")):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict | list) and parsed:
            text = json.dumps(parsed, ensure_ascii=False, separators=(", ", ": "))
            is_json = True
    if len(text) <= limit and not is_json:
        return None
    cut = text if len(text) <= limit else text[:limit] + "\u2026"
    return Markup('<span class="benchledger-short">{}</span>').format(cut)


def is_row_page(path: str) -> bool:
    """Datasette's row page is /DATABASE/TABLE/PRIMARY-KEYS (no format suffix): three
    path segments, none of them `-` (its own pages, such as /-/dashboards/NAME)."""
    parts = [part for part in path.split("/") if part]
    return len(parts) == 3 and parts[0] != "-" and "." not in parts[2]


class MarkdownConfig:
    """datasette-render-markdown's config (metadata.yml's `plugins:`): the columns it
    renders, by name or by pattern (its default: `*_markdown`), and its options. (A
    plain class: Datasette runs this file as a module it does not register, where a
    dataclass cannot resolve its annotations.)"""

    def __init__(self, found: dict[str, Any]) -> None:
        patterns = found.get("patterns")
        self.columns = frozenset(found.get("columns") or ())
        # Its patterns as one expression, matched as fnmatch matches on POSIX.
        self.pattern = re.compile(
            "|".join(translate(p) for p in (["*_markdown"] if patterns is None else patterns))
            or "(?!)"
        )
        self.extensions = list(found.get("extensions") or ())
        self.extra_tags = list(found.get("extra_tags") or ())
        self.extra_attrs = dict(found.get("extra_attrs") or {})

    def renders(self, column: str) -> bool:
        return column in self.columns or self.pattern.match(column) is not None

    def render(self, value: str) -> Markup:
        rendered: Markup = render_markdown(
            value, self.extensions, self.extra_tags, self.extra_attrs
        )
        return rendered


# Per served Datasette: render_cell asks for every text cell of a page.
_MARKDOWN: WeakKeyDictionary[Any, MarkdownConfig] = WeakKeyDictionary()


def markdown_config(datasette: Any) -> MarkdownConfig:
    """datasette-render-markdown's config, read once per Datasette."""
    config = _MARKDOWN.get(datasette)
    if config is None:
        found = datasette.plugin_config("datasette-render-markdown") or {}
        config = _MARKDOWN[datasette] = MarkdownConfig(found)
    return config


ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


@hookimpl
def asgi_wrapper(datasette: Any) -> Callable[[ASGIApp], ASGIApp]:
    def wrap(app: ASGIApp) -> ASGIApp:
        async def noting_the_page(scope: dict[str, Any], receive: Any, send: Any) -> None:
            token = ON_ROW_PAGE.set(scope.get("type") == "http" and is_row_page(scope["path"]))
            try:
                await app(scope, receive, send)
            finally:
                ON_ROW_PAGE.reset(token)

        return noting_the_page

    return wrap


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
        markdown = markdown_config(datasette)
        if markdown.renders(column):
            return markdown.render(value)
        if not ON_ROW_PAGE.get():
            return shortened(value)
        return pretty_json(value, datasette.setting("truncate_cells_html") or 0)
    return None
