"""A run's cells: the `Cell` value object, and cells kept as plain rows (`CellRows`).

A large import reads hundreds of thousands of cells. Made into a model each, they cost
it more than anything else it did with them: each model was built, serialized for its
event and freed. A format that reads many cells may keep them as rows instead, each a
dict of a Cell's fields that was checked as Cell checks them: their event's JSON is
written from the rows, the same bytes `cells_json` writes for the Cells, and whoever
asks for a cell as a Cell gets one made from its row.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from itertools import repeat
from operator import attrgetter, itemgetter
from typing import Annotated, Any, overload

from pydantic import ConfigDict, Field, PlainSerializer, TypeAdapter

from benchledger.domain.record_base import CellOutcome, NonEmptyStr, Record, Score
from benchledger.domain.signatures import sha256_hex


class Cell(Record):
    """One task / instance / sample result inside a run."""

    key: NonEmptyStr
    outcome: CellOutcome
    score: Score | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    # What the cell's result is correlated with (a repository, a subtask): paired
    # statistics cluster their standard errors on it. Left out of the JSON when unset,
    # so cells recorded before it existed keep their bytes and hashes.
    cluster: NonEmptyStr | None = Field(default=None, exclude_if=lambda v: v is None)

    def digest(self) -> str:
        """Short fingerprint of the payload, to tell a repeat from a conflict."""
        return sha256_hex(self.json_bytes())[:16]


Row = dict[str, Any]


class CellRows(Sequence[Cell]):
    """Cells kept as rows: each a dict of a Cell's fields in Cell's order, checked as
    Cell checks them, `score` and `metrics` always there and `cluster` only when set
    (so that the rows' JSON is the Cells'). Never changed once made: a masked cell is a
    new row. Indexed or iterated, it gives Cells, each made from its row."""

    __slots__ = ("rows",)

    def __init__(self, rows: list[Row]) -> None:
        self.rows = rows

    @classmethod
    def completed(cls, rows: list[Row]) -> CellRows:
        """Rows of Cell's fields in its order, checked as Cell checks them, where those
        left at their default may be missing (and a cluster may be null): completed.
        The rows are the caller's to give: they may be completed in place."""
        sizes = set(map(len, rows))
        if sizes <= {3, 4} and not any(map(dict.__contains__, rows, _CLUSTER)):
            # Four fields and none of them a cluster: key, outcome, score and metrics.
            if sizes <= {4}:
                return cls(rows)
            # Three and no metrics either: key, outcome and score, in that order, so an
            # empty metrics added last is Cell's order. Added in place, in C, not by a
            # new dict per row made in Python.
            if sizes == {3} and not any(map(dict.__contains__, rows, _METRICS_KEY)):
                empty = map(dict.copy, repeat(_NO_METRICS, len(rows)))  # a dict of its own each
                deque(map(dict.__setitem__, rows, _METRICS_KEY, empty), maxlen=0)
                return cls(rows)
        return cls(list(map(_completed, rows)))

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, index: int) -> Cell: ...

    @overload
    def __getitem__(self, index: slice) -> CellRows: ...

    def __getitem__(self, index: int | slice) -> Cell | CellRows:
        if isinstance(index, slice):
            return CellRows(self.rows[index])
        return Cell.model_validate(self.rows[index])

    def __iter__(self) -> Iterator[Cell]:
        return map(Cell.model_validate, self.rows)

    def __eq__(self, other: object) -> bool:
        """Equal to the same cells, as rows or as a tuple of Cells (as a tuple would be)."""
        if isinstance(other, CellRows):
            return self.rows == other.rows
        if isinstance(other, tuple):
            return tuple(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"CellRows({self.rows!r})"

    def __reduce__(self) -> tuple[type[CellRows], tuple[list[Row]]]:
        return CellRows, (self.rows,)

    def json(self) -> bytes:
        """The cells as the JSON array `cells_json` writes for them."""
        return _ROWS.dump_json(self.rows)


_CLUSTER = repeat("cluster")
_METRICS_KEY = repeat("metrics")
_NO_METRICS: dict[str, Any] = {}  # never changed: only copied


def _completed(row: Row) -> Row:
    done = {
        "key": row["key"],
        "outcome": row["outcome"],
        "score": row.get("score"),
        "metrics": row.get("metrics", {}),
    }
    cluster = row.get("cluster")
    if cluster is not None:
        done["cluster"] = cluster
    return done


def _rows_tuple(cells: CellRows) -> tuple[Row, ...]:
    return tuple(cells.rows)


# Cells as a record or an event holds them: Cells, or rows written as the Cells would be.
# Rows are taken as they are, before a tuple is tried: a tuple's lax check of them would
# make every row into a Cell (as the default union mode tries every member).
Cells = Annotated[
    Annotated[CellRows, PlainSerializer(_rows_tuple, return_type=tuple[Row, ...])]
    | tuple[Cell, ...],
    Field(union_mode="left_to_right"),
]

# Cells serialized as inside a record: non-finite floats as strings, like Record's own.
_CELLS = TypeAdapter(
    tuple[Cell, ...], config=ConfigDict(ser_json_inf_nan="strings", defer_build=True)
)
# Rows hold only what a Cell's JSON holds, in its order, each value of the type its field
# gives it: written by type, as `_CELLS` writes their fields, they are the same bytes.
_ROWS = TypeAdapter(list[Row], config=ConfigDict(ser_json_inf_nan="strings", defer_build=True))


def cells_json(cells: Sequence[Cell]) -> bytes:
    """Cells as the JSON array a record or an event holds them in."""
    if isinstance(cells, CellRows):
        return cells.json()
    return _CELLS.dump_json(tuple(cells))


def cells_value(cells: Sequence[Cell]) -> CellRows | tuple[Cell, ...]:
    """Cells as a record or an event holds them: rows as they are, Cells as a tuple."""
    return cells if isinstance(cells, CellRows) else tuple(cells)


_KEY = attrgetter("key")
_METRICS = attrgetter("metrics")
_ROW_KEY = itemgetter("key")
_ROW_METRICS = itemgetter("metrics")


def keys_of(cells: Sequence[Cell]) -> list[str]:
    """The cells' keys, read from their rows when they are kept as rows."""
    if isinstance(cells, CellRows):
        return list(map(_ROW_KEY, cells.rows))
    return list(map(_KEY, cells))


def metrics_of(cells: Sequence[Cell]) -> list[dict[str, Any]]:
    """The cells' metrics, read from their rows when they are kept as rows."""
    if isinstance(cells, CellRows):
        return list(map(_ROW_METRICS, cells.rows))
    return list(map(_METRICS, cells))
