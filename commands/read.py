"""Commands that read the projected tables: runs, show, history, events."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import click

from benchledger.commands.context import LedgerContext, as_of_option
from benchledger.commands.output import (
    emit,
    emit_stream,
    emit_table,
    json_text,
    output_options,
    printable,
    short,
)

pass_ledger = click.make_pass_decorator(LedgerContext)

RUN_COLUMNS = [
    "run",
    "attempt",
    "benchmark",
    "agent",
    "provider",
    "model",
    "status",
    "score",
    "cells",
    "started_at",
]

# What a listing of runs reads of each: its columns and what `_listing` shows.
LISTED = (
    "run_id",
    "attempt",
    "benchmark",
    "agent",
    "account",
    "provider",
    "model",
    "status",
    "invalidated",
    "superseded_by",
    "corrections",
    "score",
    "cells",
    "started_at",
)

# What `runs --status` selects on: a run's status (domain.records.RunStatus, spelled out so
# that `runs` loads no pydantic; a test keeps them equal), or its invalidation or
# supersession.
RUN_STATUSES = ["running", "recovered", "succeeded", "failed", "timed_out", "cancelled", "error"]
RUN_STATUS_FILTERS = [*RUN_STATUSES, "invalidated", "superseded"]


def _listing(run: dict[str, Any]) -> dict[str, Any]:
    status = run["status"] + (" (invalidated)" if run["invalidated"] else "")
    if run.get("superseded_by"):
        status += " (superseded)"
    if run["corrections"]:
        status += " (corrected)"
    return {**run, "run": short(run["run_id"]), "status": status}


@click.command()
@click.option("--benchmark", help="Only this benchmark")
@click.option("--agent", help="Only this agent")
@click.option("--provider", help="Only this provider")
@click.option("--model", help="Only this model")
@click.option(
    "--status",
    type=click.Choice(RUN_STATUS_FILTERS),
    help="Only runs of this status, or the invalidated or superseded ones",
)
@as_of_option
@output_options
@pass_ledger
def runs(ctx: LedgerContext, /, fmt: str | None, as_of: str | None, **filters: str | None) -> None:
    """List runs, oldest first.

    \b
    Example:
        benchledger runs --benchmark bfcl --status succeeded
        benchledger runs --agent eliza --json
        benchledger runs --as-of 2026-05-01T00:00:00Z
    """
    queries = ctx.queries(as_of)
    if fmt in ("json", "nl", "csv"):
        emit_stream(queries.iter_runs(**filters), fmt)
        return
    # The listing reads only what it shows: no run's JSON facts, a row of text each.
    # Only runs of a credential pool name an account: the column shows where one does.
    emit_table(
        map(_listing, queries.iter_runs(columns=LISTED, **filters)),
        [*RUN_COLUMNS[:4], "account", *RUN_COLUMNS[4:]],
        empty="No runs.",
        optional=("account",),
    )


@click.command()
@click.argument("run")
@click.option(
    "--cells",
    "n_cells",
    type=int,
    default=0,
    show_default=True,
    help="Also list this many of its cells",
)
@as_of_option
@output_options
@pass_ledger
def show(ctx: LedgerContext, run: str, n_cells: int, fmt: str | None, as_of: str | None) -> None:
    """Show one run with a summary of its cells.

    RUN is a run id, a unique prefix of one (4+ characters) or a run key (its
    current version, when `import --amend` superseded older ones). --json
    prints the run with its cell outcomes, cells and trajectories; --csv and
    --nl the run's one row, as `runs` lists it.

    \b
    Example:
        benchledger show 3fa9c2d1 --cells 10
        benchledger show 3fa9c2d1 --csv
    """
    queries = ctx.queries(as_of)
    row = queries.find_run(run)
    if fmt in ("csv", "nl"):
        emit([row], fmt)
        return
    outcomes = queries.cell_outcomes(row["run_id"])
    cells = queries.cells(row["run_id"], limit=n_cells) if n_cells else []
    trajectories = queries.trajectory_summary(row["run_id"])
    if fmt == "json":
        click.echo(
            json_text(
                {
                    "run": row,
                    "cell_outcomes": outcomes,
                    "cells": cells,
                    "trajectories": trajectories,
                },
                indent=2,
            )
        )
        return
    fields = [
        "run_id",
        "run_key",
        "benchmark",
        "agent",
        "account",
        "provider",
        "model",
        "status",
        "score",
        "unit",
        "higher_is_better",
        "attempt",
        "started_at",
        "ended_at",
        "duration_seconds",
        "exit_code",
        "error",
        "lease_expires_at",
        "last_heard_at",
        "recovered_at",
        "recovery_policy",
        "invalidated",
        "invalidated_reason",
        "superseded_by",
        "superseded_reason",
        "superseded_at",
        "original_score",
        "correction_reason",
        "signature",
        "comparison_signature",
        "run_group_id",
        "source",
        "source_format",
        "source_path",
        "source_sha256",
        "run_dir",
        "command",
        "cwd",
        "host",
        "benchmark_version",
        "benchmarks_commit",
        "benchmarks_dirty",
        "agent_version",
        "agent_commit",
    ]
    width = max(len(f) for f in fields)
    for name in fields:
        value = row.get(name)
        if value is None or (name in ("invalidated",) and not value):
            continue
        click.echo(f"{name.ljust(width)}  {printable(str(value))}")
    for name in ("config", "metrics", "tokens", "provenance", "code_versions"):
        if row.get(name):
            click.echo(f"{name.ljust(width)}  {json.dumps(row[name], sort_keys=True)}")
    click.echo("")
    emit(outcomes, None, columns=["outcome", "cells", "mean_score"], empty="No cells.")
    if trajectories:
        click.echo("")
        emit(trajectories, None, columns=list(trajectories[0]))
    if cells:
        click.echo("")
        emit(cells, None, columns=["key", "outcome", "score", "metrics"])


def _ended(d: dict[str, Any]) -> str:
    score = "no score" if d["score"] is None else f"score {d['score']}"
    text = f"{d['status']}, {score}"
    return text + (f": {d['error'][:60]}" if d.get("error") else "")


def _summary(event: dict[str, Any]) -> str:
    """One readable line per event type; --json has everything."""
    d = event["data"]
    kind = event["type"]
    if kind in ("RunStarted", "RunImported"):
        started = f"{d['benchmark']} / {d['agent']} / {d['provider']}:{d['model']} ({d['source']})"
        if kind == "RunStarted":
            return started
        return f"{started}: {_ended(d)}" + (f", {len(d['turns'])} turns" if d["turns"] else "")
    if kind == "CellsRecorded":
        return f"{d['cells']['count']} cells"
    if kind == "RunFinished":
        return _ended(d)
    if kind == "RunFactsAdded":
        added = ", ".join(sorted(d["facts"]))
        return f"added {added}" + (f" from {d['source_path']}" if d.get("source_path") else "")
    if kind == "RunSuperseded":
        by = short(d["by_run_id"])
        return f"superseded by {by}: {d['reason']} (by {d['actor']})"
    if kind in ("RunInvalidated", "RunReinstated"):
        return f"{d['reason']} (by {d['actor']})"
    if kind == "ScoreCorrected":
        return f"{d['old_score']} -> {d['new_score']}: {d['reason']} (by {d['actor']})"
    if kind == "AttemptClaimed":
        return f"attempt {d['attempt']} of {d['benchmark']} / {d['agent']} ({d['mode']})"
    if kind == "LeaseRenewed":
        return f"lease until {d['expires_at']}"
    if kind == "StaleRunRecovered":
        return f"recovered: {d['policy']} (lease {d['lease_expires_at']}, by {d['actor']})"
    if kind in ("BenchmarkSkipped", "LaunchRefused"):
        return f"{d['benchmark']} / {d['agent']}: {d['reason']}" + (
            f" ({d['detail']})" if d.get("detail") else ""
        )
    if kind == "RunGroupOpened":
        return f"{d['kind']} group '{d['label']}'"
    if kind == "HighScoreReferenced":
        return f"{d['benchmark']}: {d['label']} = {d['value']}"
    if kind == "ResultFileImported":
        return f"{d['path']} ({d['format']}, {len(d['run_ids'])} runs)"
    skip = {"originator_id", "originator_version", "timestamp"}
    parts = [f"{k}={json.dumps(v)}" for k, v in d.items() if k not in skip and v]
    return " ".join(parts)[:100]


@click.command()
@click.argument("run")
@as_of_option
@output_options
@pass_ledger
def history(ctx: LedgerContext, run: str, as_of: str | None, fmt: str | None) -> None:
    """Every event of one run, in order: how it got to what `show` prints.

    A run amended by `import --amend` has several versions: its history is
    theirs, after the chain of versions (which superseded which, when, why).
    Given a signature (or 8+ of its first hex digits) instead: every attempt,
    claim, skip and refusal of that piece of work.

    \b
    Example:
        benchledger history 3fa9c2d1
        benchledger history RUN_KEY
        benchledger history 51c42ab183297eef
        benchledger history 3fa9c2d1 --as-of 120 --csv
    """
    queries = ctx.queries(as_of)
    signature = queries.find_signature(run)
    if signature is not None:
        _emit_events(queries.signature_history(signature), fmt)
        return
    row = queries.find_run(run)
    versions = queries.versions(row["run_id"]) or [row]
    if len(versions) > 1 and fmt in (None, "table"):
        emit([_version(i, v) for i, v in enumerate(versions, 1)], fmt, columns=VERSION_COLUMNS)
        click.echo("")
    _emit_events(queries.history(*(v["run_id"] for v in versions)), fmt)


VERSION_COLUMNS = ["version", "run", "status", "score", "superseded_by", "superseded_at", "why"]


def _version(number: int, run: dict[str, Any]) -> dict[str, Any]:
    """One line of a run's chain of versions."""
    return {
        **run,
        "version": number,
        "run": short(run["run_id"]),
        "superseded_by": short(run["superseded_by"]),
        "why": run.get("superseded_reason"),
    }


@click.command()
@click.option(
    "--since", type=int, default=0, show_default=True, help="Only events after this position"
)
@click.option("--limit", type=int, help="At most this many events")
@as_of_option
@output_options
@pass_ledger
def events(
    ctx: LedgerContext, since: int, limit: int | None, as_of: str | None, fmt: str | None
) -> None:
    """The audit log: every event in the ledger, in the order it was appended.

    --json, --nl and --csv carry the same columns: position, time, type, the
    full stream id, version and the event's data (in CSV, a JSON string), so
    `events --csv` joins `runs --csv` on stream = run_id.

    \b
    Example:
        benchledger events --since 120 --json
        benchledger events --as-of 2026-05-01T00:00:00Z --csv
    """
    _emit_events(ctx.queries(as_of).iter_events(since, limit), fmt)


EVENT_COLUMNS = ["position", "stream", "version", "type", "time", "data"]  # the events table's


def _emit_events(events: Iterable[dict[str, Any]], fmt: str | None) -> None:
    """Every machine format has the event's own columns; only the table abridges them.
    Written as they are read: memory holds a line of text per event, not the log."""
    if fmt in ("json", "nl", "csv"):
        emit_stream(events, fmt, columns=EVENT_COLUMNS)
        return
    emit_table(
        ({**e, "stream": short(e["stream"]), "summary": _summary(e)} for e in events),
        ["position", "time", "type", "stream", "version", "summary"],
        empty="No events.",
    )


@click.command()
@click.option("--run-group", help="Only this run group (its id)")
@as_of_option
@output_options
@pass_ledger
def skips(ctx: LedgerContext, run_group: str | None, as_of: str | None, fmt: str | None) -> None:
    """Benchmarks that `run` decided not to execute, and launches it refused.

    \b
    Example:
        benchledger skips --json
        benchledger skips --as-of 120
    """
    rows = ctx.queries(as_of).skips(run_group)
    for row in rows:
        row["group"] = short(row["run_group_id"])
        row["defers_to"] = short(row["defer_to"])
    emit(
        rows,
        fmt,
        columns=[
            "position",
            "time",
            "group",
            "benchmark",
            "agent",
            "model",
            "outcome",
            "reason",
            "defers_to",
        ]
        if fmt in (None, "table")
        else None,
        empty="No skips.",
    )


# What the orchestrator's `show-runs` prints of each run, in its order.
SHOW_RUNS_FIELDS = ("benchmark", "run_id", "agent", "provider", "model", "status", "score")


@click.command(name="show-runs")
@click.option("--desc", is_flag=True, help="Sort descending by (agent, run id)")
@click.option(
    "--limit", type=click.IntRange(min=0), default=200, show_default=True, help="At most N runs"
)
@as_of_option
@output_options
@pass_ledger
def show_runs(
    ctx: LedgerContext, desc: bool, limit: int, fmt: str | None, as_of: str | None
) -> None:
    """Runs as the orchestrator's `show-runs` prints them, for a quick audit.

    Sorted by (agent, run id), where a run's id is its source's run key (the
    orchestrator's run_id) or else benchledger's run id; --desc reverses that, and
    --limit (200 by default, as the orchestrator's) keeps the first N. One line per
    run: started_at, then benchmark= run_id= agent= provider= model= status= score=.
    --json, --csv and --nl give the same runs as `runs` lists them, in this order.

    \b
    Example:
        benchledger show-runs --desc --limit 20
    """
    rows = ctx.queries(as_of).runs_by_agent(desc=desc, limit=limit)
    if fmt in ("json", "nl", "csv"):
        emit(rows, fmt)
        return
    for row in rows:
        values = {**row, "run_id": _source_id(row)}
        fields = " ".join(f"{name}={values[name]}" for name in SHOW_RUNS_FIELDS)
        click.echo(printable(f"{row['started_at']} {fields}"))


def _source_id(row: dict[str, Any]) -> str:
    return str(row.get("run_key") or row["run_id"])


COMMANDS = [runs, show, history, events, skips, show_runs]
