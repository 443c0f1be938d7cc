"""One way to print rows: a table on a terminal, or --json / --csv / --nl."""

from __future__ import annotations

import functools
import io
import json
import re
import shutil
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import click

WIDE = "benchledger.wide"
# tabulate's "simple" format: two spaces between columns, and a header padded by two.
COLUMN_GAP = 2
HEADER_PADDING = 2
# A column cut to fit is never narrower than this: its start must still say something.
NARROWEST = 5
ELLIPSIS = "\u2026"
# What a terminal acts on rather than shows: C0 controls (ESC starts CSI and OSC
# sequences, CR and BS overwrite), DEL, and C1 (0x9b is CSI by itself). Text a file
# stated is shown with them escaped; tab and newline are escaped in a table's cells.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CELL_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_CELL_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# In JSON text, such a character can only stand inside a string, which a \u escape
# states as well: json.dumps escapes C0 itself, not DEL nor C1 (with ensure_ascii off).
_JSON_CONTROL = re.compile("[\x7f-\x9f]")


def _remember_wide(ctx: click.Context, _param: click.Parameter, wide: bool) -> None:
    if wide:
        ctx.meta[WIDE] = True


def output_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--json / --csv / --nl / --table / --wide: one shared decorator for every listing
    command."""

    @click.option(
        "--wide",
        is_flag=True,
        expose_value=False,
        callback=_remember_wide,
        help="Show a table's every column whole, however wide (default: fit the terminal)",
    )
    @click.option("--json", "fmt", flag_value="json", help="Output a JSON array")
    @click.option("--csv", "fmt", flag_value="csv", help="Output CSV")
    @click.option("--nl", "fmt", flag_value="nl", help="Output newline-delimited JSON")
    @click.option("--table", "fmt", flag_value="table", help="Output a table (the default)")
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


def emit(
    rows: Sequence[dict[str, Any]],
    fmt: str | None,
    *,
    columns: Sequence[str] | None = None,
    empty: str = "No rows.",
) -> None:
    fmt = fmt or "table"
    if fmt in ("json", "nl"):
        emit_stream(rows, fmt)
        return
    cols = list(columns or dict.fromkeys(key for row in rows for key in row))
    if fmt == "csv":
        emit_stream(rows, fmt, columns=cols)
    else:
        emit_table(rows, cols, empty=empty)


def emit_table(
    rows: Iterable[dict[str, Any]],
    columns: Sequence[str],
    *,
    empty: str = "No rows.",
    optional: Sequence[str] = (),
) -> None:
    """`emit(list(rows), None, columns=...)`, holding of each row only the text of its
    cells; a column of `optional` that no row fills is left out."""
    cols = list(columns)
    body = [[_cell(row.get(c)) for c in cols] for row in rows]
    for name in optional:
        index = cols.index(name)
        if not any(row[index] for row in body):
            cols.pop(index)
            for row in body:
                del row[index]
    if not body:
        click.echo(empty, err=True)
        return
    click.echo(table(cols, body))


# Rows written at a time by `emit_stream`.
STREAM_CHUNK = 500


def emit_stream(
    rows: Iterable[dict[str, Any]], fmt: str, *, columns: Sequence[str] | None = None
) -> None:
    """`emit(list(rows), fmt, columns=columns)` for --json, --nl or --csv, the same text,
    written a chunk of rows at a time: memory holds a chunk, not the listing. Without
    `columns`, every row has the keys of the first (the rows of one query), which are
    the CSV's columns."""
    chunk: list[str] = []

    def write(text: str) -> None:
        chunk.append(text)
        if len(chunk) >= STREAM_CHUNK:
            click.echo("".join(chunk), nl=False)
            chunk.clear()

    if fmt == "json":
        # json.dumps of the list with indent=2: each row's own text, a level deeper.
        first = True
        for row in rows:
            text = json_text(row, indent=2, default=str).replace("\n", "\n  ")
            write(("[\n  " if first else ",\n  ") + text)
            first = False
        write("[]\n" if first else "\n]\n")
    elif fmt == "nl":
        for row in rows:
            write(json_text(row, default=str) + "\n")
    elif fmt == "csv":
        import csv

        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        cols: list[str] | None = list(columns) if columns is not None else None
        if cols is not None:
            writer.writerow(cols)
        for row in rows:
            if cols is None:
                cols = list(row)
                writer.writerow(cols)
            writer.writerow([printable(_cell(row.get(c), plain=True)) for c in cols])
            write(buffer.getvalue())
            buffer.seek(0)
            buffer.truncate()
        if cols is None:  # no rows, no columns: an empty header line, as `emit` writes
            writer.writerow([])
        write(buffer.getvalue())
    else:
        raise ValueError(f"no stream for {fmt!r}")
    click.echo("".join(chunk), nl=False)


def table(headers: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    """A table of text cells, its widest columns cut to fit the terminal (see
    `table_width`)."""
    headers = [cell_text(h) for h in headers]
    body = [[cell_text(c) for c in row] for row in body]
    width = table_width()
    if width is not None:
        headers, body = fit(headers, body, width)
    plain = simple_table(headers, body)
    if plain is not None:
        return plain
    from tabulate import tabulate  # with importlib.metadata, a fifth of a bare start

    return str(tabulate(body, headers=headers, tablefmt="simple", disable_numparse=True))


def simple_table(headers: Sequence[str], body: Sequence[Sequence[str]]) -> str | None:
    """tabulate's "simple" table of text cells, byte for byte, where every cell is
    printable ASCII (one column per character) in rows as long as the header; None
    otherwise. tabulate types and strips every cell in Python, a tenth of a second on
    a matrix of a few hundred rows; this pads them. A test holds the two equal."""
    texts = [*headers, *(cell for row in body for cell in row)]
    if not headers or not body or any(len(row) != len(headers) for row in body):
        return None
    if not all(text.isascii() and text.isprintable() for text in texts):
        return None
    rows = [[cell.strip() for cell in row] for row in body]
    widths = [
        max(len(header) + HEADER_PADDING, *(len(row[i]) for row in rows))
        for i, header in enumerate(headers)
    ]
    gap = " " * COLUMN_GAP
    lines = [
        gap.join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip(),
        gap.join("-" * w for w in widths).rstrip(),
        *(gap.join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows),
    ]
    return "\n".join(lines)


def printable(text: str) -> str:
    """`text` for a terminal: every control character but tab and newline escaped
    (`\\x1b`), so what a file states cannot move the cursor, retitle the window or hide
    what follows."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(_escape, text)


def cell_text(text: str) -> str:
    """`text` as one line of a table cell: `printable`, and tab, newline and carriage
    return escaped too (`\\n`), so a cell never breaks its row."""
    if not _CELL_CONTROL.search(text):
        return text
    return _CELL_CONTROL.sub(lambda m: _CELL_ESCAPES.get(m[0]) or _escape(m), text)


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match[0]):02x}"


def json_text(value: Any, **options: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, **options)`, with DEL and C1 characters
    (which json.dumps leaves as they are) written as `\\u` escapes: the same JSON."""
    text = json.dumps(value, ensure_ascii=False, **options)
    if not _JSON_CONTROL.search(text):
        return text
    return _JSON_CONTROL.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def table_width() -> int | None:
    """The width a table must fit: the terminal's (COLUMNS where set), or None, no limit,
    under --wide or when stdout is no terminal (a pipe, a file). COLUMNS alone does not
    make a terminal: readline exports it to every child of a process that loaded it."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and any(c.meta.get(WIDE) for c in _lineage(ctx)):
        return None
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size().columns


def _lineage(ctx: click.Context) -> list[click.Context]:
    found: list[click.Context] = []
    current: click.Context | None = ctx
    while current is not None:
        found.append(current)
        current = current.parent
    return found


def fit(
    headers: Sequence[str], body: Sequence[Sequence[str]], width: int
) -> tuple[list[str], list[list[str]]]:
    """Headers and cells cut so the table is at most `width` characters wide: one line
    per cell, and the widest columns cut to a common width, ending in an ellipsis. A
    table of more columns than fit even at NARROWEST characters each stays wider."""
    flat = [[" ".join(cell.split("\n")) for cell in row] for row in body]
    widths = [
        max([len(header) + HEADER_PADDING, *(len(row[i]) for row in flat)])
        for i, header in enumerate(headers)
    ]
    budget = width - COLUMN_GAP * (len(headers) - 1)
    if sum(widths) <= budget:
        return list(headers), flat
    cap = max(widths)
    while cap > NARROWEST and sum(min(w, cap) for w in widths) > budget:
        cap -= 1
    cut_headers = [
        _cut(header, cap - HEADER_PADDING) if w > cap else header
        for header, w in zip(headers, widths, strict=True)
    ]
    cut_body = [
        [_cut(cell, cap) if w > cap else cell for cell, w in zip(row, widths, strict=True)]
        for row in flat
    ]
    return cut_headers, cut_body


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + ELLIPSIS


def _cell(value: Any, *, plain: bool = False) -> str:
    """A value as a table (or, `plain`, a CSV) shows it. CSV writes booleans as JSON does,
    `true` / `false`; a table says yes / no."""
    if value is None:
        return ""
    if isinstance(value, bool):
        if plain:
            return "true" if value else "false"
        return "yes" if value else "no"
    if isinstance(value, float):
        return repr(value) if plain else f"{value:.4g}"
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return str(value)


def short(run_id: str | None) -> str:
    return (run_id or "")[:8]


def stderr(message: str) -> None:
    """A message to stderr, what a file stated in it `printable`."""
    click.echo(printable(message), err=True)


def is_terminal() -> bool:
    return sys.stderr.isatty()
