"""One way to print rows: a table on a terminal, or --json / --csv / --nl."""

from __future__ import annotations

import csv
import functools
import io
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

import click
from tabulate import tabulate


def output_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--json / --csv / --nl / --table: one shared decorator for every listing command."""

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
    if fmt == "json":
        click.echo(json.dumps(list(rows), indent=2, ensure_ascii=False, default=str))
        return
    if fmt == "nl":
        for row in rows:
            click.echo(json.dumps(row, ensure_ascii=False, default=str))
        return
    cols = list(columns or dict.fromkeys(key for row in rows for key in row))
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(cols)
        for row in rows:
            writer.writerow([_cell(row.get(c), plain=True) for c in cols])
        click.echo(buffer.getvalue(), nl=False)
        return
    if not rows:
        click.echo(empty, err=True)
        return
    click.echo(
        tabulate(
            [[_cell(row.get(c)) for c in cols] for row in rows],
            headers=cols,
            tablefmt="simple",
            disable_numparse=True,
        )
    )


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
    click.echo(message, err=True)


def is_terminal() -> bool:
    return sys.stderr.isatty()
