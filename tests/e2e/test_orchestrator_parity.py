"""benchmarks/orchestrator_parity.py, the oracle for taking over the orchestrator's store,
runs end to end on a real checkout (BENCHLEDGER_ORCHESTRATOR_CHECKOUT) and reports in a
well-formed way, and benchledger matches it on every check."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "orchestrator_parity.py"
CHECKOUT = os.environ.get("BENCHLEDGER_ORCHESTRATOR_CHECKOUT", "")
ROWS = 130  # the fixed story and a few random invocations
needs_checkout = pytest.mark.skipif(
    not CHECKOUT,
    reason="set BENCHLEDGER_ORCHESTRATOR_CHECKOUT to a checkout of elizaOS/benchmarks",
)
CHECKS = {
    *(f"PICKS {k}" for k in ("latest", "quarantine", "baselines")),
    *(
        f"FIELDS {k} {f}"
        for k in ("latest", "quarantine", "baselines")
        for f in (
            "signature",
            "comparison_signature",
            "extra_config",
            "publication_warnings",
            "quarantine_reason",
        )
    ),
    *(
        f"RUNS {f}"
        for f in (
            "present",
            "status",
            "attempt",
            "score",
            "started_at",
            "ended_at",
            "duration_seconds",
            "extra_config",
            "signature",
            "comparison_signature",
            "benchmark_version",
            "benchmarks_commit",
            "eliza_commit",
            "eliza_version",
        )
    ),
    "SIGNATURES distinct",
    *(
        f"SKIPS {f}"
        for f in ("present", "time", "attempt", "signature", "reason", "existing_succeeded_run_id")
    ),
    *(
        f"INDEX {s}"
        for s in (
            "latest",
            "latest_by_signature",
            "latest_by_comparison_signature",
            "benchmark_comparability",
            "matrix_contract",
        )
    ),
    *(f"EXPORT {k}/" for k in ("latest", "quarantine", "baselines")),
    "EXPORT viewer_data.json",
    *(f"PICKS database-only {k}" for k in ("latest", "quarantine", "baselines")),
    "IMPORT latest/ appended-only-rules",
    *(f"IMPORT {w} appended-nothing" for w in ("quarantine/", "baselines/", "viewer_data.json")),
    "IMPORT again appended-nothing",
}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600
    )


def dump(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def test_a_missing_checkout_is_refused_naming_what_it_lacks(tmp_path: Path) -> None:
    (tmp_path / "suites" / "orchestrator").mkdir(parents=True)
    (tmp_path / "suites" / "orchestrator" / "db.py").write_text("")
    done = run("--orchestrator", str(tmp_path), "--rows", "10")
    assert done.returncode == 2
    assert "suites/orchestrator/runner.py" in done.stderr
    assert "suites/orchestrator/db.py" not in done.stderr.split("missing", 1)[1]


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("parity")
    out, report = base / "out", base / "report.json"
    done = run(
        "--orchestrator",
        CHECKOUT,
        "--rows",
        str(ROWS),
        "--out",
        str(out),
        "--json-out",
        str(report),
        "--strict",
    )
    assert done.returncode in (0, 1), done.stderr
    return {
        "done": done,
        "out": out,
        "report": json.loads(report.read_text()),
        "base": base,
    }


@needs_checkout
class TestOnACheckout:
    def test_strict_exits_1_exactly_when_a_check_differs(self, outcome: dict[str, Any]) -> None:
        report = outcome["report"]
        assert report["ok"] == all(c["ok"] for c in report["checks"])
        assert outcome["done"].returncode == (0 if report["ok"] else 1)

    def test_every_check_is_reported_once_with_counts_and_a_summary_line(
        self, outcome: dict[str, Any]
    ) -> None:
        checks = outcome["report"]["checks"]
        names = [c["name"] for c in checks]
        assert len(names) == len(set(names))
        assert set(names) == CHECKS
        lines = outcome["done"].stdout.splitlines()
        for check in checks:
            assert isinstance(check["equal"], int) and isinstance(check["total"], int)
            assert 0 <= check["equal"] <= check["total"]
            assert check["ok"] == (check["equal"] == check["total"] and not check["differing"])
            summary = f"{check['name']} {check['equal']}/{check['total']} equal"
            assert any(line.startswith(summary) for line in lines), summary
        assert re.search(
            r"^PARITY (complete|NOT complete): \d+/\d+ checks equal$", "\n".join(lines), re.M
        )

    def test_the_orchestrator_wrote_every_kind_of_row_and_its_export(
        self, outcome: dict[str, Any]
    ) -> None:
        out, report = outcome["out"], outcome["report"]
        db = out / "orchestrator.sqlite"
        conn = sqlite3.connect(db)
        try:
            rows = conn.execute("SELECT COUNT(*) FROM benchmark_runs").fetchone()[0]
            stale = conn.execute(
                "SELECT COUNT(*) FROM benchmark_runs WHERE error LIKE 'Recovered stale%'"
            ).fetchone()[0]
            tagged = conn.execute(
                "SELECT COUNT(DISTINCT provider) FROM benchmark_runs WHERE comparison_id = ?",
                (report["orchestrator"]["comparison_id"],),
            ).fetchone()[0]
            turns = conn.execute("SELECT COUNT(*) FROM benchmark_run_trajectories").fetchone()[0]
        finally:
            conn.close()
        assert rows == ROWS
        assert {"succeeded", "failed", "skipped", "incompatible"} <= set(
            report["orchestrator"]["statuses"]
        )
        assert stale >= 2 and tagged == 2 and turns > 0
        exported = out / "orchestrator"
        assert (exported / "latest" / "index.json").is_file()
        assert (exported / "viewer_data.json").is_file()
        assert any((exported / "quarantine").glob("*.json"))
        assert any((exported / "baselines").glob("*.json"))
        assert report["orchestrator"]["picks"]["latest"] > 0
        assert (out / "benchledger" / "latest" / "index.json").is_file()
        first = report["imports"][0]
        assert first["what"] == "orchestrator.sqlite" and first["events_appended"] > 0
        assert [i["what"] for i in report["imports"][1:]] == [
            "latest/",
            "quarantine/",
            "baselines/",
            "viewer_data.json",
        ]

    def test_benchledger_matches_the_orchestrator_on_every_check(
        self, outcome: dict[str, Any]
    ) -> None:
        differing = {
            c["name"]: c["differing"][:3] for c in outcome["report"]["checks"] if not c["ok"]
        }
        assert differing == {}

    def test_the_same_seed_writes_the_same_database(self, outcome: dict[str, Any]) -> None:
        again = outcome["base"] / "again"
        done = run("--orchestrator", CHECKOUT, "--rows", str(ROWS), "--out", str(again))
        assert done.returncode == 0, done.stderr
        assert dump(again / "orchestrator.sqlite") == dump(outcome["out"] / "orchestrator.sqlite")
