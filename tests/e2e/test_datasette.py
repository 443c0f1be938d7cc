"""Browsing a demo ledger through Datasette, with the project's metadata.

A ledger is built once per module by running `benchledger demo` in-process, then
served with `adapters.browse.datasette_for` and queried through Datasette's own
in-process client (no server, no network).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from click.testing import CliRunner
from datasette.app import Datasette

from benchledger.adapters.publication.browse import datasette_for, metadata_for
from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.commands.cli import cli
from benchledger.projections.registry import all_projections

TABLES = [t for p in all_projections() for t in p.tables]
READ_MODEL_TABLES = {t.name for t in TABLES if not t.internal and not t.full_text}
# A full-text table (searched through a canned query) and the tables FTS5 keeps for it
# are hidden by Datasette itself.
FTS5_SHADOWS = ("", "_config", "_content", "_data", "_docsize", "_idx")

# Never listed nor readable: the event store and its chain, projection bookkeeping and
# internal tables.
UNREADABLE_TABLES = (
    "stored_events",
    "stored_events_chain",
    "_projection_state",
    *(t.name for t in TABLES if t.internal),
)
# Listed as hidden: the full-text index a canned query searches, and its shadow tables.
FULL_TEXT_TABLES = tuple(t.name + shadow for t in TABLES if t.full_text for shadow in FTS5_SHADOWS)


def build_demo_ledger(path: Path) -> Path:
    result = CliRunner().invoke(cli, ["--db", str(path), "demo"])
    assert result.exit_code == 0, (
        f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
        + (f"\n{result.exception!r}" if result.exception else "")
    )
    return path


def get(ds: Datasette, path: str) -> httpx.Response:
    async def fetch() -> httpx.Response:
        await ds.invoke_startup()
        response: httpx.Response = await ds.client.get(path)
        return response

    return asyncio.run(fetch())


def get_json(ds: Datasette, path: str) -> Any:
    response = get(ds, path)
    assert response.status_code == 200, f"{path}: {response.status_code} {response.text[:500]}"
    return response.json()


@contextmanager
def connect(db: Path) -> Iterator[sqlite3.Connection]:
    """A direct connection to the ledger file, closed afterwards."""
    with closing(sqlite3.connect(db)) as conn:
        conn.row_factory = sqlite3.Row
        yield conn


def scalar(db: Path, sql: str, *params: Any) -> Any:
    with connect(db) as conn:
        return conn.execute(sql, params).fetchone()[0]


def column(db: Path, sql: str, *params: Any) -> set[Any]:
    with connect(db) as conn:
        return {row[0] for row in conn.execute(sql, params)}


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo_ledger(tmp_path_factory.mktemp("browse") / "ledger.db")


@pytest.fixture(scope="module")
def ds(ledger: Path) -> Datasette:
    return datasette_for(ledger)


@pytest.fixture(scope="module")
def corrected_run_id(ledger: Path) -> str:
    """A demo run corrected or invalidated after it was imported."""
    run_id: str | None = scalar(
        ledger,
        "SELECT stream FROM events WHERE type IN ('ScoreCorrected', 'RunInvalidated') "
        "AND stream IN (SELECT run_id FROM runs) ORDER BY stream LIMIT 1",
    )
    assert run_id is not None, "the demo should correct or invalidate at least one run"
    return run_id


class TestTheReadModelTablesAreServed:
    def test_runs_json_returns_every_run_in_the_ledger(self, ds: Datasette, ledger: Path) -> None:
        expected = scalar(ledger, "SELECT count(*) FROM runs")
        assert expected > 0

        rows = get_json(ds, "/ledger/runs.json?_shape=array&_size=max")

        assert len(rows) == expected
        run_ids = {row["run_id"] for row in rows}
        assert len(run_ids) == expected
        assert run_ids == column(ledger, "SELECT run_id FROM runs")

    def test_runs_are_sorted_newest_first_by_default(self, ds: Datasette) -> None:
        rows = get_json(ds, "/ledger/runs.json?_shape=array&_size=max")

        started = [row["started_at"] for row in rows]
        assert len(started) > 1
        assert started == sorted(started, reverse=True)

    def test_cells_table_is_served_with_its_row_count(self, ds: Datasette, ledger: Path) -> None:
        body = get_json(ds, "/ledger/cells.json?_size=5")

        assert body["filtered_table_rows_count"] == scalar(ledger, "SELECT count(*) FROM cells")
        assert body["filtered_table_rows_count"] > 0
        # cells has no primary key, so Datasette serves its rowid as well.
        assert {"run_id", "key", "outcome", "score", "metrics"} <= set(body["columns"])
        assert len(body["rows"]) == 5

    def test_events_table_is_served_newest_position_first(
        self, ds: Datasette, ledger: Path
    ) -> None:
        body = get_json(ds, "/ledger/events.json?_size=3")

        total = scalar(ledger, "SELECT count(*) FROM events")
        assert total > 0
        assert body["filtered_table_rows_count"] == total
        positions = [row[body["columns"].index("position")] for row in body["rows"]]
        assert positions == [total, total - 1, total - 2]


class TestInternalTablesAreHidden:
    def test_database_page_lists_neither_the_event_store_nor_projection_state(
        self, ds: Datasette, ledger: Path
    ) -> None:
        body = get_json(ds, "/ledger.json")

        hidden = {table["name"]: table["hidden"] for table in body["tables"]}
        for name in UNREADABLE_TABLES:
            assert name not in hidden, f"{name} should not be listed: {hidden}"
            assert get(ds, f"/ledger/{name}").status_code == 403, name
        assert scalar(ledger, "SELECT count(*) FROM sqlite_master WHERE name = 'stored_events'")
        for name in FULL_TEXT_TABLES:
            assert hidden.get(name) is True, f"{name} should be listed as hidden: {hidden}"
        assert body["hidden_count"] == len(FULL_TEXT_TABLES)

    def test_every_read_model_table_stays_visible(self, ds: Datasette) -> None:
        body = get_json(ds, "/ledger.json")

        visible = {table["name"] for table in body["tables"] if not table["hidden"]}
        assert visible == READ_MODEL_TABLES

    def test_every_read_model_table_is_described_and_its_rebuild_twin_hidden(self) -> None:
        tables = metadata_for(Path("ledger.db"))["databases"]["ledger"]["tables"]
        for name in READ_MODEL_TABLES | {t.name for t in TABLES if t.full_text}:
            assert tables[name]["description"], name
            assert tables[f"{name}__rebuild"]["hidden"] is True, name

    def test_rebuild_tables_are_hidden_by_metadata(self, ledger: Path, tmp_path: Path) -> None:
        # The demo leaves no rebuild tables behind, so make one appear as it would mid-rebuild.
        copy = shutil.copy(ledger, tmp_path / "ledger.db")
        with connect(Path(copy)) as conn:
            conn.execute("CREATE TABLE runs__rebuild AS SELECT * FROM runs")
            conn.commit()

        served = datasette_for(Path(copy))
        body = get_json(served, "/ledger.json")

        assert "runs__rebuild" not in {table["name"] for table in body["tables"]}
        assert get(served, "/ledger/runs__rebuild.json").status_code == 403


class TestCannedQueries:
    def test_runs_over_time_returns_only_runs_of_the_requested_benchmark_newest_first(
        self, ds: Datasette, ledger: Path
    ) -> None:
        rows = get_json(ds, "/ledger/runs_over_time.json?benchmark=bfcl&_shape=array&_size=max")

        assert len(rows) == scalar(ledger, "SELECT count(*) FROM runs WHERE benchmark = 'bfcl'")
        assert rows, "the demo should contain bfcl runs"
        assert {row["benchmark"] for row in rows} == {"bfcl"}
        assert {"agent", "model", "status", "score", "invalidated"} <= set(rows[0])
        started = [row["started_at"] for row in rows]
        assert started == sorted(started, reverse=True)

    def test_runs_over_time_is_bounded_to_the_latest_100(self, ds: Datasette) -> None:
        """A page that does not grow with the ledger: the newest 100 runs."""
        query = ds.metadata("queries", database="ledger")["runs_over_time"]
        assert "limit 100" in query["sql"].lower()
        assert "order by started_at desc" in query["sql"].lower()

    def test_runs_over_time_differs_per_benchmark(self, ds: Datasette) -> None:
        bfcl = get_json(ds, "/ledger/runs_over_time.json?benchmark=bfcl&_shape=array")
        gaia = get_json(ds, "/ledger/runs_over_time.json?benchmark=gaia&_shape=array")

        assert gaia
        assert {row["benchmark"] for row in gaia} == {"gaia"}
        assert not {row["run_id"] for row in bfcl} & {row["run_id"] for row in gaia}

    def test_run_history_returns_the_events_of_one_run_in_version_order(
        self, ds: Datasette, ledger: Path, corrected_run_id: str
    ) -> None:
        rows = get_json(ds, f"/ledger/run_history.json?run_id={corrected_run_id}&_shape=array")

        assert {row["stream"] for row in rows} == {corrected_run_id}
        versions = [row["version"] for row in rows]
        assert versions == list(range(1, len(versions) + 1))
        assert len(versions) == scalar(
            ledger, "SELECT count(*) FROM events WHERE stream = ?", corrected_run_id
        )
        assert rows[0]["type"] == "RunImported"
        assert rows[-1]["type"] in {"ScoreCorrected", "RunInvalidated"}

    def test_every_canned_query_about_latest_reads_the_latest_table(self) -> None:
        """One definition of "latest": no canned query recomputes it from `runs`."""
        queries = metadata_for(Path("ledger.db"))["databases"]["ledger"]["queries"]
        about_latest = {
            name: query["sql"].lower()
            for name, query in queries.items()
            if "latest" in f"{name} {query.get('title', '')} {query['sql']}".lower()
        }
        assert about_latest
        for name, sql in about_latest.items():
            read = set(re.findall(r"\b(?:from|join)\s+\[?(\w+)", sql))
            assert "latest" in read, name
            assert "runs" not in read and "row_number" not in sql, name

    def test_the_latest_table_is_what_benchledger_latest_prints(
        self, ds: Datasette, ledger: Path
    ) -> None:
        served = get_json(ds, "/ledger/latest.json?_shape=array&_size=max")
        printed = CliRunner().invoke(cli, ["--db", str(ledger), "latest", "--json"])
        assert printed.exit_code == 0, printed.stderr
        pick = {(r["benchmark"], r["agent"]): r["run_id"] for r in json.loads(printed.stdout)}
        assert pick and {(r["benchmark"], r["agent"]): r["run_id"] for r in served} == pick

    def test_canned_queries_carry_titles_and_descriptions(self, ds: Datasette) -> None:
        queries = {q["name"]: q for q in get_json(ds, "/ledger.json")["queries"]}

        assert {"runs_over_time", "run_history", "matrix"} <= set(queries)
        for name in ("runs_over_time", "run_history", "matrix"):
            assert queries[name].get("title"), name
            assert queries[name].get("description"), name


class TestFacets:
    def test_runs_show_the_configured_facets_without_asking(self, ds: Datasette) -> None:
        body = get_json(ds, "/ledger/runs.json?_size=1")

        assert {"benchmark", "agent", "model", "status"} <= set(body["facet_results"])

    def test_facet_counts_add_up_to_the_number_of_runs(self, ds: Datasette, ledger: Path) -> None:
        body = get_json(ds, "/ledger/runs.json?_size=1")

        total = scalar(ledger, "SELECT count(*) FROM runs")
        status = body["facet_results"]["status"]
        counts = {result["value"]: result["count"] for result in status["results"]}
        assert sum(counts.values()) == total
        assert counts["succeeded"] == scalar(
            ledger, "SELECT count(*) FROM runs WHERE status = 'succeeded'"
        )

    def test_cells_count_no_facet_by_default_but_facet_by_outcome_on_request(
        self, ds: Datasette, ledger: Path
    ) -> None:
        assert get_json(ds, "/ledger/cells.json?_size=1")["facet_results"] == {}
        body = get_json(ds, "/ledger/cells.json?_size=1&_facet=outcome")
        counted = {r["value"]: r["count"] for r in body["facet_results"]["outcome"]["results"]}
        assert sum(counted.values()) == scalar(ledger, "SELECT count(*) FROM cells")

    def test_an_extra_facet_can_be_requested(self, ds: Datasette) -> None:
        body = get_json(ds, "/ledger/runs.json?_size=1&_facet=provider")

        assert "provider" in body["facet_results"]
        assert "provider" not in get_json(ds, "/ledger/runs.json?_size=1")["facet_results"]


class TestTheLedgerIsReadOnly:
    @pytest.mark.parametrize(
        "sql",
        ["delete from runs", "update runs set score = 1", "drop table events"],
    )
    def test_a_write_through_the_sql_endpoint_is_refused(
        self, ds: Datasette, ledger: Path, sql: str
    ) -> None:
        before = scalar(ledger, "SELECT count(*) FROM runs")

        response = get(ds, "/ledger.json?" + urlencode({"sql": sql}))

        refused = response.status_code != 200 or response.json().get("ok") is False
        assert refused, f"{sql!r} was accepted: {response.status_code} {response.text[:300]}"
        assert scalar(ledger, "SELECT count(*) FROM runs") == before
        assert scalar(ledger, "SELECT count(*) FROM sqlite_master WHERE name = 'events'") == 1

    def test_a_select_through_the_sql_endpoint_is_allowed(
        self, ds: Datasette, ledger: Path
    ) -> None:
        body = get_json(ds, "/ledger.json?sql=select+count(*)+as+n+from+runs&_shape=array")

        assert body == [{"n": scalar(ledger, "SELECT count(*) FROM runs")}]


class TestTheMetadataFollowsTheLedgerFileName:
    def test_a_ledger_named_team_db_is_served_under_team(
        self, ledger: Path, tmp_path: Path
    ) -> None:
        team = Path(shutil.copy(ledger, tmp_path / "team.db"))
        ds = datasette_for(team)

        rows = get_json(ds, "/team/runs.json?_shape=array&_size=max")
        assert len(rows) == scalar(team, "SELECT count(*) FROM runs")
        assert get(ds, "/ledger/runs.json").status_code == 404

    def test_the_renamed_database_keeps_its_metadata(self, ledger: Path, tmp_path: Path) -> None:
        team = Path(shutil.copy(ledger, tmp_path / "team.db"))
        ds = datasette_for(team)

        tables = {t["name"] for t in get_json(ds, "/team.json")["tables"]}
        # Hidden by the metadata alone: followed under the new name.
        assert scalar(team, "SELECT count(*) FROM sqlite_master WHERE name = 'latest_pending'")
        assert "latest_pending" not in tables
        assert get(ds, "/team/latest_pending.json").status_code == 403
        facets = get_json(ds, "/team/runs.json?_size=1")["facet_results"]
        assert {"benchmark", "agent", "model", "status"} <= set(facets)
        rows = get_json(ds, "/team/runs_over_time.json?benchmark=bfcl&_shape=array")
        assert rows
        assert {row["benchmark"] for row in rows} == {"bfcl"}

    def test_the_html_pages_show_the_configured_titles_and_descriptions(
        self, ledger: Path, tmp_path: Path
    ) -> None:
        team = Path(shutil.copy(ledger, tmp_path / "team.db"))
        ds = datasette_for(team)

        database = get(ds, "/team")
        table = get(ds, "/team/runs")

        assert database.status_code == 200
        assert "Benchmark ledger" in database.text
        assert table.status_code == 200
        assert "One row per benchmark run" in table.text
        assert "Stream id of the run" in table.text


class TestTheFirstScreenIsTheRows:
    def test_column_descriptions_are_collapsed_into_the_table_description(
        self, ds: Datasette
    ) -> None:
        page = get(ds, "/ledger/runs").text

        details = page.index('<details class="column-descriptions">')
        assert details < page.index("Stream id of the run") < page.index("</details>", details)
        assert '<dl class="column-descriptions">' not in page

    def test_runs_lead_with_what_a_reader_asks_first(self, ds: Datasette) -> None:
        columns = get_json(ds, "/ledger/runs.json?_size=1")["columns"]

        lead = ["run_id", "benchmark", "agent", "provider", "model", "status", "score"]
        assert columns[: len(lead)] == lead
        assert columns.index("invalidated") < columns.index("started_at") < 12
        assert columns.index("superseded_by") < columns.index("started_at")
        for buried in ("signature", "comparison_signature", "config", "metrics", "provenance"):
            assert columns.index(buried) > columns.index("run_group_id"), buried

    def test_latest_shows_status_and_score_before_any_id_or_hash(self, ds: Datasette) -> None:
        columns = get_json(ds, "/ledger/latest.json?_size=1")["columns"]

        assert columns[:7] == [
            "benchmark",
            "agent",
            "provider",
            "model",
            "status",
            "selection",
            "score",
        ]
        assert columns.index("run_id") > columns.index("ended_at")
        assert columns.index("signature") > columns.index("run_id")

    def test_no_facet_is_suggested_by_scanning_a_page(self, ds: Datasette) -> None:
        assert get_json(ds, "/ledger/cells.json?_size=1")["suggested_facets"] == []


class TestLinks:
    @pytest.mark.parametrize(
        ("table", "column", "other"),
        [
            ("cells", "run_id", "runs"),
            ("events", "stream", "runs"),
            ("runs", "run_group_id", "run_groups"),
            ("runs", "superseded_by", "runs"),
            ("latest", "run_id", "runs"),
            ("quarantine", "run_id", "runs"),
            ("gate_findings", "verdict_id", "gate_verdicts"),
            ("comparison_rows", "comparison_id", "comparisons"),
            ("head_to_head_rows", "report_id", "head_to_head_reports"),
            ("turns", "run_id", "runs"),
        ],
    )
    def test_a_column_naming_a_row_of_another_table_is_a_foreign_key(
        self, ledger: Path, table: str, column: str, other: str
    ) -> None:
        with connect(ledger) as conn:
            keys = {
                (r["from"], r["table"]) for r in conn.execute(f"PRAGMA foreign_key_list({table})")
            }
        assert (column, other) in keys

    def test_a_run_page_links_to_its_cells_and_its_events(
        self, ds: Datasette, ledger: Path, corrected_run_id: str
    ) -> None:
        page = get(ds, f"/ledger/runs/{corrected_run_id}").text
        cells = scalar(ledger, "SELECT count(*) FROM cells WHERE run_id = ?", corrected_run_id)
        events = scalar(ledger, "SELECT count(*) FROM events WHERE stream = ?", corrected_run_id)

        assert cells > 0 and "Links from other tables" in page
        assert re.search(
            rf'href="/ledger/cells\?run_id={corrected_run_id}">\s*{cells} rows</a>', page
        )
        assert re.search(
            rf'href="/ledger/events\?stream={corrected_run_id}">\s*{events} rows</a>', page
        )

    def test_a_cell_links_to_its_run_by_the_run_key(
        self, ds: Datasette, ledger: Path, corrected_run_id: str
    ) -> None:
        page = get(ds, f"/ledger/cells?run_id={corrected_run_id}&_size=1").text
        run_key = scalar(ledger, "SELECT run_key FROM runs WHERE run_id = ?", corrected_run_id)

        assert f'<a href="/ledger/runs/{corrected_run_id}">{run_key}</a>' in page

    def test_links_survive_a_rebuild(self, ledger: Path, tmp_path: Path) -> None:
        copy = Path(shutil.copy(ledger, tmp_path / "ledger.db"))
        before = {t: fks(copy, t) for t in ("cells", "events", "runs", "latest")}

        rebuilt = CliRunner().invoke(cli, ["--db", str(copy), "rebuild"])

        assert rebuilt.exit_code == 0, rebuilt.stderr
        assert {t: fks(copy, t) for t in before} == before
        assert all(before.values())
        assert scalar(copy, "SELECT count(*) FROM cells") == scalar(
            ledger, "SELECT count(*) FROM cells"
        )

    def test_a_table_others_point_at_is_rebuilt_alone(self, ledger: Path, tmp_path: Path) -> None:
        copy = Path(shutil.copy(ledger, tmp_path / "ledger.db"))
        runs = scalar(copy, "SELECT count(*) FROM runs")

        rebuilt = CliRunner().invoke(cli, ["--db", str(copy), "rebuild", "--projection", "runs"])

        assert rebuilt.exit_code == 0, rebuilt.stderr
        assert scalar(copy, "SELECT count(*) FROM runs") == runs
        assert ("run_id", "runs", "run_id") in fks(copy, "cells")
        with connect(copy) as conn:
            assert conn.execute("PRAGMA foreign_key_check(cells)").fetchall() == []


def fks(db: Path, table: str) -> set[tuple[str, str, str]]:
    with connect(db) as conn:
        rows = conn.execute(f"PRAGMA foreign_key_list({table})")
        return {(r["from"], r["table"], r["to"]) for r in rows}


class TestRunHistoryByShortId:
    def test_the_eight_characters_the_cli_prints_find_the_run(
        self, ds: Datasette, corrected_run_id: str
    ) -> None:
        short = get_json(ds, f"/ledger/run_history.json?run_id={corrected_run_id[:8]}&_shape=array")
        full = get_json(ds, f"/ledger/run_history.json?run_id={corrected_run_id}&_shape=array")

        assert short == full and len(short) > 1
        assert {row["stream"] for row in short} == {corrected_run_id}

    def test_a_start_shared_by_several_runs_lists_them_to_choose_from(
        self, ds: Datasette, ledger: Path
    ) -> None:
        starts = {
            p: scalar(ledger, "SELECT count(*) FROM runs WHERE run_id LIKE ?", p + "%")
            for p in "0123456789abcdef"
        }
        prefix, n = next((p, n) for p, n in starts.items() if n > 1)

        rows = get_json(ds, f"/ledger/run_history.json?run_id={prefix}&_shape=array")

        assert len(rows) == n
        assert {row["type"] for row in rows} == {"ambiguous run id"}
        assert {row["stream"] for row in rows} == column(
            ledger, "SELECT run_id FROM runs WHERE run_id LIKE ?", prefix + "%"
        )
        assert all(row["data"].startswith(f"{n} runs have an id starting {prefix}") for row in rows)

    def test_a_start_of_no_run_finds_nothing(self, ds: Datasette) -> None:
        assert get_json(ds, "/ledger/run_history.json?run_id=zzzzzzzz&_shape=array") == []


class TestSearch:
    def test_a_planted_invalidation_reason_and_error_are_found(
        self, ledger: Path, tmp_path: Path
    ) -> None:
        copy = Path(shutil.copy(ledger, tmp_path / "ledger.db"))
        run_id = scalar(copy, "SELECT run_id FROM runs ORDER BY run_id LIMIT 1")
        planted = CliRunner().invoke(
            cli,
            ["--db", str(copy), "invalidate", run_id[:8], "--reason", "zebra-striped quokka leak"],
        )
        assert planted.exit_code == 0, planted.stderr
        results = tmp_path / "failed.jsonl"
        results.write_text(
            json.dumps(
                {
                    "type": "run",
                    "run_key": "planted-1",
                    "benchmark": "bfcl",
                    "agent": "eliza",
                    "provider": "openai",
                    "model": "gpt-4.1-mini",
                    "status": "error",
                    "error": "CUDA wombat exhausted: out of memory",
                    "started_at": "2026-10-01T09:00:00Z",
                }
            )
            + "\n"
        )
        imported = CliRunner().invoke(cli, ["--db", str(copy), "import", str(results)])
        assert imported.exit_code == 0, imported.stderr
        ds = datasette_for(copy)

        [reason] = get_json(ds, "/ledger/search.json?q=quokka+leak&_shape=array")
        [error] = get_json(ds, "/ledger/search.json?q=wombat&_shape=array")

        assert (reason["kind"], reason["run_id"]) == ("invalidated", run_id)
        assert reason["excerpt"] == "zebra-striped [quokka leak]"
        assert (error["kind"], error["run_key"], error["benchmark"]) == (
            "error",
            "planted-1",
            "bfcl",
        )
        assert get_json(ds, "/ledger/search.json?q=leak+quokka&_shape=array") == []

    def test_review_notes_and_gate_findings_are_found(self, ledger: Path, tmp_path: Path) -> None:
        copy = Path(shutil.copy(ledger, tmp_path / "ledger.db"))
        with build(Settings(db_path=copy)) as services:
            at = {"position": 1, "head_sha256": "0" * 64}
            verdict_id = services.ledger.record_gate(
                gate="publishability",
                ok=False,
                findings=[{"scope": "bfcl/eliza", "reason": "ocelot_marker", "value": "x"}],
                actor="tester",
                **at,
            )
            review_id = services.ledger.record_review(
                reviewer="tester",
                note="signed off after the capybara rerun",
                ok=True,
                blocking_findings=0,
                manifest_sha256="1" * 64,
                **at,
            )
            services.runner.catch_up()
        ds = datasette_for(copy)

        [finding] = get_json(ds, "/ledger/search.json?q=ocelot_marker&_shape=array")
        [note] = get_json(ds, "/ledger/search.json?q=capybara+rerun&_shape=array")

        assert (finding["kind"], finding["stream"]) == ("gate_finding", str(verdict_id))
        assert finding["text"] == "ocelot_marker bfcl/eliza x"
        assert (note["kind"], note["stream"], note["run_id"]) == ("review", str(review_id), None)

    def test_a_query_with_search_syntax_is_taken_as_words(self, ds: Datasette) -> None:
        response = get(ds, '/ledger/search.json?q=" OR NEAR(a b) -x:&_shape=array')

        assert response.status_code == 200, response.text[:300]
        assert response.json() == []


class TestMatrixQuery:
    def test_the_matrix_query_gives_a_state_for_every_benchmark_and_agent(
        self, ds: Datasette
    ) -> None:
        rows = get_json(ds, "/ledger/matrix.json?_shape=array")
        cells = {(r["benchmark"], r["agent"]): r for r in rows}
        assert len(cells) == len(rows) == 15  # 5 benchmarks x 3 agents in the demo
        assert {r["state"] for r in rows} == {"succeeded"}
        assert all(isinstance(r["score"], float) for r in rows)
