"""A run group its process never closed (killed after its last write) is closed by recovery."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.adapters.store.importer import Importer
from tests.conftest import Invoke
from tests.helpers import run_json, write_json


def interrupted_import(db: Path, tmp_path: Path) -> str:
    """An import whose process wrote one file's events and died before closing its group."""
    path = write_json(tmp_path / "one.json", run_json(cells=[{"key": "q1", "outcome": "passed"}]))
    with build(Settings(db_path=db)) as services:
        group = services.ledger.new_group("import", "import", request={"paths": ["one.json"]})
        report = Importer(services.ledger).import_file(path, group=group)
        assert report.state == "imported"
        services.runner.catch_up()
        return str(group.id)


def groups(invoke: Invoke) -> list[dict[str, Any]]:
    events = json.loads(invoke("events", "--json").stdout)
    return [e for e in events if e["type"] == "RunGroupClosed"]


class TestAnInterruptedImport:
    def test_recover_stale_closes_its_group_as_interrupted_and_keeps_its_runs(
        self, db: Path, tmp_path: Path, invoke: Invoke
    ) -> None:
        group_id = interrupted_import(db, tmp_path)
        assert groups(invoke) == []

        result = invoke("recover-stale", "--stale-seconds", "0")
        assert "Closed run group import (interrupted)" in result.stdout
        [closed] = groups(invoke)
        assert closed["stream"] == group_id
        assert closed["data"]["interrupted"] is True
        assert closed["data"]["actor"]
        [run] = json.loads(invoke("runs", "--json").stdout)
        assert run["status"] == "succeeded"

        assert "Closed run group" not in invoke("recover-stale", "--stale-seconds", "0").stdout
        assert len(groups(invoke)) == 1

    def test_a_recent_group_is_left_open_by_the_default_age_cutoff(
        self, db: Path, tmp_path: Path, invoke: Invoke
    ) -> None:
        interrupted_import(db, tmp_path)
        assert "Closed run group" not in invoke("recover-stale").stdout
        assert groups(invoke) == []

    def test_the_read_model_shows_the_group_as_interrupted(
        self, db: Path, tmp_path: Path, invoke: Invoke
    ) -> None:
        import sqlite3

        group_id = interrupted_import(db, tmp_path)
        invoke("recover-stale", "--stale-seconds", "0")
        with sqlite3.connect(db) as conn:
            row = conn.execute(
                "SELECT closed_at, interrupted, close_detail FROM run_groups "
                "WHERE run_group_id = ?",
                (group_id,),
            ).fetchone()
        assert row[0] is not None and row[1] == 1 and "left open" in row[2]

    def test_its_process_closing_it_later_is_still_recorded(
        self, db: Path, tmp_path: Path, invoke: Invoke
    ) -> None:
        path = write_json(tmp_path / "one.json", run_json())
        with build(Settings(db_path=db)) as services:
            group = services.ledger.new_group("import", "import")
            Importer(services.ledger).import_file(path, group=group)
            services.runner.catch_up()
            invoke("recover-stale", "--stale-seconds", "0")
            services.ledger.close_group(group)
        closes = groups(invoke)
        assert [c["data"]["interrupted"] for c in closes] == [True, False]


class TestAGroupWithALiveRun:
    def test_is_never_closed(self, db: Path, invoke: Invoke) -> None:
        from datetime import UTC, datetime

        with build(Settings(db_path=db)) as services:
            ledger = services.ledger
            group = ledger.new_group("rg_live", "run")
            ledger.start_attempt(
                group,
                benchmark="b",
                agent="a",
                provider="p",
                model="m",
                config={},
                mode="default",
                command=["x"],
                cwd=".",
                host="h",
                lease_seconds=600,
                run_key=f"k{datetime.now(UTC):%f}",
                run_dir="d",
            )
            services.runner.catch_up()
        invoke("recover-stale", "--stale-seconds", "0")
        assert groups(invoke) == []


class TestClosingItsOwnGroup:
    def test_reads_back_nothing_it_wrote_itself(
        self, db: Path, tmp_path: Path, invoke: Invoke, monkeypatch: Any
    ) -> None:
        """An import's group holds every skip of its files: closing it must not read them
        all back to learn what this process knows (its last version)."""
        paths = [write_json(tmp_path / f"r{i}.json", run_json(agent=f"a{i}")) for i in range(3)]
        with build(Settings(db_path=db)) as services:
            ledger = services.ledger
            group = ledger.new_group("import", "import")
            for path in paths:
                Importer(ledger).import_file(path, group=group)

            def no_full_read(*args: Any) -> Any:
                raise AssertionError("the whole group was read back")

            monkeypatch.setattr(ledger, "_get", no_full_read)
            ledger.close_group(group)
            services.runner.catch_up()
        [closed] = groups(invoke)
        assert closed["stream"] == str(group.id)
        assert closed["version"] == group.version == 2
        assert closed["data"]["summary"] == {"imported": 3, "skipped": 0}
