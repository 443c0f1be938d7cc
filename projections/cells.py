"""`cells`: one row per task / instance / sample result."""

from __future__ import annotations

from collections.abc import Iterable
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

COLUMNS = "run_id, key, outcome, score, metrics, cluster"


def insert_for(run_id: str) -> str:
    """The insert of one run's cells: its id a literal of the statement, so that a batch's
    rows (`CellRow`) go in as they are, with no second pass over its cells to add it. A
    placeholder statement (`{cells}`), so its braces and quotes are escaped."""
    literal = "'" + run_id.replace("'", "''").replace("{", "{{").replace("}", "}}") + "'"
    return f"INSERT INTO [{{cells}}] ({COLUMNS}) VALUES ({literal}, ?, ?, ?, ?, ?)"


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
        yield insert_for(envelope.stream_id), cast(list[Params], envelope.cells().rows)
