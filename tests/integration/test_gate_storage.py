"""Gate verdicts stored compactly: a repeated check of a ledger with many findings adds
a small verdict, not its findings again; the findings stay readable."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Invoke
from tests.helpers import run_json, write_json

BENCHMARKS = 40
AGENTS = [f"agent-{n:02d}" for n in range(50)]
# Every benchmark ran by one agent and requires all fifty: 40 x 49 missing cells.
REQUIRED = ("--required-agents", ",".join(AGENTS))


def stored_bytes(db: Path) -> int:
    """The bytes of every stored event: what the ledger keeps for good."""
    with closing(sqlite3.connect(db)) as conn:
        return int(conn.execute("SELECT sum(length(state)) FROM stored_events").fetchone()[0])


def rows(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql, params).fetchall()


@pytest.fixture
def many(invoke: Invoke, tmp_path: Path, db: Path) -> Invoke:
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    paths = [
        str(
            write_json(
                inputs / f"b{n}.json", run_json(f"bench-{n:02d}", AGENTS[0], run_key=f"r{n}")
            )
        )
        for n in range(BENCHMARKS)
    ]
    invoke("import", *paths)
    return invoke


def readiness(invoke: Invoke, *args: str) -> dict[str, Any]:
    args = ("gate", "readiness", "--skip-runtime-gates", *REQUIRED, *args, "--json")
    verdict: dict[str, Any] = json.loads(invoke(*args, expect=1).stdout)
    return verdict


class TestRepeatedChecksOfALargeLedger:
    def test_three_verdicts_store_fewer_bytes_than_their_findings_once(
        self, many: Invoke, db: Path
    ) -> None:
        before = stored_bytes(db)
        first = readiness(many)
        after_first = stored_bytes(db)
        readiness(many)
        readiness(many)
        grown = stored_bytes(db) - before
        findings = len(json.dumps(first["findings"]).encode())
        assert len(first["findings"]) > BENCHMARKS * (len(AGENTS) - 1)
        assert findings > 200_000  # stored inline, three verdicts would add 600 kB
        assert grown < findings / 10
        # The repeated checks find the same: each adds a verdict of a few hundred bytes.
        assert stored_bytes(db) - after_first < 2 * 2_000

    def test_the_read_model_holds_each_distinct_set_of_findings_once(
        self, many: Invoke, db: Path
    ) -> None:
        first = readiness(many)
        second = readiness(many)
        narrower = readiness(many, "--include-benchmarks", "bench-00")
        verdicts = rows(db, "SELECT verdict_id, findings, findings_sha256 FROM gate_verdicts")
        counts = {v: n for v, n, _ in verdicts}
        digests = {v: d for v, _, d in verdicts}
        assert counts[first["verdict_id"]] == len(first["findings"])
        assert digests[first["verdict_id"]] == digests[second["verdict_id"]]
        assert digests[narrower["verdict_id"]] != digests[first["verdict_id"]]
        [(stored,)] = rows(db, "SELECT count(*) FROM gate_findings")
        assert stored == len(first["findings"]) + len(narrower["findings"])

    def test_each_verdicts_findings_read_back_as_the_gate_gave_them(
        self, many: Invoke, db: Path
    ) -> None:
        readiness(many)
        second = readiness(many)
        found = rows(
            db,
            "SELECT f.scope, f.reason, f.value FROM gate_findings AS f JOIN gate_verdicts AS v "
            "ON f.findings_sha256 = v.findings_sha256 WHERE v.verdict_id = ? ORDER BY f.rowid",
            second["verdict_id"],
        )
        assert found == [(f["scope"], f["reason"], f["value"]) for f in second["findings"]]

    def test_a_rebuild_gives_the_same_verdicts_and_findings(self, many: Invoke, db: Path) -> None:
        readiness(many)
        readiness(many)
        query = (
            "SELECT v.verdict_id, v.findings, f.scope, f.reason FROM gate_verdicts AS v "
            "JOIN gate_findings AS f ON f.findings_sha256 = v.findings_sha256 "
            "ORDER BY v.event_position, f.rowid"
        )
        before = rows(db, query)
        many("rebuild", "--projection", "verdicts")
        assert rows(db, query) == before
