"""`events`: every stored event decoded to readable JSON, the audit log."""

from __future__ import annotations

from collections.abc import Iterable

from projections.base import Change, Envelope, Projection, Table, iso

INSERT = (
    "INSERT INTO [{events}] (position, stream, version, type, time, data) VALUES (?, ?, ?, ?, ?, ?)"
)


class EventsProjection(Projection):
    name = "events"
    version = 1
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
        yield (
            INSERT,
            (
                envelope.position,
                str(envelope.stream),
                envelope.version,
                type(envelope.event).__name__,
                iso(envelope.event.timestamp),
                envelope.state.decode("utf-8"),
            ),
        )
