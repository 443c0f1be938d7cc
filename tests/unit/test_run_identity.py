"""Keys derived for runs that bring none of their own never change, signatures or not:
a run imported again (from another file) after an upgrade is still the same run. The
expected keys are those the ledger derived before it adopted the orchestrator's
signatures."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from benchledger.adapters.formats import junit
from benchledger.domain.records import RunHeader, RunRecord, RunStatus
from tests.unit.test_format_junit import PYTEST, SUREFIRE


def test_a_keyless_run_is_keyed_by_its_work_as_before_and_its_start() -> None:
    header = RunHeader(
        benchmark="bfcl",
        agent="eliza",
        provider="cerebras",
        model="gpt-oss-120b",
        config={"limit": 10},
        status=RunStatus.SUCCEEDED,
        started_at=datetime(2026, 5, 12, 10, 15, tzinfo=UTC),
    )
    assert header.natural_key() == (
        "0ece47c90a86dbe069913e05c7266d5241c99942b9203408ae1d51e5314ea65e@2026-05-12T10:15:00+00:00"
    )


def test_junit_run_keys_are_as_before() -> None:
    keys = []
    for text in (PYTEST, SUREFIRE):
        [record] = junit.parse(Path("report.xml"), text.encode(), {"agent": "eliza", "model": "m"})
        assert isinstance(record, RunRecord)
        keys.append(record.header.run_key)
    assert keys == [
        "pytest tests@2025-03-04T09:11:12.345678+00:00/895239390320",
        "com.example.CalculatorTest@content:f51e0c2222806052/4a8e01b5a71f",
    ]
