"""The gates and the matrix over the whole corpus: scoped to what was asked, recorded
compactly, and the validators append nothing."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from benchledger.commands.cli import cli
from tests.conftest import CORPUS

pytestmark = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"the shared corpus is not at {CORPUS} (it lives beside the repo)"
)
SUPERSEDED = CORPUS / "swebench" / "experiments_submissions" / "verified_superseded"
# The findings that say a cell of a required agent has no (good) row.
MISSING = {"missing", "missing_required_latest_rows", "failed", "unsupported"}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("corpus-gates") / "corpus.db"
    run(db, "import", str(SUPERSEDED))
    run(db, "import", str(CORPUS), "--amend")
    return db


def run(db: Path, *args: str, expect: int | None = 0) -> Result:
    result = CliRunner().invoke(cli, ["--db", str(db), *args])
    if expect is not None:
        assert result.exit_code == expect, result.stderr
    return result


def keys(db: Path, *args: str) -> set[tuple[str, str]]:
    rows = json.loads(run(db, "latest", *args, "--json").stdout)
    return {(r.get("benchmark_id") or r["benchmark"], r["agent"]) for r in rows}


def required(db: Path) -> dict[str, set[str]]:
    with closing(sqlite3.connect(db)) as conn:
        return {
            b: set(json.loads(r))
            for b, r in conn.execute("SELECT benchmark, required FROM required_agents")
        }


def event_count(db: Path) -> int:
    with closing(sqlite3.connect(db)) as conn:
        return int(conn.execute("SELECT count(*) FROM stored_events").fetchone()[0])


def ledger_bytes(db: Path) -> int:
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))


def readiness(db: Path, *args: str) -> dict[str, Any]:
    out = run(db, *args, "--skip-runtime-gates", "--json", expect=None).stdout
    verdict: dict[str, Any] = json.loads(out)
    return verdict


def target(finding: dict[str, Any]) -> tuple[str, str | None]:
    """(benchmark, agent or None) a readiness finding is about."""
    if isinstance(finding.get("benchmark_id"), str) and isinstance(finding.get("agent"), str):
        return finding["benchmark_id"], finding["agent"]
    scope = str(finding["scope"])
    for prefix in ("publishability:", "comparability:", "runtime_gate:"):
        scope = scope.removeprefix(prefix)
    benchmark, _, agent = scope.partition("::")
    return benchmark, agent or None


def test_readiness_finds_at_most_one_defect_per_latest_row(db: Path) -> None:
    verdict = readiness(db, "validate-latest-readiness")
    latest, held = keys(db), keys(db, "--quarantine")
    rules = required(db)
    findings = verdict["findings"]
    assert findings and len(findings) <= len(latest)
    about = Counter(target(f) for f in findings if target(f)[1] is not None)
    assert max(about.values()) == 1  # one finding per row (or per missing cell)
    for finding in findings:
        benchmark, agent = target(finding)
        if finding["reason"] in MISSING:
            # A missing agent is one a rule requires (or names unable to run it).
            assert benchmark in rules, finding
        elif agent is not None:
            assert (benchmark, agent) in latest | held, finding
    assert not [f for f in findings if f["reason"] == "missing_required_latest_rows"] or rules


def test_the_validator_and_a_dry_run_append_no_event(db: Path) -> None:
    before = event_count(db)
    readiness(db, "validate-latest-readiness")
    readiness(db, "gate", "readiness", "--dry-run")
    assert event_count(db) == before


def test_three_readiness_verdicts_grow_the_ledger_well_under_a_megabyte(db: Path) -> None:
    before, events = ledger_bytes(db), event_count(db)
    verdicts = [readiness(db, "gate", "readiness") for _ in range(3)]
    assert all(v["verdict_id"] for v in verdicts)
    assert event_count(db) - events <= 4  # three verdicts and their findings, stored once
    assert ledger_bytes(db) - before < 256 * 1024


def test_the_matrix_lists_only_pairs_with_rows_or_requirements(db: Path) -> None:
    contract = json.loads(run(db, "matrix", "--json").stdout)
    rows = keys(db) | keys(db, "--quarantine")
    rules = required(db)
    cells = [(b, a, c) for b, e in contract["benchmarks"].items() for a, c in e["cells"].items()]
    benchmarks, agents = len(contract["benchmarks"]), len(contract["harnesses"])
    assert len(cells) < benchmarks * agents / 10  # not the cross product
    for benchmark, agent, cell in cells:
        named = cell["required"] or cell["state"] == "unsupported"
        assert (benchmark, agent) in rows or (named and benchmark in rules), (benchmark, agent)
    missing = contract["summary"]["missing_required_real_cells"]
    assert missing == sum(1 for *_, c in cells if c["required"] and c["state"] == "missing")
    assert missing < 100
