"""`turns`: one row per model call of a run's trajectory (tokens, cache, latency)."""

from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter

from benchledger.domain.run import RunImported, TrajectoryRecorded
from benchledger.projections import versions
from benchledger.projections.base import (
    Change,
    Envelope,
    ForeignKey,
    Projection,
    Table,
    topics_of,
)

COLUMNS = (
    "trajectory_file",
    "turn_index",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "cached_tokens",
    "cache_creation_tokens",
    "latency_ms",
    "prompt_chars",
)
INSERT = (
    f"INSERT INTO [{{turns}}] (run_id, {', '.join(COLUMNS)}) "
    f"VALUES ({', '.join('?' * (len(COLUMNS) + 1))})"
)
# A turn's values in COLUMNS' order, read in one call.
_VALUES = attrgetter(*COLUMNS)


class TrajectoriesProjection(Projection):
    name = "trajectories"
    version = versions.version(name)
    tables = (
        Table(
            "turns",
            {
                "run_id": str,
                "trajectory_file": str,
                "turn_index": int,
                "prompt_tokens": int,
                "completion_tokens": int,
                "total_tokens": int,
                "cached_tokens": int,
                "cache_creation_tokens": int,
                "latency_ms": float,
                "prompt_chars": int,
            },
            indexes=(("run_id", "trajectory_file", "turn_index"),),
            foreign_keys=(ForeignKey("run_id", "runs", "run_id"),),
        ),
    )
    topics = topics_of(TrajectoryRecorded, RunImported)

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        event = envelope.event
        if not isinstance(event, TrajectoryRecorded | RunImported) or not event.turns:
            return
        run_id = envelope.stream_id
        yield INSERT, [(run_id, *_VALUES(t)) for t in event.turns]
