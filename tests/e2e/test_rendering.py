"""How the ledger reads in Datasette's HTML: rounded scores, flagged statuses, pretty
JSON, Markdown notes and the dashboard, while JSON and CSV keep every exact value.

The pages come from Datasette's in-process client over a browsable demo ledger
(tests/ledgers.py); the plugin's own functions are loaded from its file, as Datasette
loads it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from datasette.app import Datasette

from benchledger.adapters.publication.browse import CONFIG_DIR, datasette_for, metadata_for
from tests.ledgers import build_browsable

DASHBOARD = "ledger"


def load_plugin() -> ModuleType:
    path = CONFIG_DIR / "plugins" / "benchledger_cells.py"
    spec = importlib.util.spec_from_file_location("benchledger_cells", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


plugin = load_plugin()


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_browsable(tmp_path_factory.mktemp("rendering") / "ledger.db")


@pytest.fixture(scope="module")
def ds(ledger: Path) -> Datasette:
    return datasette_for(ledger)


def get(ds: Datasette, path: str) -> httpx.Response:
    async def fetch() -> httpx.Response:
        await ds.invoke_startup()
        response: httpx.Response = await ds.client.get(path)
        return response

    response = asyncio.run(fetch())
    assert response.status_code == 200, f"{path}: {response.status_code} {response.text[:500]}"
    return response


def rows(db: Path, sql: str, *params: Any) -> list[sqlite3.Row]:
    with closing(sqlite3.connect(db)) as conn:
        conn.row_factory = sqlite3.Row
        return list(conn.execute(sql, params))


def cell_html(page: str, column: str) -> str:
    """The inner HTML of the first <td> of `column` on a page."""
    match = re.search(rf'<td class="col-{column} [^"]*">(.*?)</td>', page, re.S)
    assert match, f"no {column} cell"
    return match.group(1)


@pytest.fixture
def row_of() -> Iterator[Any]:
    """A real sqlite3.Row with the given columns, as Datasette hands render_cell."""
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row

    def make(**values: Any) -> sqlite3.Row:
        names = ", ".join(f"? AS {name}" for name in values)
        row: sqlite3.Row = conn.execute(f"SELECT {names}", tuple(values.values())).fetchone()
        return row

    yield make
    conn.close()


class TestCellFunctions:
    @pytest.mark.parametrize(
        ("value", "shown"),
        [
            (0.666666666666667, "0.6667"),
            (0.95, "0.95"),
            (1.0, "1"),
            (12.3456789, "12.35"),
            (98765.4321, "98765"),
            (-0.0123456, "-0.01235"),
            (0.0, "0.0"),
        ],
    )
    def test_a_score_reads_to_four_significant_digits_never_in_exponent_form(
        self, value: float, shown: str
    ) -> None:
        assert plugin.rounded(value) == shown

    @pytest.mark.parametrize(
        ("flags", "shown"),
        [
            ({"invalidated": 0, "superseded_by": None}, "succeeded"),
            ({"invalidated": 1, "superseded_by": None}, "succeeded (invalidated)"),
            ({"invalidated": 0, "superseded_by": "b2"}, "succeeded (superseded)"),
            ({"invalidated": 1, "superseded_by": "b2"}, "succeeded (invalidated, superseded)"),
            ({"invalidated": 0, "superseded": 1}, "succeeded (superseded)"),
            ({}, "succeeded"),
        ],
    )
    def test_the_status_says_when_its_row_is_invalidated_or_superseded(
        self, row_of: Any, flags: dict[str, Any], shown: str
    ) -> None:
        row = row_of(status="succeeded", **flags)
        assert plugin.status_with_flags("succeeded", row) == shown

    def test_only_json_objects_and_arrays_are_pretty_printed(self) -> None:
        assert plugin.pretty_json('{"limit": 5, "tools": ["a"]}') == (
            '<pre class="benchledger-json">{\n  &#34;limit&#34;: 5,\n  &#34;tools&#34;: [\n'
            "    &#34;a&#34;\n  ]\n}</pre>"
        )
        for text in ("plain text", "[not json", "{}", "[]", "42"):
            assert plugin.pretty_json(text) is None, text

    def test_json_longer_than_a_cell_shows_is_left_to_datasette_to_cut(self) -> None:
        big = json.dumps({"runs": [f"run-{i:05d}" for i in range(500)]})
        assert plugin.pretty_json(big, longest=len(big)) is not None
        assert plugin.pretty_json(big, longest=len(big) - 1) is None
        assert plugin.pretty_json(big) is not None  # no limit

    def test_score_like_columns_are_named_by_their_meaning(self) -> None:
        for column in ("score", "a_score", "original_score", "p_holm", "target_accuracy"):
            assert plugin.is_score_column(column), column
        for column in ("cells", "exit_code", "duration_seconds", "scored_at"):
            assert not plugin.is_score_column(column), column


class TestHtmlPages:
    def test_an_invalidated_run_says_so_in_its_status_cell(
        self, ds: Datasette, ledger: Path
    ) -> None:
        (run,) = rows(ledger, "SELECT run_id, status FROM runs WHERE invalidated = 1")
        page = get(ds, f"/ledger/runs/{run['run_id']}").text
        assert cell_html(page, "status") == f"{run['status']} (invalidated)"
        (plain,) = rows(ledger, "SELECT run_id FROM runs WHERE status = 'succeeded' LIMIT 1")
        assert cell_html(get(ds, f"/ledger/runs/{plain['run_id']}").text, "status") == "succeeded"

    def test_scores_are_rounded_in_html_and_exact_in_json_and_csv(
        self, ds: Datasette, ledger: Path
    ) -> None:
        (row,) = rows(
            ledger,
            "SELECT rowid, target_accuracy FROM head_to_head_rows"
            " WHERE benchmark = 'swe_bench_verified'",
        )
        exact = row["target_accuracy"]
        assert len(repr(exact)) > 10, "the demo no longer has a long score to round"
        page = get(ds, f"/ledger/head_to_head_rows/{row['rowid']}").text
        shown = cell_html(page, "target_accuracy")
        assert shown == f'<span title="{exact!r}">{plugin.rounded(exact)}</span>'
        assert len(plugin.rounded(exact)) <= 6

        api = get(ds, f"/ledger/head_to_head_rows/{row['rowid']}.json?_shape=array").json()
        assert api[0]["target_accuracy"] == exact
        csv = get(ds, "/ledger/head_to_head_rows.csv?benchmark=swe_bench_verified").text
        assert repr(exact) in csv

    def test_json_payloads_are_indented_in_a_pre(self, ds: Datasette, ledger: Path) -> None:
        (run,) = rows(
            ledger,
            "SELECT run_id, config FROM runs WHERE config LIKE '{%' AND config != '{}' LIMIT 1",
        )
        page = get(ds, f"/ledger/runs/{run['run_id']}").text
        pretty = json.dumps(json.loads(run["config"]), indent=2, ensure_ascii=False)
        expected = pretty.replace("&", "&amp;").replace('"', "&#34;").replace("<", "&lt;")
        assert f'<pre class="benchledger-json">{expected}</pre>' in cell_html(page, "config")
        api = get(ds, f"/ledger/runs/{run['run_id']}.json?_shape=array").json()
        assert api[0]["config"] == run["config"]

    def test_a_review_note_is_rendered_markdown_without_its_script(self, ds: Datasette) -> None:
        note = cell_html(get(ds, "/ledger/reviews").text, "note")
        assert "<strong>Spot-checked</strong>" in note
        assert "<li>tool calls look right</li>" in note
        assert "<script>" not in note

    def test_the_index_links_to_the_dashboard(self, ds: Datasette) -> None:
        assert f'href="/-/dashboards/{DASHBOARD}"' in get(ds, "/").text


class TestDashboard:
    def charts(self, db: Path) -> dict[str, dict[str, Any]]:
        config = metadata_for(db)["plugins"]["datasette-dashboards"][DASHBOARD]
        charts: dict[str, dict[str, Any]] = config["charts"]
        return charts

    def run_chart(self, ds: Datasette, chart: dict[str, Any], **filters: str) -> list[Any]:
        """The chart's SQL as the dashboard runs it: optional [[ ... ]] clauses kept only
        for the filters given."""
        sql = re.sub(
            r"\[\[(.*?)\]\]",
            lambda m: m.group(1) if any(f":{k}" in m.group(1) for k in filters) else "",
            chart["query"],
            flags=re.S,
        )
        query = urlencode({"sql": sql, "_shape": "array", **filters})
        result: list[Any] = get(ds, f"/{chart['db']}.json?{query}").json()
        return result

    def test_the_dashboard_page_is_served_with_every_chart(
        self, ds: Datasette, ledger: Path
    ) -> None:
        page = get(ds, f"/-/dashboards/{DASHBOARD}").text
        for slug in self.charts(ledger):
            assert f'id="chart-{slug}"' in page, slug

    def test_each_chart_reads_the_read_models(self, ds: Datasette, ledger: Path) -> None:
        charts = self.charts(ledger)
        latest = rows(ledger, "SELECT count(*) FROM latest")[0][0]
        quarantined = rows(ledger, "SELECT count(*) FROM quarantine")[0][0]
        acceptable = rows(
            ledger,
            "SELECT count(*) FROM runs WHERE status = 'succeeded' AND score IS NOT NULL"
            " AND NOT invalidated AND superseded_by IS NULL",
        )[0][0]

        assert len(self.run_chart(ds, charts["score-over-time"])) == acceptable
        matrix = self.run_chart(ds, charts["matrix"])
        assert {(r["benchmark"], r["agent"]) for r in matrix} == {
            (r["benchmark"], r["agent"]) for r in rows(ledger, "SELECT * FROM latest")
        }
        pass_rates = self.run_chart(ds, charts["pass-rates"])
        assert len(pass_rates) == latest
        assert all(0 <= r["pass_rate"] <= 1 for r in pass_rates)
        reasons = self.run_chart(ds, charts["quarantine-reasons"])
        assert sum(r["runs"] for r in reasons) == quarantined
        report = self.run_chart(ds, charts["head-to-head"])
        assert len(report) == 5
        assert {r["target"] for r in report} == {"eliza"}

    def test_score_over_time_draws_the_newest_500_runs_in_time_order(
        self, ledger: Path, tmp_path: Path
    ) -> None:
        """Datasette returns 1,000 rows at most, and a chart of more points is unreadable:
        the chart asks for the newest 500, so a large ledger's chart ends today rather
        than at its 1,000th run."""
        chart = self.charts(ledger)["score-over-time"]
        sql = re.sub(r"\[\[.*?\]\]", "", chart["query"], flags=re.S)
        many = tmp_path / "many.db"
        with sqlite3.connect(many) as conn:
            conn.execute(
                "CREATE TABLE runs (started_at, run_id, benchmark, agent, score, unit, "
                "run_key, status, invalidated, superseded_by)"
            )
            stamps = [
                f"2026-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}" for i in range(1005)
            ]
            conn.executemany(
                "INSERT INTO runs VALUES (?, ?, 'b', 'a', 0.5, 'ratio', ?, 'succeeded', 0, NULL)",
                [(at, f"r{i:04d}", f"k{i}") for i, at in enumerate(stamps)],
            )
            got = [row[1] for row in conn.execute(sql)]
        assert got == [f"r{i:04d}" for i in range(505, 1005)]

    def test_the_benchmark_filter_narrows_every_chart(self, ds: Datasette, ledger: Path) -> None:
        for slug, chart in self.charts(ledger).items():
            if slug == "quarantine-reasons":
                continue  # counts per reason: no benchmark column to check
            result = self.run_chart(ds, chart, benchmark="bfcl")
            assert result, slug
            assert {r["benchmark"] for r in result} == {"bfcl"}, slug

    def test_a_renamed_ledger_file_keeps_its_dashboard(self, ledger: Path, tmp_path: Path) -> None:
        team = Path(shutil.copy(ledger, tmp_path / "team.db"))
        ds = datasette_for(team)
        charts = self.charts(team)
        assert {chart["db"] for chart in charts.values()} == {"team"}
        assert get(ds, f"/-/dashboards/{DASHBOARD}").status_code == 200
        assert self.run_chart(ds, charts["matrix"])
