"""A native JSONL file's cells are read as rows, never as a Cell model each: the ledger
records what it recorded when each cell was a model, byte for byte, secrets masked."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.formats import native_lines
from benchledger.adapters.store import forked, read_ahead
from benchledger.adapters.store.bootstrap import Services, Settings, build
from benchledger.adapters.store.importer import Importer
from benchledger.domain.cells import CellRows
from benchledger.domain.ledger_base import CELL_BATCH
from benchledger.domain.records import Cell
from benchledger.projections.registry import all_projections

SHAPED = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"  # masked anywhere by its shape
HUNTED = "hunted-7f3a9c2e51"  # masked where it appears: the config gives it as a key


def cell(i: int) -> dict[str, Any]:
    """Cells of every shape the reader meets: what to mask, defaults left out, clusters,
    nesting, non-finite and large numbers, text that is not ASCII."""
    shapes: list[dict[str, Any]] = [
        {"score": 1.0, "metrics": {"total_tokens": i, "latency_ms": i / 3}},
        {"score": 0.0, "metrics": {"note": f"token {SHAPED}", "n": i}},
        {"metrics": {"log": f"called with {HUNTED} again"}},
        {},
        {"score": 0.5, "cluster": f"repo-{i % 3}"},
        {"cluster": None, "metrics": {"d": {"x": [1, 2, {"y": "é\u2028"}]}}},
        {"score": 1, "metrics": {"nan": float("nan"), "big": 10**30, "tiny": 1e-7, "e": 1e16}},
        {"metrics": {"api_key": 1234567890, "ok": True, "none": None}},
    ]
    outcome = ("passed", "failed", "error", "skipped")[i % 4]
    return {"type": "cell", "key": f"task-{i:05d}", "outcome": outcome, **shapes[i % len(shapes)]}


def run(key: str, **fields: Any) -> dict[str, Any]:
    return {
        "type": "run",
        "run_key": key,
        "benchmark": "b",
        "agent": "a",
        "model": "m",
        "status": "succeeded",
        "config": {"api_key": HUNTED, "temperature": 0.5},
        **fields,
    }


def write_file(path: Path, repeat: bool = True) -> Path:
    lines = [json.dumps(run("mixed"))]
    lines += [json.dumps(cell(i)) for i in range(CELL_BATCH + 37)]
    if repeat:
        lines.append(json.dumps(cell(3)))  # a repeat, dropped
    lines.append(json.dumps({"type": "turn", "index": 0, "input_tokens": 12}))
    lines.append(json.dumps(run("plain", score=0.25)))
    lines += [
        json.dumps({"type": "cell", "key": f"p{i}", "outcome": "passed", "metrics": {"n": i}})
        for i in range(40)
    ]
    lines.append(json.dumps(run("odd")))
    lines.append('{"type": "cell" , "key" : "spaced", "outcome" : "passed"}')  # one by one
    lines.append("")
    lines.append('{"type":"cell","key":"tight","outcome":"failed","score":0.1}')
    path.write_text("\n".join(lines) + "\n")
    return path


class AsCells:
    """The reader as it was: a Cell model for every cell it read."""

    @staticmethod
    def completed(rows: list[dict[str, Any]]) -> tuple[Cell, ...]:
        return tuple(map(Cell.model_validate, rows))


def stored(services: Services) -> list[tuple[str, int, str, bytes]]:
    """Every stored event, its bytes as stored but for the time it was made."""
    notes = services.ledger.recorder.select_notifications(0, 1_000_000)
    return [
        (
            str(n.originator_id),
            n.originator_version,
            n.topic,
            re.sub(rb'"timestamp":"[^"]+"', b'"timestamp":""', n.state),
        )
        for n in notes
    ]


def untimed(value: Any, times: set[str]) -> Any:
    if value in times:
        return "(time)"
    if isinstance(value, str):
        return re.sub(r'"timestamp": ?"[^"]+"', '"timestamp":""', value)
    return value


def read_models(services: Services, times: set[str]) -> dict[str, list[tuple[Any, ...]]]:
    """Every read-model row, the times events were made (`times`) left out; but the hash
    chain's, which hashes the stored bytes (times included) that `stored` compares."""
    conn = sqlite3.connect(services.settings.db_path)
    try:
        return {
            t.name: [
                tuple(untimed(v, times) for v in row)
                for row in conn.execute(f"SELECT * FROM [{t.name}] ORDER BY rowid")
            ]
            for p in all_projections()
            for t in p.tables
            if t.name != "chain"
        }
    finally:
        conn.close()


def imported(db: Path, path: Path) -> tuple[list[Any], dict[str, list[tuple[Any, ...]]]]:
    with build(Settings(db_path=db)) as services:
        report = Importer(services.ledger).import_file(path, group=None)
        assert report.state == "imported", report.message
        services.runner.catch_up()
        notes = services.ledger.recorder.select_notifications(0, 1_000_000)
        times = set()
        for n in notes:
            made = json.loads(n.state)["timestamp"]
            times |= {made, made.replace("Z", "+00:00"), made.removesuffix("Z")}
        return stored(services), read_models(services, times)


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    folder = tmp_path_factory.mktemp("rows")
    path = write_file(folder / "runs.jsonl")
    as_rows = imported(folder / "rows.db", path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native_lines, "CellRows", AsCells)
        as_cells = imported(folder / "cells.db", path)
    return as_rows, as_cells


@pytest.fixture(scope="module")
def read_ahead_rows(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The file imported as a large one is: read in a child, its records sent over."""
    folder = tmp_path_factory.mktemp("ahead")
    path = write_file(folder / "runs.jsonl")
    forks: list[int] = []
    fork = os.fork

    def counted_fork() -> int:
        forks.append(1)
        return fork()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(read_ahead, "READ_AHEAD_BYTES", 0)
        patch.setattr(forked, "can_fork", lambda: True)
        patch.setattr(os, "fork", counted_fork)
        got = imported(folder / "ahead.db", path)
    assert forks == [1]
    return got


class TestRowsRecordWhatCellsRecorded:
    def test_the_stored_events_are_those_of_a_model_per_cell_byte_for_byte(
        self, both: tuple[Any, Any]
    ) -> None:
        (rows_events, _), (cells_events, _) = both
        assert rows_events == cells_events
        topics = [topic for _, _, topic, _ in rows_events]
        assert topics.count("domain.run:CellsRecorded") == 4  # two batches, then one each

    def test_rows_sent_from_a_reading_child_record_the_same(
        self, both: tuple[Any, Any], read_ahead_rows: Any
    ) -> None:
        assert read_ahead_rows == both[1]

    def test_the_read_models_hold_the_same_rows(self, both: tuple[Any, Any]) -> None:
        (_, rows_tables), (_, cells_tables) = both
        assert {k: v for k, v in rows_tables.items() if v != cells_tables[k]} == {}
        assert len(rows_tables["cells"]) == CELL_BATCH + 37 + 40 + 2

    def test_secrets_in_cells_are_masked(self, both: tuple[Any, Any]) -> None:
        (rows_events, rows_tables), _ = both
        text = b"".join(state for _, _, _, state in rows_events)
        assert SHAPED.encode() not in text and HUNTED.encode() not in text
        assert b"[REDACTED]" in text
        assert SHAPED not in repr(rows_tables) and HUNTED not in repr(rows_tables)

    def test_no_cell_is_made_into_a_model_on_the_way_to_the_store(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        made: list[Any] = []  # counted, not raised: a validator would take an error as a no
        iterated, indexed = CellRows.__iter__, CellRows.__getitem__

        def counted_iter(rows: CellRows) -> Any:
            made.append(rows)
            return iterated(rows)

        def counted_index(rows: CellRows, index: Any) -> Any:
            if not isinstance(index, slice):
                made.append(index)
            return indexed(rows, index)

        monkeypatch.setattr(CellRows, "__iter__", counted_iter)
        monkeypatch.setattr(CellRows, "__getitem__", counted_index)
        path = write_file(tmp_path / "runs.jsonl", repeat=False)
        with build(Settings(db_path=tmp_path / "ledger.db")) as services:
            report = Importer(services.ledger).import_file(path, group=None)
            assert report.state == "imported", report.message
        assert made == []

    def test_the_reader_keeps_its_cells_as_rows(self, tmp_path: Path) -> None:
        from benchledger.adapters import formats

        path = write_file(tmp_path / "runs.jsonl")
        records = list(formats.stream(formats.load("native"), path))
        assert [type(r.cells) for r in records] == [CellRows] * 3  # type: ignore[union-attr]
