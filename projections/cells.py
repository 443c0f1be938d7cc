"""`cells`: one row per task / instance / sample result."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic_core import to_json

from benchledger.domain.run import CellsRecorded
from benchledger.projections import versions
from benchledger.projections.base import (
    Change,
    Envelope,
    ForeignKey,
    Projection,
    Table,
    topics_of,
)

INSERT = (
    "INSERT INTO [{cells}] (run_id, key, outcome, score, metrics, cluster) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)


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
        run_id = envelope.stream_id
        yield (
            INSERT,
            [
                (
                    run_id,
                    key,
                    outcome,
                    score,
                    to_json(metrics, inf_nan_mode="strings").decode() if metrics else None,
                    cluster,
                )
                for key, outcome, score, metrics, cluster in envelope.cells().rows
            ],
        )
