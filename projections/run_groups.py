"""`run_groups`: one row per CLI invocation that ran or imported runs."""

from __future__ import annotations

from collections.abc import Iterable

from benchledger.domain.run import RunImported, RunStarted
from benchledger.domain.run_group import (
    BenchmarkSkipped,
    LaunchRefused,
    RunGroupClosed,
    RunGroupOpened,
)
from benchledger.projections import versions
from benchledger.projections.base import (
    Change,
    Envelope,
    ForeignKey,
    Projection,
    Table,
    iso,
    to_json,
    topics_of,
    uid,
)

INSERT = (
    "INSERT INTO [{run_groups}] (run_group_id, label, kind, opened_at, closed_at, runs, "
    "request, selection, repo_meta, summary, interrupted, status, source, recorded_at) "
    "VALUES (?, ?, ?, ?, NULL, 0, ?, ?, ?, NULL, 0, ?, ?, ?)"
)
CLOSE = (
    "UPDATE [{run_groups}] SET closed_at = ?, summary = ?, interrupted = ?, close_detail = ?, "
    "status = coalesce(?, status) WHERE run_group_id = ?"
)
COUNT_RUN = "UPDATE [{run_groups}] SET runs = runs + 1 WHERE run_group_id = ?"
NOT_RUN = (
    "INSERT INTO [{skips}] (position, run_group_id, outcome, benchmark, agent, provider, "
    "model, signature, reason, defer_to, missing_env, detail, time, attempt, provenance, "
    "recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class RunGroupsProjection(Projection):
    name = "run_groups"
    version = versions.version(name)
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
                "interrupted": int,
                "close_detail": str,
                # A source's group (kind `source`): its final status and what else it states.
                "status": str,
                "source": str,
                "recorded_at": str,
            },
            pk=("run_group_id",),
        ),
        Table(
            "skips",
            {
                "position": int,
                "run_group_id": str,
                "outcome": str,
                "benchmark": str,
                "agent": str,
                "provider": str,
                "model": str,
                "signature": str,
                "reason": str,
                "defer_to": str,
                "missing_env": str,
                "detail": str,
                "time": str,
                "attempt": int,
                "provenance": str,
                "recorded_at": str,
            },
            pk=("position",),
            indexes=(("run_group_id",), ("signature",)),
            foreign_keys=(
                ForeignKey("run_group_id", "run_groups", "run_group_id"),
                ForeignKey("defer_to", "runs", "run_id"),
            ),
        ),
    )

    topics = topics_of(
        RunGroupOpened, RunGroupClosed, RunStarted, RunImported, BenchmarkSkipped, LaunchRefused
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
                    iso(event.opened_at or event.timestamp),
                    to_json(event.request),
                    to_json(event.selection),
                    to_json(event.repo_meta),
                    event.source.get("status"),
                    to_json(event.source) if event.source else None,
                    iso(event.timestamp),
                ),
            )
        elif isinstance(event, RunGroupClosed):
            yield (
                CLOSE,
                (
                    iso(event.closed_at or event.timestamp),
                    to_json(event.summary),
                    int(event.interrupted),
                    event.detail,
                    event.status,
                    str(envelope.stream),
                ),
            )
        elif isinstance(event, BenchmarkSkipped | LaunchRefused):
            if isinstance(event, LaunchRefused):
                outcome, defer_to, missing_env = "launch_refused", None, to_json(event.missing_env)
                decided, attempt, provenance = event.timestamp, None, None
            else:
                outcome, defer_to, missing_env = "skipped", uid(event.defer_to), None
                decided, attempt = event.skipped_at or event.timestamp, event.attempt
                provenance = to_json(event.provenance) if event.provenance else None
            yield (
                NOT_RUN,
                (
                    envelope.position,
                    str(envelope.stream),
                    outcome,
                    event.benchmark,
                    event.agent,
                    event.provider,
                    event.model,
                    event.signature,
                    event.reason,
                    defer_to,
                    missing_env,
                    event.detail,
                    iso(decided),
                    attempt,
                    provenance,
                    iso(event.timestamp),
                ),
            )
        elif isinstance(event, RunStarted) and event.run_group_id is not None:
            yield COUNT_RUN, (str(event.run_group_id),)
