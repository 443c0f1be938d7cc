"""Cells a native JSONL file keeps as rows are the cells a Cell model per line made: a
line is taken exactly when Cell takes it, with the same values, written to the same
JSON, masked and deduplicated the same way."""

from __future__ import annotations

import json
import math
import pickle
from operator import eq
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field, ValidationError

from benchledger.adapters.formats.native_cells import row_of, untagged, validators
from benchledger.domain import run_rules
from benchledger.domain.cells import CellRows, keys_of, metrics_of
from benchledger.domain.errors import CellConflictError
from benchledger.domain.masked_records import masked_cells
from benchledger.domain.records import Cell, RunHeader, RunRecord, cells_json
from benchledger.domain.secrets import MASK
from tests.integration.test_cell_batches import SCALARS

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class CellLine(Cell):
    """A cell line as the reader took it with a model per line: Cell and its tag."""

    type: Literal["cell"] = Field(exclude=True)


VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
# Any object a cell line may hold: Cell's fields (or not), of any type, and strangers.
LINE_OBJECTS = st.dictionaries(
    st.sampled_from(["type", "key", "outcome", "score", "metrics", "cluster", "extra"]),
    st.one_of(
        VALUES,
        st.sampled_from(["cell", "run", "passed", "failed", "error", "skipped", ""]),
        st.floats(0, 1),
        st.dictionaries(st.text(max_size=5), VALUES, max_size=4),
    ),
)
CELLS = st.builds(
    Cell,
    key=st.text(min_size=1, max_size=6),
    outcome=st.sampled_from(["passed", "failed", "error", "skipped"]),
    score=st.one_of(st.none(), st.floats(0, 1), st.floats(allow_nan=False, allow_infinity=False)),
    metrics=st.dictionaries(st.text(max_size=5), VALUES, max_size=4),
    cluster=st.one_of(st.none(), st.text(min_size=1, max_size=4)),
)


def rows_of_lines(lines: list[str]) -> CellRows:
    return CellRows.completed(untagged(validators()[1].validate_json("[" + ",".join(lines) + "]")))


def line_of(cell: Cell, **fields: Any) -> str:
    """The line a writer states `cell` in, its fields left at their default left out."""
    stated = cell.model_dump(exclude_defaults=True)
    return json.dumps({"type": "cell", **stated, "outcome": cell.outcome, **fields})


class TestTakenAsCellTakesThem:
    @FUZZ
    @given(obj=LINE_OBJECTS)
    def test_a_line_is_taken_as_a_row_exactly_when_cell_takes_it(self, obj: dict[str, Any]) -> None:
        line = json.dumps(obj)
        try:
            expected: Cell | None = CellLine.model_validate_json(line)
        except ValidationError:
            expected = None
        try:
            row = validators()[0].validate_json(line)
        except ValidationError:
            assert expected is None
            return
        assert expected is not None
        assert len(row) == len(expected.model_fields_set)  # the keys the line stated
        rows = CellRows.completed(untagged([row]))
        cell = Cell.model_validate(expected.model_dump())
        assert repr(rows[0]) == repr(cell)  # the same values, of the same types (NaN too)
        assert rows.json() == cells_json([cell])

    @FUZZ
    @given(cells=st.lists(CELLS, max_size=8))
    def test_rows_are_written_as_their_cells_are(self, cells: list[Cell]) -> None:
        rows = rows_of_lines([line_of(c) for c in cells])
        assert rows.json() == cells_json(cells)
        assert [repr(c) for c in rows] == [repr(c) for c in cells]

    @FUZZ
    @given(cells=st.lists(CELLS, max_size=8))
    def test_a_row_made_from_a_cell_is_written_as_the_cell_is(self, cells: list[Cell]) -> None:
        rows = CellRows.completed([row_of(c) for c in cells])
        assert rows.json() == cells_json(cells)

    def test_a_null_cluster_and_left_out_fields_are_written_as_cell_writes_them(self) -> None:
        lines = [
            '{"type": "cell", "key": "a", "outcome": "passed"}',
            '{"type": "cell", "key": "b", "outcome": "failed", "cluster": null}',
            '{"cluster": "c", "metrics": {"n": NaN}, "score": 1, "outcome": "error", '
            '"key": "c", "type": "cell"}',
        ]
        rows = rows_of_lines(lines)
        cells = [CellLine.model_validate_json(line) for line in lines]
        assert rows.json() == cells_json(cells)
        assert rows.rows[0] == {"key": "a", "outcome": "passed", "score": None, "metrics": {}}
        assert "cluster" not in rows.rows[1]
        assert rows.rows[2]["score"] == 1.0 and isinstance(rows.rows[2]["score"], float)

    def test_rows_stating_key_outcome_and_score_are_written_as_their_cells_are(self) -> None:
        lines = [
            f'{{"type": "cell", "key": "k{i}", "outcome": "passed", "score": {i}}}'
            for i in range(3)
        ]
        rows = rows_of_lines(lines)
        cells = [CellLine.model_validate_json(line) for line in lines]
        assert rows.json() == cells_json(cells)
        assert [list(row) for row in rows.rows] == [["key", "outcome", "score", "metrics"]] * 3
        assert len({id(row["metrics"]) for row in rows.rows}) == 3  # none shares its metrics
        assert [repr(c) for c in rows] == [repr(Cell.model_validate(c.model_dump())) for c in cells]

    def test_rows_of_three_fields_that_are_not_key_outcome_and_score_are_completed_in_order(
        self,
    ) -> None:
        lines = [
            '{"type": "cell", "key": "a", "outcome": "passed", "metrics": {"n": 1}}',
            '{"type": "cell", "key": "b", "outcome": "failed", "cluster": "c"}',
            '{"type": "cell", "key": "c", "outcome": "error", "score": 0.5}',
        ]
        for chosen in ([lines[0], lines[2]], [lines[1], lines[2]], lines):
            rows = rows_of_lines(chosen)
            cells = [CellLine.model_validate_json(line) for line in chosen]
            assert rows.json() == cells_json(cells)
            assert [c.model_dump() for c in rows] == [c.model_dump() for c in cells]


class TestRowsAsCells:
    ROWS = CellRows.completed(
        [
            {"key": "a", "outcome": "passed", "score": 1.0, "metrics": {"n": 1}},
            {"key": "b", "outcome": "failed", "cluster": "r"},
            {"key": "c", "outcome": "skipped", "metrics": {"x": math.inf}},
        ]
    )

    def test_rows_give_cells_as_a_tuple_of_them_would(self) -> None:
        cells = tuple(self.ROWS)
        assert all(type(c) is Cell for c in cells)
        assert len(self.ROWS) == 3 and self.ROWS[1] == cells[1] and self.ROWS[-1] == cells[2]
        assert self.ROWS[1:] == cells[1:] and isinstance(self.ROWS[1:], CellRows)
        assert eq(self.ROWS, cells) and eq(cells, self.ROWS) and not eq(self.ROWS, cells[:2])
        assert keys_of(self.ROWS) == keys_of(cells) == ["a", "b", "c"]
        assert metrics_of(self.ROWS) == metrics_of(cells)
        assert pickle.loads(pickle.dumps(self.ROWS)) == self.ROWS

    def test_a_record_of_rows_is_the_record_of_their_cells(self) -> None:
        header = RunHeader(benchmark="b", agent="a", model="m", status="succeeded")
        rows = RunRecord(header=header, cells=self.ROWS)
        cells = RunRecord(header=header, cells=tuple(self.ROWS))
        assert rows.cells is self.ROWS  # kept as they are, not made into models
        assert rows == cells
        assert rows.content_sha256() == cells.content_sha256()
        assert rows.model_dump_json() == cells.model_dump_json()
        assert rows.model_dump() == cells.model_dump()

    def test_repeats_are_dropped_and_conflicts_refused_as_among_cells(self) -> None:
        row = {"key": "a", "outcome": "passed", "score": 1.0, "metrics": {}}
        assert run_rules.unique_cells(self.ROWS, where="f") is self.ROWS
        twice = CellRows([row, dict(row)])
        assert run_rules.unique_cells(twice, where="f") == [
            Cell(key="a", outcome="passed", score=1.0)
        ]
        other = CellRows([row, {**row, "score": 0.5}])
        with pytest.raises(CellConflictError, match="f: cell 'a'"):
            run_rules.unique_cells(other, where="f")


class TestRowsMasked:
    def test_secrets_of_the_config_are_hunted_in_rows_as_in_cells(self) -> None:
        cells = [
            Cell(key="a", outcome="passed", metrics={"log": "called with hunted-12345678"}),
            Cell(key="b", outcome="passed", metrics={"n": 1}),
        ]
        rows = CellRows.completed([row_of(c) for c in cells])
        masked = masked_cells(rows, ["hunted-12345678"])
        assert masked == tuple(masked_cells(cells, ["hunted-12345678"]))
        assert masked[0].metrics == {"log": f"called with {MASK}"}

    def test_rows_with_nothing_to_mask_are_returned_themselves(self) -> None:
        rows = rows_of_lines(
            [line_of(Cell(key=f"k{i}", outcome="passed", metrics={"n": i})) for i in range(9)]
        )
        assert masked_cells(rows) is rows
