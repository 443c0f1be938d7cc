"""`cells`: one row per task / instance / sample result."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import groupby
from typing import cast

from benchledger.domain.run import CellsRecorded
from benchledger.projections import versions
from benchledger.projections.base import (
    Change,
    Envelope,
    ForeignKey,
    Params,
    Projection,
    Table,
    topics_of,
)

COLUMNS = ("run_id", "key", "outcome", "score", "metrics", "cluster")


def insert_for(run_id: str, width: int = 5) -> str:
    """The insert of one run's cells, rows (`CellRow`) of `width` values: its id a literal
    of the statement, so that a batch's rows go in as they are, with no second pass over
    its cells to add it; the columns its rows leave out stay NULL. A placeholder
    statement (`{cells}`), so its braces and quotes are escaped."""
    literal = "'" + run_id.replace("'", "''").replace("{", "{{").replace("}", "}}") + "'"
    columns = ", ".join(COLUMNS[: width + 1])
    return f"INSERT INTO [{{cells}}] ({columns}) VALUES ({literal}{', ?' * width})"


class CellsProjection(Projection):
    name = "cells"
    version = versions.version(name)
    tables = (
        Table(
            "cells",
            {
                "run_id": str,
                "key": str,
                "outcome": str,
                "score": float,
                "metrics": str,
                "cluster": str,
            },
            # `outcome`: the facet of its page, counted from the index alone.
            indexes=(("run_id", "key"), ("outcome",)),
            foreign_keys=(ForeignKey("run_id", "runs", "run_id"),),
        ),
    )
    topics = topics_of(CellsRecorded)

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        rows = cast(list[Params], envelope.cells().rows)
        run_id = envelope.stream_id
        if len(set(map(len, rows))) <= 1:  # most batches: every row as wide
            yield insert_for(run_id, len(rows[0]) if rows else 5), rows
            return
        for width, same in groupby(rows, len):  # in their order: the same rowids
            yield insert_for(run_id, width), list(same)
