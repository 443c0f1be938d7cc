"""Placeholder: the alwm parser is being written; it recognises nothing yet."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from domain.errors import InputFormatError
from domain.records import RunRecord, SkipRecord

NAME = "alwm"
SYSTEM = "alwm"


def detect(path: Path, head: bytes) -> bool:
    return False


def parse(
    path: Path, data: bytes, defaults: dict[str, Any] | None = None
) -> Iterator[RunRecord | SkipRecord]:
    raise InputFormatError(str(path), "the alwm parser is not available yet")
    yield  # pragma: no cover
