"""`events`: every stored event decoded to readable JSON, the audit log."""

from __future__ import annotations

import json
from collections.abc import Iterable

from benchledger.domain.run import CellsRecorded
from benchledger.projections import versions
from benchledger.projections.base import Change, Envelope, Projection, Table, iso

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
        ),
    )

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        event = envelope.event
        data = _summary(event) if isinstance(event, CellsRecorded) else envelope.state.decode()
        yield (
            INSERT,
            (
                envelope.position,
                str(envelope.stream),
                envelope.version,
                type(event).__name__,
                iso(event.timestamp),
                data,
            ),
        )


def _summary(event: CellsRecorded) -> str:
    """A cell batch is shown by its size and key range; its cells are rows of `cells`."""
    cells = event.cells
    return json.dumps(
        {
            "originator_id": str(event.originator_id),
            "originator_version": event.originator_version,
            "timestamp": iso(event.timestamp),
            "cells": {
                "count": len(cells),
                "first_key": cells[0].key if cells else None,
                "last_key": cells[-1].key if cells else None,
            },
        }
    )
