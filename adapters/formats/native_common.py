"""What every part of the native format reads with: strict JSON, errors naming the field."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from benchledger.adapters.formats.common import loads
from benchledger.domain.errors import InputFormatError


def strict_loads(name: str, text: str, line: int | None = None) -> Any:
    # Strict: a key stated twice is refused rather than the last one silently winning.
    return loads(name, text, line=line, unique_keys=True)


def field_error(
    name: str, error: ValidationError, *, line: int | None, prefix: str = ""
) -> InputFormatError:
    first = error.errors()[0]
    loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"]).lstrip(".")
    field = f"{prefix}{loc}" if loc else prefix.rstrip(".") or None
    return InputFormatError(name, first["msg"], line=line, field=field)
