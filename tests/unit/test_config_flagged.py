"""`config_flagged` (Python) says what `_config_flagged` (SQL over a candidate's config)
says, for the configs a result file may state."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from benchledger.projections.latest_select import _config_flagged, config_flagged

CONFIGS: list[Any] = [
    {},
    {"mock": True},
    {"mock": "true"},
    {"mock": " TRUE "},
    {"mock": False},
    {"mock": "false"},
    {"mock": 1},
    {"dry_run": True, "limit": 3},
    {"stub": "yes"},
    {"sample": True},
    {"nested": {"mock": True}},
    {"limit": "true"},
    {"synthetic": True},
]


@pytest.mark.parametrize("config", CONFIGS, ids=json.dumps)
def test_python_and_sql_agree(config: Any) -> None:
    conn = sqlite3.connect(":memory:")
    (sql,) = conn.execute(
        f"SELECT {_config_flagged('')} FROM (SELECT ? AS config)", (json.dumps(config),)
    ).fetchone()
    assert config_flagged(config) is bool(sql)


def test_not_a_config_is_not_flagged() -> None:
    assert config_flagged(None) is False
    assert config_flagged(["mock"]) is False
