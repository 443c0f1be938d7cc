"""`latest`, `quarantine`, `baselines`: what each (benchmark, agent) may publish.

Every run is a candidate row, and so is every record of work a source stated but did
not run or finish that the ElizaOS orchestrator publishes too: its `incompatible`,
missing-env `failed` and `paused` rows (the runner's own `incompatible_agent` skips
count as incompatible rows; a `skipped` row is never a candidate). After any event
that can change a candidate, its (benchmark, agent) key is marked pending and,
before the transaction commits, every pending benchmark is re-selected in SQL
(`latest_select`): the newest acceptable real run becomes `latest_per_agent`, the
newest unacceptable one `quarantine` (with its reason), the newest calibration
candidate `baselines`; `latest` is `latest_per_agent` with the newest complete cohort
published for the required agents of a benchmark whose rows would otherwise mix
comparison signatures. A newer failed or quarantined attempt therefore never
displaces a good latest row.

`required_agents` holds each benchmark's rules: declared (`RequiredAgentsDeclared`, by
the registry or an imported matrix contract) or derived from incompatible records.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from benchledger.domain.benchmark import RequiredAgentsDeclared
from benchledger.domain.publication import is_synthetic, label_marker
from benchledger.domain.run import (
    RunFactsAdded,
    RunFinished,
    RunImported,
    RunInvalidated,
    RunReinstated,
    RunStarted,
    RunSuperseded,
    ScoreCorrected,
    StaleRunRecovered,
)
from benchledger.domain.run_group import BenchmarkSkipped
from benchledger.domain.signatures import comparison_signature
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
from benchledger.projections.latest_select import GENERATED, SETTLE, config_flagged
from benchledger.projections.runs import fact_columns

# Read first to last: who ran what and how it did; ids, hashes and JSON last.
ROW: dict[str, type] = {
    "benchmark": str,
    "agent": str,
    "provider": str,
    "model": str,
    "status": str,
    "score": float,
    "unit": str,
    "higher_is_better": int,
    "started_at": str,
    "ended_at": str,
    "updated_at": str,
    "error": str,
    "run_id": str,
    "run_group_id": str,
    "source_path": str,
    "run_dir": str,
    "position": int,
    "signature": str,
    "comparison_signature": str,
    "config": str,
    "metrics": str,
    "tokens": str,
    "artifacts": str,
}

CANDIDATE = {
    **{k: v for k, v in ROW.items() if k != "updated_at"},
    "recorded_at": str,
    "invalidated": int,
    # Superseded by a new version of the run (`import --amend`): that version competes.
    "superseded": int,
    "synthetic": int,
    # Why the run's labels say it is no real result: its agent's (`non_real_agent_label`),
    # a placeholder benchmark or model (`placeholder_identity:model`), a mock model.
    "label_marker": str,
    # `run`, or `skip` for a source's record of work it did not run (never a run).
    "kind": str,
    "run_key": str,
    # A skip whose reason no longer applies (see latest_select).
    "stale": int,
    "compat_reason": str,
    "supported": str,
    # The format a run was imported from (`orchestrator`, ...): a benchmark with runs of the
    # orchestrator and no rule of its own requires the orchestrator's default harnesses.
    "source_format": str,
}
RULES = {
    "benchmark": str,
    "required": str,
    "compatible": str,
    "unsupported": str,
    "required_env": str,
    "source": str,
    "declared": int,
    "position": int,
}
PENDING = (
    "INSERT OR IGNORE INTO [{latest_pending}] (benchmark, agent) "
    "SELECT benchmark, agent FROM [{candidates}] WHERE run_id = ?"
)
# A run imported whole (`RunImported`): `START` with how it ended (`FINISH`), and its
# benchmark and agent marked pending (`PENDING`) from what the event states.
IMPORTED = (
    "INSERT INTO [{candidates}] (run_id, benchmark, agent, provider, model, run_group_id, "
    "signature, comparison_signature, status, started_at, recorded_at, config, source_path, "
    "run_dir, invalidated, superseded, synthetic, label_marker, position, kind, run_key, "
    "source_format, stale, score, unit, higher_is_better, ended_at, metrics, tokens, artifacts, "
    "error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?, ?, 'run', ?, ?, 0, "
    "?, ?, ?, ?, ?, ?, ?, ?)"
)
PENDING_KEY = "INSERT OR IGNORE INTO [{latest_pending}] (benchmark, agent) VALUES (?, ?)"
PENDING_BENCHMARK = (
    "INSERT OR IGNORE INTO [{latest_pending}] (benchmark, agent) "
    "SELECT DISTINCT benchmark, agent FROM [{candidates}] WHERE benchmark = ?"
)
START = (
    "INSERT INTO [{candidates}] (run_id, benchmark, agent, provider, model, run_group_id, "
    "signature, comparison_signature, status, started_at, recorded_at, config, source_path, "
    "run_dir, invalidated, superseded, synthetic, label_marker, position, kind, run_key, "
    "source_format, stale) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, 0, 0, ?, ?, ?, 'run', ?, ?, 0)"
)
SKIP = (
    "INSERT OR IGNORE INTO [{candidates}] (run_id, benchmark, agent, provider, model, "
    "run_group_id, signature, comparison_signature, status, started_at, ended_at, "
    "recorded_at, config, metrics, artifacts, error, invalidated, superseded, synthetic, "
    "label_marker, position, kind, run_key, stale, compat_reason, supported) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '[]', ?, 0, 0, ?, ?, ?, 'skip', ?, 0, ?, ?)"
)
FINISH = (
    "UPDATE [{candidates}] SET status = ?, score = ?, unit = ?, higher_is_better = ?, "
    "ended_at = ?, metrics = ?, tokens = ?, artifacts = ?, error = ?, "
    "position = ? WHERE run_id = ?"
)
SET = "UPDATE [{candidates}] SET {column} = ?, position = ? WHERE run_id = ?"
DECLARE = (
    "INSERT INTO [{required_agents}] "
    "(benchmark, required, compatible, unsupported, required_env, source, declared, position) "
    "VALUES (?, ?, ?, ?, ?, ?, 1, ?) ON CONFLICT (benchmark) DO UPDATE SET "
    "required = excluded.required, compatible = excluded.compatible, "
    "unsupported = excluded.unsupported, required_env = excluded.required_env, "
    "source = excluded.source, declared = 1, "
    "position = excluded.position"
)
# What the runner and the orchestrator importer record for an incompatible agent.
INCOMPATIBLE_REASONS = frozenset({"incompatible", "incompatible_agent"})
# The statuses of a source's rows its importer records as skips but the orchestrator
# still publishes (quarantined, or a calibration harness's baseline): all but `skipped`.
PUBLISHED_SKIP_STATUSES = frozenset({"incompatible", "failed", "paused", "paused_unknown"})


CANDIDATE_COLUMNS = frozenset(CANDIDATE)


def _set(column: str) -> str:
    return SET.replace("{column}", column)


def _ended(envelope: Envelope, event: RunFinished | RunImported) -> tuple[Any, ...]:
    """How a run ended, as `FINISH` sets it after its status (and `IMPORTED` inserts)."""
    return (
        event.score,
        event.unit,
        int(event.higher_is_better),
        iso(event.ended_at),
        envelope.json("metrics"),
        envelope.json("tokens"),
        envelope.json("artifacts"),
        event.error,
    )


def published_status(event: BenchmarkSkipped) -> str | None:
    """The status a skip is a candidate with, or None when it is no candidate.

    An imported row keeps the status its source stated: the orchestrator's
    `incompatible` rows (its E1 missing-env rows of that status too), its E2 missing-env
    rows (`failed`) and its paused rows are candidates, a `skipped` row is not. The
    runner's own `incompatible_agent` skips are incompatible rows."""
    stated = event.provenance.get("status")
    if isinstance(stated, str) and stated:
        return stated if stated in PUBLISHED_SKIP_STATUSES else None
    return "incompatible" if event.reason in INCOMPATIBLE_REASONS else None


def _stated_time(value: Any) -> str | None:
    """A time the source stated as text (naive is UTC), as candidates hold times."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return iso(datetime.fromisoformat(value))
    except ValueError:
        return None


def _skip_row(envelope: Envelope, event: BenchmarkSkipped, status: str) -> tuple[Any, ...]:
    provenance = event.provenance
    metrics = provenance.get("metrics") if isinstance(provenance.get("metrics"), dict) else None
    if metrics is None and event.supported_agents is not None:
        # The runner's own incompatible-agent skip, stated as the orchestrator states its
        # incompatible rows (whose staleness rule reads this reason).
        metrics = {
            "reason": "harness_not_in_compatibility",
            "harness": event.agent,
            "supported_harnesses": list(event.supported_agents),
        }
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
    # An imported row's config is in its provenance; the runner's skip states its own.
    config = provenance.get("extra_config", event.config)
    directory = provenance.get("benchmark_directory")
    compared = event.comparison_signature or (
        comparison_signature(
            event.benchmark,
            event.provider,
            event.model,
            config,
            directory=directory if isinstance(directory, str) else None,
            agent=event.agent,
        )
        if isinstance(config, dict)
        else None
    )
    return (
        run_id,
        event.benchmark,
        event.agent,
        event.provider,
        event.model,
        str(event.source_group or envelope.stream),
        event.signature,
        compared,
        status,
        iso(event.skipped_at or event.timestamp),
        _stated_time(provenance.get("ended_at")),
        iso(event.timestamp),
        to_json(config if isinstance(config, dict) else {}),
        to_json(metrics or {}),
        event.detail,
        int(is_synthetic(event.agent)),
        label_marker(event.agent, event.benchmark, event.provider, event.model),
        envelope.position,
        source_id if isinstance(source_id, str) else None,
        reason,
        to_json(supported) if listed else None,
    )


# A published (or quarantined) pick: one per benchmark and agent, naming its run.
PICK: dict[str, Any] = {
    "pk": ("benchmark", "agent"),
    "foreign_keys": (
        ForeignKey("run_id", "runs", "run_id"),
        ForeignKey("run_group_id", "run_groups", "run_group_id"),
    ),
}


def _beside_status(row: dict[str, type], column: str) -> dict[str, type]:
    """`row` with a text `column` right after its status: why the pick is what it is."""
    at = list(row).index("status") + 1
    items = list(row.items())
    return dict([*items[:at], (column, str), *items[at:]])


class LatestProjection(Projection):
    name = "latest"
    version = versions.version(name)
    tables = (
        Table(
            "candidates",
            CANDIDATE,
            pk=("run_id",),
            # The facets of its page (status, benchmark, agent): one index led by each, then
            # the page's key (its rows in order, and a next page's `run_id > ?`, which
            # Datasette adds to its facets' counts), then the other facets, so that a page
            # filtered by one facet counts the others from the index alone.
            indexes=(
                ("benchmark", "agent", "run_id", "status"),
                ("run_key",),
                ("status", "run_id", "benchmark", "agent"),
                ("agent", "run_id", "benchmark", "status"),
            ),
            lookups=(("benchmark", "agent", "run_id", "status"),),  # PENDING_BENCHMARK
            generated=GENERATED,
        ),
        Table("latest", _beside_status(ROW, "selection"), **PICK),
        Table("latest_per_agent", ROW, **PICK),
        Table("quarantine", _beside_status(ROW, "quarantine_reason"), **PICK),
        Table("baselines", ROW, **PICK),
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
        RunImported,
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

    def fold_page(self, envelopes: Iterable[Envelope]) -> Iterable[Change]:
        """The page's changes, the keys of its runs imported whole marked pending last, as
        one batch: `latest_pending` is a set (every write to it an INSERT OR IGNORE) that
        only the settle reads, so the marks commute with every other change, and the
        runs' rows are inserted in batches rather than one statement each."""
        marks: dict[tuple[str, str], None] = {}
        for envelope in envelopes:
            for sql, params in self.fold(envelope):
                if sql == PENDING_KEY and isinstance(params, tuple):
                    marks[params] = None
                else:
                    yield sql, params
        if marks:
            yield PENDING_KEY, list(marks)

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        event = envelope.event
        run_id = envelope.stream_id
        pos = envelope.position
        if isinstance(event, RunStarted):
            who = (run_id, event.benchmark, event.agent, event.provider, event.model)
            what = (uid(event.run_group_id), event.signature, event.comparison_signature)
            where = (
                envelope.recorded_at,
                envelope.json("config"),
                event.source_path,
                event.run_dir,
                int(is_synthetic(event.agent)),
                label_marker(event.agent, event.benchmark, event.provider, event.model),
                pos,
                event.run_key,
                event.source_format,
            )
            started = iso(event.started_at)
            if isinstance(event, RunImported):
                ended = _ended(envelope, event)
                yield IMPORTED, (*who, *what, event.status.value, started, *where, *ended)
                yield PENDING_KEY, (event.benchmark, event.agent)
            else:
                yield START, (*who, *what, started, *where)
            return
        if isinstance(event, BenchmarkSkipped):
            status = published_status(event)
            if status is not None:
                yield SKIP, _skip_row(envelope, event, status)
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
                    to_json({a: list(names) for a, names in event.required_env.items()}),
                    event.source,
                    pos,
                ),
            )
            yield PENDING_BENCHMARK, (event.benchmark,)
            return
        if isinstance(event, RunFinished):
            yield FINISH, (event.status.value, *_ended(envelope, event), pos, run_id)
        elif isinstance(event, RunSuperseded):
            yield _set("superseded"), (1, pos, run_id)
        elif isinstance(event, RunInvalidated | RunReinstated):
            valid = isinstance(event, RunReinstated)
            yield _set("invalidated"), (int(not valid), pos, run_id)
        elif isinstance(event, ScoreCorrected):
            yield _set("score"), (event.new_score, pos, run_id)
        elif isinstance(event, StaleRunRecovered):
            yield _set("status"), ("recovered", pos, run_id)
        elif isinstance(event, RunFactsAdded):
            sets, params = fact_columns(event, CANDIDATE_COLUMNS)
            flag = result_flag(event.facts)
            if event.identity is not None:
                # A filled placeholder renames the run: the (benchmark, agent) it leaves is
                # re-selected too, and its labels are read again (a model no longer
                # `unknown` is no `placeholder_identity:model`); a result flag stays.
                yield PENDING, (run_id,)
                name = event.identity
                marker = label_marker(
                    name["agent"], name["benchmark"], name["provider"], name["model"]
                )
                sets.append(RELABEL)
                params += [marker, flag]
                sets.append("synthetic = ?")
                params.append(int(is_synthetic(name["agent"])))
            elif flag is not None:
                sets.append("label_marker = coalesce(label_marker, ?)")
                params.append(flag)
            sets.append("position = ?")
            params += [pos, run_id]
            yield f"UPDATE [{{candidates}}] SET {', '.join(sets)} WHERE run_id = ?", tuple(params)
        else:
            return
        yield PENDING, (run_id,)

    def settle(self) -> Iterable[Change]:
        for statement in SETTLE:
            yield statement, ()


def result_flag(facts: dict[str, Any]) -> str | None:
    """`truthy_non_real_flag` when an executed run's own result file flags it as not real
    (`mock: true`, say) while the run's config, which keeps the request's values for the
    signature, says otherwise: the file's config is then kept under provenance
    `result_config` (`facts.result_additions`), and the run is quarantined as importing
    that file would quarantine it."""
    provenance = facts.get("provenance")
    stated = provenance.get("result_config") if isinstance(provenance, dict) else None
    return RESULT_FLAG if config_flagged(stated) else None


RESULT_FLAG = "truthy_non_real_flag"
# A renamed run's marker: its labels' (given), else a flag its result states (given, or
# one recorded before), which the labels do not change.
RELABEL = (
    f"label_marker = coalesce(?, ?, CASE WHEN label_marker = '{RESULT_FLAG}' THEN label_marker END)"
)
