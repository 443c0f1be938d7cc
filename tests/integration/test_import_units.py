"""A large orchestrator.sqlite is read in a child process as rows (units), each parsed in
whichever process has time; the child makes the new runs it parses into their stored
events (`Importing.prepare`), which the importing process appends as they are. Whatever
does the work, the ledger records what an import in one process records."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sqlite3
import sys
import uuid
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.store import forked, read_ahead
from benchledger.adapters.store.bootstrap import Services, Settings, build
from benchledger.adapters.store.importer import Importer
from benchledger.domain import importing
from tests.integration.test_import_batches import Counting
from tests.unit.test_format_orchestrator import db_row, make_db

URL = os.environ.get("BENCHLEDGER_TEST_POSTGRES_URL")
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

# Who parses: the child (which then prepares the new runs), or this process.
CHILD, PARENT = 0, 1 << 62


def _generator() -> Any:
    """The benchmark's generator of orchestrator databases: groups, every status, stale
    recoveries, attempts counted per signature, trajectories."""
    spec = importlib.util.spec_from_file_location(
        "orchestrator_import_bench", BENCHMARKS / "orchestrator_import.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


BENCH = _generator()


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("orch") / "orchestrator.sqlite"
    built = BENCH.build_db(path, 400, 4)
    assert built.rows == 400 and built.trajectories > 0
    return path


def open_services(tmp_path: Path, store: str) -> Services:
    tmp_path.mkdir(parents=True)
    if store == "sqlite":
        return build(Settings(db_path=tmp_path / "ledger.db"))
    import psycopg

    assert URL
    schema = f"bl_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in URL else "?"
    url = f"{URL}{sep}schema={schema}"
    return build(Settings(db_path=tmp_path / "ledger.db", event_store_url=url))


def drop_schema(services: Services) -> None:
    url = services.settings.event_store_url
    if url:
        import psycopg

        schema = url.rsplit("schema=", 1)[1]
        assert URL
        with psycopg.connect(URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def ledgers(tmp_path: Path) -> Iterator[Any]:
    opened: list[Services] = []

    def make(name: str, store: str = "sqlite") -> Services:
        services = open_services(tmp_path / name, store)
        opened.append(services)
        return services

    yield make
    for services in opened:
        services.close()
        drop_schema(services)


def import_file(services: Services, path: Path, **options: Any) -> Any:
    ledger = services.ledger
    group = ledger.new_group("import", "import")
    report = Importer(ledger).import_file(path, group=group, **options)
    ledger.close_group(group)
    return report


def recorded(services: Services) -> list[tuple[str, int, str, dict[str, Any]]]:
    """Every stored event as (stream, version, topic, state), with what differs from one
    import to another of the same file left out: the times events were made, and the id
    of the import's own run group (new for each import)."""
    notes = services.ledger.recorder.select_notifications(0, 1_000_000)
    groups = {
        str(n.originator_id)
        for n in notes
        if n.topic.endswith(":RunGroupOpened") and json.loads(n.state)["kind"] == "import"
    }
    out = []
    for n in notes:
        text = n.state.decode()
        for group in groups:
            text = text.replace(group, "GROUP")
        state = json.loads(text)
        state.pop("timestamp", None)
        stream = "GROUP" if str(n.originator_id) in groups else str(n.originator_id)
        out.append((stream, n.originator_version, n.topic, state))
    return out


class PreparedCount:
    """How many runs the importing process appended as they were prepared."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.runs = 0
        real = importing.PreparedRun.stored

        def stored(run: importing.PreparedRun) -> Any:
            self.runs += 1
            return real(run)

        monkeypatch.setattr(importing.PreparedRun, "stored", stored)


def read_in_a_child(monkeypatch: pytest.MonkeyPatch, who: int) -> None:
    monkeypatch.setattr(read_ahead, "READ_AHEAD_BYTES", 0)  # every file, however small
    monkeypatch.setattr(forked, "SPARE_WHEN_WAITING", who)
    # Threads other tests left behind (a PostgreSQL pool's) would stop the fork: these
    # tests are about the child, so they fork anyway.
    monkeypatch.setattr(read_ahead, "can_read_ahead", lambda: True)


class TestTheSameLedger:
    @pytest.mark.parametrize("who", [CHILD, PARENT], ids=["child-parses", "parent-parses"])
    def test_records_what_an_import_in_one_process_records(
        self, ledgers: Any, database: Path, monkeypatch: pytest.MonkeyPatch, who: int
    ) -> None:
        alone = ledgers("alone")
        expected = import_file(alone, database)
        assert expected.state == "imported" and expected.new_runs > 300
        read_in_a_child(monkeypatch, who)
        prepared = PreparedCount(monkeypatch)
        split = ledgers("split")
        report = import_file(split, database)
        assert (report.state, report.runs, report.new_runs, report.run_ids) == (
            expected.state,
            expected.runs,
            expected.new_runs,
            expected.run_ids,
        )
        assert recorded(split) == recorded(alone)
        if who == CHILD:  # every new run made into its events by the child
            assert prepared.runs == report.new_runs
        else:  # the child only read: this process parsed and made every event
            assert prepared.runs == 0
        # Read models too: what `runs` (but the times its events were made) and `turns`
        # show.
        for services in (alone, split):
            services.runner.catch_up()
        made = {"last_heard_at", "recovered_at", "recorded_at", "updated_at"}
        names = [r[1] for r in alone.store.conn.execute("PRAGMA table_info(runs)")]
        query = f"SELECT {', '.join(n for n in names if n not in made)} FROM runs ORDER BY run_id"
        assert _rows(split, query) == _rows(alone, query)
        turns = "SELECT * FROM turns ORDER BY 1, 2, 3"
        assert _rows(split, turns) == _rows(alone, turns) != []

    def test_without_a_fork_the_units_are_parsed_in_this_process(
        self, ledgers: Any, database: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        alone = ledgers("alone")
        import_file(alone, database)
        monkeypatch.setattr(read_ahead, "READ_AHEAD_BYTES", 0)
        monkeypatch.setattr(read_ahead, "can_read_ahead", lambda: False)  # a thread runs
        units = Counting(monkeypatch, read_ahead, "units_ahead")
        prepared = PreparedCount(monkeypatch)
        split = ledgers("split")
        assert import_file(split, database).state == "imported"
        assert len(units.calls) == 1 and prepared.runs == 0
        assert recorded(split) == recorded(alone)

    @pytest.mark.postgres
    @pytest.mark.skipif(not URL, reason="no PostgreSQL")
    def test_on_postgresql_the_child_parses_and_this_process_makes_the_events(
        self, ledgers: Any, database: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        alone = ledgers("alone", "postgres")
        import_file(alone, database)
        read_in_a_child(monkeypatch, CHILD)
        prepared = PreparedCount(monkeypatch)
        split = ledgers("split", "postgres")
        report = import_file(split, database)
        assert report.state == "imported"
        assert recorded(split) == recorded(alone)
        assert prepared.runs == 0  # no lookup of its own in the child: none prepared


def _rows(services: Services, query: str) -> list[tuple[Any, ...]]:
    rows = services.store.conn.execute(query).fetchall()
    # The import's own run group has a new id each time: compare what is not an id of it.
    return [tuple(v for v in row if not _is_group_id(services, v)) for row in rows]


def _is_group_id(services: Services, value: Any) -> bool:
    if not isinstance(value, str) or len(value) != 36:
        return False
    row = services.store.conn.execute(
        "SELECT 1 FROM run_groups WHERE run_group_id = ? AND kind = 'import'", (value,)
    ).fetchone()
    return row is not None


class TestRecordedRuns:
    def test_a_grown_database_prepares_only_its_new_runs(
        self, ledgers: Any, database: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        read_in_a_child(monkeypatch, CHILD)
        services = ledgers("grown")
        first = import_file(services, database)
        grown = tmp_path / "db" / "orchestrator.sqlite"
        grown.parent.mkdir()
        for suffix in ("", "-wal"):
            source = Path(f"{database}{suffix}")
            if source.exists():
                Path(f"{grown}{suffix}").write_bytes(source.read_bytes())
        with closing(sqlite3.connect(grown)) as conn, conn:
            conn.execute(
                "UPDATE benchmark_runs SET run_id = run_id || '_new' WHERE rowid IN "
                "(SELECT rowid FROM benchmark_runs WHERE status = 'succeeded' LIMIT 3)"
            )
        prepared = PreparedCount(monkeypatch)
        report = import_file(services, grown)
        assert (report.state, report.runs) == ("imported", first.runs)
        assert report.new_runs == prepared.runs == 3  # the others compared, unchanged

    def test_a_run_recorded_after_the_child_looked_is_decided_again(
        self, ledgers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The child saw no stream for a run that is recorded when its events arrive
        (another writer's, committed in between): the file is decided again, as when
        the store refuses an append."""
        rows = [db_row(run_id=f"run_bfcl_20260512T1015{i:02d}Z_1_{i:08x}") for i in range(6)]
        some = make_db(tmp_path / "a" / "orchestrator.sqlite", rows[:2])
        every = make_db(tmp_path / "b" / "orchestrator.sqlite", rows)
        services = ledgers("again")
        import_file(services, some)
        read_in_a_child(monkeypatch, CHILD)
        looked = tmp_path / "looked"
        real = services.ledger.streams_present_forked
        assert real is not None

        def stale_once(ids: Any) -> set[uuid.UUID]:
            if not looked.exists():  # the first child sees none of them recorded
                looked.write_text("")
                return set()
            return real(ids)

        monkeypatch.setattr(services.ledger, "streams_present_forked", stale_once)
        prepared = PreparedCount(monkeypatch)
        report = import_file(services, every)
        assert looked.exists()
        assert (report.state, report.runs, report.new_runs) == ("imported", 6, 4)
        # The first attempt's first prepared run found recorded; the second prepared
        # only the four new ones.
        assert prepared.runs == 4
        alone = ledgers("alone")
        import_file(alone, some)
        import_file(alone, every)
        assert recorded(services) == recorded(alone)


class TestRefused:
    @pytest.mark.parametrize("who", [CHILD, PARENT], ids=["child-parses", "parent-parses"])
    def test_a_bad_row_is_refused_by_name_and_nothing_is_appended(
        self, ledgers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, who: int
    ) -> None:
        rows = [db_row(run_id=f"run_bfcl_20260512T1015{i:02d}Z_1_{i:08x}") for i in range(120)]
        rows[97]["status"] = "exploded"
        path = make_db(tmp_path / "bad" / "orchestrator.sqlite", rows)
        alone = ledgers("alone")
        expected = import_file(alone, path)
        read_in_a_child(monkeypatch, who)
        services = ledgers("split")
        head = services.ledger.recorder.max_notification_id() or 0
        report = import_file(services, path)
        assert report.state == expected.state == "failed"
        assert report.message == expected.message
        assert re.search(r"benchmark_runs\.status", report.message or "")
        assert "run_bfcl_20260512T101597Z_1_00000061" in (report.message or "")
        assert (services.ledger.recorder.max_notification_id() or 0) == head

    def test_a_value_beyond_the_limits_is_named_at_the_records_place(
        self, ledgers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        rows = [db_row(run_id=f"run_bfcl_20260512T1015{i:02d}Z_1_{i:08x}") for i in range(120)]
        rows[88]["cwd"] = "x" * 2_000_000
        path = make_db(tmp_path / "long" / "orchestrator.sqlite", rows)
        alone = ledgers("alone")
        expected = import_file(alone, path)
        assert expected.state == "failed"
        for who in (CHILD, PARENT):
            read_in_a_child(monkeypatch, who)
            services = ledgers(f"split-{who}")
            report = import_file(services, path)
            assert (report.state, report.message) == ("failed", expected.message)
            assert (services.ledger.recorder.max_notification_id() or 0) == 0
