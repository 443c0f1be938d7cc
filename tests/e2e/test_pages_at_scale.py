"""Datasette's pages read what they show from indexes, so that they cost the same at a
million cells as at ten thousand (benchmarks/datasette_pages.py times them).

Checked on the browsable demo ledger (tests/ledgers.py) by what SQLite says of each query
Datasette and the dashboard run (EXPLAIN QUERY PLAN), and by what the pages answer.
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from datasette.app import Datasette
from datasette.tracer import capture_traces
from datasette_dashboards import replace_opts_in_query

from benchledger.adapters.publication.browse import datasette_for, metadata_for
from tests.ledgers import build_browsable

DASHBOARD = "ledger"
# Tables that grow with the ledger: a page never reads all of them.
GROWING = ("runs", "cells", "candidates", "events", "chain")


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_browsable(tmp_path_factory.mktemp("scale") / "ledger.db")


@pytest.fixture(scope="module")
def ds(ledger: Path) -> Datasette:
    return datasette_for(ledger)


def traced(ds: Datasette, path: str) -> tuple[httpx.Response, list[dict[str, Any]]]:
    """The page at `path` and the SQL Datasette ran for it."""
    traces: list[dict[str, Any]] = []

    async def fetch() -> httpx.Response:
        await ds.invoke_startup()
        with capture_traces(traces):
            response: httpx.Response = await ds.client.get(path)
        return response

    response = asyncio.run(fetch())
    assert response.status_code == 200, f"{path}: {response.status_code}"
    return response, [t for t in traces if t.get("sql")]


def plan(ledger: Path, sql: str, params: Any = ()) -> list[str]:
    with closing(sqlite3.connect(ledger)) as conn:
        return [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params or ())]


def full_scans(steps: list[str]) -> list[str]:
    """The steps that read a growing table whole (a covering index scan included)."""
    return [s for s in steps if any(s.startswith(f"SCAN {t}") for t in GROWING)]


def dashboard(ledger: Path) -> dict[str, Any]:
    config: dict[str, Any] = metadata_for(ledger)["plugins"]["datasette-dashboards"][DASHBOARD]
    return config


def rows(ledger: Path, sql: str) -> list[Any]:
    with closing(sqlite3.connect(ledger)) as conn:
        return [r[0] for r in conn.execute(sql)]


class TestDashboardFilters:
    def test_the_model_filter_lists_every_model_the_runs_state(self, ledger: Path) -> None:
        query = dashboard(ledger)["filters"]["model"]["query"]
        expected = rows(ledger, "SELECT DISTINCT model FROM runs WHERE model IS NOT NULL")
        assert len(expected) > 1
        assert rows(ledger, query) == sorted(expected)

    def test_the_unit_filter_lists_the_units_of_scored_runs_only(
        self, ledger: Path, tmp_path: Path
    ) -> None:
        db = tmp_path / "ledger.db"
        with closing(sqlite3.connect(ledger)) as source, closing(sqlite3.connect(db)) as copy:
            source.backup(copy)
        with closing(sqlite3.connect(db)) as conn, conn:
            run_id = conn.execute("SELECT run_id FROM runs ORDER BY run_id LIMIT 1").fetchone()
            conn.execute(
                "UPDATE runs SET unit = 'unscored_unit', score = NULL WHERE run_id = ?", run_id
            )
        query = dashboard(db)["filters"]["unit"]["query"]
        expected = rows(
            db, "SELECT DISTINCT unit FROM runs WHERE score IS NOT NULL AND unit IS NOT NULL"
        )
        assert len(expected) > 1
        assert rows(db, query) == sorted(expected)
        assert "unscored_unit" not in rows(db, query)

    def test_no_filter_reads_every_run(self, ledger: Path) -> None:
        for name, flt in dashboard(ledger)["filters"].items():
            assert not full_scans(plan(ledger, flt["query"])), name


class TestDashboardCharts:
    def test_no_chart_reads_every_run_whatever_the_filters(self, ledger: Path) -> None:
        filters = {"benchmark": "b", "model": "m", "unit": "u"}
        choices = [{}, *({k: v} for k, v in filters.items()), filters]
        for slug, chart in dashboard(ledger)["charts"].items():
            for chosen in choices:
                sql = replace_opts_in_query(chart["query"], chosen)
                params = {k: v for k, v in chosen.items() if f":{k}" in sql}
                assert not full_scans(plan(ledger, sql, params)), (slug, chosen)

    def test_a_filtered_dashboard_leaves_the_next_one_unfiltered(self, ds: Datasette) -> None:
        """The dashboard fills its filters into the config it is given: each request gets
        its own copy, however the configs are kept."""
        filtered, _ = traced(ds, f"/-/dashboards/{DASHBOARD}?benchmark=alpha")
        assert "benchmark = :benchmark" in filtered.text
        plain, _ = traced(ds, f"/-/dashboards/{DASHBOARD}")
        assert "benchmark = :benchmark" not in plain.text

    def test_plugin_configs_are_copies(self, ds: Datasette) -> None:
        first = ds.plugin_config("datasette-dashboards")
        first[DASHBOARD]["charts"].clear()
        assert ds.plugin_config("datasette-dashboards")[DASHBOARD]["charts"]


class TestFacetCounts:
    def test_a_filtered_candidates_page_counts_its_facets_from_indexes(
        self, ds: Datasette, ledger: Path
    ) -> None:
        for facet in ("status=succeeded", "agent=eliza", "benchmark=alpha"):
            _, traces = traced(ds, f"/ledger/candidates?{facet}")
            counts = [t for t in traces if "count(*) as count" in t["sql"]]
            assert len(counts) == 3, facet
            for count in counts:
                steps = plan(ledger, count["sql"], count["params"])
                assert all("COVERING INDEX" in s for s in steps if "candidates" in s), steps


class TestNextPages:
    def next_page(self, ds: Datasette, path: str) -> str:
        page, _, query = path.partition("?")
        first, _ = traced(ds, f"{page}.json?{query}")
        next_url = first.json()["next_url"]
        assert next_url, path
        return f"{page}?{urlsplit(next_url).query}"

    def test_the_next_page_of_runs_reads_its_rows_in_the_pages_order(
        self, ds: Datasette, ledger: Path
    ) -> None:
        """Newest first, ties by run_id ascending, as Datasette pages them: read in the
        order of an index, stopping after the page, never sorting every run before it."""
        page, traces = traced(ds, self.next_page(ds, "/ledger/runs"))
        assert "runs" in page.text
        [listing] = [t for t in traces if "limit 51" in t["sql"] and "count(*)" not in t["sql"]]
        steps = plan(ledger, listing["sql"], listing["params"])
        assert steps == ["SCAN runs USING INDEX idx_runs_started_at_run_id"], steps

    def test_the_next_page_of_candidates_counts_its_facets_from_indexes(
        self, ds: Datasette, ledger: Path
    ) -> None:
        path = self.next_page(ds, "/ledger/candidates?_size=20")
        _, traces = traced(ds, path)
        facets = [t for t in traces if "count(*) as count" in t["sql"]]
        assert len(facets) == 3
        for facet in facets:
            steps = plan(ledger, facet["sql"], facet["params"])
            assert all("COVERING INDEX" in s for s in steps if "candidates" in s), steps

    def test_the_next_page_shows_the_rows_after_the_first(self, ds: Datasette) -> None:
        first, _ = traced(ds, "/ledger/runs.json?_shape=objects")
        following = self.next_page(ds, "/ledger/runs").replace("?", ".json?", 1)
        second, _ = traced(ds, f"{following}&_shape=objects")
        ids = [r["run_id"] for r in first.json()["rows"] + second.json()["rows"]]
        assert len(ids) == len(set(ids)) == len(rows_of(ds))


def rows_of(ds: Datasette) -> list[Any]:
    response, _ = traced(ds, "/ledger/runs.json?_shape=objects&_size=max")
    found: list[Any] = response.json()["rows"]
    return found


class TestRendering:
    def test_a_page_merges_the_metadata_a_few_times_not_once_per_cell(
        self, ds: Datasette, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """datasette-render-markdown asks for its config for every cell: 3,000 on a page
        of runs, each a merge of the whole metadata."""
        traced(ds, "/ledger/runs")
        merges = 0
        merge = type(ds).metadata

        def counting(self: Datasette, *args: Any, **kwargs: Any) -> Any:
            nonlocal merges
            merges += 1
            return merge(self, *args, **kwargs)

        monkeypatch.setattr(type(ds), "metadata", counting)
        page, _ = traced(ds, "/ledger/runs")
        cells = page.text.count("<td ")
        assert cells > 1000
        assert merges < cells / 10
