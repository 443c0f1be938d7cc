"""`runs`: one row per run, showing its current truth."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import datetime
from operator import itemgetter
from typing import Any, cast

from benchledger.domain.agent_identity import agent_identity
from benchledger.domain.model_aliases import ModelAliasDeclared
from benchledger.domain.run import (
    CellsRecorded,
    LeaseRenewed,
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
from benchledger.domain.run_rules import stated_attempt, stated_versions
from benchledger.projections import models, versions
from benchledger.projections.base import (
    DESCENDING,
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

# In the order a reader asks for them (Datasette shows them so): what ran and how it did,
# whether it still counts, when; then counts and reasons; ids, hashes and JSON last.
COLUMNS: dict[str, type] = {
    "run_id": str,
    "benchmark": str,
    "agent": str,
    "provider": str,
    "model": str,
    "status": str,
    "score": float,
    "unit": str,
    "invalidated": int,
    # `import --amend` recorded a new version of the run: its id, why and when. A
    # superseded run is not invalidated: it was right about what its source said then.
    "superseded_by": str,
    "started_at": str,
    "ended_at": str,
    # The canonical identities (`projections.models`): the model's id, the agent under
    # test (None where the agent slot names the harness) and the harness that ran it.
    "model_id": str,
    "agent_id": str,
    "harness": str,
    "duration_seconds": float,
    "cells": int,
    "cells_passed": int,
    "cells_failed": int,
    "cells_error": int,
    "cells_skipped": int,
    "error": str,
    "invalidated_reason": str,
    "superseded_reason": str,
    "superseded_at": str,
    "original_score": float,
    "corrections": int,
    "correction_reason": str,
    "run_key": str,
    "attempt": int,
    "account": str,
    "higher_is_better": int,
    "exit_code": int,
    "run_group_id": str,
    "source": str,
    "source_format": str,
    "source_path": str,
    "command": str,
    "cwd": str,
    "host": str,
    # The code that ran (`RunStarted.code_versions`), or what an orchestrator source stated
    # of it (`run_rules.stated_versions`).
    "benchmark_version": str,
    "benchmarks_commit": str,
    "benchmarks_dirty": int,
    "agent_version": str,
    "agent_commit": str,
    "run_dir": str,
    "lease_expires_at": str,
    "last_heard_at": str,
    "recovered_at": str,
    "recovery_policy": str,
    "recorded_at": str,
    "updated_at": str,
    "last_position": int,
    "signature": str,
    "comparison_signature": str,
    "source_sha256": str,
    "config": str,
    "metrics": str,
    "tokens": str,
    "artifacts": str,
    "provenance": str,
    "code_versions": str,
}

INSERT = (
    "INSERT INTO [{runs}] (run_id, run_key, benchmark, agent, provider, model, status, "
    "attempt, started_at, cells, cells_passed, cells_failed, cells_error, cells_skipped, "
    "invalidated, corrections, config, signature, comparison_signature, run_group_id, "
    "source, source_format, source_path, source_sha256, command, cwd, host, run_dir, account, "
    "provenance, lease_expires_at, last_heard_at, recorded_at, updated_at, last_position, "
    "code_versions, benchmark_version, benchmarks_commit, benchmarks_dirty, agent_version, "
    "agent_commit, agent_id, harness, model_id) "
    "VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, 0, 0, 0, 0, 0, 0, 0, ?, ?, ?, ?, ?, ?, ?, ?, "
    f"?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {models.MODEL_ID})"
)
# A run imported whole (`RunImported`): `INSERT` with how it ended (`FINISH`).
IMPORTED = (
    "INSERT INTO [{runs}] (run_id, run_key, benchmark, agent, provider, model, status, "
    "attempt, started_at, cells, cells_passed, cells_failed, cells_error, cells_skipped, "
    "invalidated, corrections, config, signature, comparison_signature, run_group_id, "
    "source, source_format, source_path, source_sha256, command, cwd, host, run_dir, account, "
    "provenance, lease_expires_at, last_heard_at, recorded_at, updated_at, last_position, "
    "code_versions, benchmark_version, benchmarks_commit, benchmarks_dirty, agent_version, "
    "agent_commit, agent_id, harness, model_id, score, unit, higher_is_better, metrics, "
    "tokens, duration_seconds, exit_code, error, ended_at, artifacts) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, 0, 0, 0, 0, ?, ?, ?, ?, ?, ?, ?, ?, "
    f"?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {models.MODEL_ID}, "
    "?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
ADD_CELLS = (
    "UPDATE [{runs}] SET cells = cells + ?, cells_passed = cells_passed + ?, "
    "cells_failed = cells_failed + ?, cells_error = cells_error + ?, "
    "cells_skipped = cells_skipped + ?, updated_at = ?, last_position = ? WHERE run_id = ?"
)
FINISH = (
    "UPDATE [{runs}] SET status = ?, score = ?, unit = ?, higher_is_better = ?, metrics = ?, "
    "tokens = ?, duration_seconds = ?, exit_code = ?, error = ?, ended_at = ?, artifacts = ?, "
    "updated_at = ?, last_position = ? WHERE run_id = ?"
)
INVALIDATE = (
    "UPDATE [{runs}] SET invalidated = ?, invalidated_reason = ?, updated_at = ?, "
    "last_position = ? WHERE run_id = ?"
)
RENEW = (
    "UPDATE [{runs}] SET lease_expires_at = ?, last_heard_at = ?, updated_at = ?, "
    "last_position = ? WHERE run_id = ?"
)
RECOVER = (
    "UPDATE [{runs}] SET status = 'recovered', recovered_at = ?, recovery_policy = ?, "
    "error = coalesce(?, error), updated_at = ?, last_position = ? WHERE run_id = ?"
)
SUPERSEDE = (
    "UPDATE [{runs}] SET superseded_by = ?, superseded_reason = ?, superseded_at = ?, "
    "updated_at = ?, last_position = ? WHERE run_id = ?"
)
IDENTIFY = "UPDATE [{runs}] SET agent_id = ?, harness = ? WHERE run_id = ?"
CORRECT = (
    "UPDATE [{runs}] SET original_score = CASE WHEN corrections = 0 THEN score "
    "ELSE original_score END, score = ?, corrections = corrections + 1, "
    "correction_reason = ?, updated_at = ?, last_position = ? WHERE run_id = ?"
)


SCALAR_FACTS = ("score", "unit", "duration_seconds", "error")
TIME_FACTS = ("started_at", "ended_at")
OBJECT_FACTS = ("config", "metrics", "tokens", "provenance")
# The columns of each read model that facts fill in (`fact_columns`).
RUN_COLUMNS = frozenset(COLUMNS)


def fact_columns(
    event: RunFactsAdded, columns: frozenset[str] = RUN_COLUMNS
) -> tuple[list[str], list[object]]:
    """SET clauses (and their parameters) for the columns a later source's facts fill in:
    they never replace a stated one, only a placeholder (`domain.facts`), as the run's
    identity does when it fills one. Shared by `runs` and `latest`'s candidates."""
    sets: list[str] = []
    params: list[object] = []
    facts = event.facts
    for name, value in (event.identity or {}).items():
        if name in columns:
            sets.append(f"{name} = ?")
            params.append(value)
    for name in SCALAR_FACTS:
        if name in facts and name in columns:
            sets.append(f"{name} = ?")
            params.append(facts[name])
    if "higher_is_better" in facts:
        sets.append("higher_is_better = ?")
        params.append(int(bool(facts["higher_is_better"])))
    for name in TIME_FACTS:
        if isinstance(facts.get(name), str):
            sets.append(f"{name} = ?")
            params.append(iso(datetime.fromisoformat(facts[name])))
    for name in OBJECT_FACTS:
        if isinstance(facts.get(name), dict) and name in columns:
            sets.append(f"{name} = json_patch(coalesce({name}, json_object()), ?)")
            params.append(to_json(facts[name]))
    if event.signature is not None:
        sets.append("signature = ?")
        params.append(event.signature)
    if event.comparison_signature is not None:
        sets.append("comparison_signature = ?")
        params.append(event.comparison_signature)
    return sets, params


def facts_added(event: RunFactsAdded, at: str | None, pos: int, run_id: str) -> Change:
    sets, params = fact_columns(event)
    attempt = stated_attempt(event.facts.get("provenance") or {})
    if attempt is not None:
        sets.append("attempt = coalesce(attempt, ?)")
        params.append(attempt)
    provenance = event.facts.get("provenance")
    if isinstance(provenance, dict):  # a later source's columns fill in unstated versions
        for column, value in stated_versions({}, provenance).items():
            if value is not None:
                sets.append(f"{column} = coalesce({column}, ?)")
                params.append(value)
    sets += ["updated_at = ?", "last_position = ?"]
    params += [at, pos, run_id]
    return f"UPDATE [{{runs}}] SET {', '.join(sets)} WHERE run_id = ?", tuple(params)


# The changes of events that only add runs and count their cells, and which of the
# batches `fold_page` holds of them (run in this order) each goes to. A run inserted
# started or imported whole goes to one batch: rows are inserted in their events' order.
_HELD = {models.SEEN: 0, INSERT: 1, IMPORTED: 1, ADD_CELLS: 2}

# A cell row's outcome (`CellBatch.rows`), and the outcomes a run's counts are kept for.
_OUTCOME = itemgetter(1)
_OUTCOMES = frozenset({"passed", "failed", "error", "skipped"})


class RunsProjection(Projection):
    name = "runs"
    version = versions.version(name)
    tables = (
        Table(
            "runs",
            COLUMNS,
            pk=("run_id",),
            # What the facets and filters of its page read, and the runs a row page lists
            # as superseding it.
            indexes=(
                ("benchmark", "agent"),
                ("signature",),
                ("run_group_id",),
                ("superseded_by",),
                # The page's order, newest first, ties by run_id (Datasette's tie-break): a
                # next page (`_next=`) reads its 50 rows in order rather than sorting every
                # run before them.
                ("started_at" + DESCENDING, "run_id"),
                # Each facet of the runs page, filtered on, and its rows newest first
                # (the page's order): a page that reads 50 rows whatever the ledger's size.
                ("benchmark", "started_at"),
                ("agent", "started_at"),
                ("model", "started_at"),
                ("model_id", "started_at"),
                ("status", "started_at"),
                ("account", "started_at"),
                # The dashboard's unit filter lists units by skipping through it, and its
                # score chart reads a unit's newest runs.
                ("unit", "started_at"),
            ),
            foreign_keys=(
                ForeignKey("run_group_id", "run_groups", "run_group_id"),
                ForeignKey("superseded_by", "runs", "run_id"),
            ),
        ),
        models.MODELS,
    )

    topics = topics_of(
        RunStarted,
        RunImported,
        CellsRecorded,
        RunFinished,
        RunFactsAdded,
        LeaseRenewed,
        StaleRunRecovered,
        RunSuperseded,
        RunInvalidated,
        RunReinstated,
        ScoreCorrected,
        ModelAliasDeclared,
    )

    def fold_page(self, envelopes: Iterable[Envelope]) -> Iterable[Change]:
        """The page's changes; consecutive events that only add runs and count their cells
        as three batches instead of three statements per run: their models listed
        (`models.SEEN`, each model once, `_listed`), then the runs inserted, then their
        cells counted. These changes commute across runs (a model's row is only counted
        up, no run's row is read by another's change) and each run is still inserted
        before its cells are counted.
        Each batch keeps its events' order, so rows are inserted in the same order (and
        get the same rowids); any other change runs after what was held before it."""
        held: tuple[list[Change], ...] = ([], [], [])
        for envelope in envelopes:
            changes = list(self.fold(envelope))
            if all(sql in _HELD for sql, _ in changes):
                for change in changes:
                    held[_HELD[change[0]]].append(change)
                continue
            yield from _release(held)
            yield from changes
        yield from _release(held)

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        run_id = envelope.stream_id
        pos = envelope.position
        if envelope.topic == CellsRecorded.TOPIC:
            batch = envelope.cells()
            counts = Counter(map(_OUTCOME, batch.rows))  # counted in C, not a loop per cell
            if not counts.keys() <= _OUTCOMES:
                raise KeyError(", ".join(sorted(counts.keys() - _OUTCOMES)))
            at = iso(batch.timestamp)
            yield (
                ADD_CELLS,
                (
                    len(batch.rows),
                    counts["passed"],
                    counts["failed"],
                    counts["error"],
                    counts["skipped"],
                    at,
                    pos,
                    run_id,
                ),
            )
            return
        event = envelope.event
        at = envelope.recorded_at
        if isinstance(event, RunStarted):
            started = (
                event.attempt,
                iso(event.started_at),
                envelope.json("config"),
                event.signature,
                event.comparison_signature,
                uid(event.run_group_id),
                event.source,
                event.source_format,
                event.source_path,
                event.source_sha256,
                to_json(event.command),
                event.cwd,
                event.host,
                event.run_dir,
                event.account,
                to_json(event.provenance) if event.provenance else None,
                iso(event.lease_expires_at),
                at,
                at,
                at,
                pos,
                to_json(event.code_versions) if event.code_versions else None,
                *stated_versions(event.code_versions, event.provenance).values(),
            )
            who = (run_id, event.run_key, event.benchmark, event.agent, event.provider, event.model)
            # The model's name is listed first, so the run's row is inserted whole: its
            # agent's identity and the model's id with it, not stamped afterwards.
            yield models.seen(event.model, pos)
            identified = (*agent_identity(event.agent, event.source_format), event.model)
            if isinstance(event, RunImported):
                status = event.status.value
                yield IMPORTED, (*who, status, *started, *identified, *_ended(envelope, event))
            else:
                yield INSERT, (*who, *started, *identified)
        elif isinstance(event, RunFinished):
            yield FINISH, (event.status.value, *_ended(envelope, event), at, pos, run_id)
        elif isinstance(event, RunFactsAdded):
            identity = event.identity or {}
            if identity.get("model"):
                yield from models.run_renamed(run_id)
            yield facts_added(event, at, pos, run_id)
            if identity.get("model"):  # a placeholder model filled: its id follows it
                yield from models.run_seen(run_id, identity["model"], pos)
            if identity.get("agent"):
                yield IDENTIFY, (*agent_identity(identity["agent"], event.source_format), run_id)
        elif isinstance(event, LeaseRenewed):
            yield RENEW, (iso(event.expires_at), at, at, pos, run_id)
        elif isinstance(event, StaleRunRecovered):
            yield RECOVER, (at, event.policy, event.detail, at, pos, run_id)
        elif isinstance(event, RunSuperseded):
            yield SUPERSEDE, (str(event.by_run_id), event.reason, at, at, pos, run_id)
        elif isinstance(event, RunInvalidated):
            yield INVALIDATE, (1, event.reason, at, pos, run_id)
        elif isinstance(event, RunReinstated):
            yield INVALIDATE, (0, None, at, pos, run_id)
        elif isinstance(event, ScoreCorrected):
            yield CORRECT, (event.new_score, event.reason, at, pos, run_id)
        elif isinstance(event, ModelAliasDeclared):
            yield from models.alias_declared(event, pos)


def _release(held: tuple[list[Change], ...]) -> Iterator[Change]:
    """The changes held by `RunsProjection.fold_page`, batch after batch (the models
    listed once each, `_listed`); forgets them."""
    for i, changes in enumerate(held):
        yield from _listed(changes) if i == _HELD[models.SEEN] else changes
        changes.clear()


def _listed(seen: list[Change]) -> Iterator[Change]:
    """Held `models.SEEN` changes as each model's first, in the order they came (the rows
    a model's first run inserts), then one count of the rest per model: not a statement
    per run counting one more."""
    first: dict[str, Change] = {}
    more: Counter[str] = Counter()
    for change in seen:
        name = cast(tuple[Any, ...], change[1])[0]  # `models.seen`: the name first
        if name in first:
            more[name] += 1
        else:
            first[name] = change
    yield from first.values()
    for name, runs in more.items():
        yield models.COUNTED, (runs, name)


def _ended(envelope: Envelope, event: RunFinished | RunImported) -> tuple[object, ...]:
    """How a run ended, as `FINISH` sets it after its status."""
    return (
        event.score,
        event.unit,
        int(event.higher_is_better),
        envelope.json("metrics"),
        envelope.json("tokens"),
        event.duration_seconds,
        event.exit_code,
        event.error,
        iso(event.ended_at),
        envelope.json("artifacts"),
    )
