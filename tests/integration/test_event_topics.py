"""Stored event topics name the domain module, not where the package is installed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from eventsourcing.utils import resolve_topic

from benchledger.domain.run import RunStarted
from tests.conftest import Invoke
from tests.helpers import run_json, write_json


def topics(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {t for (t,) in conn.execute("SELECT DISTINCT topic FROM stored_events")}


def test_events_are_stored_under_their_domain_module(
    invoke: Invoke, db: Path, tmp_path: Path
) -> None:
    invoke("import", str(write_json(tmp_path / "run.json", run_json())))
    stored = topics(db)
    assert "domain.run:RunImported" in stored
    assert all(t.startswith("domain.") for t in stored), stored


def test_a_stored_topic_resolves_inside_the_installed_namespace() -> None:
    import benchledger.adapters.store.eventstore  # noqa: F401  (registers the alias)

    assert resolve_topic("domain.run:RunStarted") is RunStarted
    assert resolve_topic("domain.run_group:RunGroupOpened").__module__ == (
        "benchledger.domain.run_group"
    )


def test_a_ledger_reads_and_verifies_after_a_rebuild(invoke: Invoke, tmp_path: Path) -> None:
    invoke("import", str(write_json(tmp_path / "run.json", run_json())))
    invoke("rebuild")
    assert invoke("verify").stdout.startswith("OK:")
    assert len(json.loads(invoke("runs", "--json").stdout)) == 1
