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

    def test_markdown_columns_are_those_named_or_matching_a_configured_pattern(self) -> None:
        default = plugin.MarkdownConfig({"columns": ["note"]})
        assert default.renders("note") and default.renders("summary_markdown")
        assert not default.renders("notes") and not default.renders("markdown_summary")
        custom = plugin.MarkdownConfig({"patterns": ["notes_*", "*.md"]})
        assert custom.renders("notes_2026") and custom.renders("readme.md")
        assert not custom.renders("summary_markdown") and not custom.renders("readme_md")
        assert not plugin.MarkdownConfig({"patterns": []}).renders("summary_markdown")

    def test_json_longer_than_a_cell_shows_is_left_to_datasette_to_cut(self) -> None:
        big = json.dumps({"runs": [f"run-{i:05d}" for i in range(500)]})
        assert plugin.pretty_json(big, longest=len(big)) is not None
        assert plugin.pretty_json(big, longest=len(big) - 1) is None
        assert plugin.pretty_json(big) is not None  # no limit

    def test_a_json_payload_is_shortened_to_one_line(self) -> None:
        shown = plugin.shortened('{"limit": 5,\n "tools": ["a"]}')
        assert shown == (
            '<span class="benchledger-short">{&#34;limit&#34;: 5, &#34;tools&#34;: [&#34;a&#34;]}'
            "</span>"
        )
        big = json.dumps({"runs": [f"run-{i:05d}" for i in range(500)]})
        cut = plugin.shortened(big)
        assert cut is not None and cut.endswith("\u2026</span>")
        assert len(cut) < 2 * plugin.SHORTENED_CHARS + 60

    def test_a_long_text_is_cut_and_a_short_one_left_as_it_is(self) -> None:
        assert plugin.shortened("a short error") is None
        long_text = "Traceback: " + "x" * 500
        assert plugin.shortened(long_text) == (
            f'<span class="benchledger-short">{long_text[: plugin.SHORTENED_CHARS]}\u2026</span>'
        )

    @pytest.mark.parametrize(
        ("path", "is_row"),
        [
            ("/ledger/runs/0a1b", True),
            ("/ledger/runs", False),
            ("/ledger/runs/0a1b.json", False),
            ("/ledger/search", False),
            ("/-/dashboards/ledger", False),
            ("/models", False),
        ],
    )
    def test_a_row_page_is_told_apart_by_its_path(self, path: str, is_row: bool) -> None:
        assert plugin.is_row_page(path) is is_row

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

    def test_a_table_page_shows_a_payload_on_one_line_and_its_row_page_whole(
        self, ds: Datasette, ledger: Path
    ) -> None:
        (run,) = rows(
            ledger,
            "SELECT run_id, config FROM runs WHERE config LIKE '{%' AND config != '{}' LIMIT 1",
        )
        table = get(ds, f"/ledger/runs?run_id={run['run_id']}").text
        shown = cell_html(table, "config")
        assert shown.startswith('<span class="benchledger-short">{')
        assert "\n" not in shown
        row = get(ds, f"/ledger/runs/{run['run_id']}").text
        assert cell_html(row, "config").startswith('<pre class="benchledger-json">{\n')

    def test_a_tables_facets_are_folded_above_its_rows_unless_asked_for(
        self, ds: Datasette
    ) -> None:
        page = get(ds, "/ledger/runs").text
        folded = page.index('<details class="benchledger-facets">')
        assert folded < page.index('<table class="rows-and-columns">')
        assert "<summary>Facets: " in page
        asked = get(ds, "/ledger/runs?_facet=provider").text
        assert '<details class="benchledger-facets" open>' in asked

    def test_the_models_page_lists_the_models_table(self, ledger: Path, tmp_path: Path) -> None:
        db = Path(shutil.copy(ledger, tmp_path / "ledger.db"))
        with closing(sqlite3.connect(db)) as conn, conn:
            conn.execute("DROP TABLE IF EXISTS models")
            conn.execute("CREATE TABLE models (model_id TEXT, names TEXT, rule TEXT)")
            conn.execute(
                "INSERT INTO models VALUES ('qwen/qwen2.5-1.5b', 'Qwen/Qwen2.5-1.5B', 'hf')"
            )
        page = get(datasette_for(db), "/models").text
        assert 'href="/ledger/models"' in page
        assert "<td>qwen/qwen2.5-1.5b</td><td>Qwen/Qwen2.5-1.5B</td><td>hf</td>" in page
        assert "no <code>models</code> table" not in page

    def test_the_models_page_without_a_models_table_lists_the_stated_names(
        self, ledger: Path, tmp_path: Path
    ) -> None:
        db = Path(shutil.copy(ledger, tmp_path / "ledger.db"))
        with closing(sqlite3.connect(db)) as conn, conn:
            conn.execute("DROP TABLE IF EXISTS models")
        page = get(datasette_for(db), "/models").text
        assert "This ledger has no <code>models</code> table yet" in page
        (model,) = rows(db, "SELECT model FROM runs GROUP BY model ORDER BY count(*) DESC LIMIT 1")
        assert f"<td>{model['model']}</td>" in page

    def test_a_review_note_is_rendered_markdown_without_its_script(self, ds: Datasette) -> None:
        note = cell_html(get(ds, "/ledger/reviews").text, "note")
        assert "<strong>Spot-checked</strong>" in note
        assert "<li>tool calls look right</li>" in note
        assert "<script>" not in note

    def test_a_review_note_reads_as_markdown_on_its_row_page_too(
        self, ds: Datasette, ledger: Path
    ) -> None:
        (review,) = rows(ledger, "SELECT review_id FROM reviews LIMIT 1")
        page = get(ds, f"/ledger/reviews/{review['review_id']}").text
        assert "<strong>Spot-checked</strong>" in page
        assert "<li>tool calls look right</li>" in page
        assert "<script>alert(1)" not in page

    def test_markdown_is_rendered_by_the_ledgers_plugin_not_once_more_per_cell(
        self, ds: Datasette
    ) -> None:
        """datasette-render-markdown's own render_cell ran for every text cell of every
        page; the ledger's plugin renders the configured columns instead, so the
        package's hooks are not registered while the ledger is served."""
        import datasette_render_markdown

        from datasette.plugins import pm

        assert not pm.is_registered(datasette_render_markdown)
        owners = [impl.plugin_name for impl in pm.hook.render_cell.get_hookimpls()]
        assert owners.count("benchledger_cells.py") == 1, owners

    def test_a_column_named_like_markdown_is_rendered_as_the_package_would(
        self, ds: Datasette
    ) -> None:
        """The package's default pattern (`*_markdown`) still holds for a query's
        columns, with its sanitiser: a script is dropped."""
        sql = "SELECT '**bold** <script>alert(1)</script>' AS note_markdown, '**x**' AS plain"
        page = get(ds, f"/ledger?{urlencode({'sql': sql})}").text
        cells = dict(re.findall(r'<td class="col-(\w+)">(.*?)</td>', page, re.S))
        assert "<strong>bold</strong>" in cells["note_markdown"], cells
        assert "<script>alert" not in cells["note_markdown"]
        assert "**x**" in cells["plain"]

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
        ((unit, acceptable),) = rows(
            ledger,
            "SELECT unit, count(*) FROM runs WHERE status = 'succeeded' AND score IS NOT NULL"
            " AND started_at IS NOT NULL AND NOT invalidated AND superseded_by IS NULL"
            " GROUP BY unit ORDER BY count(*) DESC, unit LIMIT 1",
        )

        over_time = self.run_chart(ds, charts["score-over-time"])
        assert len(over_time) == acceptable
        assert {r["unit"] for r in over_time} == {unit}
        matrix = self.run_chart(ds, charts["matrix"])
        assert {(r["benchmark"], r["agent"]) for r in matrix} >= {
            (r["benchmark"], r["agent"]) for r in rows(ledger, "SELECT * FROM latest")
        }
        pass_rates = self.run_chart(ds, charts["pass-rates"])
        assert len(pass_rates) == latest
        assert all(0 <= r["pass_rate"] <= 1 for r in pass_rates)
        reasons = self.run_chart(ds, charts["quarantine-reasons"])
        assert sum(r["pairs"] for r in reasons) == quarantined
        report = self.run_chart(ds, charts["head-to-head"])
        assert len(report) == 5
        assert {r["target"] for r in report} == {"eliza"}
        for slug in ("score-over-time", "matrix", "pass-rates", "quarantine-reasons"):
            assert all(r["no_data"] is None for r in self.run_chart(ds, charts[slug])), slug

    def test_score_over_time_plots_one_unit_the_filters_or_the_most_common(
        self, ds: Datasette, ledger: Path
    ) -> None:
        chart = self.charts(ledger)["score-over-time"]
        units = [
            r[0] for r in rows(ledger, "SELECT DISTINCT unit FROM runs WHERE score IS NOT NULL")
        ]
        assert len(units) > 1, "the demo no longer mixes units"
        for unit in units:
            shown = self.run_chart(ds, chart, unit=unit)
            assert {r["unit"] for r in shown if r["no_data"] is None} <= {unit}
        assert len({r["unit"] for r in self.run_chart(ds, chart)}) == 1

    def test_every_chart_says_no_data_where_the_filters_leave_none(
        self, ds: Datasette, ledger: Path
    ) -> None:
        for slug, chart in self.charts(ledger).items():
            (only,) = self.run_chart(ds, chart, benchmark="no-such-benchmark")
            said = only.get("no_data") or only.get("benchmark")
            assert said and said.startswith("No data"), slug

    def test_every_drawn_chart_draws_its_no_data_text_and_names_its_axes(
        self, ledger: Path
    ) -> None:
        for slug, chart in self.charts(ledger).items():
            if chart["library"] != "vega-lite":
                continue
            layers = chart["display"]["layer"]
            assert any(
                layer["encoding"].get("text") == {"field": "no_data"}
                and "datum.no_data != null" in layer["transform"][0]["filter"]
                for layer in layers
            ), slug
            for layer in layers:
                for channel in ("x", "y"):
                    encoding = layer["encoding"].get(channel, {})
                    if "field" in encoding and layer is layers[0]:
                        assert encoding.get("title"), (slug, channel)

    def test_the_model_filter_narrows_the_charts_of_runs(
        self, ledger: Path, tmp_path: Path
    ) -> None:
        db = Path(shutil.copy(ledger, tmp_path / "ledger.db"))
        with closing(sqlite3.connect(db)) as conn, conn:
            (benchmark, agent, run_id) = conn.execute(
                "SELECT benchmark, agent, run_id FROM latest ORDER BY benchmark, agent LIMIT 1"
            ).fetchone()
            conn.execute("UPDATE latest SET model = 'other-model' WHERE run_id = ?", (run_id,))
            conn.execute("UPDATE runs SET model = 'other-model' WHERE run_id = ?", (run_id,))
        ds, charts = datasette_for(db), self.charts(db)
        matrix = self.run_chart(ds, charts["matrix"], model="other-model")
        assert [(r["benchmark"], r["agent"]) for r in matrix] == [(benchmark, agent)]
        over_time = self.run_chart(ds, charts["score-over-time"], model="other-model")
        assert {r["run_id"] for r in over_time} <= {run_id, None}
        (nothing,) = self.run_chart(ds, charts["pass-rates"], model="no-such-model")
        assert nothing["no_data"].startswith("No data")

    def test_a_run_listing_only_its_failures_has_no_pass_rate_over_its_cells(
        self, ledger: Path, tmp_path: Path
    ) -> None:
        """A BFCL score file lists the failed cases and counts the passes: its cells'
        share passed (0 %) is not the run's pass rate, so the chart leaves it out."""
        db = Path(shutil.copy(ledger, tmp_path / "ledger.db"))
        with closing(sqlite3.connect(db)) as conn, conn:
            (run_id,) = conn.execute(
                "SELECT r.run_id FROM latest AS l JOIN runs AS r ON r.run_id = l.run_id "
                "WHERE r.cells > 0 ORDER BY r.run_id LIMIT 1"
            ).fetchone()
            conn.execute(
                "UPDATE runs SET provenance = json_set(coalesce(provenance, '{}'), "
                "'$.passed_not_listed', 205) WHERE run_id = ?",
                (run_id,),
            )
        ds, charts = datasette_for(db), self.charts(db)
        shown = self.run_chart(ds, charts["pass-rates"])
        assert shown and run_id not in {r.get("run_id") for r in shown}
        before = self.run_chart(datasette_for(ledger), charts["pass-rates"])
        assert len(shown) == len(before) - 1

    def test_the_heat_map_shows_at_most_25_benchmarks_and_25_agents(self, ledger: Path) -> None:
        """285 agents by 120 benchmarks have no readable labels: the map keeps the pairs
        of the busiest 25 of each, and prints scores in the cells only up to 12 agents."""
        chart = self.charts(ledger)["matrix"]
        sql = re.sub(r"\[\[.*?\]\]", "", chart["query"], flags=re.S)
        with closing(sqlite3.connect(":memory:")) as conn:
            conn.execute(
                "CREATE TABLE latest (benchmark, agent, model, score, unit, higher_is_better)"
            )
            conn.execute(
                "CREATE TABLE quarantine (benchmark, agent, model, status, quarantine_reason,"
                " unit, higher_is_better)"
            )
            conn.executemany(
                "INSERT INTO latest VALUES (?, ?, 'm', ?, 'ratio', 1)",
                [(f"b{b:03d}", f"a{a:03d}", (a % 10) / 10) for b in range(40) for a in range(60)],
            )
            shown = conn.execute(sql).fetchall()
        assert len({r[0] for r in shown}) == 25
        assert len({r[1] for r in shown}) == 25
        assert all(r[6] is None for r in shown), "no labels in a 25-agent map"

    def test_a_renamed_ledger_file_keeps_its_dashboard(self, ledger: Path, tmp_path: Path) -> None:
        team = Path(shutil.copy(ledger, tmp_path / "team.db"))
        ds = datasette_for(team)
        charts = self.charts(team)
        assert {chart["db"] for chart in charts.values()} == {"team"}
        assert get(ds, f"/-/dashboards/{DASHBOARD}").status_code == 200
        assert self.run_chart(ds, charts["matrix"])
