"""`benchmarks` and `high_scores`: what each suite measures and the scores to beat."""

from __future__ import annotations

from collections.abc import Iterable

from benchledger.domain.benchmark import BenchmarkRegistered, HighScoreReferenced
from benchledger.projections import versions
from benchledger.projections.base import Change, Envelope, Projection, Table, iso, topics_of

REGISTER = (
    "INSERT INTO [{benchmarks}] (benchmark, directory, unit, higher_is_better, description, "
    "registered_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (benchmark) DO UPDATE SET "
    "directory = excluded.directory, unit = excluded.unit, "
    "higher_is_better = excluded.higher_is_better, description = excluded.description"
)
REFERENCE = (
    "UPDATE [{benchmarks}] SET high_score_label = ?, high_score_value = ?, "
    "high_score_unit = ?, high_score_source = ?, high_score_as_of = ? WHERE benchmark = ?"
)
HISTORY = (
    "INSERT INTO [{high_scores}] (position, benchmark, label, value, unit, source, as_of, "
    "recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


class BenchmarksProjection(Projection):
    name = "benchmarks"
    version = versions.version(name)
    tables = (
        Table(
            "benchmarks",
            {
                "benchmark": str,
                "directory": str,
                "unit": str,
                "higher_is_better": int,
                "description": str,
                "registered_at": str,
                "high_score_label": str,
                "high_score_value": float,
                "high_score_unit": str,
                "high_score_source": str,
                "high_score_as_of": str,
            },
            pk=("benchmark",),
        ),
        Table(
            "high_scores",
            {
                "position": int,
                "benchmark": str,
                "label": str,
                "value": float,
                "unit": str,
                "source": str,
                "as_of": str,
                "recorded_at": str,
            },
            pk=("position",),
            indexes=(("benchmark",),),
        ),
    )

    topics = topics_of(BenchmarkRegistered, HighScoreReferenced)

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        event = envelope.event
        if isinstance(event, BenchmarkRegistered):
            yield (
                REGISTER,
                (
                    event.benchmark,
                    event.directory,
                    event.unit,
                    int(event.higher_is_better),
                    event.description,
                    iso(event.timestamp),
                ),
            )
        elif isinstance(event, HighScoreReferenced):
            as_of = event.as_of.isoformat() if event.as_of else None
            yield (
                REFERENCE,
                (
                    event.label,
                    event.value,
                    event.unit,
                    event.source,
                    as_of,
                    event.benchmark,
                ),
            )
            yield (
                HISTORY,
                (
                    envelope.position,
                    event.benchmark,
                    event.label,
                    event.value,
                    event.unit,
                    event.source,
                    as_of,
                    iso(event.timestamp),
                ),
            )
