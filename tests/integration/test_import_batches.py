"""An import asks the store which runs are new a batch at a time, and writes its events a
batch at a time, inside the file's one transaction: no query or insert per run."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters import formats
from benchledger.adapters.store import streams
from benchledger.adapters.store.bootstrap import Services, Settings, build
from benchledger.adapters.store.importer import Importer
from benchledger.domain import import_lookups, importing, ledger_base
from benchledger.domain.records import SourceFile
from benchledger.domain.signatures import (
    benchmark_id_for,
    import_id_for,
    run_id_for,
    signature_id_for,
)
from tests.helpers import write_jsonl
from tests.unit.test_format_orchestrator import db_row, make_db

URL = os.environ.get("BENCHLEDGER_TEST_POSTGRES_URL")
STORES = [
    "sqlite",
    pytest.param(
        "postgres",
        marks=[pytest.mark.postgres, pytest.mark.skipif(not URL, reason="no PostgreSQL")],
    ),
]


@pytest.fixture(params=STORES)
def services(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Services]:
    if request.param == "sqlite":
        with build(Settings(db_path=tmp_path / "ledger.db")) as s:
            yield s
        return
    import psycopg

    assert URL
    schema = f"bl_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in URL else "?"
    try:
        settings = Settings(
            db_path=tmp_path / "ledger.db", event_store_url=f"{URL}{sep}schema={schema}"
        )
        with build(settings) as s:
            yield s
    finally:
        with psycopg.connect(URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def runs_file(
    path: Path,
    keys: list[str],
    score: float = 0.5,
    *,
    metrics: dict[str, Any] | None = None,
    cells: bool = True,
) -> Path:
    lines: list[dict[str, Any]] = []
    for key in keys:
        run: dict[str, Any] = {
            "type": "run",
            "run_key": key,
            "benchmark": "bfcl",
            "agent": "eliza",
            "model": "m",
            "status": "succeeded",
            "score": score,
        }
        if metrics:
            run["metrics"] = metrics
        lines.append(run)
        if cells:
            lines.append({"type": "cell", "key": "c", "outcome": "passed"})
    return write_jsonl(path, lines)


def facts_of(services: Services) -> list[dict[str, Any]]:
    """The facts every RunFactsAdded event added, in order."""
    notes = services.ledger.recorder.select_notifications(0, 10_000)
    return [json.loads(n.state)["facts"] for n in notes if n.topic.endswith(":RunFactsAdded")]


def report_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def import_file(services: Services, path: Path) -> Any:
    ledger = services.ledger
    group = ledger.new_group("import", "import")
    report = Importer(ledger).import_file(path, group=group)
    ledger.close_group(group)
    return report


class Counting:
    """Counts the calls of one method (a spy over the real thing, not a fake)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, obj: Any, name: str) -> None:
        self.calls: list[tuple[Any, ...]] = []
        real = getattr(obj, name)

        def spy(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(args)
            return real(*args, **kwargs)

        monkeypatch.setattr(obj, name, spy)


class TestWhichRunsAreNew:
    def test_the_store_names_exactly_the_streams_that_hold_events(
        self, services: Services, tmp_path: Path
    ) -> None:
        import_file(services, runs_file(tmp_path / "a.jsonl", ["a", "b"]))
        recorded = [run_id_for("native", "a"), run_id_for("native", "b")]
        others = [uuid.uuid4() for _ in range(streams.CHUNK + 3)]  # more than one chunk
        present = services.ledger.streams_present
        assert present is not None
        assert present([*others, *recorded]) == set(recorded)
        assert present([]) == set()

    def test_new_runs_are_found_a_batch_at_a_time_not_run_by_run(
        self, services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(import_lookups, "LOOKAHEAD", 4)
        keys = [f"r{i}" for i in range(10)]
        ledger = services.ledger
        path = runs_file(tmp_path / "a.jsonl", keys)
        lookups = Counting(monkeypatch, ledger, "streams_present")
        reads = Counting(monkeypatch, ledger.events, "get")
        report = Importer(ledger).import_file(path, group=ledger.new_group("import", "import"))
        assert (report.state, report.new_runs) == ("imported", 10)
        # The runs a batch at a time, then the file's benchmarks together (one here).
        assert [len(ids) for (ids,) in lookups.calls] == [4, 4, 2, 1]
        assert lookups.calls[-1] == ([benchmark_id_for("bfcl")],)
        # The file's own stream is read: no run's.
        assert [args[0] for args in reads.calls] == [import_id_for(report_sha(path))]

    def test_keys_that_may_name_this_ledgers_runs_are_looked_up_with_the_batch(
        self, services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # A key that is a run id may be a row this ledger exported: whether it names one
        # of its runs is asked with the batch, never with a read per run.
        monkeypatch.setattr(import_lookups, "LOOKAHEAD", 4)
        keys = [str(uuid.uuid4()) for _ in range(6)]
        ledger = services.ledger
        path = runs_file(tmp_path / "a.jsonl", keys)
        lookups = Counting(monkeypatch, ledger, "streams_present")
        reads = Counting(monkeypatch, ledger.events, "get")
        report = Importer(ledger).import_file(path, group=ledger.new_group("import", "import"))
        assert (report.state, report.new_runs) == ("imported", 6)
        assert [len(ids) for (ids,) in lookups.calls] == [8, 4, 1]
        assert [args[0] for args in reads.calls] == [import_id_for(report_sha(path))]

    def test_runs_recorded_already_are_still_compared_with_what_they_hold(
        self, services: Services, tmp_path: Path
    ) -> None:
        import_file(services, runs_file(tmp_path / "a.jsonl", ["a", "b"]))
        report = import_file(services, runs_file(tmp_path / "b.jsonl", ["a", "b", "c"]))
        assert (report.state, report.runs, report.new_runs) == ("imported", 3, 1)
        changed = import_file(services, runs_file(tmp_path / "c.jsonl", ["c", "d"], score=0.9))
        assert changed.state == "conflict" and "score: recorded 0.5" in str(changed.message)

    def test_a_run_another_writer_records_after_the_lookup_is_refused_by_the_store(
        self, services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import_file(services, runs_file(tmp_path / "a.jsonl", ["a"]))
        before = services.runner.head_position()
        # A lookup that missed a run committed since: the append must not duplicate it.
        monkeypatch.setattr(services.ledger, "streams_present", lambda ids: set())
        report = import_file(services, runs_file(tmp_path / "b.jsonl", ["b", "a"]))
        assert report.state == "failed" and "other writers kept changing" in str(report.message)
        assert services.runner.head_position() == before


class TestRecordedRunsReadWithTheBatch:
    """A file restating runs the ledger holds (a grown orchestrator.sqlite, its
    viewer_data.json after it) is compared with their events read a batch at a time."""

    def test_the_store_reads_each_streams_events_as_a_read_of_that_stream_does(
        self, services: Services, tmp_path: Path
    ) -> None:
        import_file(services, runs_file(tmp_path / "a.jsonl", ["a", "b"], cells=False))
        # The second file adds a fact to "a": its stream then holds two events.
        added = runs_file(tmp_path / "b.jsonl", ["a"], metrics={"x": 1}, cells=False)
        assert import_file(services, added).state == "imported"
        ledger = services.ledger
        read = ledger.stream_events
        assert read is not None
        recorded = [run_id_for("native", "a"), run_id_for("native", "b")]
        others = [uuid.uuid4() for _ in range(streams.CHUNK + 3)]  # more than one chunk
        found = read([*others, *recorded])
        assert set(found) == set(recorded)
        for stream in recorded:
            expected = list(ledger.events.get(stream))
            got = [ledger.mapper.to_domain_event(stored) for stored in found[stream]]
            assert got == expected
            assert [s.originator_version for s in found[stream]] == list(
                range(1, len(expected) + 1)
            )
        assert len(found[recorded[0]]) == 2
        assert read([]) == {}

    def test_a_read_stays_within_its_budget_and_leaves_larger_streams_out(
        self, services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import_file(services, runs_file(tmp_path / "small.jsonl", ["a", "c"], cells=False))
        big = write_jsonl(
            tmp_path / "big.jsonl",
            [
                {"type": "run", "run_key": "b", "benchmark": "bfcl", "agent": "eliza"}
                | {"model": "m", "status": "succeeded", "score": 0.5},
                *({"type": "cell", "key": f"c{i}", "outcome": "passed"} for i in range(1200)),
            ],
        )
        import_file(services, big)
        ledger = services.ledger
        a, b, c = (run_id_for("native", k) for k in "abc")
        size = {s: sum(len(e.state) for e in ledger.recorder.select_events(s)) for s in (a, b, c)}
        assert size[b] > size[a] + size[c]
        read = ledger.stream_events
        assert read is not None
        # The large stream is passed over; a smaller one after it still fits.
        monkeypatch.setattr(streams, "READ_BYTES", size[a] + size[c])
        found = read([a, b, c])
        assert set(found) == {a, c}
        assert [len(found[s]) for s in (a, c)] == [1, 1]  # each stream whole
        monkeypatch.setattr(streams, "READ_BYTES", size[a] + size[c] - 1)
        assert set(read([a, b, c])) == {a}
        monkeypatch.setattr(streams, "READ_BYTES", sum(size.values()))
        assert set(read([a, b, c])) == {a, b, c}

    def test_runs_restated_without_their_cells_are_read_within_the_budget(
        self, services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Runs recorded with many cells, restated by run lines alone: the batch is
        # small, what the ledger holds of it is not. What one read returns stays within
        # the budget; the runs past it are read one by one, and decided alike.
        keys = [f"r{i}" for i in range(6)]
        lines: list[dict[str, Any]] = []
        for key in keys:
            lines.append(
                {"type": "run", "run_key": key, "benchmark": "bfcl", "agent": "eliza"}
                | {"model": "m", "status": "succeeded", "score": 0.5}
            )
            lines.extend({"type": "cell", "key": f"c{i}", "outcome": "passed"} for i in range(600))
        import_file(services, write_jsonl(tmp_path / "full.jsonl", lines))
        ledger = services.ledger
        ids = [run_id_for("native", k) for k in keys]
        one = sum(len(e.state) for e in ledger.recorder.select_events(ids[0]))
        budget = 2 * one + one // 2  # two of the six runs at a time
        monkeypatch.setattr(streams, "READ_BYTES", budget)
        returned: list[int] = []
        real = ledger.stream_events
        assert real is not None

        def spy(wanted: list[uuid.UUID]) -> dict[uuid.UUID, list[Any]]:
            found = real(wanted)
            returned.append(sum(len(e.state) for held in found.values() for e in held))
            return found

        monkeypatch.setattr(ledger, "stream_events", spy)
        reads = Counting(monkeypatch, ledger.repository, "get")
        path = runs_file(tmp_path / "heads.jsonl", keys, metrics={"x": 1}, cells=False)
        report = import_file(services, path)
        assert (report.state, report.runs, report.new_runs, report.merged_runs) == (
            "imported",
            6,
            0,
            6,
        )
        assert returned and max(returned) <= budget
        assert len([i for (i, *_) in reads.calls if i in ids]) >= 4  # past the budget
        merged = [f for f in facts_of(services) if f["metrics"] == {"x": 1}]
        assert len(merged) == 6

    def test_recorded_runs_are_read_a_batch_at_a_time_not_run_by_run(
        self, services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(import_lookups, "LOOKAHEAD", 4)
        ledger = services.ledger
        keys = [f"r{i}" for i in range(10)]
        import_file(services, runs_file(tmp_path / "a.jsonl", keys))
        # The same runs and one more, the runs with a fact the first file did not state.
        path = runs_file(tmp_path / "b.jsonl", [*keys, "new"], metrics={"x": 1})
        batches = Counting(monkeypatch, ledger, "stream_events")
        reads = Counting(monkeypatch, ledger.events, "get")
        report = Importer(ledger).import_file(path, group=ledger.new_group("import", "import"))
        assert (report.state, report.runs, report.new_runs, report.merged_runs) == (
            "imported",
            11,
            1,
            10,
        )
        # The recorded runs of each batch of 4, in one read each; the new run in none.
        assert [len(ids) for (ids,) in batches.calls] == [4, 4, 2]
        # No run's stream is read on its own: the file's, its benchmark's, and the
        # signature's (whose attempts the file adds to) are.
        read_ids = {args[0] for args in reads.calls}
        assert not read_ids & {run_id_for("native", k) for k in [*keys, "new"]}
        merged = [f for f in facts_of(services) if f["metrics"] == {"x": 1}]
        assert len(merged) == 10

    def test_a_grown_database_reads_none_of_its_recorded_streams_one_by_one(
        self, services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # The orchestrator's database a few days later: its recorded runs, closed run
        # groups and skips are compared with the events read with each batch.
        def row(i: int, status: str = "succeeded") -> dict[str, Any]:
            skipped = status == "skipped"
            return db_row(
                run_id=f"run_bfcl_20260512T1015{i:02d}Z_1_{i:08x}",
                run_group_id=f"rg_20260512T101455Z_{i % 2:08x}",
                status=status,
                metrics={"reason": "already_succeeded"} if skipped else {"n": 10},
            )

        def database(path: Path, rows: list[dict[str, Any]]) -> Path:
            db = make_db(path, rows)
            with closing(sqlite3.connect(db)) as conn, conn:
                conn.execute("ALTER TABLE run_groups ADD COLUMN finished_at TEXT")
                for g in range(2):
                    conn.execute(
                        "INSERT INTO run_groups VALUES (?, ?, ?)",
                        (
                            f"rg_20260512T101455Z_{g:08x}",
                            "2026-05-12T10:14:55+00:00",
                            "2026-05-12T11:00:00+00:00",
                        ),
                    )
            return db

        rows = [row(i, "skipped" if i % 3 == 2 else "succeeded") for i in range(9)]
        first = database(tmp_path / "a" / "orchestrator.sqlite", rows)
        assert import_file(services, first).new_runs == 6
        fmt = formats.by_name("orchestrator")
        items = list(formats.stream(fmt, first, {}))
        recorded = {i for item in items if (i := import_lookups.stream_id(fmt.SYSTEM, item))}
        kinds = Counter(type(item).__name__ for item in items)
        assert kinds == {"GroupRecord": 2, "RunRecord": 6, "SkipRecord": 3}
        assert len(recorded) == 11
        ledger = services.ledger
        read: list[Any] = []
        for obj in (ledger.events, ledger.repository):
            real = obj.get

            def spy(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
                read.append(args[0] if args else kwargs.get("originator_id"))
                return _real(*args, **kwargs)

            monkeypatch.setattr(obj, "get", spy)
        grown = database(tmp_path / "b" / "orchestrator.sqlite", [*rows, row(9)])
        report = import_file(services, grown)
        assert (report.state, report.runs, report.new_runs) == ("imported", 7, 1)
        assert read and not set(read) & recorded

    def test_the_attempts_streams_are_asked_about_at_once_and_only_recorded_ones_read(
        self, services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        def row(s: int, attempt: int = 1) -> dict[str, Any]:
            return db_row(
                run_id=f"run_bench{s}_20260512T1015{s:02d}Z_{attempt}_{s:08x}",
                benchmark_id=f"bench{s}",
                benchmark_directory=f"bench{s}",
                signature=f"sig{s}",
                attempt=attempt,
            )

        first = [row(s) for s in range(3)]
        assert import_file(services, make_db(tmp_path / "a" / "orchestrator.sqlite", first))
        ledger = services.ledger
        asked = Counting(monkeypatch, ledger, "streams_present")
        read = Counting(monkeypatch, ledger.repository, "get")
        # Days later: a second attempt at sig0's work, and two new pieces of work.
        grown = [*first, row(0, attempt=2), row(3), row(4)]
        report = import_file(services, make_db(tmp_path / "b" / "orchestrator.sqlite", grown))
        assert report.new_runs == 3
        ids = {signature_id_for(f"sig{s}") for s in range(5)}
        counted = {signature_id_for(f"sig{s}") for s in (0, 3, 4)}
        assert [set(args[0]) for args in asked.calls if set(args[0]) & ids] == [counted]
        # Only the stream that holds events is read: its attempts are not counted twice.
        assert {args[0] for args in read.calls} & ids == {signature_id_for("sig0")}
        attempts = [
            [a.attempt for e in ledger.events.get(signature_id_for(f"sig{s}")) for a in e.attempts]
            for s in (0, 3, 4)
        ]
        assert attempts == [[1, 2], [1], [1]]

    def test_decides_as_reads_run_by_run_do(self, tmp_path: Path) -> None:
        # The same files through a ledger that reads recorded runs with the batch and one
        # that reads each on its own: the same outcomes, messages and events.
        files = [
            runs_file(tmp_path / "a.jsonl", ["a", "b", "c"], cells=False),
            # adds a fact to a and b, d is new
            runs_file(tmp_path / "b.jsonl", ["a", "b", "d"], metrics={"x": 1}, cells=False),
            # the same again: unchanged
            runs_file(tmp_path / "c.jsonl", ["a", "b"], metrics={"x": 1}, cells=False),
            # c's score stated otherwise: a conflict, nothing appended
            runs_file(tmp_path / "d.jsonl", ["d", "c"], score=0.9, cells=False),
        ]
        # a, whose stream holds the fact b.jsonl added too, amended
        amended = runs_file(tmp_path / "e.jsonl", ["a", "e"], score=0.8, cells=False)
        outcomes = []
        for batched in (True, False):
            with build(Settings(db_path=tmp_path / f"ledger-{batched}.db")) as services:
                if not batched:
                    services.ledger.stream_events = None
                ledger = services.ledger
                seen = []
                for path in files:
                    report = import_file(services, path)
                    seen.append((report.state, report.runs, report.new_runs, report.message))
                group = ledger.new_group("import", "import")
                report = Importer(ledger).import_file(amended, group=group, amend=True)
                seen.append((report.state, report.runs, report.new_runs, report.message))
                notes = ledger.recorder.select_notifications(0, 10_000)
                seen.append([n.topic.rsplit(":", 1)[1] for n in notes])
                seen.append(
                    [
                        {k: v for k, v in f.items() if k not in ("timestamp",)}
                        for f in facts_of(services)
                    ]
                )
            outcomes.append(seen)
        batched_outcomes, one_by_one = outcomes
        assert batched_outcomes == one_by_one
        states = [o[0] for o in batched_outcomes[:5]]
        assert states == ["imported", "imported", "unchanged", "conflict", "amended"]

    def test_a_stream_this_import_appends_to_is_read_from_the_store_again(
        self, services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import_file(services, runs_file(tmp_path / "a.jsonl", ["a"], cells=False))
        ledger = services.ledger
        run_id = run_id_for("native", "a")
        path = runs_file(tmp_path / "b.jsonl", ["a"], metrics={"x": 1}, cells=False)
        [record] = [r for r in formats.stream(formats.by_name("native"), path, {})]
        with ledger.appending_together():
            [item] = list(ledger._looked_up("native", [record]))
            assert item is record
            assert ledger._ahead is not None and run_id in ledger._ahead
            current = ledger.get_run(run_id)
            assert current.version == 1
            added, conflicts = ledger._merge(
                current,
                record,
                SourceFile(path="b.jsonl", sha256="0" * 64, size=1, format="native"),
            )
            assert added and not conflicts
            reads = Counting(monkeypatch, ledger.repository, "get")
            ledger.get_run(run_id)
            assert reads.calls == []  # served from what the batch read
            ledger._save(added)
            # Appended here: no longer served from what the batch read, but read as
            # a read run by run would read it.
            assert run_id not in ledger._ahead
            ledger.get_run(run_id)
            assert [args[0] for args in reads.calls] == [run_id]
        assert ledger._ahead is None


class TestEventsWrittenTogether:
    def test_a_files_events_are_written_in_few_inserts(
        self, services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(ledger_base, "SAVE_EVENTS", 25)
        puts = Counting(monkeypatch, services.ledger.events, "put")
        path = runs_file(tmp_path / "a.jsonl", [f"r{i}" for i in range(20)])
        assert import_file(services, path).new_runs == 20
        # The group's opening, 20 runs of 2 events (the run stated whole, its cells), a
        # benchmark and the file: 43 events, written whenever 25 or more wait after a
        # run's save; then the group closes, after the file's transaction.
        assert [len(args[0]) for args in puts.calls] == [25, 18, 1]
        assert services.runner.head_position() == 44

    def test_cells_and_turns_count_towards_a_write(
        self, services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(ledger_base, "SAVE_WEIGHT", 8)
        puts = Counting(monkeypatch, services.ledger.events, "put")
        path = runs_file(tmp_path / "a.jsonl", [f"r{i}" for i in range(4)])
        assert import_file(services, path).new_runs == 4
        # Each run weighs 3 (two events and a cell): the opening and three runs weigh
        # 10, written together; the last run with the file's closing events.
        assert [len(args[0]) for args in puts.calls] == [7, 4, 1]

    def test_the_attempts_a_file_counted_are_written_as_they_are_made(
        self, services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(ledger_base, "SAVE_WEIGHT", 6)
        puts = Counting(monkeypatch, services.ledger.events, "put")
        rows = [
            db_row(
                run_id=f"run_bench{i % 3}_20260512T1015{i:02d}Z_{1 + i // 3}_{i:08x}",
                benchmark_id=f"bench{i % 3}",
                benchmark_directory=f"bench{i % 3}",
                signature=f"sig{i % 3}",
                attempt=1 + i // 3,
            )
            for i in range(9)
        ]
        report = import_file(services, make_db(tmp_path / "orchestrator.sqlite", rows))
        assert report.new_runs == 9
        written = [[type(e).__name__ for e in args[0]] for args in puts.calls]
        attempts = [i for i, kinds in enumerate(written) if "AttemptsImported" in kinds]
        # Three signatures of three attempts each, each event weighing 4: not one write
        # at the file's end holding them all.
        assert sum(kinds.count("AttemptsImported") for kinds in written) == 3
        assert len(attempts) >= 2, written


class TestSkipsOnTheWay:
    def test_skips_and_their_notes_are_saved_as_the_file_goes_not_held_to_its_end(
        self, services: Services, tmp_path: Path
    ) -> None:
        # Rows by run_id: runs ("x0r...") and skips ("x0s...") alternate.
        rows = []
        for i in range(6):
            for prefix, status, metrics in (
                ("r", "succeeded", {"n": 10, "return_code": 0}),
                ("s", "skipped", {"reason": "already_succeeded"}),
            ):
                rows.append(
                    db_row(
                        run_id=f"x{i}{prefix}_bfcl_20260512T101500Z_1_{i:08x}",
                        status=status,
                        metrics=metrics,
                    )
                )
        db = make_db(tmp_path / "orchestrator.sqlite", rows)
        report = import_file(services, db)
        assert (report.state, report.new_runs) == ("imported", 6)
        notes = services.ledger.recorder.select_notifications(0, 1000)
        topics = [n.topic.rsplit(":", 1)[1] for n in notes]
        assert topics.count("SkipNoted") == topics.count("BenchmarkSkipped") == 6
        # Each skip is saved with the run after it, not at the end of the file.
        assert topics.index("SkipNoted") < topics.index(
            "RunImported", topics.index("RunImported") + 1
        )
        assert topics[-2:] == ["ResultFileImported", "RunGroupClosed"]
        # The last skip has no run after it: it is saved with the file's closing events
        # (with the attempts the rows counted, on their signature's stream).
        assert "AttemptsImported" in topics[-5:]
        closing = [t for t in topics if t != "AttemptsImported"]
        assert closing[-5:-2] == ["BenchmarkSkipped", "SkipNoted", "BenchmarkRegistered"]

    def test_many_skips_in_a_row_are_saved_without_waiting_for_a_run(
        self, services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(importing, "CELL_BATCH", 2)
        rows = [
            db_row(
                run_id=f"a{i}_bfcl_20260512T101500Z_1_{i:08x}",
                status="skipped",
                metrics={"reason": "already_succeeded"},
            )
            for i in range(3)
        ]
        rows.append(db_row(run_id="b_bfcl_20260512T101500Z_1_0000000a"))
        report = import_file(services, make_db(tmp_path / "orchestrator.sqlite", rows))
        assert report.new_runs == 1
        topics = [
            n.topic.rsplit(":", 1)[1]
            for n in services.ledger.recorder.select_notifications(0, 1000)
        ]
        assert topics[:5] == [
            "RunGroupOpened",
            "BenchmarkSkipped",
            "BenchmarkSkipped",
            "SkipNoted",
            "SkipNoted",
        ]
        assert topics.count("BenchmarkSkipped") == topics.count("SkipNoted") == 3
