"""Listings streamed a chunk at a time print what the whole listing printed at once: the
references below are how `emit` wrote each format before it streamed."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from typing import Any

import click
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from benchledger.commands import output
from benchledger.commands.output import (
    _cell,
    emit,
    emit_stream,
    emit_table,
    json_text,
    printable,
    table,
)

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),  # controls, DEL and C1 included: they are escaped the same
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
KEYS = ["run_id", "benchmark", "score", "config", "note"]


@st.composite
def listings(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Rows of one query: every row has the same keys, in the same order."""
    rows = draw(st.lists(st.lists(VALUES, min_size=5, max_size=5), max_size=7))
    return [dict(zip(KEYS, row, strict=True)) for row in rows]


def whole(
    rows: list[dict[str, Any]], fmt: str | None, columns: Sequence[str] | None = None
) -> tuple[str, str]:
    """What the listing printed when it was written whole: (stdout, stderr)."""
    if fmt == "json":
        return json_text(rows, indent=2, default=str) + "\n", ""
    if fmt == "nl":
        return "".join(json_text(row, default=str) + "\n" for row in rows), ""
    cols = list(columns or dict.fromkeys(key for row in rows for key in row))
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(cols)
        for row in rows:
            writer.writerow([printable(_cell(row.get(c), plain=True)) for c in cols])
        return buffer.getvalue(), ""
    if not rows:
        return "", "None.\n"
    return table(cols, [[_cell(row.get(c)) for c in cols] for row in rows]) + "\n", ""


def printed(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, str]:
    @click.command()
    def command() -> None:
        fn(*args, **kwargs)

    result = CliRunner().invoke(command, [])
    assert result.exception is None, result.exception
    return result.stdout, result.stderr


class TestEmitStream:
    @settings(max_examples=150)
    @given(listings(), st.sampled_from(["json", "nl", "csv"]))
    def test_prints_what_the_whole_listing_printed(
        self, rows: list[dict[str, Any]], fmt: str
    ) -> None:
        assert printed(emit_stream, iter(rows), fmt) == whole(rows, fmt)
        assert printed(emit, rows, fmt) == whole(rows, fmt)

    @given(listings(), st.sampled_from(["json", "nl", "csv"]))
    def test_prints_what_the_whole_listing_printed_with_columns_given(
        self, rows: list[dict[str, Any]], fmt: str
    ) -> None:
        columns = ["note", "run_id"]
        expected = whole(rows, fmt, columns)
        assert printed(emit_stream, iter(rows), fmt, columns=columns) == expected
        assert printed(emit, rows, fmt, columns=columns) == expected

    @pytest.mark.parametrize("fmt", ["json", "nl", "csv"])
    def test_many_rows_are_written_a_chunk_at_a_time(
        self, fmt: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        rows = [{"run_id": str(i), "score": i / 7, "config": {"k": [i]}} for i in range(1_234)]
        writes: list[str] = []
        echo = click.echo

        def counted(message: Any = None, **kwargs: Any) -> None:
            writes.append(str(message))
            echo(message, **kwargs)

        monkeypatch.setattr(output.click, "echo", counted)
        streamed = printed(emit_stream, iter(rows), fmt)
        # 1,234 rows in chunks of 500: at least three writes, none holding every row.
        assert len(writes) >= 3
        assert max(len(w) for w in writes) < len(streamed[0]) / 2
        assert streamed == whole(rows, fmt)

    def test_a_non_finite_score_is_written_as_json_writes_it(self) -> None:
        rows = [{"score": math.inf}, {"score": -math.inf}]
        assert printed(emit_stream, iter(rows), "json") == whole(rows, "json")


class TestEmitTable:
    @given(listings())
    def test_prints_what_the_whole_listing_printed(self, rows: list[dict[str, Any]]) -> None:
        columns = ["run_id", "benchmark", "score"]
        expected = whole(rows, None, columns)
        assert printed(emit_table, iter(rows), columns, empty="None.") == expected
        assert printed(emit, rows, None, columns=columns, empty="None.") == expected

    def test_an_optional_column_is_shown_only_where_a_row_fills_it(self) -> None:
        rows = [{"run": "a", "account": None}, {"run": "b", "account": ""}]
        shown, _ = printed(emit_table, iter(rows), ["run", "account"], optional=("account",))
        assert shown == whole(rows, None, ["run"])[0]
        rows[1]["account"] = "pool-2"
        shown, _ = printed(emit_table, iter(rows), ["run", "account"], optional=("account",))
        assert shown == whole(rows, None, ["run", "account"])[0]
