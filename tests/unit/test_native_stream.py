"""The streamed JSONL reader gives what the whole-file reader gives, at any block and
batch size: the same records, or the same refusal naming the same line and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.adapters import formats
from benchledger.adapters.formats import kept, limits, native, native_lines
from benchledger.adapters.formats.limits import Limits
from benchledger.domain.errors import InputFormatError

RUN = {"type": "run", "benchmark": "b", "agent": "a", "model": "m", "status": "succeeded"}
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def outcome(call: Any) -> Any:
    """The records a reader gives, or what its refusal says and where."""
    try:
        return [r.model_dump() for r in call()]
    except InputFormatError as e:
        return (type(e).__name__, e.message, e.line, e.field, getattr(e, "limit", None))


def both(tmp_path: Path, text: str | bytes, **bounds: int) -> tuple[Any, Any]:
    """(whole-file read, streamed read) of a .jsonl file holding `text`."""
    path = tmp_path / "runs.jsonl"
    data = text.encode() if isinstance(text, str) else text
    path.write_bytes(data)
    fmt = formats.load("native")
    with limits.applied(Limits(**bounds)):
        whole = outcome(lambda: formats.parse(fmt, path, data))
        streamed = outcome(lambda: list(formats.stream(fmt, path)))
    return whole, streamed


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of a few dozen bytes and batches of three cells: every boundary is met."""
    monkeypatch.setattr(native_lines, "BLOCK", 37)
    monkeypatch.setattr(native_lines, "BULK", 3)


VALUES = st.one_of(
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.booleans(),
    st.none(),
)
METRICS = st.dictionaries(
    st.text(min_size=1, max_size=6),
    st.one_of(VALUES, st.lists(VALUES, max_size=3), st.dictionaries(st.text(max_size=3), VALUES)),
    max_size=4,
)
CELL = st.fixed_dictionaries(
    {"key": st.text(min_size=1, max_size=8), "outcome": st.sampled_from(["passed", "failed"])},
    optional={"score": st.floats(0, 1), "metrics": METRICS},
)
# What a hostile or careless writer puts in place of one cell line.
ODD_LINES = st.sampled_from(
    [
        "",
        "   ",
        '{"type": "cell", "key": "a", "key": "b", "outcome": "passed"}',
        '{"type":"cell","key":"a","outcome":"passed","metrics":{"x":1,"x":2}}',
        '{"type": "cell" , "key" : "a", "outcome" : "passed"}',
        '{"type": "cell", "key": "a", "outcome": "passed", "metrics": {"n": ' + "9" * 120 + "}}",
        '{"type": "cell", "key": "a", "outcome": "passed", "metrics": {"s": "\\ud800"}}',
        '{"type": "cell", "key": "a", "outcome": "passed", "metrics": {"s": "\\ud83d\\ude00"}}',
        '{"type": "cell", "key": "a", "outcome": "passed", "metrics": {"d": '
        + "[" * 200
        + "]" * 200
        + "}}",
        '{"type": "cell", "key": "' + "k" * 300 + '", "outcome": "passed"}',
        '{"type": "cell", "key": "a", "outcome": "maybe"}',
        '{"type": "cell", "key": "", "outcome": "passed"}',
        '{"type": "cell", "key": "a"',
        '{"type": "run", "benchmark": "b2", "agent": "a", "model": "m", "status": "failed"}',
        '{"type": "other"}',
        "[1, 2]",
    ]
)


@st.composite
def jsonl_files(draw: st.DrawFn) -> str:
    lines = [json.dumps(RUN)]
    for _ in range(draw(st.integers(0, 14))):
        if draw(st.integers(0, 5)) == 0:
            lines.append(draw(ODD_LINES))
        else:
            cell = {"type": "cell", **draw(CELL)}
            compact = draw(st.booleans())
            lines.append(json.dumps(cell, separators=(",", ":") if compact else None))
    end = draw(st.sampled_from(["\n", "\r\n", "\n\x0c"]))
    return end.join(lines) + draw(st.sampled_from(["", "\n"]))


class TestStreamedAsWhole:
    @FUZZ
    @given(text=jsonl_files())
    def test_any_file_reads_the_same_streamed_in_small_blocks(
        self, tmp_path_factory: pytest.TempPathFactory, text: str
    ) -> None:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(native_lines, "BLOCK", 37)
            patch.setattr(native_lines, "BULK", 3)
            whole, streamed = both(tmp_path_factory.mktemp("f"), text, string_length=200)
        assert streamed == whole

    @FUZZ
    @given(text=jsonl_files())
    def test_any_file_reads_the_same_streamed_in_default_blocks(
        self, tmp_path_factory: pytest.TempPathFactory, text: str
    ) -> None:
        whole, streamed = both(tmp_path_factory.mktemp("f"), text, string_length=200)
        assert streamed == whole

    def test_a_bad_line_is_named_by_its_number_past_many_blocks(
        self, tmp_path: Path, small_blocks: None
    ) -> None:
        cells = [
            json.dumps({"type": "cell", "key": f"k{i}", "outcome": "passed"}) for i in range(40)
        ]
        cells[29] = '{"type": "cell", "key": "k29", "outcome": "maybe"}'
        whole, streamed = both(tmp_path, "\n".join([json.dumps(RUN), *cells]) + "\n")
        assert streamed == whole and streamed[2] == 31 and streamed[3] == "outcome"

    def test_bytes_that_are_not_utf8_are_named_by_their_offset(
        self, tmp_path: Path, small_blocks: None
    ) -> None:
        good = (json.dumps(RUN) + "\n").encode() + b'{"type":"cell","key":"a","outcome":"passed"}\n'
        whole, streamed = both(tmp_path, good * 3 + b'{"key": "\xff"}\n')
        assert streamed == whole and f"at byte {len(good) * 3 + 9}" in streamed[1]

    def test_a_line_longer_than_a_block_reads_whole(
        self, tmp_path: Path, small_blocks: None
    ) -> None:
        cell = {"type": "cell", "key": "long", "outcome": "passed", "metrics": {"t": "x" * 500}}
        whole, streamed = both(tmp_path, json.dumps(RUN) + "\n" + json.dumps(cell))
        assert streamed == whole and streamed[0]["cells"][0]["metrics"]["t"] == "x" * 500


class TestCellsProvedByTheirText:
    """Flat cells are checked against the limits by their text, not value by value: what
    the text cannot prove is checked by value, and refused by name."""

    @staticmethod
    def cells_file(bad: str, n: int = 50) -> str:
        cells = [
            json.dumps({"type": "cell", "key": f"k{i}", "outcome": "passed", "metrics": {"n": i}})
            for i in range(n)
        ]
        cells[n // 2] = bad
        return "\n".join([json.dumps(RUN), *cells]) + "\n"

    @pytest.mark.parametrize(
        ("value", "limit"),
        [("9" * 101, "int-digits"), ('"' + "s" * 201 + '"', "string-length")],
    )
    def test_a_value_past_a_limit_among_flat_cells_is_refused_by_field(
        self, tmp_path: Path, value: str, limit: str
    ) -> None:
        bad = '{"type": "cell", "key": "bad", "outcome": "passed", "metrics": {"n": @}}'
        whole, streamed = both(
            tmp_path, self.cells_file(bad.replace("@", value)), string_length=200
        )
        assert streamed == whole and streamed[4] == limit
        assert streamed[3] == "record 1: cells[25].metrics.n"

    def test_a_lone_surrogate_among_flat_cells_is_refused_by_line(self, tmp_path: Path) -> None:
        bad = '{"type": "cell", "key": "bad", "outcome": "passed", "metrics": {"n": "\\udc00"}}'
        whole, streamed = both(tmp_path, self.cells_file(bad))
        assert streamed == whole and "surrogate" in streamed[1]
        assert streamed[2:4] == (27, "metrics.n")

    def test_text_that_proves_nothing_only_sends_the_cells_to_the_value_check(self) -> None:
        bounds = Limits(int_digits=3, string_length=40)
        assert kept.text_within('[{"n":999}]', 11, bounds)
        assert not kept.text_within('[{"n":1000}]', 12, bounds)  # four digits in a row
        assert not kept.text_within('[{"k":"1234"}]', 14, bounds)  # in a string: unproved
        assert not kept.text_within('[{"s":"\\u00e9"}]', 16, bounds)  # an escape
        assert not kept.text_within("[]", 41, bounds)  # a line longer than a string may be

    def test_streaming_checks_the_cells_of_a_json_document_too(self, tmp_path: Path) -> None:
        doc = {
            "schema": native.SCHEMA_ID,
            **{k: v for k, v in RUN.items() if k != "type"},
            "cells": [{"key": "a", "outcome": "passed", "metrics": {"s": "x" * 300}}],
        }
        path = tmp_path / "run.json"
        path.write_text(json.dumps(doc))
        with limits.applied(Limits(string_length=200)), pytest.raises(InputFormatError) as e:
            list(formats.stream(formats.load("native"), path))
        assert e.value.field == "record 1: cells[0].metrics.s"


class TestNoGarbageWhileTheCollectorIsPaused:
    def test_checking_values_against_the_limits_leaves_no_reference_cycles(self) -> None:
        """Imports run with the collector paused: a check that makes cycles leaks memory
        per record (a recursive closure did, one per call)."""
        import gc

        bounds = Limits()
        value = {"a": [1, 2.5, "x", {"b": None}], "c": "é"}
        gc.collect()
        gc.disable()
        try:
            for _ in range(200):
                assert not kept.breaks(value, bounds)
            found = gc.collect()
        finally:
            gc.enable()
        assert found == 0


class TestKeysCountedInBulk:
    @pytest.mark.parametrize("space", [" ", "\t", "  \t "])
    def test_a_key_repeated_with_spaces_before_its_colon_is_refused_in_bulk_too(
        self, tmp_path: Path, space: str
    ) -> None:
        cell = f'{{"type": "cell", "key"{space}: "a", "key"{space}: "b", "outcome": "passed"}}'
        whole, streamed = both(tmp_path, "\n".join([json.dumps(RUN), cell, cell]))
        assert whole == streamed
        assert whole[0] == "InputFormatError" and "key" in whole[1]

    @pytest.mark.parametrize("lines", [1, 2], ids=["first-run", "second-run"])
    def test_a_cell_line_that_looks_like_a_run_line_is_read_as_a_cell(
        self, tmp_path: Path, lines: int
    ) -> None:
        """A line the run-line search matches is read whole as what its `type` says: a cell
        whose metrics state `"type": "run"` stays a cell, and its run is not split."""
        cell = {"type": "cell", "key": "k", "outcome": "passed", "metrics": {"type": "run"}}
        plain = {"type": "cell", "key": "p", "outcome": "failed"}
        text = "\n".join(json.dumps(line) for line in [RUN, plain, cell, plain] * lines)
        assert native_lines._RUN_LINE.search(json.dumps(cell))
        whole, streamed = both(tmp_path, text)
        assert whole == streamed
        assert [[(c["key"], c["metrics"]) for c in run["cells"]] for run in whole] == [
            [("p", {}), ("k", {"type": "run"}), ("p", {})]
        ] * lines
