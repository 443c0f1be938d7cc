"""Builders of realistic inputs that several tests share."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def run_json(
    benchmark: str = "bfcl",
    agent: str = "eliza",
    *,
    score: float | None = 0.5,
    status: str = "succeeded",
    cells: Sequence[dict[str, Any]] = (),
    **extra: Any,
) -> dict[str, Any]:
    """A native run document, as a user would write it."""
    doc: dict[str, Any] = {
        "schema": "benchledger/run@1",
        "benchmark": benchmark,
        "agent": agent,
        "provider": "cerebras",
        "model": "gpt-oss-120b",
        "status": status,
        "score": score,
        "unit": "accuracy",
        "started_at": "2026-05-12T10:15:00+00:00",
        "ended_at": "2026-05-12T10:21:41+00:00",
        "cells": list(cells),
    }
    doc.update(extra)
    return doc


def write_json(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc, indent=2))
    return path


def write_jsonl(path: Path, lines: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path
