"""`publish`: a frozen snapshot that verifies, serves immutable and is never written."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from benchledger.adapters.publication.browse import datasette_for
from benchledger.adapters.store import snapshot
from benchledger.commands.cli import cli
from benchledger.projections.registry import all_projections
from benchledger.projections.versions import READ_MODELS, STATE_TABLE
from tests.helpers import run_json, write_json
from tests.ledgers import build_demo, copy_ledger, digest

CLI = [sys.executable, "-c", "from benchledger.commands.cli import cli; cli()"]


def run(db: Path, *args: str, expect: int = 0) -> Result:
    result = CliRunner().invoke(cli, ["--db", str(db), *args])
    assert result.exit_code == expect, f"{result.stdout}\n{result.stderr}\n{result.exception!r}"
    return result


def run_count(db: Path, *args: str) -> int:
    return len(json.loads(run(db, "runs", "--json", *args).stdout))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo(tmp_path_factory.mktemp("demo") / "ledger.db")


@pytest.fixture
def ledger(demo: Path, tmp_path: Path) -> Path:
    return copy_ledger(demo, tmp_path / "ledger.db")


def published(ledger: Path, out: Path, *args: str) -> dict[str, Any]:
    stamp: dict[str, Any] = json.loads(run(ledger, "publish", str(out), "--json", *args).stdout)
    return stamp


class TestPublish:
    def test_the_snapshot_verifies_at_the_ledgers_head(self, ledger: Path, tmp_path: Path) -> None:
        head = json.loads(run(ledger, "verify", "--json").stdout)
        stamp = published(ledger, tmp_path / "site.db")
        checked = json.loads(run(tmp_path / "site.db", "verify", "--json").stdout)
        assert checked["ok"] and checked["checked"] == checked["head_position"]
        assert (stamp["position"], stamp["head_sha256"]) == (
            head["head_position"],
            head["head_sha256"],
        )
        assert (checked["head_position"], checked["head_sha256"]) == (
            head["head_position"],
            head["head_sha256"],
        )
        assert run_count(tmp_path / "site.db") == run_count(ledger)

    def test_flipping_one_byte_of_an_event_fails_verify(self, ledger: Path, tmp_path: Path) -> None:
        out = tmp_path / "site.db"
        published(ledger, out)
        with sqlite3.connect(out) as conn:
            (state,) = conn.execute("SELECT state FROM stored_events WHERE rowid = 7").fetchone()
        conn.close()
        data = bytearray(out.read_bytes())
        at = data.find(bytes(state))
        assert at > 0 and data.count(bytes(state)) == 1
        flip = at + len(state) // 2
        data[flip] ^= 0x01
        out.write_bytes(bytes(data))
        result = run(out, "verify", expect=1)
        assert "tampering detected at position 7" in result.stderr

    def test_a_stamp_that_is_not_the_head_of_its_events_fails_verify(
        self, ledger: Path, tmp_path: Path
    ) -> None:
        out = tmp_path / "site.db"
        published(ledger, out)
        with sqlite3.connect(out) as conn:
            conn.execute("UPDATE snapshot SET position = position - 1")
        conn.close()
        assert "not the head of its events" in run(out, "verify", expect=1).stderr

    def test_events_still_in_the_wal_are_in_the_snapshot(
        self, ledger: Path, tmp_path: Path
    ) -> None:
        holder = sqlite3.connect(ledger)  # another reader: nothing checkpoints the WAL away
        try:
            holder.execute("SELECT count(*) FROM stored_events").fetchone()
            run(ledger, "import", str(write_json(tmp_path / "late.json", run_json("bfcl"))))
            head = json.loads(run(ledger, "verify", "--json").stdout)["head_position"]
            plain = shutil.copyfile(ledger, tmp_path / "plain-copy.db")
            with sqlite3.connect(plain) as copied:
                (copied_head,) = copied.execute("SELECT max(rowid) FROM stored_events").fetchone()
            copied.close()
            assert copied_head < head  # what a file copy of this ledger would lose
            stamp = published(ledger, tmp_path / "site.db")
        finally:
            holder.close()
        assert stamp["position"] == stamp["events"] == head
        assert json.loads(run(tmp_path / "site.db", "verify", "--json").stdout)["ok"]

    def test_as_of_stops_the_read_models_and_the_events_there(
        self, ledger: Path, tmp_path: Path
    ) -> None:
        out = tmp_path / "then.db"
        stamp = published(ledger, out, "--as-of", "40")
        assert (stamp["position"], stamp["events"]) == (40, 40)
        with sqlite3.connect(out) as conn:
            assert conn.execute("SELECT max(rowid) FROM stored_events").fetchone() == (40,)
            assert conn.execute("SELECT max(position) FROM events").fetchone() == (40,)
        conn.close()
        assert run_count(out) == run_count(ledger, "--as-of", "40") < run_count(ledger)
        assert (
            run(out, "runs", "--json").stdout
            == run(ledger, "runs", "--as-of", "40", "--json").stdout
        )
        assert json.loads(run(out, "verify", "--json").stdout)["head_position"] == 40

    def test_only_read_models_events_and_the_stamp_are_in_it(
        self, ledger: Path, tmp_path: Path
    ) -> None:
        run(ledger, "rebuild")  # dropped tables leave free pages in the ledger
        out = tmp_path / "site.db"
        published(ledger, out)
        with sqlite3.connect(out) as conn:
            tables = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            assert conn.execute("PRAGMA freelist_count").fetchone() == (0,)
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        conn.close()
        read_models = {t for _, names in READ_MODELS.values() for t in names}
        # A full-text table comes with the tables FTS5 keeps its index in.
        fts5 = {
            t.name + shadow
            for p in all_projections()
            for t in p.tables
            if t.full_text
            for shadow in ("_config", "_content", "_data", "_docsize", "_idx")
        }
        assert tables == read_models | fts5 | {
            STATE_TABLE,
            "stored_events",
            "stored_events_chain",
            "snapshot",
        }
        assert fts5
        assert str(ledger).encode() not in out.read_bytes()
        assert str(tmp_path).encode() not in out.read_bytes()


class TestTarget:
    def test_a_file_that_is_not_a_snapshot_is_refused_and_left_untouched(
        self, ledger: Path, tmp_path: Path
    ) -> None:
        other = tmp_path / "notes.db"
        other.write_text("my notes\n")
        result = run(ledger, "publish", str(other), "--force", expect=1)
        assert f"{other} exists and is not a benchledger snapshot" in result.stderr
        assert other.read_text() == "my notes\n"

    def test_a_ledger_is_never_replaced(self, ledger: Path, tmp_path: Path) -> None:
        before = digest(ledger)
        result = run(ledger, "publish", str(ledger), "--force", expect=1)
        assert "publish never replaces a ledger" in result.stderr
        assert digest(ledger) == before

    def test_an_older_snapshot_is_replaced_only_with_force(
        self, ledger: Path, tmp_path: Path
    ) -> None:
        out = tmp_path / "site.db"
        published(ledger, out, "--as-of", "10")
        before = digest(out)
        assert "--force replaces it" in run(ledger, "publish", str(out), expect=1).stderr
        assert digest(out) == before
        assert published(ledger, out, "--force")["position"] > 10

    def test_a_failed_publish_leaves_nothing(
        self, ledger: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        def broken(*args: Any) -> Any:
            raise sqlite3.OperationalError("disk I/O error")

        monkeypatch.setattr(snapshot, "_copy", broken)
        site = tmp_path / "site"
        site.mkdir()
        assert "disk I/O error" in run(ledger, "publish", str(site / "ledger.db"), expect=1).stderr
        assert list(site.iterdir()) == []


class TestFrozen:
    def test_a_command_that_appends_is_refused_and_no_byte_changes(
        self, ledger: Path, tmp_path: Path
    ) -> None:
        out = tmp_path / "site.db"
        published(ledger, out)
        before = digest(out)
        run_id = json.loads(run(out, "runs", "--json").stdout)[0]["run_id"]
        result = run(out, "invalidate", run_id, "--reason", "x", expect=1)
        assert "is a frozen snapshot" in result.stderr
        for args in (["runs"], ["events", "--as-of", "20"], ["verify"], ["latest"]):
            run(out, *args)
        assert digest(out) == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.db", "site.db"]

    def test_datasette_serves_it_immutable_and_refuses_writes(
        self, ledger: Path, tmp_path: Path
    ) -> None:
        out = tmp_path / "site.db"
        stamp = published(ledger, out)
        before = digest(out)

        async def fetch() -> list[httpx.Response]:
            ds = datasette_for(out, immutable=True)
            await ds.invoke_startup()
            assert not ds.databases["site"].is_mutable
            return [
                await ds.client.get("/site/runs.json?_shape=array&_size=max"),
                await ds.client.get("/site.json?sql=delete+from+runs"),
                await ds.client.get("/-/metadata.json"),
            ]

        runs, delete, metadata = asyncio.run(fetch())
        assert len(runs.json()) == run_count(ledger)
        assert delete.status_code == 400
        database = metadata.json()["databases"]["site"]
        assert database["snapshot_position"] == stamp["position"]
        assert stamp["head_sha256"] in database["description"]
        assert digest(out) == before


def serve(db: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [*CLI, "--db", str(db), "serve", "--port", "0", *args], stderr=subprocess.PIPE, text=True
    )
    assert server.stderr is not None
    line = server.stderr.readline()
    match = re.search(r" at (http://127\.0\.0\.1:\d+/\S+) ", line)
    assert match, line
    return server, match.group(1)


def fetch_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


class TestServe:
    def test_a_snapshot_is_served_immutable_and_never_changes(
        self, ledger: Path, tmp_path: Path
    ) -> None:
        out = tmp_path / "site.db"
        published(ledger, out)
        before = digest(out)
        server, url = serve(out)
        try:
            assert len(fetch_json(f"{url}/runs.json?_shape=array&_size=max")) == run_count(ledger)
            databases = fetch_json(url.rsplit("/", 1)[0] + "/-/databases.json")
            assert [d["is_mutable"] for d in databases] == [False]
        finally:
            server.terminate()
            server.wait(10)
        assert digest(out) == before

    def test_as_of_serves_the_ledger_as_it_was(self, ledger: Path) -> None:
        before = digest(ledger)
        then = run_count(ledger, "--as-of", "40")
        assert then < run_count(ledger)
        server, url = serve(ledger, "--as-of", "40")
        try:
            assert url.endswith("/ledger")
            assert len(fetch_json(f"{url}/runs.json?_shape=array&_size=max")) == then
            databases = fetch_json(url.rsplit("/", 1)[0] + "/-/databases.json")
            assert [d["is_mutable"] for d in databases] == [False]
            events = fetch_json(
                f"{url}.json?sql=select+max(position)+as+p+from+events&_shape=array"
            )
            assert events == [{"p": 40}]
        finally:
            server.terminate()
            server.wait(10)
        assert digest(ledger) == before
