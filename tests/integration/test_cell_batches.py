"""Cells take short cuts on the hot path (serialized once, decoded in bulk, folded only by
the projections that read them); each short cut gives exactly what the long way gives."""

from __future__ import annotations

import ast
import inspect
import math
import sqlite3
import textwrap
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.adapters.store import projection_runner
from benchledger.adapters.store.bootstrap import Services, Settings, build
from benchledger.adapters.store.eventstore import PydanticMapper, PydanticTranscoder
from benchledger.adapters.store.projection_runner import bulk_cells
from benchledger.domain.ledger_base import CELL_BATCH
from benchledger.domain.records import Cell, RunHeader, RunRecord, SourceFile, cells_json
from benchledger.domain.run import CellsRecorded
from benchledger.domain.signatures import sha256_hex
from benchledger.projections.base import Envelope, cell_metrics
from benchledger.projections.cells import CellsProjection, insert_for
from benchledger.projections.registry import all_projections

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SCALARS = st.one_of(
    st.integers(-(10**25), 10**25),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.booleans(),
    st.none(),
)
METRICS = st.dictionaries(
    st.text(max_size=5), st.one_of(SCALARS, st.lists(SCALARS, max_size=3)), max_size=3
)
CELLS = st.lists(
    st.builds(
        Cell,
        key=st.text(min_size=1, max_size=6),
        outcome=st.sampled_from(["passed", "failed", "error", "skipped"]),
        score=st.one_of(st.none(), st.floats(0, 1)),
        metrics=METRICS,
    ),
    max_size=12,
)
HEADER = RunHeader(benchmark="b", agent="a", model="m", status="succeeded", config={"t": 0.5})


def batches(cells: tuple[Cell, ...], size: int) -> list[bytes]:
    return [cells_json(cells[i : i + size]) for i in range(0, len(cells), size)]


class TestSerializedOnce:
    @FUZZ
    @given(cells=CELLS, size=st.integers(1, 5))
    def test_hashing_the_serialized_batches_gives_the_record_hash(
        self, cells: list[Cell], size: int
    ) -> None:
        record = RunRecord(header=HEADER, cells=tuple(cells))
        assert record.content_sha256(batches(record.cells, size)) == record.content_sha256()

    @FUZZ
    @given(cells=CELLS.filter(bool))
    def test_an_event_with_serialized_cells_is_stored_as_pydantic_writes_it(
        self, cells: list[Cell]
    ) -> None:
        run_id = uuid4()
        plain = CellsRecorded(originator_id=run_id, originator_version=2, cells=tuple(cells))
        quick = CellsRecorded.serialized(run_id, 2, tuple(cells), cells_json(cells))
        quick = quick.model_copy(update={"timestamp": plain.timestamp})
        quick._cells_json = cells_json(cells)  # model_copy keeps private state; be explicit
        mapper = PydanticMapper(transcoder=PydanticTranscoder())
        stored = mapper.to_stored_event(quick).state
        assert stored == mapper.to_stored_event(plain).state
        assert quick == plain  # the serialized bytes are no part of its value


def rows_of(services: Services) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(services.settings.db_path)
    try:
        return {
            t.name: conn.execute(f"SELECT * FROM [{t.name}] ORDER BY rowid").fetchall()
            for p in all_projections()
            for t in p.tables
        }
    finally:
        conn.close()


class TestDecodedInBulk:
    def test_bulk_decoding_folds_the_same_rows_as_decoding_each_cell(self, db: Path) -> None:
        odd = {"nan": math.nan, "inf": -math.inf, "big": 10**30, "é": '\u2028\x00"\\', "l": [1]}
        cells = tuple(
            Cell(key=f"k{i}é", outcome="passed" if i % 3 else "error", score=i / 7, metrics=m)
            for i, m in enumerate([odd, {}, {"x": 1.5}, {"n": None}] * (CELL_BATCH // 2))
        )
        record = RunRecord(header=HEADER.model_copy(update={"run_key": "r1"}), cells=cells)
        with build(Settings(db_path=db)) as services:
            data = record.model_dump_json().encode()
            source = SourceFile(path="r.json", sha256=sha256_hex(data), size=len(data), format="n")
            services.ledger.import_runs("native", source, [record])
            services.runner.catch_up()
            bulk = rows_of(services)
            services.runner._bulk = False  # every cell through its pydantic model
            services.runner.rebuild()
            assert rows_of(services) == bulk
        assert len(bulk["cells"]) == len(cells)

    def test_cells_that_all_have_metrics_fold_the_same_rows_as_decoding_each_cell(
        self, db: Path
    ) -> None:
        # Every cell has metrics, so the cells fold writes them in one call and cuts it.
        shapes = [
            {"total_tokens": 1, "latency_ms": 2.5},
            {"s": "a},{b", "t": "}"},
            {"nested": {"x": [1, {"y": None}]}},
            {"nan": math.nan, "é": '\u2028"\\'},
        ]
        cells = tuple(
            Cell(key=f"k{i}", outcome="passed", score=i / 7, metrics=shapes[i % len(shapes)])
            for i in range(CELL_BATCH + 3)
        )
        plain = tuple(
            Cell(key=f"p{i}", outcome="failed", metrics={"n": i, "m": -i / 3}) for i in range(9)
        )
        header = HEADER.model_copy(update={"run_key": "r1"})
        records = [
            RunRecord(header=header, cells=cells),
            RunRecord(header=header.model_copy(update={"run_key": "r2"}), cells=plain),
        ]
        with build(Settings(db_path=db)) as services:
            data = b"".join(r.model_dump_json().encode() for r in records)
            source = SourceFile(path="r.json", sha256=sha256_hex(data), size=len(data), format="n")
            services.ledger.import_runs("native", source, records)
            services.runner.catch_up()
            bulk = rows_of(services)
            services.runner._bulk = False  # every cell through its pydantic model
            services.runner.rebuild()
            assert rows_of(services) == bulk
        assert len(bulk["cells"]) == len(cells) + len(plain)
        assert bulk["cells"][-1][4] == '{"n":8,"m":-2.6666666666666665}'

    def test_an_envelope_gives_the_same_cells_decoded_either_way(self) -> None:
        cells = (
            Cell(key="a", outcome="failed", metrics={"m": [1, "x"]}),
            Cell(key="b", outcome="passed"),
        )
        event = CellsRecorded(originator_id=uuid4(), originator_version=2, cells=cells)
        state = event.__pydantic_serializer__.to_json(event)
        args = (7, event.originator_id, 2, CellsRecorded.TOPIC, state)
        quick = Envelope(*args, decode=lambda: event, decode_cells=lambda: bulk_cells(state))
        slow = Envelope(*args, decode=lambda: event)
        assert quick.cells() == slow.cells()
        # Metrics and cluster only up to the last one set: no None left to bind.
        assert quick.cells().rows == [("a", "failed", None, '{"m":[1,"x"]}'), ("b", "passed", None)]

    def test_a_cell_cluster_is_decoded_either_way_and_unset_ones_are_not_written(self) -> None:
        cells = (
            Cell(key="a", outcome="passed", cluster="django/django"),
            Cell(key="b", outcome="failed"),
        )
        event = CellsRecorded(originator_id=uuid4(), originator_version=2, cells=cells)
        state = event.__pydantic_serializer__.to_json(event)
        assert state.count(b'"cluster"') == 1
        args = (7, event.originator_id, 2, CellsRecorded.TOPIC, state)
        quick = Envelope(*args, decode=lambda: event, decode_cells=lambda: bulk_cells(state))
        slow = Envelope(*args, decode=lambda: event)
        assert quick.cells() == slow.cells()
        assert quick.cells().rows == [
            ("a", "passed", None, None, "django/django"),
            ("b", "failed", None),
        ]


def folded_event_classes(projection: Any) -> set[str]:
    """The event classes a projection's fold tests for with isinstance."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(type(projection.resolved()).fold)))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
            for part in ast.walk(node.args[1]):
                if isinstance(part, ast.Name):
                    names.add(part.id)
        if isinstance(node, ast.Attribute) and node.attr == "TOPIC":
            names.add(getattr(node.value, "id", ""))
    return names


class TestTopics:
    @pytest.mark.parametrize("projection", all_projections(), ids=lambda p: p.name)
    def test_a_projection_is_sent_every_event_its_fold_reads(self, projection: Any) -> None:
        if projection.topics is None:
            return  # sent every event
        declared = {topic.rsplit(":", 1)[1] for topic in projection.topics}
        assert folded_event_classes(projection) <= declared

    def test_the_audit_projections_see_every_event(self) -> None:
        every = {p.name for p in all_projections() if p.topics is None}
        assert {"events", "chain"} <= every


class TestLatestSettlesOncePerTransaction:
    def test_many_runs_of_one_key_are_re_selected_once_not_per_run(
        self, db: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Re-selecting a key after every event made an import quadratic in the runs of
        one (benchmark, agent); a catch-up now re-selects each changed key once."""
        with build(Settings(db_path=db)) as services:
            services.runner.catch_up()  # tables exist: what follows is one catch-up
            for i in range(40):
                started = f"2026-05-{1 + i % 28:02d}T10:{i:02d}:00+00:00"
                header = RunHeader.model_validate(
                    {**HEADER.model_dump(), "run_key": f"r{i}", "started_at": started, "score": 0.5}
                )
                record = RunRecord(header=header, cells=(Cell(key="k", outcome="passed"),))
                data = record.model_dump_json().encode()
                source = SourceFile(
                    path=f"r{i}.json", sha256=sha256_hex(data), size=len(data), format="native"
                )
                services.ledger.import_runs("native", source, [record])
            monkeypatch.setattr(projection_runner, "PAGE", 10)  # many pages, one transaction
            statements: list[str] = []
            services.store.conn.set_trace_callback(statements.append)
            try:
                services.runner.catch_up()
                settled = len(statements)
                services.runner.catch_up()  # nothing new: nothing to settle
            finally:
                services.store.conn.set_trace_callback(None)
        assert not [s for s in statements[settled:] if s.startswith(("INSERT", "DELETE"))]
        selects = [s for s in statements if s.startswith("INSERT INTO [latest_per_agent] (")]
        assert len(selects) == 1
        # `latest`: the per-agent rows outside any cohort and the cohorts' rows, in one
        # statement (its cohorts chosen once).
        assert len([s for s in statements if s.startswith("INSERT INTO [latest] (")]) == 1
        with sqlite3.connect(db) as conn:
            newest = conn.execute("SELECT max(started_at) FROM candidates").fetchone()[0]
            picked = conn.execute("SELECT started_at FROM latest").fetchall()
            assert conn.execute("SELECT count(*) FROM latest_pending").fetchone() == (0,)
        assert picked == [(newest,)]


class TestCellsFold:
    def test_a_batch_s_rows_are_inserted_as_they_are_under_its_run_id(self) -> None:
        # The run id is a literal of the statement; quotes and braces stay as written.
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE TABLE cells (run_id, key, outcome, score, metrics, cluster)")
        odd = "r'{cells}\"1"
        rows = [("k", "passed", 1.0, '{"m":1}', None), ("l", "failed", None, None, "c")]
        conn.executemany(insert_for(odd).format(cells="cells"), rows)
        assert conn.execute("SELECT * FROM cells").fetchall() == [(odd, *row) for row in rows]

    @pytest.mark.parametrize("kinds", ["ppp", "cpmmpc", "m", "pcp"])
    @pytest.mark.parametrize("in_bulk", [True, False])
    def test_cells_of_any_mix_are_inserted_whole_in_their_order(
        self, kinds: str, in_bulk: bool
    ) -> None:
        """Rows leave out metrics and cluster up to the last one set, so a batch mixes
        widths: each cell still lands whole, NULL where it states nothing, in order."""
        made = {
            "p": lambda i: Cell(key=f"k{i}", outcome="passed", score=1.0),
            "m": lambda i: Cell(key=f"k{i}", outcome="failed", metrics={"m": i}),
            "c": lambda i: Cell(key=f"k{i}", outcome="error", score=0.5, cluster="c"),
        }
        cells = tuple(made[kind](i) for i, kind in enumerate(kinds))
        event = CellsRecorded(originator_id=uuid4(), originator_version=2, cells=cells)
        state = event.__pydantic_serializer__.to_json(event)
        bulk = (lambda: bulk_cells(state)) if in_bulk else None
        envelope = Envelope(
            7, event.originator_id, 2, CellsRecorded.TOPIC, state, lambda: event, bulk
        )
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE TABLE cells (run_id, key, outcome, score, metrics, cluster)")
        for sql, rows in CellsProjection().fold(envelope):
            conn.executemany(sql.format(cells="cells"), rows)  # type: ignore[arg-type]
        expected = [
            (
                str(event.originator_id),
                c.key,
                c.outcome,
                c.score,
                cell_metrics(c.metrics),
                c.cluster,
            )
            for c in cells
        ]
        assert conn.execute("SELECT * FROM cells ORDER BY rowid").fetchall() == expected

    def test_cells_stating_neither_metrics_nor_cluster_bind_no_null(self, db: Path) -> None:
        """Each None bound as a parameter costs sqlite3 a failed adapter lookup: the
        insert of such cells names only the columns they state."""
        record = RunRecord(
            header=HEADER,
            cells=(
                Cell(key="a", outcome="passed", score=1.0),
                Cell(key="b", outcome="failed", score=0.0),
            ),
        )
        data = record.model_dump_json().encode()
        source = SourceFile(path="r.json", sha256=sha256_hex(data), size=len(data), format="native")
        with build(Settings(db_path=db)) as services:
            services.runner.catch_up()
            services.ledger.import_runs("native", source, [record])
            statements: list[str] = []
            services.store.conn.set_trace_callback(statements.append)
            try:
                services.runner.catch_up()
            finally:
                services.store.conn.set_trace_callback(None)
        inserts = [s for s in statements if s.startswith("INSERT INTO [cells]")]
        assert inserts and all("metrics" not in s and "NULL" not in s for s in inserts)
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT key, score, metrics, cluster FROM cells").fetchall() == [
                ("a", 1.0, None, None),
                ("b", 0.0, None, None),
            ]
