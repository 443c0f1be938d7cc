"""Reading alwm's JSON files: every failure becomes an InputFormatError naming file and field."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from benchledger.adapters.formats import common
from benchledger.domain.errors import InputFormatError

M = TypeVar("M", bound=BaseModel)

# alwm's fixture mode pins every created_at / evaluated_at to the epoch (`--created-at`).
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def loads(path: Path, data: bytes) -> Any:
    return common.loads(str(path), data)


def read(path: Path) -> Any:
    """A JSON file the manifest points at; a missing or unreadable one is named."""
    return loads(path, common.read_bytes(path))


def validate(model: type[M], doc: Any, path: Path, prefix: str = "") -> M:
    if not isinstance(doc, dict):
        raise InputFormatError(str(path), "expected a JSON object", field=prefix or None)
    try:
        return model.model_validate(doc)
    except ValidationError as e:
        first = e.errors()[0]
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
        field = f"{prefix}{loc}".lstrip(".") or None
        raise InputFormatError(str(path), first["msg"], field=field) from None


def inside(base: Path, relpath: str, source: Path, field: str) -> Path:
    """`relpath` under `base`; one that is absolute or climbs out of the run is refused."""
    rel = Path(relpath)
    if rel.is_absolute() or ".." in rel.parts or "\0" in relpath:
        raise InputFormatError(str(source), f"'{relpath}' is not inside the run", field=field)
    return base / rel


def real_time(text: str | None, path: Path, field: str) -> datetime | None:
    """A stated UTC time, or None when absent or pinned to the epoch (not a real time)."""
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise InputFormatError(str(path), f"not an ISO 8601 time: {text!r}", field=field) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)  # alwm writes UTC ("*_utc", trailing Z)
    return None if value == EPOCH else value


def is_epoch(text: str | None) -> bool:
    """True for alwm's fixture-mode placeholder time."""
    if text is None:
        return False
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return False
    return (value if value.tzinfo else value.replace(tzinfo=UTC)) == EPOCH
