"""Every result file of the shared corpus in one ledger: imports, reads and browsing."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.publication.browse import datasette_for
from tests.conftest import CORPUS

pytestmark = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"the shared corpus is not at {CORPUS} (it lives beside the repo)"
)
SUPERSEDED = CORPUS / "swebench" / "experiments_submissions" / "verified_superseded"


@pytest.fixture(scope="module")
def corpus_ledger(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    from click.testing import CliRunner

    from benchledger.commands.cli import cli

    db = tmp_path_factory.mktemp("corpus") / "corpus.db"
    runner = CliRunner()
    # The superseded SWE-bench submission first, so the current one amends it.
    first = runner.invoke(cli, ["--db", str(db), "import", str(SUPERSEDED)])
    assert first.exit_code == 0, first.stderr
    result = runner.invoke(cli, ["--db", str(db), "import", str(CORPUS), "--amend", "--json"])
    assert result.exit_code == 0, result.stderr
    return db, json.loads(result.stdout)


def test_every_result_file_imports_and_nothing_fails(
    corpus_ledger: tuple[Path, list[dict[str, Any]]],
) -> None:
    _, reports = corpus_ledger
    states = Counter(r["state"] for r in reports)
    assert states["failed"] == states["conflict"] == 0
    formats = Counter(r["format"] for r in reports if r["state"] != "ignored")
    assert set(formats) == {
        "bfcl",
        "swebench",
        "lm_eval",
        "inspect_ai",
        "alwm",
        "orchestrator",
        "terminal_bench",
        "helm",
        "eee",
    }
    assert states["amended"] >= 3  # the superseded submission and two leaderboard versions
    assert not any(r["path"].startswith("/") for r in reports)


def test_reads_work_over_the_whole_corpus(
    corpus_ledger: tuple[Path, list[dict[str, Any]]],
) -> None:
    db, _ = corpus_ledger
    from click.testing import CliRunner

    from benchledger.commands.cli import cli

    def run(*args: str) -> str:
        result = CliRunner().invoke(cli, ["--db", str(db), *args])
        assert result.exit_code == 0, result.stderr
        return result.stdout

    runs = json.loads(run("runs", "--json"))
    # Its 695 runs, and the versions `--amend` recorded of those a newer file states
    # differently (no longer of those it only fills placeholders of).
    assert len(runs) > 800
    assert {r["benchmark"] for r in runs} >= {"swe_bench_verified", "mmlu", "gsm8k"}
    latest = json.loads(run("latest", "--json"))
    assert latest and all(r["status"] == "succeeded" for r in latest)
    quarantined = json.loads(run("latest", "--quarantine", "--json"))
    assert quarantined
    assert json.loads(run("verify", "--json"))["ok"]
    superseded = [r for r in runs if r["superseded_by"]]
    assert superseded and not any(r["invalidated"] for r in superseded)
    # Superseded versions are not quarantine rows: their current versions compete.
    assert not {r["run_id"] for r in superseded} & {r["run_id"] for r in quarantined}
    assert "superseded_run" not in {r["quarantine_reason"] for r in quarantined}


def test_datasette_serves_the_corpus_ledger(
    corpus_ledger: tuple[Path, list[dict[str, Any]]],
) -> None:
    db, _ = corpus_ledger
    ds = datasette_for(db)

    async def get(path: str) -> Any:
        response = await ds.client.get(path)
        assert response.status_code == 200, path
        return response.json()  # type: ignore[no-any-return]

    page = asyncio.run(get(f"/{db.stem}/runs.json?_shape=objects&_size=50"))
    with sqlite3.connect(db) as conn:
        total = conn.execute("SELECT count(*) FROM runs").fetchone()[0]
    assert page["filtered_table_rows_count"] == total
    rows = asyncio.run(get(f"/{db.stem}/matrix.json?_shape=array"))
    assert rows
