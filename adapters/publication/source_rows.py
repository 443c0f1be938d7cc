"""The ElizaOS orchestrator's own rows of what the ledger imported from it.

An export of imported data writes what the source wrote: for a run or a skip the ledger
imported from the orchestrator (`source_format` `orchestrator`), its exports write the
orchestrator's `benchmark_runs` row as the orchestrator's `list_runs` reads it: its
run and group ids, paths, commands, telemetry columns, high-score reference, status
and error, each as the source stated it (the importer keeps them: see
`adapters/formats/orchestrator_rows.py`). What the ledger adds (invalidation, a
position) is added beside them; nothing is renamed or dropped.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from benchledger.adapters.publication.queries import decode_run
from benchledger.domain.publication import (
    REFERENCE_COLUMNS,
    TELEMETRY_COLUMNS,
    TELEMETRY_GROUPS,
)

ORCHESTRATOR = "orchestrator"


def is_source_run(run: dict[str, Any]) -> bool:
    """A run of the `runs` read model imported from the orchestrator."""
    return run.get("source_format") == ORCHESTRATOR


def is_source_skip(provenance: Any) -> bool:
    """A skip (a row the orchestrator did not run) imported from the orchestrator: its
    provenance names the row's own run_id and status."""
    return (
        isinstance(provenance, dict)
        and isinstance(provenance.get("run_id"), str)
        and isinstance(provenance.get("status"), str)
        and "signature_check" in provenance
    )


def run_row(run: dict[str, Any]) -> dict[str, Any]:
    """The orchestrator's row of a run it imported (a decoded `runs` row)."""
    provenance = run.get("provenance") or {}
    columns = provenance.get("source_columns") or {}
    status = run["status"]
    if status == "recovered":
        status = provenance.get("source_status") or "failed"
    held = run.get("metrics") or {}
    metrics = dict(held)
    for name, nested in (provenance.get("metrics_stated") or {}).items():
        if nested is None:
            metrics.pop(name, None)
        else:
            metrics[name] = nested
    # A group not among the columns is the same as the metrics' copy the ledger holds.
    groups = {
        name: columns.get(name) if name == "token_metrics" or name in columns else held.get(name)
        for name in TELEMETRY_GROUPS
    }
    hib = run.get("higher_is_better")
    fields = {
        "run_id": run.get("run_key") or run["run_id"],
        "run_group_id": columns.get("run_group_id"),
        "signature": run.get("signature"),
        "benchmark_id": run["benchmark"],
        "benchmark_directory": provenance.get("benchmark_directory"),
        "status": status,
        "attempt": provenance.get("attempt", run.get("attempt")),
        "agent": run["agent"],
        "provider": run.get("provider"),
        "model": run.get("model"),
        "started_at": columns.get("started_at") or run.get("started_at"),
        "ended_at": columns.get("ended_at") or run.get("ended_at"),
        "duration_seconds": run.get("duration_seconds"),
        "score": run.get("score"),
        "unit": run.get("unit"),
        "higher_is_better": None
        if hib is None or ("higher_is_better" in columns and columns["higher_is_better"] is None)
        else bool(hib),
        "error": run.get("error"),
    }
    return _listed(fields, columns, run.get("config") or {}, metrics, groups)


def skip_row(skip: dict[str, Any]) -> dict[str, Any]:
    """The orchestrator's row of one it did not run (a decoded `skips` row whose
    provenance `is_source_skip`)."""
    provenance = skip["provenance"]
    columns = provenance.get("source_columns") or {}
    metrics = provenance.get("metrics") or {}
    groups = {name: columns.get(name) for name in TELEMETRY_GROUPS}
    fields = {
        "run_id": provenance["run_id"],
        "run_group_id": columns.get("run_group_id"),
        "signature": provenance.get("signature", skip.get("signature")),
        "benchmark_id": skip["benchmark"],
        "benchmark_directory": provenance.get("benchmark_directory"),
        "status": provenance["status"],
        "attempt": skip.get("attempt"),
        "agent": skip["agent"],
        "provider": skip.get("provider"),
        "model": skip.get("model"),
        "started_at": columns.get("started_at") or provenance.get("started_at") or skip["time"],
        "ended_at": columns.get("ended_at") or provenance.get("ended_at"),
        "duration_seconds": provenance.get("duration_seconds"),
        "score": provenance.get("score"),
        "unit": provenance.get("unit"),
        "higher_is_better": provenance.get("higher_is_better"),
        "error": provenance.get("error"),
    }
    return _listed(fields, columns, provenance.get("extra_config") or {}, metrics, groups)


def _listed(
    fields: dict[str, Any],
    columns: dict[str, Any],
    config: dict[str, Any],
    metrics: dict[str, Any],
    groups: dict[str, Any],
) -> dict[str, Any]:
    """The row in `list_runs`' shape and key order: the scalar columns in the query's
    order, then each decoded `*_json` column (a NULL one has no key)."""
    row = {k: fields[k] for k in list(fields)[:13]}
    for name in ("cwd", "stdout_path", "stderr_path", "result_json_path"):
        row[name] = columns.get(name)
    for name in ("score", "unit", "higher_is_better"):
        row[name] = fields[name]
    for name in TELEMETRY_COLUMNS:
        row[name] = columns.get(name)
    row["error"] = fields["error"]
    for name in REFERENCE_COLUMNS:
        row[name] = columns.get(name)
    row["extra_config"] = config
    row["command"] = columns.get("command", [])
    row["metrics"] = metrics
    for name in ("trajectory_summary", "token_metrics", "cache_metrics", "performance_metrics"):
        if groups.get(name) is not None:
            row[name] = groups[name]
    row["artifacts"] = columns.get("artifacts", [])
    return row


def _int(row: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = row.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return int(value)
    return None


def with_flat_tokens(row: dict[str, Any]) -> dict[str, Any]:
    """A viewer_data.json run: the row with the flat token counts the orchestrator's
    viewer adds (input, output, total and cached tokens, LLM and call counts; 0 when
    unknown)."""
    out = dict(row)
    tokens = out.get("token_metrics")
    group = tokens if isinstance(tokens, dict) else {}
    prompt = _int(group, "input_tokens", "prompt_tokens")
    if prompt is None:
        prompt = _int(out, "total_prompt_tokens")
    completion = _int(group, "output_tokens", "completion_tokens")
    if completion is None:
        completion = _int(out, "total_completion_tokens")
    total = _int(group, "total_tokens")
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    cached = _int(group, "cached_tokens", "cache_read_input_tokens")
    if cached is None:
        cached = _int(out, "total_cache_read_input_tokens")
    calls = _int(group, "call_count", "llm_call_count")
    if calls is None:
        calls = _int(out, "llm_call_count")
    out["input_tokens"] = prompt or 0
    out["output_tokens"] = completion or 0
    out["total_tokens"] = total or 0
    out["cached_tokens"] = cached or 0
    out["llm_call_count"] = _int(group, "llm_call_count") or calls or 0
    out["call_count"] = calls or 0
    return out


def latest_score(row: dict[str, Any]) -> dict[str, Any]:
    """A viewer_data.json `latest_scores` entry of a row, as the orchestrator's
    `summarize_latest_scores` writes it."""
    tokens = row.get("token_metrics")
    group = tokens if isinstance(tokens, dict) else {}
    out = {
        k: row.get(k)
        for k in (
            "benchmark_id",
            "run_id",
            "run_group_id",
            "started_at",
            "score",
            "unit",
            "agent",
            "provider",
            "model",
            "high_score_label",
            "high_score_value",
            "delta_to_high_score",
            "llm_call_count",
            "total_prompt_tokens",
            "total_completion_tokens",
            "total_cache_read_input_tokens",
            "total_cache_creation_input_tokens",
        )
    }

    def first(*keys: str) -> int | None:
        value = next((group[k] for k in keys if k in group), None)
        return _int({"v": value}, "v")

    prompt = first("input_tokens", "prompt_tokens")
    if prompt is None:
        prompt = _int(out, "total_prompt_tokens")
    completion = first("output_tokens", "completion_tokens")
    if completion is None:
        completion = _int(out, "total_completion_tokens")
    total = first("total_tokens")
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    cached = first("cached_tokens", "cache_read_input_tokens")
    if cached is None:
        cached = _int(out, "total_cache_read_input_tokens")
    creation = first("cache_creation_input_tokens")
    if creation is None:
        creation = _int(out, "total_cache_creation_input_tokens") or 0
    calls = first("llm_call_count", "call_count")
    if calls is None:
        calls = _int(out, "llm_call_count")
    out["input_tokens"] = prompt if prompt is not None else 0
    out["output_tokens"] = completion if completion is not None else 0
    out["total_tokens"] = total if total is not None else 0
    out["cached_tokens"] = cached if cached is not None else 0
    out["cache_creation_input_tokens"] = creation
    out["llm_call_count"] = calls if calls is not None else 0
    call_count = first("call_count")
    out["call_count"] = call_count if call_count is not None else out["llm_call_count"]
    out["token_metrics"] = {
        k: out[k]
        for k in (
            "input_tokens",
            "output_tokens",
            "total_tokens",
            "cached_tokens",
            "cache_creation_input_tokens",
            "llm_call_count",
            "call_count",
        )
    }
    return out


def source_rows(conn: sqlite3.Connection, run_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The orchestrator's rows of those of `run_ids` (runs, or candidates of skips, whose
    id is the source row's) imported from it, by id."""
    wanted = sorted(set(run_ids))
    out: dict[str, dict[str, Any]] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        cursor = conn.execute(
            f"SELECT * FROM runs WHERE run_id IN ({marks}) AND source_format = ?",
            [*chunk, ORCHESTRATOR],
        )
        names = [d[0] for d in cursor.description]
        for values in cursor:
            run = decode_run(dict(zip(names, values, strict=True)))
            out[run["run_id"]] = run_row(run)
    rest = [i for i in wanted if i not in out]
    if rest:
        cursor = conn.execute(
            "SELECT * FROM skips WHERE json_extract(provenance, '$.run_id') IN "
            "(SELECT value FROM json_each(?))",
            (json.dumps(rest),),
        )
        names = [d[0] for d in cursor.description]
        for values in cursor:
            skip = dict(zip(names, values, strict=True))
            skip["provenance"] = json.loads(skip["provenance"] or "{}")
            if is_source_skip(skip["provenance"]):
                out[skip["provenance"]["run_id"]] = skip_row(skip)
    return out
