"""What both BFCL layouts share: who ran what (from the caller's defaults and the files'
own names) and a validated run header."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchledger.domain.errors import InputFormatError
from benchledger.domain.model_identity import bfcl_entry
from benchledger.domain.records import RunHeader

UNKNOWN = "unknown"
UNIT = "accuracy"


def identity(model: str, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """Agent, provider and model of a run whose file names only the model.

    BFCL drives the model itself, through the handler of its model registry entry, so
    the entry is what is under test: it is the agent unless the caller names one (an
    agent stack that wrapped the model). No file states an agent, so the entry is named
    one way whichever file names its model (`Claude-Sonnet-4-5-20250929 (FC)` in the
    tables, `claude-sonnet-4-5-20250929-FC` in the score files: `bfcl_entry`); the model
    stays as the file states it. No BFCL file names a provider."""
    return {
        "agent": defaults.get("agent") or bfcl_entry(model),
        "provider": defaults.get("provider") or "",
        "model": model,
        "config": dict(defaults.get("config") or {}),
    }


def header(path: Path, fields: dict[str, Any]) -> RunHeader:
    """A finished run's header; a field the ledger cannot hold is refused by name."""
    try:
        return RunHeader.model_validate({"status": "succeeded", "unit": UNIT, **fields})
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or None
        raise InputFormatError(str(path), first["msg"], field=where) from None


def sorted_json(value: Any) -> Any:
    """A decoded JSON value with its object keys sorted, so that a file that only
    reorders keys states the same record."""
    if isinstance(value, dict):
        return {str(k): sorted_json(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [sorted_json(v) for v in value]
    return value
