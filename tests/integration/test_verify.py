from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.conftest import Invoke
from tests.ledgers import append_unprojected_runs


def flip_one_byte(db: Path, position: int) -> None:
    with sqlite3.connect(db) as conn:
        (state,) = conn.execute(
            "SELECT state FROM stored_events WHERE rowid = ?", (position,)
        ).fetchone()
        tampered = bytearray(state)
        i = bytes(state).index(b'"score":') + len(b'"score":')
        tampered[i] = ord("9") if tampered[i] != ord("9") else ord("8")
        conn.execute(
            "UPDATE stored_events SET state = ? WHERE rowid = ?", (bytes(tampered), position)
        )


def finished_position(invoke: Invoke) -> int:
    events = json.loads(invoke("events", "--json").stdout)
    return next(
        e["position"]
        for e in events
        if e["type"] in ("RunFinished", "RunImported") and e["data"]["score"] is not None
    )


class TestVerify:
    def test_an_untouched_ledger_verifies(self, invoke: Invoke) -> None:
        invoke("demo")
        result = invoke("verify", "--json")
        report = json.loads(result.stdout)
        assert report["ok"] and report["checked"] == report["head_position"] > 100
        assert len(report["head_sha256"]) == 64

    def test_one_edited_byte_of_a_stored_event_is_caught_at_its_position(
        self, invoke: Invoke, db: Path
    ) -> None:
        invoke("demo")
        position = finished_position(invoke)
        flip_one_byte(db, position)
        result = invoke("verify", expect=1)
        assert f"tampering detected at position {position}" in result.stderr
        assert "does not match the hash recorded" in result.stderr

    def test_a_deleted_event_is_caught(self, invoke: Invoke, db: Path) -> None:
        invoke("demo")
        with sqlite3.connect(db) as conn:
            conn.execute("DELETE FROM stored_events WHERE rowid = 5")
        result = invoke("verify", "--json", expect=1)
        assert json.loads(result.stdout)["bad_position"] == 5

    def test_an_edited_chain_is_caught(self, invoke: Invoke, db: Path) -> None:
        invoke("demo")
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE chain SET chain_sha256 = ? WHERE position = 7", ("0" * 64,))
        result = invoke("verify", "--json", expect=1)
        assert json.loads(result.stdout)["bad_position"] == 7


class TestRebuildCannotLaunderTampering:
    def test_rebuilding_over_an_edited_event_is_refused_and_still_caught(
        self, invoke: Invoke, db: Path
    ) -> None:
        invoke("demo")
        position = finished_position(invoke)
        flip_one_byte(db, position)
        result = invoke("rebuild", expect=1)
        assert f"chain at position {position}" in result.stderr
        assert f"position {position}" in invoke("verify", expect=1).stderr

    def test_other_read_models_can_still_be_rebuilt(self, invoke: Invoke, db: Path) -> None:
        invoke("demo")
        invoke("rebuild", "--projection", "runs")
        invoke("verify")


class TestVerifyAsTheFirstCommand:
    def test_a_ledger_whose_read_models_were_never_built_verifies(
        self, invoke: Invoke, db: Path
    ) -> None:
        appended = append_unprojected_runs(db, count=3)
        first = json.loads(invoke("verify", "--json").stdout)
        assert first["ok"] and first["checked"] == first["head_position"] == appended
        again = json.loads(invoke("verify", "--json").stdout)
        assert again == first

    def test_the_hash_printed_is_the_chain_hash_at_the_position_printed(
        self, invoke: Invoke, db: Path
    ) -> None:
        invoke("demo")
        appended = append_unprojected_runs(db, count=2)
        result = invoke("verify")
        head_position, head_hash = result.stdout.split("head position ")[1].split(", hash ")
        assert appended and result.stderr == ""
        with sqlite3.connect(db) as conn:  # the writer chained them as it appended them
            (recorded,) = conn.execute(
                "SELECT chain_sha256 FROM stored_events_chain WHERE position = ?",
                (int(head_position),),
            ).fetchone()
            (store_head,) = conn.execute("SELECT max(rowid) FROM stored_events").fetchone()
        assert int(head_position) == store_head and head_hash.strip() == recorded
