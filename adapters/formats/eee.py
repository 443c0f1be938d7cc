"""Every Eval Ever (evaleval/every_eval_ever) aggregate records, schema 0.0.1 to 0.3.0.

A record (`data/<benchmark>/<developer>/<model>/<uuid>.json`) is one model's results
from one source; each entry of `evaluation_results` is a run. `evaluation_id` is no key
(two files, two checkpoints or precisions, can share it), so the run key is the file's
uuid (its name) with the result's `evaluation_result_id`, else its index; an entry
repeated byte for byte in a record is one run. The benchmark is the result's
`evaluation_name`, or for a converted evaluation run (`source_type: evaluation_run`),
whose results are named after a scorer, the dataset's name. The score is
`score_details.score` as stated, its unit the metric's name (else its description,
else `score_type`), its direction `lower_is_better`. The model is `model_info.id`
(resolved to a `model_id` by the ledger's model identity rules); its other details
and the generation config are the run's config; source metadata, eval library, source
data, metric config and timestamps are provenance; score details and uncertainty are
metrics. The agent is the eval library (required from 0.2.1), else the source's name.
Time is the result's `evaluation_timestamp`, else the record's, else when the source
was retrieved. Per-sample data (eee_samples) are the cells of the result it names.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchledger.adapters.formats import eee_samples
from benchledger.adapters.formats.common import loads, read_bytes
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell, RunHeader, RunRecord, RunStatus
from benchledger.domain.signatures import sha256_hex

NAME = "eee"
SYSTEM = "every_eval_ever"
AGENT = "every_eval_ever"

_HEAD = re.compile(rb'\A\s*\{\s*"schema_version"\s*:\s*"\d+\.\d+\.\d+"\s*,\s*"evaluation_id"\s*:')
_VERSION = re.compile(rb'"schema_version"\s*:\s*"\d+\.\d+\.\d+"')
_MARKERS = (
    b'"model_info"',
    b'"evaluation_results"',
    b'"retrieved_timestamp"',
    b'"source_metadata"',
)
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
# Where a RunHeader field comes from, to name it when the derived value is refused.
SOURCE_FIELDS = {"model": "model_info.id", "benchmark": "evaluation_name", "agent": "eval_library"}
_MODEL_NAMED = ("name", "id", "developer")


def detect(path: Path, head: bytes) -> bool:
    """A record: a JSON object stating `schema_version` and `evaluation_id` (converters
    write them first) beside another of the record's own keys."""
    if path.suffix.lower() != ".json":
        return False
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if _HEAD.match(text):
        return True
    return (
        text.startswith(b"{")
        and _VERSION.search(text) is not None
        and b'"evaluation_id"' in text
        and any(marker in text for marker in _MARKERS)
    )


def members(path: Path) -> list[Path]:
    """The instance-level file the record points to, when it is there."""
    try:
        record = loads(str(path), read_bytes(path))
    except (InputFormatError, OSError):
        return []
    pointer = record.get("detailed_evaluation_results") if isinstance(record, dict) else None
    file_path = pointer.get("file_path") if isinstance(pointer, dict) else None
    if not isinstance(file_path, str) or not file_path:
        return []
    found = eee_samples.samples_file(path, file_path)
    return [found] if found is not None else []


def parse(path: Path, data: bytes, defaults: dict[str, Any] | None = None) -> Iterator[RunRecord]:
    name = str(path)
    record = loads(name, data)
    if not isinstance(record, dict):
        raise InputFormatError(name, "expected a JSON object (an Every Eval Ever record)")
    results = record.get("evaluation_results")
    if not isinstance(results, list) or not results:
        raise InputFormatError(name, "must be a non-empty array", field="evaluation_results")
    common = _Common.of(name, path, record)
    cells = eee_samples.result_cells(name, path, record, results)
    seen: set[str] = set()
    for i, result in enumerate(results):
        if not isinstance(result, dict):
            raise InputFormatError(name, "must be an object", field=f"evaluation_results[{i}]")
        digest = sha256_hex(repr(sorted_items(result)).encode())
        if digest in seen:
            continue  # the same entry stated twice (HELM conversions repeat them)
        seen.add(digest)
        yield _run(name, common, i, result, cells.get(i, []), defaults or {})


def sorted_items(value: Any) -> Any:
    """A JSON value in a canonical order, to tell a repeated entry from a distinct one."""
    if isinstance(value, dict):
        return sorted((k, sorted_items(v)) for k, v in value.items())
    if isinstance(value, list):
        return [sorted_items(v) for v in value]
    return (type(value).__name__, value)


@dataclass(frozen=True)
class _Common:
    """What a record states for all its results."""

    model: str
    agent: str
    key: str
    config: dict[str, Any]
    provenance: dict[str, Any]
    evaluation_run: bool
    timestamp: Any
    retrieved: Any
    source_data: Any

    @classmethod
    def of(cls, name: str, path: Path, record: dict[str, Any]) -> _Common:
        model_info = _object(name, record.get("model_info"), "model_info")
        model = model_info.get("id") or model_info.get("name")
        if not isinstance(model, str) or not model.strip():
            raise InputFormatError(name, "must be a non-empty string", field="model_info.id")
        source = _object(name, record.get("source_metadata") or {}, "source_metadata")
        library = _object(name, record.get("eval_library") or {}, "eval_library")
        old_source = _object(name, record.get("evaluation_source") or {}, "evaluation_source")
        agent = (
            library.get("name")
            or source.get("source_name")
            or old_source.get("evaluation_source_name")
            or AGENT
        )
        config: dict[str, Any] = {}
        details = {k: v for k, v in model_info.items() if k not in _MODEL_NAMED and v is not None}
        if details:
            config["model_info"] = details
        if model_info.get("name") not in (None, model):
            config["model_name"] = model_info["name"]
        provenance: dict[str, Any] = {
            "schema_version": record.get("schema_version"),
            "evaluation_id": record.get("evaluation_id"),
            "record": path.stem,
            "developer": model_info.get("developer"),
        }
        for key in (
            "source_metadata",
            "eval_library",
            "evaluation_source",
            "retrieved_timestamp",
            "evaluation_timestamp",
            "detailed_evaluation_results",
        ):
            if record.get(key) is not None:
                provenance[key] = record[key]
        if isinstance(record.get("source_data"), (list, dict)):
            provenance["source_data"] = record["source_data"]
        return cls(
            model=model,
            agent=str(agent),
            key=path.stem if _UUID.match(path.stem) else str(record.get("evaluation_id") or path),
            config=config,
            provenance={k: v for k, v in provenance.items() if v is not None},
            evaluation_run=source.get("source_type") == "evaluation_run",
            timestamp=record.get("evaluation_timestamp"),
            retrieved=record.get("retrieved_timestamp"),
            source_data=record.get("source_data"),
        )


def _object(name: str, value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputFormatError(name, "must be an object", field=field)
    return value


def _run(
    name: str,
    common: _Common,
    index: int,
    result: dict[str, Any],
    cells: list[Cell],
    defaults: dict[str, Any],
) -> RunRecord:
    at = f"evaluation_results[{index}]"
    metric = _object(name, result.get("metric_config") or {}, f"{at}.metric_config")
    details = _object(name, result.get("score_details"), f"{at}.score_details")
    score = details.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        raise InputFormatError(name, "must be a finite number", field=f"{at}.score_details.score")
    stated_details = details.get("details")
    if isinstance(stated_details, dict) and stated_details.get("score_stated") == "false":
        score = None  # export-eee's mark of a run the ledger holds no score for
    source_data = result.get("source_data")
    if not isinstance(source_data, dict):  # before 0.2.0 the record states it once
        source_data = common.source_data
    dataset = source_data.get("dataset_name") if isinstance(source_data, dict) else None
    evaluation_name = result.get("evaluation_name")
    benchmark = dataset if common.evaluation_run and dataset else evaluation_name
    result_id = result.get("evaluation_result_id")
    config = dict(common.config)
    if result.get("generation_config") is not None:
        config["generation_config"] = result["generation_config"]
    metrics = {k: v for k, v in details.items() if k != "score" and v is not None}
    for key in ("score_type", "min_score", "max_score"):
        if metric.get(key) is not None:
            metrics[key] = metric[key]
    provenance = dict(common.provenance)
    provenance |= {
        "evaluation_result_index": index,
        "evaluation_name": evaluation_name,
        "metric_config": metric,
    }
    for key in ("evaluation_result_id", "source_data", "evaluation_timestamp"):
        if result.get(key) is not None:
            provenance[key] = result[key]
    when = _time(name, result.get("evaluation_timestamp"), f"{at}.evaluation_timestamp")
    when = when or _time(name, common.timestamp, "evaluation_timestamp")
    when = when or _time(name, common.retrieved, "retrieved_timestamp")
    fields: dict[str, Any] = {
        "run_key": f"{common.key}#{result_id if result_id else index}",
        "benchmark": benchmark,
        "agent": common.agent,
        "model": common.model,
        "config": config,
        "started_at": when,
        "status": RunStatus.SUCCEEDED,
        "score": None if score is None else float(score),
        "unit": _unit(metric),
        "higher_is_better": metric.get("lower_is_better") is not True,
        "metrics": metrics,
        "provenance": provenance,
    }
    try:
        header = RunHeader.model_validate({**defaults, **fields})
    except ValidationError as e:
        first = e.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else None
        raise InputFormatError(
            name, first["msg"], field=f"{at}.{SOURCE_FIELDS.get(field or '', field)}"
        ) from None
    return RunRecord(header=header, cells=tuple(cells))


def _unit(metric: dict[str, Any]) -> str | None:
    for key in ("metric_name", "metric_id"):
        if isinstance(metric.get(key), str) and metric[key]:
            return str(metric[key])
    description = metric.get("evaluation_description")
    if isinstance(description, str) and 0 < len(description) <= 40:
        return description
    score_type = metric.get("score_type")
    return score_type if isinstance(score_type, str) else None


def _time(name: str, value: Any, field: str) -> datetime | None:
    """An epoch-seconds string (or number), or an ISO-8601 time."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise InputFormatError(name, "must be a time (epoch seconds or ISO 8601)", field=field)
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = datetime.fromisoformat(str(value))
        except ValueError:
            raise InputFormatError(name, f"not a time: {str(value)[:40]!r}", field=field) from None
        return when if when.tzinfo else when.replace(tzinfo=UTC)
    if not math.isfinite(seconds) or not 0 <= seconds < 1e11:
        raise InputFormatError(name, "epoch seconds out of range", field=field)
    return datetime.fromtimestamp(seconds, tz=UTC)
