"""Result-file formats: one pure parser module per harness format."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from adapters.formats import native
from domain.errors import InputFormatError, UnknownFormatError
from domain.records import RunRecord


class Format(Protocol):
    NAME: str
    SYSTEM: str

    def detect(self, path: Path, head: bytes) -> bool: ...

    def parse(
        self, path: Path, data: bytes, defaults: dict[str, Any] | None = None
    ) -> Iterator[RunRecord]: ...


FORMATS: dict[str, Format] = {native.NAME: native}


def detect(path: Path, data: bytes) -> Format:
    head = data[:4096]
    for fmt in FORMATS.values():
        if fmt.detect(path, head):
            return fmt
    raise UnknownFormatError(
        str(path), f"not a known result format (known: {', '.join(sorted(FORMATS))})"
    )


def by_name(name: str) -> Format:
    try:
        return FORMATS[name]
    except KeyError:
        raise InputFormatError(
            "--format", f"unknown format '{name}' (known: {', '.join(sorted(FORMATS))})"
        ) from None
