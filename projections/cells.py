"""`cells`: one row per task / instance / sample result."""

from __future__ import annotations

import json
from collections.abc import Iterable

from domain.run import CellsRecorded
from projections.base import Change, Envelope, Projection, Table

INSERT = "INSERT INTO [{cells}] (run_id, key, outcome, score, metrics) VALUES (?, ?, ?, ?, ?)"


class CellsProjection(Projection):
    name = "cells"
    version = 1
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
        dumps = json.dumps
        for cell in event.cells:
            yield (
                INSERT,
                (
                    run_id,
                    cell.key,
                    cell.outcome.value,
                    cell.score,
                    dumps(cell.metrics, sort_keys=True, ensure_ascii=False)
                    if cell.metrics
                    else None,
                ),
            )
