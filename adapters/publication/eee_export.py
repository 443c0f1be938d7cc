"""Runs as Every Eval Ever records (schema 0.2.1), in the datastore's layout.

Each run is one aggregate record, `data/<benchmark>/<developer>/<model>/<uuid>.json`,
its uuid derived from the run id so that exporting again rewrites the same file (and
leaves it untouched when nothing changed); a run with cells gets its instance-level
file beside it (`<uuid>_samples.jsonl`, the layout from 0.2.3 on), which the record
points to with its sha256. A run read from an Every Eval Ever record states again what
that record stated (source metadata, eval library, model info, source data, metric
config, score details); any other run states what the ledger knows of it. The schema
wants every `additional_details` / `details` value a string: other values are written
as their JSON text.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from benchledger.adapters.publication.eee_export_samples import instance_rows
from benchledger.adapters.publication.export_files import write_atomically

SCHEMA_VERSION = "0.2.1"
# The namespace of the records' uuids: uuid5 of the run id in it.
NAMESPACE = uuid.UUID("5b0e6a52-3a8f-4d63-9f0e-2c7d8e7f0e11")
SOURCE_TYPES = ("documentation", "evaluation_run")
RELATIONSHIPS = ("first_party", "third_party", "collaborative", "other")
SCORE_TYPES = ("binary", "continuous", "levels")
_UNSAFE = re.compile(r"[^A-Za-z0-9._+=@-]+")


@dataclass
class Receipt:
    """What an export wrote: files written, files already as they would be written."""

    records: int = 0
    samples: int = 0
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def export_runs(runs: Iterable[tuple[dict[str, Any], list[dict[str, Any]]]], out: Path) -> Receipt:
    """Write each (run row, its cells) under `out`."""
    receipt = Receipt()
    for run, cells in runs:
        record, folder = record_of(run)
        files: list[tuple[Path, bytes]] = []
        if cells:
            rows = instance_rows(run, record, cells)
            data = b"".join(json.dumps(row, sort_keys=True).encode() + b"\n" for row in rows)
            relative = folder / f"{record_uuid(run)}_samples.jsonl"
            record["detailed_evaluation_results"] = {
                "format": "jsonl",
                "file_path": relative.as_posix(),
                "hash_algorithm": "sha256",
                "checksum": hashlib.sha256(data).hexdigest(),
                "total_rows": len(rows),
            }
            files.append((out / relative, data))
            receipt.samples += 1
        # In the order converters write (schema_version, evaluation_id first), which is
        # how readers recognise a record from its first bytes.
        text = json.dumps(record, indent=2) + "\n"
        files.append((out / folder / f"{record_uuid(run)}.json", text.encode()))
        receipt.records += 1
        for path, data in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            changed = write_atomically(path, data)
            (receipt.written if changed else receipt.unchanged).append(str(path))
    return receipt


def record_uuid(run: dict[str, Any]) -> str:
    return str(uuid.uuid5(NAMESPACE, str(run["run_id"])))


def _segment(text: str) -> str:
    """A path segment of the layout: the name with unsafe characters as `_`."""
    cleaned = _UNSAFE.sub("_", text).strip("._")
    return cleaned or "unknown"


def record_of(run: dict[str, Any]) -> tuple[dict[str, Any], Path]:
    """The aggregate record of a run (before its samples pointer) and its folder."""
    provenance = run.get("provenance") or {}
    stated = run.get("source_format") == "eee"  # read from a record: state it again
    model = str(run["model"])
    developer = provenance.get("developer") if stated else None
    developer = developer or (model.split("/", 1)[0] if "/" in model else "unknown")
    model_part = model.split("/", 1)[1] if "/" in model else model
    folder = Path("data", _segment(run["benchmark"]), _segment(developer), _segment(model_part))
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": provenance.get("evaluation_id") if stated else None,
        "retrieved_timestamp": _retrieved(run, provenance if stated else {}),
        "source_metadata": _source_metadata(run, provenance if stated else {}),
        "eval_library": _eval_library(run, provenance if stated else {}),
        "model_info": _model_info(run, str(developer)),
        "evaluation_results": [_result(run, provenance if stated else {})],
    }
    if not record["evaluation_id"]:
        record["evaluation_id"] = f"{run['benchmark']}/{model}/{run['run_id']}"
    if run.get("started_at"):
        record["evaluation_timestamp"] = _epoch(run["started_at"])
    return record, folder


def _epoch(iso: str) -> str:
    return repr(datetime.fromisoformat(iso).timestamp())


def _retrieved(run: dict[str, Any], provenance: dict[str, Any]) -> str:
    stated = provenance.get("retrieved_timestamp")
    if isinstance(stated, str) and stated:
        return stated
    return _epoch(run.get("recorded_at") or run.get("started_at") or "1970-01-01T00:00:00+00:00")


def _strings(value: Any) -> dict[str, str]:
    """`additional_details`: every value a string (other JSON values as their JSON text)."""
    if not isinstance(value, dict):
        return {}
    return {
        str(k): v if isinstance(v, str) else json.dumps(v, sort_keys=True)
        for k, v in value.items()
        if v is not None
    }


def _source_metadata(run: dict[str, Any], provenance: dict[str, Any]) -> dict[str, Any]:
    stated = provenance.get("source_metadata") or {}
    old = provenance.get("evaluation_source") or {}
    source_type = stated.get("source_type")
    if source_type not in SOURCE_TYPES:
        leaderboard = old.get("evaluation_source_type") == "leaderboard"
        source_type = "documentation" if leaderboard or provenance else "evaluation_run"
    relationship = stated.get("evaluator_relationship")
    metadata: dict[str, Any] = {
        "source_name": stated.get("source_name")
        or old.get("evaluation_source_name")
        or run.get("source")
        or "benchledger",
        "source_type": source_type,
        "source_organization_name": stated.get("source_organization_name") or "unknown",
        "evaluator_relationship": relationship if relationship in RELATIONSHIPS else "other",
    }
    for key in ("source_organization_url", "source_organization_logo_url"):
        if isinstance(stated.get(key), str):
            metadata[key] = stated[key]
    if details := _strings(stated.get("additional_details")):
        metadata["additional_details"] = details
    return metadata


def _eval_library(run: dict[str, Any], provenance: dict[str, Any]) -> dict[str, Any]:
    stated = provenance.get("eval_library") or {}
    library: dict[str, Any] = {
        "name": str(stated.get("name") or run.get("harness") or run["agent"]),
        "version": str(stated.get("version") or run.get("agent_version") or "unknown"),
    }
    if details := _strings(stated.get("additional_details")):
        library["additional_details"] = details
    return library


def _model_info(run: dict[str, Any], developer: str) -> dict[str, Any]:
    config = run.get("config") or {}
    found = config.get("model_info")
    stated: dict[str, Any] = found if isinstance(found, dict) else {}
    info: dict[str, Any] = {
        "name": str(config.get("model_name") or run["model"]),
        "id": str(run["model"]),
        "developer": developer,
    }
    if isinstance(stated.get("inference_platform"), str):
        info["inference_platform"] = stated["inference_platform"]
    engine = stated.get("inference_engine")
    if isinstance(engine, dict):
        info["inference_engine"] = {
            k: str(v) for k, v in engine.items() if k in ("name", "version") and v is not None
        }
    rest = {
        k: v
        for k, v in stated.items()
        if k not in ("inference_platform", "inference_engine", "additional_details")
    }
    details = {**_strings(rest), **_strings(stated.get("additional_details"))}
    if run.get("provider") and "provider" not in details:
        details["provider"] = str(run["provider"])
    if details:
        info["additional_details"] = details
    return info


def _source_data(run: dict[str, Any], provenance: dict[str, Any]) -> dict[str, Any]:
    stated = provenance.get("source_data")
    stated = stated if isinstance(stated, dict) else {}
    name = str(stated.get("dataset_name") or run["benchmark"])
    data: dict[str, Any]
    if isinstance(stated.get("hf_repo"), str):
        data = {"dataset_name": name, "source_type": "hf_dataset", "hf_repo": stated["hf_repo"]}
    elif isinstance(stated.get("url"), list) and stated["url"]:
        data = {"dataset_name": name, "source_type": "url", "url": [str(u) for u in stated["url"]]}
    else:
        return {"dataset_name": name, "source_type": "other"}
    if isinstance(stated.get("samples_number"), int):
        data["samples_number"] = stated["samples_number"]
    if details := _strings(stated.get("additional_details")):
        data["additional_details"] = details
    return data


def _result(run: dict[str, Any], provenance: dict[str, Any]) -> dict[str, Any]:
    metrics = dict(run.get("metrics") or {})
    stated_metric = provenance.get("metric_config") or {}
    metric: dict[str, Any] = {"lower_is_better": not run.get("higher_is_better", True)}
    description = stated_metric.get("evaluation_description") or run.get("unit")
    if isinstance(description, str) and description:
        metric["evaluation_description"] = description
    for key in ("min_score", "max_score"):
        value = metrics.pop(key, None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            metric[key] = value
    levels = stated_metric.get("level_names")
    if isinstance(levels, list) and all(isinstance(n, str) for n in levels):
        metric["level_names"] = levels
    if isinstance(stated_metric.get("has_unknown_level"), bool):
        metric["has_unknown_level"] = stated_metric["has_unknown_level"]
    # The schema asks the levels of a `levels` score and the range of a `continuous` one:
    # without them the type stays among the details.
    score_type = metrics.get("score_type")
    needs = {
        "levels": ("level_names", "has_unknown_level"),
        "continuous": ("min_score", "max_score"),
    }
    if score_type in SCORE_TYPES and all(k in metric for k in needs[str(score_type)]):
        metric["score_type"] = metrics.pop("score_type")
    elif "min_score" in metric and "max_score" in metric:
        metric["score_type"] = "continuous"
    else:
        # Where a score states no type: one the schema accepts, a range holding the score
        # and the usual one, and a detail saying it was not stated.
        score = run.get("score") or 0.0
        metric |= {"score_type": "continuous", "min_score": min(0.0, score)}
        metric["max_score"] = max(1.0, score)
        metrics["score_range_stated"] = False
    for key in ("metric_id", "metric_name", "metric_kind", "metric_unit"):
        if isinstance(stated_metric.get(key), str):
            metric[key] = stated_metric[key]
    if "metric_name" not in metric and run.get("unit"):
        metric["metric_name"] = str(run["unit"])
    score = run.get("score")
    details: dict[str, Any] = {"score": score if score is not None else 0.0}
    if score is None:
        metrics["score_stated"] = False
    uncertainty = metrics.pop("uncertainty", None)
    if isinstance(uncertainty, dict):
        details["uncertainty"] = uncertainty
    if strings := _strings(metrics):
        details["details"] = strings
    result: dict[str, Any] = {
        "evaluation_result_id": str(provenance.get("evaluation_result_id") or run["run_id"]),
        "evaluation_name": str(provenance.get("evaluation_name") or run["benchmark"]),
        "source_data": _source_data(run, provenance),
        "metric_config": metric,
        "score_details": details,
    }
    generation = _generation_config(run)
    if generation:
        result["generation_config"] = generation
    return result


def _generation_config(run: dict[str, Any]) -> dict[str, Any]:
    """The run's config: a generation config it was imported with, else its settings."""
    config = run.get("config") or {}
    stated = config.get("generation_config")
    if isinstance(stated, dict):
        out: dict[str, Any] = {}
        args = stated.get("generation_args")
        args = args if isinstance(args, dict) else {}
        plain = {k: v for k, v in args.items() if _plain_arg(k, v)}
        if plain:
            out["generation_args"] = plain
        # What the schema shapes otherwise than a converter wrote it (eval plans, tools)
        # is kept, as JSON text, among the details.
        details = _strings({k: v for k, v in args.items() if k not in plain})
        details |= _strings(stated.get("additional_details"))
        if isinstance(stated.get("additional_details"), str):
            details["additional_details"] = stated["additional_details"]
        if details:
            out["additional_details"] = details
        return out
    rest = {k: v for k, v in config.items() if k not in ("model_info", "model_name")}
    return {"additional_details": _strings(rest)} if rest else {}


_ARG_TYPES: dict[str, tuple[type, ...]] = {
    "temperature": (int, float),
    "top_p": (int, float),
    "top_k": (int, float),
    "max_tokens": (int,),
    "execution_command": (str,),
    "reasoning": (bool,),
    "prompt_template": (str,),
}


def _plain_arg(key: str, value: Any) -> bool:
    """A generation argument the schema types as a scalar, of that type."""
    types = _ARG_TYPES.get(key)
    if types is None or value is None:
        return False
    if isinstance(value, bool) and bool not in types:
        return False
    return isinstance(value, types) and not (
        isinstance(value, int) and key == "max_tokens" and value < 1
    )
