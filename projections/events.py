"""`events`: every stored event decoded to readable JSON, the audit log."""

from __future__ import annotations

import json
from collections.abc import Iterable

from benchledger.domain.topics import CELLS_RECORDED
from benchledger.projections import versions
from benchledger.projections.base import (
    CellBatch,
    Change,
    Envelope,
    ForeignKey,
    Projection,
    Table,
    iso,
)

INSERT = (
    "INSERT INTO [{events}] (position, stream, version, type, time, data) VALUES (?, ?, ?, ?, ?, ?)"
)


class EventsProjection(Projection):
    name = "events"
    version = versions.version(name)
    tables = (
        Table(
            "events",
            {
                "position": int,
                "stream": str,
                "version": int,
                "type": str,
                "time": str,
                "data": str,
            },
            pk=("position",),
            indexes=(("stream", "version"), ("type",)),
            # A run's stream is its run_id: its row page lists its events. Streams of
            # other aggregates (groups, benchmarks, imports) name no run and show as text.
            foreign_keys=(ForeignKey("stream", "runs", "run_id"),),
        ),
    )

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        if envelope.topic == CELLS_RECORDED:
            batch = envelope.cells()
            name, at, data = "CellsRecorded", iso(batch.timestamp), _summary(envelope, batch)
        else:
            # Name and time from the stored text where the store can read them there:
            # most events need no decode here (`Envelope.head`).
            name, at, data = envelope.event_name, envelope.recorded_at, envelope.state.decode()
        yield (
            INSERT,
            (envelope.position, envelope.stream_id, envelope.version, name, at, data),
        )


def _summary(envelope: Envelope, batch: CellBatch) -> str:
    """A cell batch is shown by its size and key range; its cells are rows of `cells`."""
    rows = batch.rows
    return json.dumps(
        {
            "originator_id": str(envelope.stream),
            "originator_version": envelope.version,
            "timestamp": iso(batch.timestamp),
            "cells": {
                "count": len(rows),
                "first_key": rows[0][0] if rows else None,
                "last_key": rows[-1][0] if rows else None,
            },
        }
    )
