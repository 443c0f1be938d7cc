"""A head-to-head report of a target agent against a baseline: one event per report.

The whole report (rows, queues, gates, exit code) is the event's payload, so
`view-head-to-head` prints it again byte for byte, whatever the ledger learns
later. Like a comparison it names the ledger position and head hash it was made at.
"""

from __future__ import annotations

from typing import Any

from benchledger.domain.base import Event


class HeadToHeadRecorded(Event):
    report_id: str
    target: dict[str, Any]
    baseline: dict[str, Any]
    benchmarks: list[str]
    options: dict[str, Any]
    report: dict[str, Any]
    position: int
    head_sha256: str
    actor: str
