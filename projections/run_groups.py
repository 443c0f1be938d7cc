"""`run_groups`: one row per CLI invocation that ran or imported runs."""

from __future__ import annotations

from collections.abc import Iterable

from domain.run import RunStarted
from domain.run_group import RunGroupClosed, RunGroupOpened
from projections.base import Change, Envelope, Projection, Table, iso, to_json

INSERT = (
    "INSERT INTO [{run_groups}] (run_group_id, label, kind, opened_at, closed_at, runs, "
    "request, selection, repo_meta, summary) VALUES (?, ?, ?, ?, NULL, 0, ?, ?, ?, NULL)"
)
CLOSE = "UPDATE [{run_groups}] SET closed_at = ?, summary = ? WHERE run_group_id = ?"
COUNT_RUN = "UPDATE [{run_groups}] SET runs = runs + 1 WHERE run_group_id = ?"


class RunGroupsProjection(Projection):
    name = "run_groups"
    version = 1
    tables = (
        Table(
            "run_groups",
            {
                "run_group_id": str,
                "label": str,
                "kind": str,
                "opened_at": str,
                "closed_at": str,
                "runs": int,
                "request": str,
                "selection": str,
                "repo_meta": str,
                "summary": str,
            },
            pk=("run_group_id",),
        ),
    )

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        event = envelope.event
        if isinstance(event, RunGroupOpened):
            yield (
                INSERT,
                (
                    str(envelope.stream),
                    event.label,
                    event.kind,
                    iso(event.timestamp),
                    to_json(event.request),
                    to_json(event.selection),
                    to_json(event.repo_meta),
                ),
            )
        elif isinstance(event, RunGroupClosed):
            yield CLOSE, (iso(event.timestamp), to_json(event.summary), str(envelope.stream))
        elif isinstance(event, RunStarted) and event.run_group_id is not None:
            yield COUNT_RUN, (str(event.run_group_id),)
