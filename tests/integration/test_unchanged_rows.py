"""An orchestrator.sqlite imported again after it grew: a row the ledger recorded from that
very row (its run holds one event, which states the row's digest) is not read again, and
the import records what reading every row records."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pydantic_core
import pytest

from benchledger.adapters.formats import orchestrator, orchestrator_sources
from benchledger.adapters.store import read_ahead, streams
from benchledger.domain import importing, run_rules
from benchledger.domain.records import RunRecord, SourceFile
from benchledger.domain.result_import import SkipNoted
from benchledger.domain.run import RunImported
from tests.integration.test_import_units import (
    CHILD,
    PARENT,
    URL,
    import_file,
    ledgers,  # noqa: F401 - a fixture
    read_in_a_child,
    recorded,
)
from tests.unit.test_format_orchestrator import db_row, make_db

BENCH_ROWS = 400


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.integration.test_import_units import BENCH

    path = tmp_path_factory.mktemp("orch") / "orchestrator.sqlite"
    BENCH.build_db(path, BENCH_ROWS, 4)
    return path


def copy_of(database: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal"):
        source = Path(f"{database}{suffix}")
        if source.exists():
            Path(f"{target}{suffix}").write_bytes(source.read_bytes())
    return target


def grown(database: Path, target: Path, change: Callable[[sqlite3.Connection], None]) -> Path:
    copy_of(database, target)
    with closing(sqlite3.connect(target)) as conn, conn:
        change(conn)
    return target


@pytest.fixture
def imported(
    ledgers: Any,  # noqa: F811
    database: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[Any, Any]:
    """A ledger that imported the database, a child parsing (as later imports do here),
    and the import's report."""
    read_in_a_child(monkeypatch, CHILD)
    services = ledgers("imported")
    return services, import_file(services, database)


def three_new_rows(conn: sqlite3.Connection) -> None:
    conn.execute(
        "UPDATE benchmark_runs SET run_id = run_id || '_new' WHERE rowid IN "
        "(SELECT rowid FROM benchmark_runs WHERE status = 'succeeded' LIMIT 3)"
    )


def told(report: Any) -> tuple[Any, ...]:
    """What an import's report tells: its state, and its runs' count, new ones and ids."""
    return report.state, report.runs, report.new_runs, report.run_ids


def run_ids(path: Path) -> set[str]:
    with closing(sqlite3.connect(path)) as conn:
        return {r[0] for r in conn.execute("SELECT run_id FROM benchmark_runs")}


class ParsedRows:
    """The run_ids of the benchmark_runs rows parsed, in whichever process parsed them
    (a forked child's are told through a file)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
        self.file = folder / "parsed.txt"
        self.file.write_text("")
        real = orchestrator.parse_unit

        def parse_unit(name: str, unit: Any) -> Any:
            key = orchestrator_sources.unit_key(unit)
            if key is not None:
                with self.file.open("a") as f:
                    f.write(key + "\n")
            return real(name, unit)

        monkeypatch.setattr(orchestrator, "parse_unit", parse_unit)

    def keys(self) -> list[str]:
        return self.file.read_text().split()


def reading_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importing.Importing, "unchanged_rows", lambda *a, **k: None)


def skippable(services: Any, skips: bool = True) -> set[str]:
    """The keys of the runs whose stream holds one RunImported stating a row digest, and
    (`skips`) of the skips noted with one."""
    counts: dict[UUID, int] = {}
    first: dict[UUID, dict[str, Any]] = {}
    topics = {RunImported.TOPIC, *([SkipNoted.TOPIC] if skips else [])}
    for n in services.ledger.recorder.select_notifications(0, 1_000_000):
        counts[n.originator_id] = counts.get(n.originator_id, 0) + 1
        if n.topic in topics and n.originator_version == 1:
            first[n.originator_id] = json.loads(n.state)
    return {
        state.get("run_key") or state["skip_key"]
        for stream, state in first.items()
        if counts[stream] == 1 and state.get("source_row_sha256")
    }


class TestAGrownDatabase:
    @pytest.mark.parametrize(
        "who", [CHILD, PARENT, None], ids=["child-parses", "parent-parses", "no-child"]
    )
    def test_reads_only_the_rows_it_has_not_recorded_as_they_are(
        self,
        ledgers: Any,  # noqa: F811
        database: Path,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        who: int | None,
    ) -> None:
        bigger = grown(database, tmp_path / "db" / "orchestrator.sqlite", three_new_rows)
        with monkeypatch.context() as m:  # the reference: every row read and compared
            reading_every_row(m)
            every = ledgers("every")
            import_file(every, database)
            expected = import_file(every, bigger)
        if who is None:  # one process reads, tells and parses every unit
            monkeypatch.setattr(read_ahead, "READ_AHEAD_BYTES", 0)
            monkeypatch.setattr(read_ahead, "can_read_ahead", lambda: False)
        else:
            read_in_a_child(monkeypatch, who)
        services = ledgers("skipping")
        first = import_file(services, database)
        assert first.state == "imported"
        recorded_as_they_are = skippable(services)
        # Most rows are runs stated whole or skips; stale recoveries and open rows not.
        runs = skippable(services, skips=False)
        assert 200 < len(runs) < len(recorded_as_they_are) < BENCH_ROWS
        parsed = ParsedRows(monkeypatch, tmp_path)
        report = import_file(services, bigger)
        assert told(report) == told(expected)
        assert report.new_runs == 3
        assert recorded(services) == recorded(every)
        keys = parsed.keys()
        assert len(keys) == len(set(keys))
        rows = run_ids(bigger)
        # Every row but those recorded as they are, and only those, was read.
        assert set(keys) == rows - recorded_as_they_are
        # Read again, it is the same file: nothing read, nothing appended.
        head = services.ledger.recorder.max_notification_id()
        assert import_file(services, bigger).state == "unchanged"
        assert services.ledger.recorder.max_notification_id() == head

    def test_a_changed_row_and_a_run_with_later_events_are_read_again(
        self, imported: Any, database: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        services, _ = imported
        ids = sorted(skippable(services, skips=False))
        turned, invalidated = ids[0], ids[1]

        def change(conn: sqlite3.Connection) -> None:
            # A trajectory row edited (turns are not part of a run's content: the run is
            # found unchanged once read, but it must be read).
            found = conn.execute(
                "UPDATE benchmark_run_trajectories SET latency_ms = coalesce(latency_ms, 0) "
                "+ 1 WHERE rowid = (SELECT min(rowid) FROM benchmark_run_trajectories "
                "WHERE run_id = ?)",
                (turned,),
            ).rowcount
            if not found:  # a run without turns: one of its columns then
                conn.execute(
                    "UPDATE benchmark_runs SET stdout_path = stdout_path || '.1' WHERE run_id = ?",
                    (turned,),
                )

        bigger = grown(database, tmp_path / "db" / "orchestrator.sqlite", change)
        run_id = importing.run_id_for(orchestrator.SYSTEM, invalidated)
        services.ledger.invalidate_run(run_id, "checked by hand", "tester")
        parsed = ParsedRows(monkeypatch, tmp_path)
        report = import_file(services, bigger)
        assert report.state == "unchanged"  # both read, and found as they were recorded
        keys = set(parsed.keys())
        assert turned in keys and invalidated in keys
        assert not keys & (set(ids) - {turned, invalidated})

    def test_a_store_too_busy_to_tell_has_every_row_read(
        self, imported: Any, database: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        services, first = imported
        bigger = grown(database, tmp_path / "db" / "orchestrator.sqlite", three_new_rows)

        def busy(*args: Any) -> Any:
            raise sqlite3.OperationalError("database is locked")

        monkeypatch.setattr(streams, "_sole", busy)
        parsed = ParsedRows(monkeypatch, tmp_path)
        report = import_file(services, bigger)
        assert (report.state, report.runs, report.new_runs) == ("imported", first.runs, 3)
        rows = run_ids(bigger)
        assert set(parsed.keys()) == rows

    def test_options_read_every_row(
        self, imported: Any, database: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        services, _ = imported
        parsed = ParsedRows(monkeypatch, tmp_path)
        import_file(services, database, defaults={"provider": "someone"})
        rows = run_ids(database)
        assert set(parsed.keys()) == rows

    @pytest.mark.postgres
    @pytest.mark.skipif(not URL, reason="no PostgreSQL")
    def test_on_postgresql_the_process_reading_the_units_tells_them(
        self,
        ledgers: Any,  # noqa: F811
        database: Path,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        bigger = grown(database, tmp_path / "db" / "orchestrator.sqlite", three_new_rows)
        with monkeypatch.context() as m:
            reading_every_row(m)
            every = ledgers("every", "postgres")
            import_file(every, database)
            expected = import_file(every, bigger)
        # No child there (its pool's threads forbid a fork): this process reads the
        # units, and tells them through the store.
        monkeypatch.setattr(read_ahead, "READ_AHEAD_BYTES", 0)
        monkeypatch.setattr(read_ahead, "can_read_ahead", lambda: False)
        services = ledgers("skipping", "postgres")
        import_file(services, database)
        recorded_as_they_are = skippable(services)
        assert recorded_as_they_are
        parsed = ParsedRows(monkeypatch, tmp_path)
        report = import_file(services, bigger)
        assert told(report) == told(expected)
        assert recorded(services) == recorded(every)
        rows = run_ids(bigger)
        assert set(parsed.keys()) == rows - recorded_as_they_are


class TestTheLookup:
    """What the lookup of recorded rows reads of each run's event: the end of its stored
    text, where the row's digest is, not the whole event (its turns with it)."""

    def test_a_first_import_into_an_empty_ledger_looks_nothing_up(
        self,
        ledgers: Any,  # noqa: F811
        database: Path,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        asked = tmp_path / "asked.txt"  # written by whichever process asks
        asked.write_text("")
        real = streams._sole

        def counted(*args: Any) -> Any:
            with asked.open("a") as f:
                f.write("asked\n")
            return real(*args)

        monkeypatch.setattr(streams, "_sole", counted)
        read_in_a_child(monkeypatch, CHILD)
        services = ledgers("empty")
        first = import_file(services, database)
        assert (first.state, asked.read_text()) == ("imported", "")
        bigger = grown(database, tmp_path / "db" / "orchestrator.sqlite", three_new_rows)
        parsed = ParsedRows(monkeypatch, tmp_path)
        assert import_file(services, bigger).new_runs == 3
        assert asked.read_text()  # a ledger that holds events is asked
        assert len(parsed.keys()) < len(run_ids(bigger))

    @pytest.mark.parametrize(
        "store",
        [
            "sqlite",
            pytest.param(
                "postgres",
                marks=[
                    pytest.mark.postgres,
                    pytest.mark.skipif(not URL, reason="no PostgreSQL"),
                ],
            ),
        ],
    )
    def test_reads_the_end_of_each_sole_event(
        self,
        ledgers: Any,  # noqa: F811
        database: Path,
        monkeypatch: pytest.MonkeyPatch,
        store: str,
    ) -> None:
        monkeypatch.setattr(read_ahead, "can_read_ahead", lambda: False)
        services = ledgers("lookup", store)
        import_file(services, database)
        recorder = services.ledger.recorder
        stored = {
            n.originator_id: (n.topic, n.state)
            for n in recorder.select_notifications(0, 1_000_000)
            if n.topic == RunImported.TOPIC
        }
        counts: dict[UUID, int] = {}
        for n in recorder.select_notifications(0, 1_000_000):
            counts[n.originator_id] = counts.get(n.originator_id, 0) + 1
        sole = {stream for stream in stored if counts[stream] == 1}
        assert len(sole) > 100
        assert all(len(stored[s][1]) > streams.STATE_TAIL for s in sole)
        lookups = [streams.sole_events(recorder)]
        if store == "sqlite":
            lookups.append(streams.sole_events_forked(recorder))
        for lookup in lookups:
            assert lookup is not None
            found = lookup([*stored, uuid4()])
            assert set(found) == sole
            for stream, (topic, tail) in found.items():
                whole_topic, whole = stored[stream]
                assert (topic, tail) == (whole_topic, whole[-streams.STATE_TAIL :])


class TestSecrets:
    def test_a_row_holding_anything_masked_states_no_digest_and_is_read_each_time(
        self,
        ledgers: Any,  # noqa: F811
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """A digest of a row as its source states it, with every other value of the row in
        the ledger, would let anyone holding the ledger test guesses at a masked value:
        a row with anything to mask states none."""
        keys = [f"run_bfcl_20260512T1015{i:02d}Z_1_{i:08x}" for i in range(6)]
        rows = [db_row(run_id=k) for k in keys]
        rows[1]["command_json"] = json.dumps(["python", "-m", "bfcl", "--api-key", "hunter22"])
        rows[2]["extra_config_json"] = json.dumps(
            {"agent": "eliza", "harness": "eliza", "limit": 10, "api_key": "hunter22"}
        )
        rows[3]["error"] = "request failed: Authorization: Bearer hunter22hunter22hunter22"
        secret = "request failed: Authorization: Bearer hunter22hunter22hunter22"
        skips = [f"run_bfcl_20260512T1016{i:02d}Z_1_{i:08x}" for i in range(2)]
        rows += [db_row(run_id=k, status="skipped", error="not selected") for k in skips]
        rows[-1]["error"] = secret
        path = make_db(tmp_path / "a" / "orchestrator.sqlite", rows)
        read_in_a_child(monkeypatch, CHILD)
        services = ledgers("secrets")
        assert import_file(services, path).state == "imported"
        stated = {}
        for n in services.ledger.recorder.select_notifications(0, 1_000_000):
            assert "hunter22" not in n.state.decode()
            if n.topic in (RunImported.TOPIC, SkipNoted.TOPIC):
                state = json.loads(n.state)
                stated[state.get("run_key") or state["skip_key"]] = state.get("source_row_sha256")
        assert set(stated) == {*keys, *skips}
        assert [k for k in [*keys, *skips] if stated[k] is None] == [*keys[1:4], skips[1]]
        parsed = ParsedRows(monkeypatch, tmp_path)
        new = "run_bfcl_20260512T101599Z_1_000000ff"
        bigger = make_db(tmp_path / "b" / "orchestrator.sqlite", [*rows, db_row(run_id=new)])
        report = import_file(services, bigger)
        assert (report.state, report.new_runs) == ("imported", 1)
        assert sorted(parsed.keys()) == sorted([*keys[1:4], skips[1], new])


class TestTheDigest:
    def test_is_of_the_values_not_of_the_objects_holding_them(self) -> None:
        import sys

        names = ("run_id", "status", "score")
        plain = (names, ("r1", "succeeded", 0.5), ("run_id",), [("r1",)])
        same = (
            tuple(sys.intern(n) for n in names),
            ("".join(["r", "1"]), sys.intern("succeeded"), 0.5),
            ("run_id",),
            [("r" + "1",)],
        )
        digest = orchestrator_sources.unit_digest
        assert digest(plain) == digest(same)
        assert orchestrator_sources.unit_key(plain) == "r1"
        for changed in (
            (names, ("r1", "succeeded", 0.50001), ("run_id",), [("r1",)]),
            (names, ("r1", "failed", 0.5), ("run_id",), [("r1",)]),
            (names, ("r1", "succeeded", 0.5), ("run_id",), [("r1",), ("r1",)]),
            (names, ("r1", "succeeded", 0.5), None, None),
            (("run_id", "status", "value"), ("r1", "succeeded", 0.5), ("run_id",), [("r1",)]),
        ):
            assert digest(changed) != digest(plain)
        assert orchestrator_sources.unit_key({"run_group_id": "g"}) is None

    def test_names_the_reading_of_the_rows_it_was_made_for(self, tmp_path: Path) -> None:
        """A row recorded as it is is not read again, so a change to how rows are read
        (another record from the same row) must change the digest's prefix, or the rows
        recorded before would never get what the new reading finds. This pins what the
        generator's rows read into, with the prefix: when it fails, the reading
        changed; bump `ROW_DIGEST_PREFIX` and pin both anew."""
        from tests.integration.test_import_units import BENCH

        path = tmp_path / "orchestrator.sqlite"
        BENCH.build_db(path, 60, 4)
        read = hashlib.sha256()
        count = 0
        for unit in orchestrator_sources.stream_units(path):
            record = orchestrator_sources.parse_unit("orchestrator.sqlite", unit)
            if record is None:
                continue
            count += 1
            if isinstance(record, RunRecord):
                read.update(record.header.json_bytes())
                rest = {
                    "turns": [turn.model_dump(mode="json") for turn in record.turns],
                    "supplement": record.supplement,
                    "group_key": record.group_key,
                    "placeholders": record.placeholders,
                }
                read.update(pydantic_core.to_json(rest))
            else:
                read.update(record.model_dump_json(exclude={"source_row_sha256"}).encode())
        assert count == 63
        assert (orchestrator_sources.ROW_DIGEST_PREFIX, read.hexdigest()) == (
            b"benchledger orchestrator benchmark_runs row 1\0",
            "6d918d2e4ce1195055cd97fd50e9c047a7b2a5f0572b70bfc2a1414a74c1da1e",
        )

    def test_is_stored_only_where_a_format_gives_one(self, tmp_path: Path) -> None:
        path = make_db(tmp_path / "orchestrator.sqlite", [db_row()])
        units = [u for u in orchestrator_sources.stream_units(path) if not isinstance(u, dict)]
        record = orchestrator_sources.parse_unit(str(path), units[0])
        assert isinstance(record, RunRecord)
        digest = orchestrator_sources.unit_digest(units[0])
        assert record.source_row_sha256 == digest
        source = SourceFile(path="orchestrator.sqlite", sha256="0" * 64, size=1, format="x")
        unstated = record.model_copy(update={"source_row_sha256": None})
        for read, ending in ((record, digest.encode() + b'"}'), (unstated, None)):
            event = run_rules.imported(
                uuid4(), read, source_file=source, run_group_id=None, content_sha256="c"
            )
            assert event is not None
            text = RunImported.__pydantic_serializer__.to_json(event)
            if ending is None:  # other sources' events, as they always were
                assert b"source_row_sha256" not in text
            else:
                assert text.endswith(b'"source_row_sha256":"' + ending)
            assert RunImported.model_validate_json(text) == event
