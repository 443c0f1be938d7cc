"""A reader's read model of a PostgreSQL event store, opened read-only."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from benchledger.commands.cli import cli
from tests.integration.test_postgres import pytestmark, store_url  # noqa: F401
from tests.ledgers import digest


def cli_with(url: str, db: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db), "--event-store", url, *args])


def test_a_current_read_model_is_read_and_a_behind_one_says_how_to_follow(
    store_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    db = tmp_path / "reader.db"
    assert cli_with(store_url, db, "demo").exit_code == 0
    before = digest(db)
    current = cli_with(store_url, db, "--read-only", "runs", "--json")
    assert current.exit_code == 0 and len(json.loads(current.stdout)) == 79
    writer = cli_with(
        store_url, tmp_path / "w.db", "high-score", "set", "bfcl", "--label", "x", "--value", "0.9"
    )
    assert writer.exit_code == 0
    behind = cli_with(store_url, db, "--read-only", "latest")
    assert behind.exit_code == 1 and "1 events behind" in behind.stderr
    assert "follow --polls 1" in behind.stderr
    verified = cli_with(store_url, db, "--read-only", "verify", "--json")
    report = json.loads(verified.stdout)
    # The writer's event is in the store's chain: this reader checks it, behind or not.
    assert verified.exit_code == 0 and report["checked"] == report["head_position"]
    assert digest(db) == before


def test_no_read_model_yet_is_an_error_when_read_only(
    store_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    result = cli_with(store_url, tmp_path / "new.db", "--read-only", "runs")
    assert result.exit_code == 1 and "no read models at" in result.stderr
    assert not (tmp_path / "new.db").exists()
