"""An orchestrator.sqlite row's columns kept as they are, against the string-length limit:
the check proven at once for a row (`within`) must refuse exactly what the check of each
column refuses, naming the same column."""

from __future__ import annotations

import marshal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchledger.adapters.formats import limits
from benchledger.adapters.formats.orchestrator_sources import check_unit_kept
from benchledger.adapters.formats.orchestrator_values import (
    check_kept_as_is,
    rows_within,
    within,
)
from benchledger.domain.errors import InputFormatError, InputLimitError

NAMES = ("run_id", "cwd", "metrics_json", "score", "attempt", "error")
LONGEST = 64


def row(**values: Any) -> tuple[Any, ...]:
    stated = {"run_id": "run_a", "cwd": "/srv", "metrics_json": "{}", "score": 0.5}
    stated.update(attempt=1, error=None)
    stated.update(values)
    return tuple(stated[name] for name in NAMES)


@pytest.fixture(autouse=True)
def short_strings() -> Any:
    with limits.applied(limits.Limits(string_length=LONGEST)) as bounds:
        yield bounds


class TestKeptColumns:
    def test_a_row_of_short_values_is_proven_within_the_limit_at_once(self) -> None:
        assert within(row(), LONGEST)
        check_kept_as_is("f", "benchmark_runs", NAMES, row(), "run_a")

    def test_a_text_past_the_limit_is_refused_by_its_column(self) -> None:
        long = row(error="x" * (LONGEST + 1))
        assert not within(long, LONGEST)
        with pytest.raises(InputLimitError) as e:
            check_kept_as_is("f", "benchmark_runs", NAMES, long, "run_a")
        assert e.value.field == "benchmark_runs.error"
        assert f"a string of {LONGEST + 1} characters" in e.value.message

    def test_a_text_at_the_limit_is_kept(self) -> None:
        check_kept_as_is("f", "benchmark_runs", NAMES, row(error="é" * LONGEST), "run_a")

    def test_a_json_column_is_not_counted_however_long(self) -> None:
        long_json = row(metrics_json='{"a":"' + "x" * LONGEST + '"}')
        check_kept_as_is("f", "benchmark_runs", NAMES, long_json, "run_a")

    def test_a_row_of_many_short_texts_longer_together_than_the_limit_is_kept(self) -> None:
        names = tuple(f"c{i}" for i in range(20))
        values = tuple("y" * (LONGEST // 2) for _ in names)
        assert not within(values, LONGEST)  # not proven at once: each is looked at
        check_kept_as_is("f", "benchmark_runs", names, values, "run_a")

    def test_a_blob_is_looked_at_however_short(self) -> None:
        assert not within(row(cwd=b"/srv"), LONGEST)
        check_kept_as_is("f", "benchmark_runs", NAMES, row(cwd=b"/srv"), "run_a")
        with pytest.raises(InputFormatError, match="a blob that is not UTF-8 text") as e:
            check_kept_as_is("f", "benchmark_runs", NAMES, row(cwd=b"\xff"), "run_a")
        assert e.value.field == "benchmark_runs.cwd"

    def test_a_runs_trajectory_rows_are_proven_together_or_each_looked_at(self) -> None:
        turns = [("run_a", "t.jsonl", i, 10, 2) for i in range(3)]
        assert rows_within(turns, 1000)
        assert not rows_within([*turns, ("run_a", "t" * 1001, 4, 1, 1)], 1000)
        assert not rows_within([*turns, ("run_a", b"t.jsonl", 4, 1, 1)], 1000)


TURN_NAMES = ("run_id", "trajectory_file", "turn_index", "prompt_tokens", "note")
# What a database hands back: mostly short texts, blobs (UTF-8 and not), numbers and
# NULLs, so that many units are proven within the limit at once; now and then a text
# around the limit.
SHORT = st.one_of(
    st.text(max_size=12),
    st.binary(max_size=6),
    st.sampled_from([b"\xff", b"ok"]),
    st.integers(),
    st.floats(allow_nan=False),
    st.none(),
)
LONG = st.builds(str.__mul__, st.sampled_from(["x", "é", "xé"]), st.integers(50, 1000))
VALUES = st.one_of(SHORT, SHORT, SHORT, SHORT, LONG)


def plain_refusal(unit: Any, run_id: Any) -> tuple[type, str, str | None] | None:
    """How the row's check, then its trajectory rows' (unless proven at once), refuse it."""
    names, values, turn_names, turn_rows = unit
    longest = limits.current().string_length
    try:
        check_kept_as_is("f", "benchmark_runs", names, values, run_id)
        if turn_rows and not rows_within(turn_rows, longest):
            for turn in turn_rows:
                check_kept_as_is("f", "benchmark_run_trajectories", turn_names, turn, run_id)
    except InputFormatError as e:
        return type(e), e.message, e.field
    return None


class TestAUnitCheckedAtOnce:
    @settings(max_examples=400, deadline=None)
    @given(
        st.tuples(*[VALUES] * len(NAMES)),
        st.lists(st.tuples(*[VALUES] * len(TURN_NAMES)), max_size=3),
        st.integers(min_value=100, max_value=900),
    )
    def test_refuses_what_the_check_of_each_row_refuses(
        self, values: tuple[Any, ...], turn_rows: list[tuple[Any, ...]], longest: int
    ) -> None:
        # The unit's marshalled bytes prove it within the limit when they are short
        # enough, and never a unit holding a blob, a longer text, or a turn beyond it.
        unit = (NAMES, values, TURN_NAMES, turn_rows)
        with limits.applied(limits.Limits(string_length=longest)):
            expected = plain_refusal(unit, values[0])
            try:
                check_unit_kept("f", unit, values[0], marshal.dumps(unit, 2))
            except InputFormatError as e:
                assert (type(e), e.message, e.field) == expected
            else:
                assert expected is None

    @settings(max_examples=300, deadline=None)
    @given(
        st.sampled_from(["x", "é", "\U0001f600"]),
        st.integers(min_value=1, max_value=400),
        st.integers(min_value=100, max_value=300),
    )
    def test_a_lone_text_just_past_the_limit_is_never_proven_within(
        self, char: str, length: int, longest: int
    ) -> None:
        # A unit of one column holds the least besides its text: the bound is tightest.
        unit = (("error",), (char * length,), None, None)
        with limits.applied(limits.Limits(string_length=longest)):
            expected = plain_refusal(unit, None)
            try:
                check_unit_kept("f", unit, None, marshal.dumps(unit, 2))
            except InputFormatError as e:
                assert (type(e), e.message, e.field) == expected
            else:
                assert expected is None
