"""`latest`, `quarantine`, `baselines`: what each (benchmark, agent) may publish.

Every run is a candidate row. After any event that can change a candidate's
acceptability, its (benchmark, agent) key is re-selected in SQL: the newest
acceptable real run becomes `latest`, the newest unacceptable one `quarantine`
(with its reason), the newest acceptable calibration run `baselines`. A newer
failed or quarantined attempt therefore never displaces a good latest row.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from benchledger.domain.publication import (
    agent_marker,
    is_synthetic,
    may_hold_marker,
    non_real_marker,
)
from benchledger.domain.run import (
    RunFinished,
    RunInvalidated,
    RunReinstated,
    RunStarted,
    RunSuperseded,
    ScoreCorrected,
    StaleRunRecovered,
)
from benchledger.projections import versions
from benchledger.projections.base import (
    Change,
    Envelope,
    Projection,
    Table,
    iso,
    topics_of,
    uid,
)

ROW: dict[str, type] = {
    "benchmark": str,
    "agent": str,
    "provider": str,
    "model": str,
    "run_id": str,
    "run_group_id": str,
    "signature": str,
    "comparison_signature": str,
    "status": str,
    "score": float,
    "unit": str,
    "higher_is_better": int,
    "started_at": str,
    "ended_at": str,
    "updated_at": str,
    "config": str,
    "metrics": str,
    "tokens": str,
    "artifacts": str,
    "error": str,
    "source_path": str,
    "run_dir": str,
    "position": int,
}
CANDIDATE = {
    **{k: v for k, v in ROW.items() if k != "updated_at"},
    "recorded_at": str,
    "invalidated": int,
    "synthetic": int,
    "config_marker": str,
    "result_marker": str,
}
COLUMNS = ", ".join(ROW)
REASON = (
    "CASE WHEN status IN ('running') THEN 'running' "
    "WHEN invalidated = 1 THEN 'invalidated_run' "
    "WHEN status = 'recovered' THEN 'interrupted_run' "
    "WHEN status != 'succeeded' THEN 'unsucceeded_run' "
    "WHEN score IS NULL THEN 'missing_score' "
    "WHEN config_marker IS NOT NULL THEN config_marker "
    "WHEN result_marker IS NOT NULL THEN result_marker END"
)
SELECT = (
    "SELECT benchmark, agent, provider, model, run_id, run_group_id, signature, "
    "comparison_signature, status, score, unit, higher_is_better, started_at, ended_at, "
    "coalesce(ended_at, started_at, recorded_at), config, metrics, tokens, artifacts, error, "
    "source_path, run_dir, position"
)
# A (benchmark, agent) whose candidates changed is marked pending; at the end of the
# transaction (`settle`) every pending key is re-selected at once. Re-selecting after
# each event instead made an import quadratic in the runs of one key.
PENDING = (
    "INSERT OR IGNORE INTO [{latest_pending}] (benchmark, agent) "
    "SELECT benchmark, agent FROM [{candidates}] WHERE run_id = ?"
)
PENDING_KEYS = "(benchmark, agent) IN (SELECT benchmark, agent FROM [{latest_pending}])"


def _newest(where: str) -> str:
    """The newest candidate of each pending key among those `where` holds for."""
    return (
        "(SELECT *, row_number() OVER (PARTITION BY benchmark, agent "
        "ORDER BY coalesce(started_at, recorded_at) DESC, run_id DESC) AS newest "
        f"FROM [{{candidates}}] WHERE {PENDING_KEYS} AND {where}) WHERE newest = 1 "
        "ORDER BY benchmark, agent"
    )


SETTLE = [
    f"DELETE FROM [{{latest}}] WHERE {PENDING_KEYS}",
    f"INSERT INTO [{{latest}}] ({COLUMNS}) {SELECT} FROM "
    + _newest(f"synthetic = 0 AND ({REASON}) IS NULL"),
    f"DELETE FROM [{{quarantine}}] WHERE {PENDING_KEYS}",
    f"INSERT INTO [{{quarantine}}] ({COLUMNS}, quarantine_reason) {SELECT}, ({REASON}) FROM "
    + _newest(f"synthetic = 0 AND coalesce(({REASON}), 'running') != 'running'"),
    f"DELETE FROM [{{baselines}}] WHERE {PENDING_KEYS}",
    f"INSERT INTO [{{baselines}}] ({COLUMNS}) {SELECT} FROM "
    + _newest(f"synthetic = 1 AND ({REASON}) IS NULL"),
    "DELETE FROM [{latest_pending}]",
]
START = (
    "INSERT INTO [{candidates}] (run_id, benchmark, agent, provider, model, run_group_id, "
    "signature, comparison_signature, status, started_at, recorded_at, config, source_path, "
    "run_dir, invalidated, synthetic, config_marker, position) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, 0, ?, ?, ?)"
)
FINISH = (
    "UPDATE [{candidates}] SET status = ?, score = ?, unit = ?, higher_is_better = ?, "
    "ended_at = ?, metrics = ?, tokens = ?, artifacts = ?, error = ?, result_marker = ?, "
    "position = ? WHERE run_id = ?"
)
SET = "UPDATE [{candidates}] SET {column} = ?, position = ? WHERE run_id = ?"


def _set(column: str) -> str:
    return SET.replace("{column}", column)


def _marker(payload: Any, *texts: str | None) -> str | None:
    """`non_real_marker(payload)`, walked only when its text (`texts`) may hold one."""
    return non_real_marker(payload) if may_hold_marker(*texts) else None


class LatestProjection(Projection):
    name = "latest"
    version = versions.version(name)
    tables = (
        Table("candidates", CANDIDATE, pk=("run_id",), indexes=(("benchmark", "agent"),)),
        Table("latest", ROW, pk=("benchmark", "agent")),
        Table("quarantine", {**ROW, "quarantine_reason": str}, pk=("benchmark", "agent")),
        Table("baselines", ROW, pk=("benchmark", "agent")),
        # Empty between transactions: the keys to re-select before one commits.
        Table(
            "latest_pending",
            {"benchmark": str, "agent": str},
            pk=("benchmark", "agent"),
            internal=True,
        ),
    )

    topics = topics_of(
        RunStarted,
        RunFinished,
        RunInvalidated,
        RunReinstated,
        RunSuperseded,
        ScoreCorrected,
        StaleRunRecovered,
    )

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        event = envelope.event
        run_id = envelope.stream_id
        pos = envelope.position
        if isinstance(event, RunStarted):
            yield (
                START,
                (
                    run_id,
                    event.benchmark,
                    event.agent,
                    event.provider,
                    event.model,
                    uid(event.run_group_id),
                    event.signature,
                    event.comparison_signature,
                    iso(event.started_at),
                    envelope.recorded_at,
                    envelope.json("config"),
                    event.source_path,
                    event.run_dir,
                    int(is_synthetic(event.agent)),
                    agent_marker(event.agent) or _marker(event.config, envelope.json("config")),
                    pos,
                ),
            )
            return
        if isinstance(event, RunFinished):
            payload = {"metrics": event.metrics, "error": event.error}
            marker = _marker(payload, envelope.json("metrics"), event.error)
            yield (
                FINISH,
                (
                    event.status.value,
                    event.score,
                    event.unit,
                    int(event.higher_is_better),
                    iso(event.ended_at),
                    envelope.json("metrics"),
                    envelope.json("tokens"),
                    envelope.json("artifacts"),
                    event.error,
                    marker,
                    pos,
                    run_id,
                ),
            )
        elif isinstance(event, RunInvalidated | RunReinstated | RunSuperseded):
            valid = isinstance(event, RunReinstated)
            yield _set("invalidated"), (int(not valid), pos, run_id)
        elif isinstance(event, ScoreCorrected):
            yield _set("score"), (event.new_score, pos, run_id)
        elif isinstance(event, StaleRunRecovered):
            yield _set("status"), ("recovered", pos, run_id)
        else:
            return
        yield PENDING, (run_id,)

    def settle(self) -> Iterable[Change]:
        for statement in SETTLE:
            yield statement, ()
