"""An attacker with write access to the ledger file (or the PostgreSQL store) against
`verify`: the chain the writer keeps in the event store, the read models that witness it,
and signed checkpoints kept outside the ledger."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from uuid import UUID

import pytest
from click.testing import CliRunner

from benchledger.commands.cli import cli
from benchledger.projections.chain import GENESIS, link, stored_sha256
from tests.conftest import Invoke
from tests.helpers import run_json, write_json
from tests.integration.test_verify import finished_position, flip_one_byte

CHAIN = "stored_events_chain"
CLI = [sys.executable, "-c", "from benchledger.commands.cli import cli; cli()"]


def last_position(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT max(rowid) FROM stored_events").fetchone()[0])


def recompute_store_chain(conn: sqlite3.Connection, table: str = CHAIN) -> None:
    """What an attacker who knows the hashing does after editing events."""
    conn.execute(f"DELETE FROM {table}")
    head = GENESIS
    rows = conn.execute(
        "SELECT rowid, originator_id, originator_version, topic, state FROM stored_events "
        "ORDER BY rowid"
    ).fetchall()
    for position, stream, version, topic, state in rows:
        digest = stored_sha256(position, UUID(stream), version, topic, state)
        head = link(head, digest)
        conn.execute(f"INSERT INTO {table} VALUES (?, ?, ?)", (position, digest, head))


def failed_at(invoke: Invoke, *args: str) -> tuple[int, str]:
    result = invoke("verify", "--json", *args, expect=1)
    report = json.loads(result.stdout)
    assert not report["ok"]
    return report["bad_position"], report["problem"]


class TestTheStoreChainIsTheAuthority:
    def test_the_writer_chains_every_event_as_it_appends_it(self, invoke: Invoke, db: Path) -> None:
        invoke("demo")
        with sqlite3.connect(db) as conn:
            store = conn.execute(f"SELECT * FROM {CHAIN} ORDER BY position").fetchall()
            copy = conn.execute("SELECT * FROM chain ORDER BY position").fetchall()
        assert len(store) == last_position(db) > 100 and store == copy

    def test_a_forged_tail_event_is_caught_at_its_position(self, invoke: Invoke, db: Path) -> None:
        invoke("demo")
        forged = last_position(db) + 1
        with sqlite3.connect(db) as conn:
            conn.execute(
                "INSERT INTO stored_events "
                "(rowid, originator_id, originator_version, topic, state) "
                "SELECT ?, originator_id, originator_version + 1000, topic, state "
                "FROM stored_events WHERE rowid = ?",
                (forged, forged - 1),
            )
        position, problem = failed_at(invoke)
        assert position == forged and "no entry in the store's chain" in problem
        assert failed_at(invoke) == (position, problem), "verify chained it on the way"

    def test_a_dropped_chain_is_caught_read_only_and_read_write(
        self, invoke: Invoke, db: Path
    ) -> None:
        invoke("demo")
        with sqlite3.connect(db) as conn:
            conn.execute(f"DROP TABLE {CHAIN}")
        read_only = CliRunner().invoke(cli, ["--db", str(db), "--read-only", "verify"])
        assert read_only.exit_code == 1 and "at position 1" in read_only.stderr
        assert "no chain table" in read_only.stderr
        position, problem = failed_at(invoke)  # opened for writing: an empty chain table
        assert position == 1 and "upgrade-chain" in problem

    def test_deleted_chain_rows_are_caught_at_the_first_one(self, invoke: Invoke, db: Path) -> None:
        invoke("demo")
        with sqlite3.connect(db) as conn:
            conn.execute(f"DELETE FROM {CHAIN} WHERE position >= 5")
        assert failed_at(invoke)[0] == 5

    def test_an_edited_event_whose_chain_rows_were_deleted_is_caught(
        self, invoke: Invoke, db: Path
    ) -> None:
        invoke("demo")
        position = finished_position(invoke)
        flip_one_byte(db, position)
        with sqlite3.connect(db) as conn:
            conn.execute(f"DELETE FROM {CHAIN} WHERE position >= ?", (position,))
        assert failed_at(invoke)[0] == position
        # and nothing can be appended past the hole
        path = write_json(db.parent / "r.json", run_json(run_key="after-the-edit"))
        assert "refusing to extend it" in invoke("import", str(path), expect=1).stderr

    def test_a_truncated_tail_is_caught_while_the_read_models_witness_it(
        self, invoke: Invoke, db: Path
    ) -> None:
        invoke("demo")
        end = last_position(db)
        with sqlite3.connect(db) as conn:
            conn.execute("DELETE FROM stored_events WHERE rowid > ?", (end - 10,))
            conn.execute(f"DELETE FROM {CHAIN} WHERE position > ?", (end - 10,))
        position, problem = failed_at(invoke)
        assert position == end - 9 and f"folded up to position {end}" in problem
        with sqlite3.connect(db) as conn:  # the copy of the chain gone too: positions remain
            conn.execute("DELETE FROM chain WHERE position > ?", (end - 10,))
        assert failed_at(invoke)[0] == end - 9

    def test_a_rewritten_store_chain_is_caught_by_the_read_models_copy(
        self, invoke: Invoke, db: Path
    ) -> None:
        invoke("demo")
        position = finished_position(invoke)
        flip_one_byte(db, position)
        with sqlite3.connect(db) as conn:
            recompute_store_chain(conn)
        position_found, problem = failed_at(invoke)
        assert position_found == position and "rewritten" in problem

    def test_an_untouched_ledger_passes_and_verify_writes_nothing(
        self, invoke: Invoke, db: Path
    ) -> None:
        invoke("demo")
        before = db.read_bytes()
        report = json.loads(invoke("verify", "--json").stdout)
        assert report["ok"] and report["checked"] == report["head_position"] == last_position(db)
        assert report["ledger_id"] is not None
        assert db.read_bytes() == before


class TestCheckpoints:
    @pytest.fixture
    def key(self, tmp_path: Path) -> Path:
        key = tmp_path / "keys" / "signing.pem"
        key.parent.mkdir()
        result = CliRunner().invoke(cli, ["checkpoint-key", "--out", str(key)])
        assert result.exit_code == 0, result.stderr
        assert key.stat().st_mode & 0o777 == 0o600
        return key

    def checkpoint(self, invoke: Invoke, key: Path, out: Path) -> dict[str, object]:
        invoke("checkpoint", "--key", str(key), "--out", str(out))
        return dict(json.loads(out.read_text()))

    def test_a_checkpoint_signs_the_verified_head_and_is_recorded(
        self, invoke: Invoke, db: Path, key: Path, tmp_path: Path
    ) -> None:
        invoke("demo")
        head = json.loads(invoke("verify", "--json").stdout)
        statement = self.checkpoint(invoke, key, tmp_path / "cp.json")
        assert (statement["position"], statement["head_sha256"], statement["ledger_id"]) == (
            head["head_position"],
            head["head_sha256"],
            head["ledger_id"],
        )
        events = json.loads(invoke("events", "--json").stdout)
        assert events[-1]["type"] == "CheckpointRecorded"
        assert events[-1]["data"]["signature"] == statement["signature"]
        result = invoke("verify", "--checkpoint", str(tmp_path / "cp.json"))
        assert f"extends checkpoint {tmp_path / 'cp.json'}" in result.stdout

    def test_an_edit_with_a_recomputed_chain_fails_the_checkpoint(
        self, invoke: Invoke, db: Path, key: Path, tmp_path: Path
    ) -> None:
        invoke("demo")
        self.checkpoint(invoke, key, tmp_path / "cp.json")
        position = finished_position(invoke)
        flip_one_byte(db, position)
        with sqlite3.connect(db) as conn:
            recompute_store_chain(conn)
            recompute_store_chain(conn, "chain")  # the read models' copy too
        invoke("verify")  # the chain alone cannot tell
        result = invoke("verify", "--checkpoint", str(tmp_path / "cp.json"), expect=1)
        assert "the ledger's past was rewritten" in result.stderr

    def test_a_truncation_past_the_checkpoint_fails_it(
        self, invoke: Invoke, db: Path, key: Path, tmp_path: Path
    ) -> None:
        invoke("demo")
        statement = self.checkpoint(invoke, key, tmp_path / "cp.json")
        signed = int(str(statement["position"]))
        with sqlite3.connect(db) as conn:
            conn.execute("DELETE FROM stored_events WHERE rowid > ?", (signed - 3,))
            conn.execute(f"DELETE FROM {CHAIN} WHERE position > ?", (signed - 3,))
            # and the read models' witness of it
            conn.execute("DELETE FROM chain WHERE position > ?", (signed - 3,))
            conn.execute("UPDATE _projection_state SET position = ?", (signed - 3,))
        invoke("verify")  # the chain alone cannot tell
        result = invoke("verify", "--checkpoint", str(tmp_path / "cp.json"), expect=1)
        assert "events were removed from its end" in result.stderr

    def test_an_altered_statement_and_another_ledgers_fail(
        self, invoke: Invoke, db: Path, key: Path, tmp_path: Path
    ) -> None:
        invoke("demo")
        statement = self.checkpoint(invoke, key, tmp_path / "cp.json")
        altered = tmp_path / "altered.json"
        altered.write_text(json.dumps({**statement, "position": 3}))
        result = invoke("verify", "--checkpoint", str(altered), expect=1)
        assert "signature does not verify" in result.stderr
        other_db = tmp_path / "other.db"
        runner = CliRunner()
        assert runner.invoke(cli, ["--db", str(other_db), "demo"]).exit_code == 0
        other = runner.invoke(
            cli, ["--db", str(other_db), "verify", "--checkpoint", str(tmp_path / "cp.json")]
        )
        assert other.exit_code == 1 and "another ledger" in other.stderr

    def test_a_malformed_statement_is_named_by_file_and_field(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        invoke("demo")
        bad = write_json(tmp_path / "bad.json", {"format": "benchledger-checkpoint/1"})
        result = invoke("verify", "--checkpoint", str(bad), expect=1)
        assert f"checkpoint {bad}: field 'ledger_id'" in result.stderr

    def test_a_key_readable_by_others_is_refused(
        self, invoke: Invoke, key: Path, tmp_path: Path
    ) -> None:
        invoke("demo")
        key.chmod(0o644)
        result = invoke("checkpoint", "--key", str(key), expect=1)
        assert "readable by others" in result.stderr
        assert "CheckpointRecorded" not in invoke("events").stdout

    def test_the_key_comes_from_the_environment(self, db: Path, key: Path, invoke: Invoke) -> None:
        invoke("demo")
        result = CliRunner(env={"BENCHLEDGER_SIGNING_KEY": str(key)}).invoke(
            cli, ["--db", str(db), "checkpoint"]
        )
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["format"] == "benchledger-checkpoint/1"

    def test_publish_and_exports_carry_the_latest_checkpoint_or_say_there_is_none(
        self, invoke: Invoke, key: Path, tmp_path: Path
    ) -> None:
        invoke("demo")
        invoke("export-latest", str(tmp_path / "before"))
        index = json.loads((tmp_path / "before" / "latest" / "index.json").read_text())
        assert "ledger_checkpoint" in index and index["ledger_checkpoint"] is None
        statement = self.checkpoint(invoke, key, tmp_path / "cp.json")
        stamp = json.loads(invoke("publish", str(tmp_path / "site.db"), "--json").stdout)
        assert stamp["checkpoint"]["signature"] == statement["signature"]
        assert stamp["checkpoint"]["position"] == statement["position"]
        invoke("export-latest", str(tmp_path / "after"))
        index = json.loads((tmp_path / "after" / "latest" / "index.json").read_text())
        assert index["ledger_checkpoint"]["head_sha256"] == statement["head_sha256"]
        invoke("export-viewer-data", "--out", str(tmp_path / "viewer.json"))
        viewer = json.loads((tmp_path / "viewer.json").read_text())
        assert viewer["ledger_checkpoint"]["signature"] == statement["signature"]
        # as of the signed position, the checkpoint was not recorded yet: none is claimed
        at = str(statement["position"])
        invoke("export-viewer-data", "--out", str(tmp_path / "v0.json"), "--as-of", at)
        assert json.loads((tmp_path / "v0.json").read_text())["ledger_checkpoint"] is None
        site = CliRunner().invoke(
            cli,
            [
                "--db",
                str(tmp_path / "site.db"),
                "verify",
                "--checkpoint",
                str(tmp_path / "cp.json"),
            ],
        )
        assert site.exit_code == 0, site.stderr


class TestLedgersWrittenBeforeTheStoreChain:
    def make_old(self, invoke: Invoke, db: Path) -> int:
        invoke("demo")
        with sqlite3.connect(db) as conn:
            conn.execute(f"DROP TABLE {CHAIN}")
        return last_position(db)

    def test_verify_fails_and_writes_are_refused_until_upgraded(
        self, invoke: Invoke, db: Path
    ) -> None:
        end = self.make_old(invoke, db)
        assert "upgrade-chain" in invoke("verify", expect=1).stderr
        path = write_json(db.parent / "r.json", run_json(run_key="new"))
        refused = invoke("import", str(path), expect=1)
        assert "run `benchledger upgrade-chain` once" in refused.stderr
        assert last_position(db) == end
        invoke("runs")  # reading keeps working

    def test_upgrade_chains_once_and_records_it(self, invoke: Invoke, db: Path) -> None:
        end = self.make_old(invoke, db)
        upgraded = json.loads(invoke("upgrade-chain", "--json").stdout)
        assert upgraded["upgraded"] and upgraded["position"] == end
        events = json.loads(invoke("events", "--json").stdout)
        assert events[-1]["type"] == "ChainUpgraded"
        assert events[-1]["data"]["position"] == end
        assert events[-1]["data"]["head_sha256"] == upgraded["head_sha256"]
        report = json.loads(invoke("verify", "--json").stdout)
        assert report["ok"] and report["head_position"] == end + 1
        again = json.loads(invoke("upgrade-chain", "--json").stdout)
        assert not again["upgraded"] and last_position(db) == end + 1
        path = write_json(db.parent / "r.json", run_json(run_key="new"))
        invoke("import", str(path))
        invoke("verify")

    def test_the_upgrade_chains_what_the_read_models_chained(
        self, invoke: Invoke, db: Path
    ) -> None:
        end = self.make_old(invoke, db)
        invoke("upgrade-chain")
        with sqlite3.connect(db) as conn:
            store = conn.execute(f"SELECT * FROM {CHAIN} WHERE position <= ?", (end,)).fetchall()
            copy = conn.execute("SELECT * FROM chain WHERE position <= ?", (end,)).fetchall()
        assert store == copy and len(store) == end


AT_ONCE = """
import sys, time
from pathlib import Path
from benchledger.commands.cli import cli
go = Path(sys.argv.pop(1))
while not go.exists():
    time.sleep(0.005)
cli()
"""


def writers_at_once(tmp_path: Path, count: int, *store: str) -> list[tuple[int, str]]:
    """`count` processes importing a run each into one ledger, started together."""
    go = tmp_path / "go"
    procs = []
    for i in range(count):
        path = write_json(tmp_path / f"run{i}.json", run_json(benchmark=f"b{i}", run_key=f"k{i}"))
        command = [sys.executable, "-c", AT_ONCE, str(go), *store, "import", str(path)]
        if "--event-store" in store:
            command[4:4] = ["--db", str(tmp_path / f"reader{i}.db")]
        procs.append(subprocess.Popen(command, stderr=subprocess.PIPE, text=True))
    time.sleep(3)  # every process loaded and waiting at the start line
    go.touch()
    return [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in procs]


class TestAnUntamperedLedgerPasses:
    def test_after_sixteen_concurrent_writers(self, tmp_path: Path) -> None:
        db = tmp_path / "ledger.db"
        assert CliRunner().invoke(cli, ["--db", str(db), "demo"]).exit_code == 0
        outcomes = writers_at_once(tmp_path, 16, "--db", str(db))
        assert [code for code, _ in outcomes] == [0] * 16, outcomes
        result = CliRunner().invoke(cli, ["--db", str(db), "verify", "--json"])
        assert result.exit_code == 0, result.stdout
        with sqlite3.connect(db) as conn:
            (chained,) = conn.execute(f"SELECT count(*) FROM {CHAIN}").fetchone()
            (events,) = conn.execute("SELECT count(*) FROM stored_events").fetchone()
        assert chained == events == json.loads(result.stdout)["head_position"]

    def test_after_a_writer_killed_in_the_middle_of_a_file(self, tmp_path: Path) -> None:
        from tests.e2e.test_streaming_import import write_big_file

        db = tmp_path / "ledger.db"
        assert CliRunner().invoke(cli, ["--db", str(db), "demo"]).exit_code == 0
        big = write_big_file(tmp_path / "big.jsonl", runs=60)
        wal = db.parent / (db.name + "-wal")
        start = wal.stat().st_size if wal.exists() else 0
        process = subprocess.Popen([*CLI, "--db", str(db), "import", str(big)])
        try:
            deadline = time.monotonic() + 120
            while process.poll() is None and time.monotonic() < deadline:
                if wal.exists() and wal.stat().st_size > start + (4 << 20):
                    os.kill(process.pid, signal.SIGKILL)
                    break
                time.sleep(0.01)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
        assert process.returncode == -signal.SIGKILL, "the import ended before the kill"
        result = CliRunner().invoke(cli, ["--db", str(db), "verify", "--json"])
        assert result.exit_code == 0, result.stdout
        with sqlite3.connect(db) as conn:
            orphans = conn.execute(
                f"SELECT count(*) FROM {CHAIN} c LEFT JOIN stored_events e ON e.rowid = c.position "
                "WHERE e.rowid IS NULL"
            ).fetchone()[0]
            unchained = conn.execute(
                f"SELECT count(*) FROM stored_events e LEFT JOIN {CHAIN} c "
                "ON e.rowid = c.position WHERE c.position IS NULL"
            ).fetchone()[0]
        assert orphans == unchained == 0
        again = CliRunner().invoke(cli, ["--db", str(db), "import", str(big)])
        assert again.exit_code == 0, again.stderr
        assert CliRunner().invoke(cli, ["--db", str(db), "verify"]).exit_code == 0
