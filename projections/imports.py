"""`imports`: every result file whose content was imported."""

from __future__ import annotations

from collections.abc import Iterable

from benchledger.domain.result_import import ResultFileImported
from benchledger.projections import versions
from benchledger.projections.base import (
    Change,
    Envelope,
    ForeignKey,
    Projection,
    Table,
    iso,
    topics_of,
    uid,
)

INSERT = (
    "INSERT INTO [{imports}] (sha256, path, format, size, runs, run_group_id, imported_at, "
    "position) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


class ImportsProjection(Projection):
    name = "imports"
    version = versions.version(name)
    tables = (
        Table(
            "imports",
            {
                "sha256": str,
                "path": str,
                "format": str,
                "size": int,
                "runs": int,
                "run_group_id": str,
                "imported_at": str,
                "position": int,
            },
            pk=("sha256",),
            foreign_keys=(ForeignKey("run_group_id", "run_groups", "run_group_id"),),
        ),
    )

    topics = topics_of(ResultFileImported)

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        event = envelope.event
        if isinstance(event, ResultFileImported):
            yield (
                INSERT,
                (
                    event.sha256,
                    event.path,
                    event.format,
                    event.size,
                    len(event.run_ids),
                    uid(event.run_group_id),
                    iso(event.timestamp),
                    envelope.position,
                ),
            )
