"""One ElizaOS orchestrator run row, from whichever file states it, as a ledger record.

The orchestrator states a run in several files: its SQLite row, a latest/,
quarantine/ or baselines/ row, a viewer_data.json run and a comparison file's
run. The ledger treats any difference in a run's record as a conflict, so every
source is reduced to the facts that ALL of them carry (ORCHESTRATOR.md §1, §4,
§5, §7), in one canonical form:

- run_key is the orchestrator's run_id; started_at is the UTC second the
  orchestrator wrote into the run_id (exact start/end times are only in the
  database and viewer, so they are left out); attempt comes from the run_id too.
- config is empty: extra_config is missing from E1 latest rows, quarantine rows
  and comparison files. Where a source has them, the orchestrator's signature,
  its check against the re-derived one, extra_config and benchmark_directory go
  into the record's supplement (kept in the run's provenance, not part of its
  content), so the first file that brings the run records them.
- metrics are the row's own metrics without the nested telemetry copies; the
  telemetry groups come from the row's top-level groups (the database columns),
  else from the nested copies. Token counts are reduced to canonical names
  (input_tokens -> prompt_tokens, ...), zero counts (the orchestrator's "not
  measured") and estimated counts are left out.
- statuses: succeeded / failed as stated, after applying the orchestrator's own
  repairs (a success with a nonzero return code or with zero samples is a
  failure; its score is kept), so rows written before and after the repair
  agree; stale-recovered rows are `recovered` runs; skipped, incompatible,
  paused*, missing_env rows are skips; queued / running rows are not finished
  and yield nothing.
- absolute host paths inside metrics and error text are cut to their part
  below the results root, else to their base name.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchledger.adapters.formats.orchestrator_facts import (
    canonical,
    derive_signature,
    number,
    run_id_facts,
    strip_host_paths,
    token_counts,
)
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunHeader, RunRecord, RunStatus, SkipRecord

GROUPS = ("cache_metrics", "performance_metrics", "trajectory_summary", "token_metrics")
CALIBRATION_AGENTS = frozenset({"perfect_v1", "wrong_v1", "half_v1"})
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
    # Stated by the database (and some row files); a skip keeps them as its own.
    started_at: str | None = None
    attempt: int | None = None
    # The database's other columns, as they are (see orchestrator_sources).
    source_columns: dict[str, Any] | None = None
    cache_metrics: dict[str, Any] | None = None
    performance_metrics: dict[str, Any] | None = None
    trajectory_summary: dict[str, Any] | None = None
    token_metrics: dict[str, Any] | None = None


def read_row(path: str, raw: Any, where: str = "") -> RunRecord | SkipRecord | None:
    """The ledger's record of one source row: a run, a skip, or None for a run still in
    progress; a malformed row raises InputFormatError naming `where` + the field."""
    if not isinstance(raw, dict):
        raise InputFormatError(path, "expected a JSON object (one run row)", field=where or None)
    run_id = raw.get("run_id")
    about = f"run '{run_id}': " if isinstance(run_id, str) and where else ""
    try:
        return to_record(Row.model_validate(raw))
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise InputFormatError(path, about + first["msg"], field=f"{where}{loc}") from None
    except UnicodeEncodeError:
        message = "holds a string that is not valid Unicode (a lone surrogate escape)"
        raise InputFormatError(path, about + message, field=f"{where}metrics") from None


def to_record(row: Row) -> RunRecord | SkipRecord | None:
    """The ledger's record of a validated row (see the module docstring for the rules)."""
    if row.status in OPEN_STATUSES:
        return None
    metrics = dict(row.metrics)
    if row.run_id.startswith("missing_env_") or (
        "missing_env" in metrics and row.status in ("failed", "incompatible")
    ):
        return _skip(row, "missing_env")
    recovered = metrics.get("reason") == STALE_REASON or (row.error or "").startswith(STALE_ERROR)
    if recovered and row.status in ("failed", "paused_unknown"):
        return _run(row, RunStatus.RECOVERED, row.error)
    if row.status in SKIP_STATUSES:
        return _skip(row, row.status)
    if row.status == "succeeded":
        repair = _repair_reason(row)
        if repair is not None:
            return _run(row, RunStatus.FAILED, row.error or repair)
        return _run(row, RunStatus.SUCCEEDED, row.error)
    return _run(row, RunStatus.FAILED, row.error)


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


def _run(row: Row, status: RunStatus, error: str | None) -> RunRecord:
    metrics, tokens = fold_metrics(row)
    score = row.score if row.score is not None and math.isfinite(row.score) else None
    started, attempt = run_id_facts(row.run_id)
    provenance: dict[str, Any] = {}
    if attempt is not None:
        provenance["attempt"] = attempt
    if row.agent not in SNAPSHOT_AGENTS:
        provenance["ad_hoc_agent_label"] = True
    if status is not RunStatus.SUCCEEDED and score is not None:
        provenance["unsucceeded_with_score"] = True
    header = RunHeader(
        run_key=row.run_id,
        benchmark=row.benchmark_id,
        agent=row.agent,
        provider=row.provider,
        model=row.model,
        started_at=started,
        status=status,
        score=score,
        unit=row.unit,
        higher_is_better=True if row.higher_is_better is None else row.higher_is_better,
        metrics=metrics,
        tokens=tokens,
        error=strip_host_paths(error) if error is not None else None,
        provenance=provenance,
    )
    return RunRecord(header=header, supplement=_supplement(row))


def _supplement(row: Row) -> dict[str, Any]:
    """Facts only the richer sources (database, viewer_data, E2 rows) carry."""
    facts: dict[str, Any] = {
        "source_signature": row.signature,
        "signature_check": signature_check(row),
        "extra_config": row.extra_config,
        "benchmark_directory": row.benchmark_directory,
        "attempt": row.attempt,
        "started_at": row.started_at,  # exact, as stated; the header has the second
        "source_columns": canonical(strip_host_paths(row.source_columns))
        if row.source_columns
        else None,
    }
    return {k: v for k, v in facts.items() if v is not None}


def _skip(row: Row, reason: str) -> SkipRecord:
    why = row.metrics.get("reason")
    details = [str(why)] if isinstance(why, str) and why else []
    if row.error:
        details.append(strip_host_paths(row.error))
    provenance: dict[str, Any] = {"run_id": row.run_id, "status": row.status}
    if row.signature is not None:
        provenance["signature"] = row.signature
    provenance["signature_check"] = signature_check(row)
    if row.metrics:  # the reason, the run it points to (existing_succeeded_run_id, ...)
        provenance["metrics"] = canonical(strip_host_paths(row.metrics))
    if row.source_columns:
        provenance["source_columns"] = canonical(strip_host_paths(row.source_columns))
    skipped_at = _when(row.started_at)
    if row.started_at is not None and skipped_at is None:
        provenance["started_at"] = row.started_at  # not a time we can read: kept as stated
    return SkipRecord(
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
    )


def _when(text: str | None) -> datetime | None:
    """An orchestrator timestamp (ISO 8601; naive ones are UTC), or None."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def fold_metrics(row: Row) -> tuple[dict[str, Any], dict[str, int]]:
    """Metrics without nested telemetry copies, plus the telemetry groups; and token counts."""
    nested = row.metrics
    metrics = {k: v for k, v in nested.items() if k not in GROUPS}
    groups: dict[str, dict[str, Any]] = {}
    for name in GROUPS:
        top = getattr(row, name)
        inner = nested.get(name)
        chosen = top if top else inner if isinstance(inner, dict) and inner else None
        if chosen:
            groups[name] = chosen
    token_group = groups.pop("token_metrics", {})
    for name, group in groups.items():
        metrics[name] = group
    if row.provider.lower() == "mock" or row.model.lower() == "mock":
        metrics["mock"] = True  # the publication rules keep mock runs out of `latest`
    return canonical(strip_host_paths(metrics)), token_counts(
        token_group, groups.get("cache_metrics")
    )


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
