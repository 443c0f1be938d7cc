"""`cells`: one row per task / instance / sample result."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

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
        rows = envelope.cells().rows
        if not rows:
            yield (INSERT, [])
            return
        keys, outcomes, scores, metrics, clusters = zip(*rows, strict=True)
        run_ids = [envelope.stream_id] * len(keys)
        texts = metrics_json(metrics)
        yield (INSERT, list(zip(run_ids, keys, outcomes, scores, texts, clusters, strict=True)))


def metrics_json(metrics: Sequence[dict[str, Any]]) -> list[str | None]:
    """Each cell's metrics as the column stores them (`to_json`, non-finite floats as
    strings), None for none. When every cell has some, they are written in one call as
    one array, and cut at the `},{` between two objects: exact when every `{` of the
    array opens one of its objects (no string or nested value holds one), as the count
    of `{` proves."""
    if metrics and all(metrics):
        text = to_json(metrics, inf_nan_mode="strings").decode()
        parts = text[2:-2].split("},{")
        if text.count("{") == len(metrics) == len(parts):
            return list(map(_OBJECT, parts))
    return [to_json(m, inf_nan_mode="strings").decode() if m else None for m in metrics]


_OBJECT = "{{{}}}".format
