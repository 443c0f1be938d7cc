"""The `runs` fold batches a page's new runs (their models listed, each model once, rows
inserted, cells counted) instead of three statements per run: the rows must be those that
folding one event at a time gives, none lost, none twice, in the same order."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.store import projection_runner
from benchledger.adapters.store.bootstrap import Services, Settings, build
from benchledger.domain.records import Cell, RunHeader, RunRecord, SourceFile
from benchledger.domain.signatures import sha256_hex
from benchledger.projections import models
from benchledger.projections.base import group_changes
from benchledger.projections.runs import RunsProjection
from tests.ledgers import build_demo

MODELS = ("gpt-4o", "openai/gpt-4o", "claude-3-5-sonnet-20241022", "m")


def record(i: int, cells: int) -> RunRecord:
    return RunRecord(
        header=RunHeader(
            run_key=f"batch-{i}",
            benchmark=f"b{i % 3}",
            agent=f"agent{i % 2}",
            model=MODELS[i % len(MODELS)],
            status="succeeded",
            score=0.5,
        ),
        cells=tuple(
            Cell(key=f"k{j}", outcome=("passed", "failed", "error", "skipped")[j % 4], score=j % 2)
            for j in range(cells)
        ),
    )


def import_file(services: Services, name: str, records: list[RunRecord]) -> None:
    data = name.encode()
    source = SourceFile(path=name, sha256=sha256_hex(data), size=len(data), format="native")
    services.ledger.import_runs("native", source, records)


def rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every read-model row with its rowid, in rowid order: the rows and the order they
    were inserted in."""
    with sqlite3.connect(db) as conn:
        names = [
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%_data' "
                "AND name NOT LIKE '%_idx' AND name NOT LIKE '%_content' "
                "AND name NOT LIKE '%_docsize' AND name NOT LIKE '%_config' "
                "AND name NOT LIKE 'stored_events' AND name != '_projection_state'"
            )
        ]
        return {
            n: conn.execute(f"SELECT rowid, * FROM [{n}] ORDER BY rowid").fetchall() for n in names
        }


@pytest.fixture
def services(tmp_path: Path) -> Any:
    # The demo's executed, imported, invalidated and corrected runs, then files of many
    # runs sharing models, an alias declared between two of them, and a run given facts.
    db = build_demo(tmp_path / "ledger.db")
    with build(Settings(db_path=db)) as s:
        import_file(s, "first.json", [record(i, 7) for i in range(40)])
        s.ledger.declare_model_alias("gpt-4o", "gpt-4o-2024-08-06", "me", "pinned")
        import_file(s, "second.json", [record(i, i % 5) for i in range(40, 90)])
        import_file(s, "third.json", [record(i, 3) for i in range(90, 95)])
        yield s


def test_runs_folded_a_page_at_a_time_equal_runs_folded_one_event_at_a_time(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = services.settings.db_path
    monkeypatch.setattr(projection_runner, "PAGE", 1)  # a page holds one event's changes
    services.runner.rebuild()
    one_at_a_time = rows(db)
    monkeypatch.setattr(projection_runner, "PAGE", 500)
    services.runner.rebuild()
    paged = rows(db)
    assert paged["runs"] == one_at_a_time["runs"]
    assert paged["models"] == one_at_a_time["models"]
    assert paged == one_at_a_time
    with sqlite3.connect(db) as conn:
        assert conn.execute(
            "SELECT count(*) FROM runs WHERE run_key LIKE 'batch-%'"
        ).fetchone() == (95,)
        # The alias rejoined the runs before it, and the runs after it found it.
        assert conn.execute(
            "SELECT DISTINCT model_id FROM runs WHERE model = 'gpt-4o'"
        ).fetchall() == [("gpt-4o-2024-08-06",)]


def test_a_page_of_imported_runs_is_three_batches(services: Services) -> None:
    runs = RunsProjection()
    page = next(
        page
        for page in services.runner.pages(0, stop=None)
        if sum(e.topic.endswith("RunImported") for e in page) >= 10
    )
    imported = [e for e in page if runs.topics is not None and e.topic in runs.topics]
    statements = [sql for sql, _ in group_changes(runs.fold_page(imported))]
    one_each = [sql for sql, _ in group_changes(c for e in imported for c in runs.fold(e))]
    assert len(statements) < len(one_each) / 5
    # Each model of the page listed once, its other runs counted in one statement.
    seen = [params[0] for e in imported for sql, params in runs.fold(e) if sql == models.SEEN]
    listed = [params for sql, params in runs.fold_page(imported) if sql == models.SEEN]
    names = [params[0] for params in listed]
    assert len(names) == len(set(names)) == len(set(seen)) < len(seen)
    counted = [params for sql, params in runs.fold_page(imported) if sql == models.COUNTED]
    assert sum(more for more, _ in counted) + len(names) == len(seen)
    assert Counter(seen) == Counter(names) + Counter({n: more for more, n in counted})
