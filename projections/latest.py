"""`latest`, `quarantine`, `baselines`: what each (benchmark, agent) may publish.

Every run is a candidate row, and so is every record of an agent a benchmark is not
compatible with (the orchestrator's `incompatible` rows, the runner's
`incompatible_agent` skips). After any event that can change a candidate, its
(benchmark, agent) key is marked pending and, before the transaction commits, every
pending benchmark is re-selected in SQL (`latest_select`): the newest acceptable real
run becomes `latest_per_agent`, the newest unacceptable one `quarantine` (with its
reason), the newest acceptable calibration run `baselines`; `latest` is
`latest_per_agent` with the newest complete cohort published for the required agents
of a benchmark whose rows would otherwise mix comparison signatures. A newer failed or
quarantined attempt therefore never displaces a good latest row.

`required_agents` holds each benchmark's rules: declared (`RequiredAgentsDeclared`, by
the registry or an imported matrix contract) or derived from incompatible records.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from benchledger.domain.benchmark import RequiredAgentsDeclared
from benchledger.domain.publication import agent_marker, is_synthetic, non_real_marker
from benchledger.domain.run import (
    RunFactsAdded,
    RunFinished,
    RunInvalidated,
    RunReinstated,
    RunStarted,
    RunSuperseded,
    ScoreCorrected,
    StaleRunRecovered,
)
from benchledger.domain.run_group import BenchmarkSkipped
from benchledger.projections import versions
from benchledger.projections.base import (
    Change,
    Envelope,
    Projection,
    Table,
    iso,
    to_json,
    topics_of,
    uid,
)
from benchledger.projections.latest_select import SETTLE
from benchledger.projections.runs import fact_columns

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
    # `run`, or `skip` for a record of an incompatible agent (never a run).
    "kind": str,
    "run_key": str,
    # A skip whose reason no longer applies (see latest_select).
    "stale": int,
    "compat_reason": str,
    "supported": str,
}
RULES = {
    "benchmark": str,
    "required": str,
    "compatible": str,
    "unsupported": str,
    "source": str,
    "declared": int,
    "position": int,
}
PENDING = (
    "INSERT OR IGNORE INTO [{latest_pending}] (benchmark, agent) "
    "SELECT benchmark, agent FROM [{candidates}] WHERE run_id = ?"
)
PENDING_BENCHMARK = (
    "INSERT OR IGNORE INTO [{latest_pending}] (benchmark, agent) "
    "SELECT DISTINCT benchmark, agent FROM [{candidates}] WHERE benchmark = ?"
)
START = (
    "INSERT INTO [{candidates}] (run_id, benchmark, agent, provider, model, run_group_id, "
    "signature, comparison_signature, status, started_at, recorded_at, config, source_path, "
    "run_dir, invalidated, synthetic, config_marker, position, kind, run_key, stale) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, 0, ?, ?, ?, 'run', ?, 0)"
)
SKIP = (
    "INSERT OR IGNORE INTO [{candidates}] (run_id, benchmark, agent, provider, model, "
    "run_group_id, signature, status, started_at, recorded_at, config, metrics, artifacts, "
    "error, invalidated, synthetic, position, kind, run_key, stale, compat_reason, supported) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, 'incompatible', ?, ?, ?, ?, '[]', ?, 0, 0, ?, 'skip', ?, 0, "
    "?, ?)"
)
FINISH = (
    "UPDATE [{candidates}] SET status = ?, score = ?, unit = ?, higher_is_better = ?, "
    "ended_at = ?, metrics = ?, tokens = ?, artifacts = ?, error = ?, result_marker = ?, "
    "position = ? WHERE run_id = ?"
)
SET = "UPDATE [{candidates}] SET {column} = ?, position = ? WHERE run_id = ?"
DECLARE = (
    "INSERT INTO [{required_agents}] "
    "(benchmark, required, compatible, unsupported, source, declared, position) "
    "VALUES (?, ?, ?, ?, ?, 1, ?) ON CONFLICT (benchmark) DO UPDATE SET "
    "required = excluded.required, compatible = excluded.compatible, "
    "unsupported = excluded.unsupported, source = excluded.source, declared = 1, "
    "position = excluded.position"
)
# What the runner and the orchestrator importer record for an incompatible agent.
INCOMPATIBLE_REASONS = frozenset({"incompatible", "incompatible_agent"})


CANDIDATE_COLUMNS = frozenset(CANDIDATE)


def _set(column: str) -> str:
    return SET.replace("{column}", column)


def incompatible_record(event: BenchmarkSkipped) -> bool:
    """Whether a skip records an agent the benchmark is not compatible with: the
    orchestrator's `incompatible` rows (its missing-env rows of that status included)
    and the runner's `incompatible_agent` skips."""
    if is_synthetic(event.agent):
        return False
    stated = event.provenance.get("status")
    if isinstance(stated, str) and stated:
        return stated == "incompatible"
    return event.reason in INCOMPATIBLE_REASONS


def _skip_row(envelope: Envelope, event: BenchmarkSkipped) -> tuple[Any, ...]:
    provenance = event.provenance
    metrics = provenance.get("metrics") if isinstance(provenance.get("metrics"), dict) else None
    source_id = provenance.get("run_id")
    run_id = (
        source_id
        if isinstance(source_id, str) and source_id
        else f"skip:{envelope.stream}:{envelope.version}"
    )
    if metrics is None:  # the runner's own skip: its reason is the compatibility rule
        reason: Any = event.reason
    else:
        reason = metrics.get("reason") if isinstance(metrics.get("reason"), str) else None
    supported = metrics.get("supported_harnesses") if metrics is not None else None
    listed = isinstance(supported, list) and all(isinstance(a, str) for a in supported)
    return (
        run_id,
        event.benchmark,
        event.agent,
        event.provider,
        event.model,
        str(envelope.stream),
        event.signature,
        iso(event.skipped_at or event.timestamp),
        iso(event.timestamp),
        to_json({}),
        to_json(metrics or {}),
        event.detail,
        envelope.position,
        source_id if isinstance(source_id, str) else None,
        reason,
        to_json(supported) if listed else None,
    )


class LatestProjection(Projection):
    name = "latest"
    version = versions.version(name)
    tables = (
        Table(
            "candidates",
            CANDIDATE,
            pk=("run_id",),
            indexes=(("benchmark", "agent"), ("run_key",)),
        ),
        Table("latest", {**ROW, "selection": str}, pk=("benchmark", "agent")),
        Table("latest_per_agent", ROW, pk=("benchmark", "agent")),
        Table("quarantine", {**ROW, "quarantine_reason": str}, pk=("benchmark", "agent")),
        Table("baselines", ROW, pk=("benchmark", "agent")),
        Table("required_agents", RULES, pk=("benchmark",)),
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
        RunFactsAdded,
        RunInvalidated,
        RunReinstated,
        RunSuperseded,
        ScoreCorrected,
        StaleRunRecovered,
        BenchmarkSkipped,
        RequiredAgentsDeclared,
    )

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        event = envelope.event
        run_id = str(envelope.stream)
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
                    iso(event.timestamp),
                    to_json(event.config),
                    event.source_path,
                    event.run_dir,
                    int(is_synthetic(event.agent)),
                    agent_marker(event.agent) or non_real_marker(event.config),
                    pos,
                    event.run_key,
                ),
            )
            return
        if isinstance(event, BenchmarkSkipped):
            if incompatible_record(event):
                yield SKIP, _skip_row(envelope, event)
                yield PENDING_BENCHMARK, (event.benchmark,)
            return
        if isinstance(event, RequiredAgentsDeclared):
            yield (
                DECLARE,
                (
                    event.benchmark,
                    to_json(list(event.required)),
                    to_json(None if event.compatible is None else list(event.compatible)),
                    to_json(event.unsupported),
                    event.source,
                    pos,
                ),
            )
            yield PENDING_BENCHMARK, (event.benchmark,)
            return
        if isinstance(event, RunFinished):
            marker = non_real_marker({"metrics": event.metrics, "error": event.error})
            yield (
                FINISH,
                (
                    event.status.value,
                    event.score,
                    event.unit,
                    int(event.higher_is_better),
                    iso(event.ended_at),
                    to_json(event.metrics),
                    to_json(event.tokens),
                    to_json(event.artifacts),
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
        elif isinstance(event, RunFactsAdded):
            sets, params = fact_columns(event, CANDIDATE_COLUMNS)
            added = event.facts
            marker = non_real_marker(added["config"]) if "config" in added else None
            if marker is not None:
                sets.append("config_marker = coalesce(config_marker, ?)")
                params.append(marker)
            found = non_real_marker({k: added[k] for k in ("metrics", "error") if k in added})
            if found is not None:
                sets.append("result_marker = coalesce(result_marker, ?)")
                params.append(found)
            sets.append("position = ?")
            params += [pos, run_id]
            yield f"UPDATE [{{candidates}}] SET {', '.join(sets)} WHERE run_id = ?", tuple(params)
        else:
            return
        yield PENDING, (run_id,)

    def settle(self) -> Iterable[Change]:
        for statement in SETTLE:
            yield statement, ()
