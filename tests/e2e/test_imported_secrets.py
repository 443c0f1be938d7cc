"""An imported result's secret config values are masked; its signature is the real one."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from benchledger.domain.signatures import signature
from tests.conftest import Invoke
from tests.helpers import run_json, write_json

SECRET = "sk-live-0123456789abcdefghij"


def test_an_imported_config_is_stored_masked_under_its_real_signature(
    tmp_path: Path, db: Path, invoke: Invoke
) -> None:
    config = {"api_key": SECRET, "max_tokens": 64, "token_limit": 4096}
    invoke("import", str(write_json(tmp_path / "r.json", run_json(config=config))))
    [run] = json.loads(invoke("runs", "--json").stdout)
    assert run["config"] == {"api_key": "[REDACTED]", "max_tokens": 64, "token_limit": 4096}
    assert run["signature"] == signature("bfcl", "eliza", "cerebras", "gpt-oss-120b", config)
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in conn.execute(f"SELECT * FROM [{table}]"):
                assert SECRET not in repr(row), table
