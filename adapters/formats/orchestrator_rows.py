"""One ElizaOS orchestrator run row, from whichever file states it, as a ledger record.

The orchestrator states a run in several files: its SQLite row, a latest/,
quarantine/ or baselines/ row, a viewer_data.json run and a comparison file's
run. The run's identity is the orchestrator's run_id; each file's record holds
every fact that file states, and the ledger merges them (`domain.facts`): a
sparser file adds what it knows and conflicts with nothing. So every source is
read into one canonical spelling of the same facts (ORCHESTRATOR.md §1, §4, §5,
§7):

- header: benchmark, agent, provider, model, the effective extra_config, the
  exact started_at / ended_at and duration_seconds, status, score, unit,
  higher_is_better (unless null), metrics, token counts, error; and the
  orchestrator's own signature as the run's signature. A fact a file does not
  state (a latest row has no start time, an E1 row no extra_config) is left
  unset, never filled with a stand-in.
- provenance: the attempt (the column, else the run_id's), the benchmark
  directory, whether the stated signature re-derives from the stated config (only
  where it can be checked), and `source_columns`: every other database column
  (command, cwd, log and result paths, artifacts, versions and commits,
  high-score reference, comparison_id, run_group_id, the raw token_metrics,
  the denormalised telemetry...), as the database or the JSON file states it.
- what the orchestrator derives from those facts when it writes a file
  (latest rows' updated_at, comparison_signature, publication_warnings,
  quarantine_reason, completed token metrics; the viewer's flattened token
  counts) is not a fact of the run: benchledger derives its own.
- metrics are the row's own metrics; the telemetry groups (trajectory_summary,
  cache_metrics, performance_metrics) come from the row's top-level groups (the
  database columns), else from the nested copies, and where that makes the
  metrics unlike the stated ones the stated nested copy is kept in provenance
  `metrics_stated` (null: the metrics had none), a NULL top-level group as null
  in `source_columns`. The nested token_metrics is kept as stated (a latest
  row's, which the orchestrator replaces with the completed ones when it writes
  the file, is not a fact and is left out); the raw top-level one is among the
  columns. Token counts are reduced to canonical names (input_tokens ->
  prompt_tokens, ...), from the top-level group, else the nested one; zero counts
  (the orchestrator's "not measured") and estimated counts are left out.
- statuses: succeeded / failed as stated, after applying the orchestrator's own
  repairs (a success with a nonzero return code or with zero samples is a
  failure; its score is kept), so rows written before and after the repair
  agree; stale-recovered rows are `recovered` runs; skipped, incompatible,
  paused*, missing_env rows are skips; queued / running rows are not finished
  and yield nothing.
- every value is kept as the source states it, host paths included: they are
  the source's facts (its logs, results and artifacts on its host), and an
  export of the run writes them back. benchledger's own rule that no path of the
  host it runs on enters an event is about the runs it executes.
- what the ledger reads differently from the source is kept beside it, so that
  an export can write the source's form: a stale-recovered row's own status
  (`source_status`), a time whose text is not the ledger's ISO form
  (`source_columns.started_at` / `ended_at`), a NULL higher_is_better
  (`source_columns.higher_is_better`: null) where the ledger's default is true.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchledger.adapters.formats.common import loads
from benchledger.adapters.formats.orchestrator_facts import (
    canonical,
    derive_signature,
    number,
    run_id_attempt,
    token_counts,
)
from benchledger.domain.errors import InputFormatError
from benchledger.domain.publication import (
    REFERENCE_COLUMNS,
    TELEMETRY_COLUMNS,
    TELEMETRY_GROUPS,
)
from benchledger.domain.records import GroupRecord, RunHeader, RunRecord, RunStatus, SkipRecord

CALIBRATION_AGENTS = frozenset({"perfect_v1", "wrong_v1", "half_v1"})
# How a run's record is made of its header, its group's key and its row's digest, where
# the source states more of the run than its row (the database's trajectory rows): in one
# validation.
RecordOf = Callable[[RunHeader, str | None, str | None], RunRecord]
SNAPSHOT_AGENTS = frozenset(
    {"eliza", "hermes", "openclaw", "smithers", "compare", "random_v1", *CALIBRATION_AGENTS}
)
Status = Literal[
    "queued",
    "running",
    "succeeded",
    "failed",
    "skipped",
    "incompatible",
    "paused",
    "paused_unknown",
]
# benchmark_runs columns, under the names the JSON files use (`*_json` decoded without the
# suffix), that the header and provenance do not map: a JSON file's keys among them are
# kept in provenance as `source_columns`, like the database's.
DATABASE_COLUMNS = frozenset(
    {
        "run_group_id",
        "command",
        "cwd",
        "stdout_path",
        "stderr_path",
        "result_json_path",
        "artifacts",
        "created_at",
        "comparison_id",
        "token_metrics",
        *TELEMETRY_COLUMNS,
        *REFERENCE_COLUMNS,
    }
)
# What the orchestrator derives when it writes a file, per kind of file (see above).
DERIVED = {
    "snapshot": frozenset(
        {"updated_at", "comparison_signature", "publication_warnings", "quarantine_reason"}
        | {"synthetic", "token_metrics"}
    ),
    "viewer": frozenset(
        {"input_tokens", "output_tokens", "total_tokens", "cached_tokens", "call_count"}
        | {"llm_call_count"}
    ),
    "comparison": frozenset(),  # its base_url is kept with the columns
    "database": frozenset(),
}
Kind = Literal["database", "snapshot", "viewer", "comparison"]
SKIP_STATUSES = frozenset({"skipped", "incompatible", "paused", "paused_unknown"})
OPEN_STATUSES = frozenset({"queued", "running"})
STALE_REASON = "orchestrator_interrupted"
STALE_ERROR = "Recovered stale running run"
# The orchestrator's repair_nonpublishable_success_statuses: sample counts that must be > 0.
SAMPLE_KEYS = {
    "abliteration-robustness": "n",
    "humaneval": "n",
    "lifeops_bench": "seeds",
    "mmlu": "n",
}


class Row(BaseModel):
    """The fields of a run row every orchestrator source spells the same way."""

    model_config = ConfigDict(extra="ignore", strict=True)

    run_id: str = Field(min_length=1)
    benchmark_id: str = Field(min_length=1)
    agent: str = Field(min_length=1)
    provider: str
    model: str
    status: Status
    score: float | None
    unit: str | None = None
    higher_is_better: bool | None = None
    metrics: dict[str, Any]
    error: str | None = None
    benchmark_directory: str | None = None
    extra_config: dict[str, Any] | None = None
    signature: str | None = None
    # Stated by the database and viewer_data.json; a skip keeps them as its own.
    started_at: str | None = None
    ended_at: str | None = None
    duration_seconds: float | None = None
    attempt: int | None = None
    # The database's other columns, as they are (see orchestrator_sources).
    source_columns: dict[str, Any] | None = None
    cache_metrics: dict[str, Any] | None = None
    performance_metrics: dict[str, Any] | None = None
    trajectory_summary: dict[str, Any] | None = None
    token_metrics: dict[str, Any] | None = None


def read_row(
    path: str,
    raw: Any,
    where: str = "",
    kind: Kind = "snapshot",
    *,
    columns: dict[str, Any] | None = None,
    record_of: RecordOf | None = None,
    digest: str | None = None,
) -> RunRecord | SkipRecord | None:
    """The ledger's record of one source row: a run, a skip, or None for a run still in
    progress; a malformed row raises InputFormatError naming `where` + the field.

    `kind`: the file the row comes from; a JSON file's other columns are picked from
    its keys (the database's come as `source_columns` already). `columns`: what
    `_columns` keeps of the row's `source_columns`, when the reader worked it out.
    `record_of`: how a run's record is made of its header (by default, of it alone).
    `digest`: the row's `source_row_sha256`, which the record states (None: none)."""
    if not isinstance(raw, dict):
        raise InputFormatError(path, "expected a JSON object (one run row)", field=where or None)
    run_id = raw.get("run_id")
    about = f"run '{run_id}': " if isinstance(run_id, str) and where else ""
    try:
        if kind != "database":
            raw = {**raw, "source_columns": _json_columns(raw, kind)}
        row = Row.model_validate(raw)
        return to_record(row, kind, columns=columns, record_of=record_of, digest=digest)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise InputFormatError(path, about + first["msg"], field=f"{where}{loc}") from None
    except UnicodeEncodeError:
        message = "holds a string that is not valid Unicode (a lone surrogate escape)"
        raise InputFormatError(path, about + message, field=f"{where}metrics") from None


# run_groups columns (ORCHESTRATOR.md §1) and the keys viewer_data.json gives them.
GROUP_JSON: tuple[str, ...] = ("request", "benchmarks", "repo_meta", "execution_contract")
GROUP_JSON += ("pause_metadata", "storage_preflight")


def read_group(path: str, raw: Any, where: str) -> GroupRecord:
    """A run_groups row (the database's, `*_json` columns encoded; or the viewer's,
    decoded) as the source's group; a malformed one names the field."""
    if not isinstance(raw, dict):
        raise InputFormatError(path, "expected an object (one run group)", field=where or None)
    row = dict(raw)
    for name in GROUP_JSON:
        column = f"{name}_json"
        if column in row:
            text = row.pop(column)
            if text is not None:
                if not isinstance(text, str):
                    raise InputFormatError(path, "must be JSON text", field=where + column)
                row[name] = loads(path, text, field=where + column)
    key = row.pop("run_group_id", None)
    if not isinstance(key, str) or not key:
        raise InputFormatError(path, "must be a non-empty string", field=where + "run_group_id")
    opened, closed = row.pop("created_at", None), row.pop("finished_at", None)
    request, selection = row.pop("request", None), row.pop("benchmarks", None)
    repo_meta, status = row.pop("repo_meta", None), row.pop("cohort_status", None)
    for name, value, kind in (
        ("request", request, dict),
        ("benchmarks", selection, list),
        ("repo_meta", repo_meta, dict),
    ):
        if value is not None and not isinstance(value, kind):
            raise InputFormatError(path, f"must be a JSON {kind.__name__}", field=where + name)
    if status is not None and not isinstance(status, str):
        raise InputFormatError(path, "must be a string", field=where + "cohort_status")
    times = {}
    for name, text in (("created_at", opened), ("finished_at", closed)):
        if text is not None and (not isinstance(text, str) or _when(text) is None):
            raise InputFormatError(path, "must be an ISO 8601 time", field=where + name)
        times[name] = _when(text)
    rest = _columns(row)
    for name, text in (("created_at", opened), ("finished_at", closed)):
        moment = times[name]
        if moment is not None and _iso(moment) != text:
            rest[name] = text  # a time whose text is not the ledger's form of it
    try:
        return GroupRecord(
            group_key=key,
            opened_at=times["created_at"],
            closed_at=times["finished_at"],
            request=canonical(request or {}),
            selection=[str(b) for b in selection or []],
            repo_meta=canonical(repo_meta or {}),
            status=status,
            facts=rest,
        )
    except UnicodeEncodeError:
        message = "holds a string that is not valid Unicode (a lone surrogate escape)"
        raise InputFormatError(path, message, field=where + "run_group_id") from None


def _json_columns(raw: dict[str, Any], kind: Kind) -> dict[str, Any] | None:
    derived = DERIVED[kind]
    found = {
        k: v
        for k, v in raw.items()
        if (k in DATABASE_COLUMNS or (kind == "comparison" and k == "base_url"))
        and k not in derived
    }
    return found or None


def to_record(
    row: Row,
    kind: Kind = "database",
    *,
    columns: dict[str, Any] | None = None,
    record_of: RecordOf | None = None,
    digest: str | None = None,
) -> RunRecord | SkipRecord | None:
    """The ledger's record of a validated row (see the module docstring for the rules);
    `columns`: `_columns(row.source_columns)`, when the caller has it already;
    `record_of`: how a run's record is made of its header; `digest`: its row's
    (`read_row`)."""
    if row.status in OPEN_STATUSES:
        return None
    metrics = dict(row.metrics)
    if row.run_id.startswith("missing_env_") or (
        "missing_env" in metrics and row.status in ("failed", "incompatible")
    ):
        return _skip(row, "missing_env", columns, digest)
    recovered = metrics.get("reason") == STALE_REASON or (row.error or "").startswith(STALE_ERROR)
    if recovered and row.status in ("failed", "paused_unknown"):
        return _run(row, RunStatus.RECOVERED, row.error, kind, columns, record_of, digest)
    if row.status in SKIP_STATUSES:
        return _skip(row, row.status, columns, digest)
    if row.status == "succeeded":
        repair = _repair_reason(row)
        if repair is not None:
            error = row.error or repair
            return _run(row, RunStatus.FAILED, error, kind, columns, record_of, digest)
        return _run(row, RunStatus.SUCCEEDED, row.error, kind, columns, record_of, digest)
    return _run(row, RunStatus.FAILED, row.error, kind, columns, record_of, digest)


def _repair_reason(row: Row) -> str | None:
    """Why the orchestrator's own repairs turn this success into a failure, if they do."""
    m = row.metrics
    code = m.get("return_code", m.get("returncode"))
    if code in (None, 0):
        code = m.get("nonzero_return_code_with_result")
    if code in (None, 0):
        code = m.get("exit_code")
    exit_code = number(code)
    if exit_code is not None and int(exit_code) != 0:
        return f"Command produced a result JSON but exited with return code {int(exit_code)}"
    key = SAMPLE_KEYS.get(row.benchmark_id)
    if key is not None:
        value = number(m.get(key))
        if value is None or value <= 0:
            return (
                f"{row.benchmark_id} benchmark produced a zero-sample success artifact "
                f"({key}={value!r})"
            )
    return None


def _run(
    row: Row,
    status: RunStatus,
    error: str | None,
    kind: Kind,
    columns: dict[str, Any] | None,
    record_of: RecordOf | None = None,
    digest: str | None = None,
) -> RunRecord:
    metrics, tokens, metrics_stated = fold_metrics(row, kind)
    score = row.score if row.score is not None and math.isfinite(row.score) else None
    provenance: dict[str, Any] = {}
    attempt = row.attempt if row.attempt is not None else run_id_attempt(row.run_id)
    if attempt is not None:
        provenance["attempt"] = attempt
    if row.agent not in SNAPSHOT_AGENTS:
        provenance["ad_hoc_agent_label"] = True
    if status is not RunStatus.SUCCEEDED and score is not None:
        provenance["unsucceeded_with_score"] = True
    if row.benchmark_directory is not None:
        provenance["benchmark_directory"] = row.benchmark_directory
    check = signature_check(row)
    if check != "unverifiable":
        provenance["signature_check"] = check
    moments = {"started_at": _when(row.started_at), "ended_at": _when(row.ended_at)}
    stated_columns = _stated_columns(row, kind, columns, moments)
    if stated_columns:
        provenance["source_columns"] = stated_columns
    if status is RunStatus.RECOVERED:
        provenance["source_status"] = row.status
    if metrics_stated:
        provenance["metrics_stated"] = metrics_stated
    stated: dict[str, Any] = {
        "run_key": row.run_id,
        "benchmark": row.benchmark_id,
        "agent": row.agent,
        "provider": row.provider,
        "model": row.model,
        "status": status,
        "score": score,
        "unit": row.unit,
        "metrics": metrics,
        "tokens": tokens,
        "error": error,
        "provenance": provenance,
        "work_signature": row.signature,
        "directory": row.benchmark_directory,
    }
    if row.higher_is_better is not None:
        stated["higher_is_better"] = row.higher_is_better
    if row.extra_config is not None:
        stated["config"] = canonical(row.extra_config)
    for name, moment in moments.items():
        if moment is not None:
            stated[name] = moment
        elif getattr(row, name):
            provenance[name] = getattr(row, name)  # not a time we can read: kept as stated
    if row.duration_seconds is not None and math.isfinite(row.duration_seconds):
        stated["duration_seconds"] = max(0.0, row.duration_seconds)
    group = (row.source_columns or {}).get("run_group_id")
    header = RunHeader(**stated)
    key = group if isinstance(group, str) and group else None
    if record_of is not None:
        return record_of(header, key, digest)
    if digest is not None:
        return RunRecord(header=header, group_key=key, source_row_sha256=digest)
    return RunRecord(header=header, group_key=key)


def _skip(
    row: Row, reason: str, columns: dict[str, Any] | None, digest: str | None = None
) -> SkipRecord:
    why = row.metrics.get("reason")
    details = [str(why)] if isinstance(why, str) and why else []
    if row.error:
        details.append(row.error)
    provenance: dict[str, Any] = {"run_id": row.run_id, "status": row.status}
    if row.signature is not None:
        provenance["signature"] = row.signature
    # What the row was for, as stated: the orchestrator publishes an incompatible or
    # failed row (its comparison signature, a calibration baseline's extra_config).
    if row.extra_config is not None:
        provenance["extra_config"] = canonical(row.extra_config)
    if row.benchmark_directory is not None:
        provenance["benchmark_directory"] = row.benchmark_directory
    provenance["signature_check"] = signature_check(row)
    if row.metrics:  # the reason, the run it points to (existing_succeeded_run_id, ...)
        provenance["metrics"] = canonical(row.metrics)
    # The rest of the row as stated, so that an export writes the row the source wrote.
    for name in ("score", "unit", "error"):
        if getattr(row, name) is not None:
            provenance[name] = getattr(row, name)
    if row.higher_is_better is not None:
        provenance["higher_is_better"] = row.higher_is_better
    stated_columns = _stated_columns(row, "database", columns) or {}
    for (
        name
    ) in TELEMETRY_GROUPS:  # a skip's metrics are as stated: its top-level groups beside them
        top = getattr(row, name)
        if name != "token_metrics" and top is not None:
            stated_columns[name] = canonical(top)
    if stated_columns:
        provenance["source_columns"] = stated_columns
    if row.ended_at is not None:
        provenance["ended_at"] = row.ended_at
    if row.duration_seconds is not None:
        provenance["duration_seconds"] = row.duration_seconds
    group = (row.source_columns or {}).get("run_group_id")
    skipped_at = _when(row.started_at)
    if row.started_at is not None and skipped_at is None:
        provenance["started_at"] = row.started_at  # not a time we can read: kept as stated
    stated: dict[str, Any] = {} if digest is None else {"source_row_sha256": digest}
    return SkipRecord(
        **stated,
        config=canonical(row.extra_config) if row.extra_config is not None else {},
        work_signature=row.signature,
        skipped_at=skipped_at,
        attempt=row.attempt,
        benchmark=row.benchmark_id,
        agent=row.agent,
        provider=row.provider,
        model=row.model,
        reason=reason,
        detail="; ".join(details) or None,
        provenance=provenance,
        skip_key=row.run_id,
        group_key=group if isinstance(group, str) and group else None,
    )


def _columns(columns: dict[str, Any], kept: dict[str, Any] | None = None) -> dict[str, Any]:
    """The other columns as stated; a NULL column states nothing (the viewer drops it too).
    `kept`: what this gives, worked out already (the database reader's)."""
    if kept is not None:
        return kept
    found: dict[str, Any] = canonical({k: v for k, v in columns.items() if v is not None})
    return found


def _stated_columns(
    row: Row,
    kind: Kind,
    kept: dict[str, Any] | None = None,
    moments: dict[str, datetime | None] | None = None,
) -> dict[str, Any] | None:
    """`source_columns`: the row's other columns as stated (`_columns`), and what the
    ledger's header would read differently from the source (see the module docstring):
    the top-level telemetry groups unlike their nested copies, a NULL direction, and
    times whose text is not the ledger's form of them."""
    out = _columns(row.source_columns, kept) if row.source_columns else {}
    for name in TELEMETRY_GROUPS:
        top = getattr(row, name)
        if name == "token_metrics" or top:
            continue  # the raw token group is among the columns; another is in the header
        if top is not None:
            out[name] = canonical(top)  # an empty group: stated, but in no header
        elif _nested(row, name):
            out[name] = None  # the metrics' own copy stands in the header: no column
    if row.higher_is_better is None:
        out["higher_is_better"] = None
    for name in ("started_at", "ended_at"):
        text = getattr(row, name)
        moment = _when(text) if moments is None else moments[name]
        if moment is not None and _iso(moment) != text:
            out[name] = text
    return out or None


def _nested(row: Row, name: str) -> dict[str, Any] | None:
    """The metrics' own copy of a telemetry group, when it is a non-empty object."""
    inner = row.metrics.get(name)
    return inner if isinstance(inner, dict) and inner else None


def _iso(moment: datetime) -> str:
    """A time as the ledger writes it (UTC, `isoformat`)."""
    return moment.astimezone(UTC).isoformat()


def _when(text: str | None) -> datetime | None:
    """An orchestrator timestamp (ISO 8601; naive ones are UTC), or None."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def fold_metrics(
    row: Row, kind: Kind = "database"
) -> tuple[dict[str, Any], dict[str, int], dict[str, Any]]:
    """The run's metrics (the telemetry groups from the top-level ones, else the nested
    copies; a latest row's nested token_metrics left out: the orchestrator derives it when
    it writes the file), its token counts, and the stated nested groups the metrics
    replaced (None: the metrics had none)."""
    nested = row.metrics
    metrics = dict(nested)
    if kind == "snapshot":
        metrics.pop("token_metrics", None)
    groups: dict[str, dict[str, Any]] = {}
    for name in TELEMETRY_GROUPS:
        top = getattr(row, name)
        chosen = top if top else _nested(row, name)
        if chosen:
            groups[name] = chosen
    stated: dict[str, Any] = {}
    for name, group in groups.items():
        if name != "token_metrics" and metrics.get(name) != group:
            stated[name] = metrics.get(name)
            metrics[name] = group
    if row.provider.lower() == "mock" or row.model.lower() == "mock":
        metrics["mock"] = True  # the publishability gate flags mock runs
    tokens = token_counts(groups.get("token_metrics", {}), groups.get("cache_metrics"))
    return canonical(metrics), tokens, canonical(stated)


def signature_check(row: Row) -> str:
    """`matches`, `mismatch`, or `unverifiable` (the row lacks signature or config)."""
    if row.signature is None or row.extra_config is None or row.benchmark_directory is None:
        return "unverifiable"
    derived = derive_signature(
        row.benchmark_id,
        row.benchmark_directory,
        row.agent,
        row.provider,
        row.model,
        row.extra_config,
    )
    return "matches" if derived == row.signature else "mismatch"
