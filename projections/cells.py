"""`cells`: one row per task / instance / sample result."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic_core import to_json

from benchledger.domain.run import CellsRecorded
from benchledger.projections import versions
from benchledger.projections.base import Change, Envelope, Projection, Table

INSERT = "INSERT INTO [{cells}] (run_id, key, outcome, score, metrics) VALUES (?, ?, ?, ?, ?)"


class CellsProjection(Projection):
    name = "cells"
    version = versions.version(name)
    tables = (
        Table(
            "cells",
            {"run_id": str, "key": str, "outcome": str, "score": float, "metrics": str},
            indexes=(("run_id", "key"),),
        ),
    )

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        event = envelope.event
        if not isinstance(event, CellsRecorded):
            return
        run_id = str(envelope.stream)
        yield (
            INSERT,
            [
                (
                    run_id,
                    cell.key,
                    cell.outcome,
                    cell.score,
                    to_json(cell.metrics, inf_nan_mode="strings").decode()
                    if cell.metrics
                    else None,
                )
                for cell in event.cells
            ],
        )
