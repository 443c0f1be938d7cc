"""An orchestrator.sqlite row's columns kept as they are, against the string-length limit:
the check proven at once for a row (`within`) must refuse exactly what the check of each
column refuses, naming the same column."""

from __future__ import annotations

from typing import Any

import pytest

from benchledger.adapters.formats import limits
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
