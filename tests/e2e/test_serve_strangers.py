"""`serve` as a stranger meets it: a real process on a free port, probed the ways anyone on
the network can. Hidden tables, the file's path and pointers stay unreadable whatever the
spelling; values, pages of results and slow queries are bounded; no request is a 500; the
server stays under 500 MB while it is probed; the ledger is unchanged afterwards."""

from __future__ import annotations

import asyncio
import hashlib
import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchledger.adapters.publication import browse, sql_guard
from tests.conftest import CORPUS
from tests.ledgers import build_browsable, build_corpus, copy_ledger

CLI = [sys.executable, "-c", "from benchledger.commands.cli import cli; cli()"]
PEAK_MEMORY_KB = 500 * 1024

SLOW = "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c"
MANY = "with recursive c(x) as (select 1 union all select x + 1 from c limit 1000) "
PROHIBITED = "prohibited"  # SQLite's words for a read the authorizer refused
NOT_AUTHORIZED = "not authorized"  # ...and for any other action it refused

# Every spelling of reading what a visitor must not read, and the words of its refusal.
HIDDEN_SQL = [
    ("select * from stored_events", PROHIBITED),
    ('select * from "stored_events"', PROHIBITED),
    ("select * from [stored_events]", PROHIBITED),
    ("select * from `stored_events`", PROHIBITED),
    ("select * from main.stored_events", PROHIBITED),
    ('select * from MAIN."STORED_EVENTS"', PROHIBITED),
    ("select count(*) from stored_events", NOT_AUTHORIZED),
    (
        "select run_id from runs where run_id in (select originator_id from stored_events)",
        PROHIBITED,
    ),
    ("select * from (select state from stored_events limit 1)", PROHIBITED),
    ("with e as (select * from stored_events) select * from e", PROHIBITED),
    ("with recursive e(s) as (select state from stored_events) select s from e", PROHIBITED),
    ("select run_id from runs union all select topic from stored_events", PROHIBITED),
    ("select * from runs join stored_events on originator_id = run_id", PROHIBITED),
    ("select * from _projection_state", PROHIBITED),
    ("select * from latest_pending", PROHIBITED),
    ("select sql from sqlite_master", PROHIBITED),
    ("select sql from sqlite_schema where name = 'stored_events'", PROHIBITED),
    ("select name from sqlite_master where type = 'table'", PROHIBITED),
    ("select * from sqlite_temp_master", PROHIBITED),
    ("select * from pragma_database_list", PROHIBITED),
    ("select file from pragma_database_list()", PROHIBITED),
    ("select * from runs where exists (select file from pragma_database_list)", PROHIBITED),
    ("select * from pragma_table_info('stored_events')", NOT_AUTHORIZED),
    ("select * from pragma_function_list", NOT_AUTHORIZED),
    ("select fts3_tokenizer('simple')", NOT_AUTHORIZED),
    ("select fts3_tokenizer('mine', X'0000000000000000')", NOT_AUTHORIZED),
    ("select load_extension('/tmp/x')", NOT_AUTHORIZED),
]
# Statements Datasette itself refuses before SQLite sees them: writes, ATTACH, PRAGMA.
REFUSED_STATEMENTS = [
    "create view leak as select * from stored_events",
    "attach database ':memory:' as other",
    "pragma database_list",
    "insert into runs (run_id) values ('x')",
]
# Values and pages no visitor may make the server hold.
TOO_LARGE = [
    ("select length(randomblob(900000000))", "string or blob too big"),
    ("select zeroblob(900000000)", "string or blob too big"),
    ("select replace(hex(zeroblob(4000000)), '0', '0000000000')", "string or blob too big"),
    (MANY + "select randomblob(4000000) from c", "results larger than"),
    (MANY + "select group_concat(hex(randomblob(100000))) from c", "string or blob too big"),
]
# A row of many large values: refused by SQLite's heap cap, which only a serving process has.
WIDE_ROW = ("select " + ", ".join(f"zeroblob(8000000) as b{i}" for i in range(60)), "memory")
DEBUG_PAGES = [
    "/-/threads",
    "/-/threads.json",
    "/-/actor.json",
    "/-/messages",
    "/-/allow-debug",
    "/-/permissions",
    "/-/patterns",
]
PATH_FREE_PAGES = [
    "/-/databases.json",
    "/-/metadata.json",
    "/-/settings.json",
    "/-/versions.json",
    "/-/plugins.json",
    "/",
    "/ledger",
    "/ledger.json",
    "/ledger/runs.json?_size=1",
    "/ledger/nope",
    "/ledger/runs.json?_sort=nope",
    "/ledger.json?sql=select+*+from+nope",
    "/ledger.json?sql=select+*+from+pragma_database_list",
    "/ledger.db",
]
UNREADABLE = [
    "stored_events",
    "_projection_state",
    "latest_pending",
    "sqlite_master",
    "runs__rebuild",
]
# Table-page parameters a stranger can send, each a request Datasette must answer sanely.
FUZZ = [
    "",
    "?_sort=nope",
    "?_sort_desc=nope",
    "?_sort=rowid&_next=%27",
    "?_facet=metrics",
    "?_facet=nope",
    "?_facet_array=metrics",
    "?_facet_date=metrics",
    "?_size=100000",
    "?_size=-1",
    "?_size=max",
    "?_size=abc",
    "?_next=garbage",
    "?_next=%00%ff",
    "?_labels=on",
    "?_col=nope",
    "?_search=%22",
    "?_through=garbage",
    '?_through={"table":"x","column":"y","value":1}',
    "?_json=metrics",
    "?_timelimit=-1",
    "?nope__gt=1",
    "?_where=%27",
    "?_shape=nope",
    "?_shape=object",
    "?_stream=on&_size=max",
]
ODD_KEYS = ["1", "-1", "%00", "%27%3B", "a,b,c", "x" * 2000, "~2F", "99999999999999999999999"]


@dataclass
class Server:
    url: str
    process: subprocess.Popen[str]

    def get(self, path: str, timeout: float = 120) -> httpx.Response:
        return httpx.get(self.url + path, timeout=timeout)

    def sql(self, sql: str) -> httpx.Response:
        return httpx.get(f"{self.url}/ledger.json", params={"sql": sql}, timeout=120)

    def peak_memory_kb(self) -> int:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
        assert match, status
        return int(match.group(1))


@contextmanager
def serving(db: Path) -> Iterator[Server]:
    process = subprocess.Popen(
        [*CLI, "--db", str(db), "serve", "--port", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    drain: threading.Thread | None = None
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        match = re.search(r" at (http://127\.0\.0\.1:\d+)/", line)
        assert match, line
        # Refusals are logged per request: drain them so the pipe never fills.
        drain = threading.Thread(target=process.stderr.read, daemon=True)
        drain.start()
        yield Server(match.group(1), process)
    finally:
        process.terminate()
        process.wait(30)
        if drain is not None:
            drain.join(30)
        if process.stderr is not None:
            process.stderr.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def scalar(db: Path, sql: str) -> Any:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql).fetchone()[0]


def refused(response: httpx.Response, words: str) -> None:
    assert response.status_code == 400, f"{response.status_code} {response.text[:300]}"
    body = response.json()
    assert body["ok"] is False and body["rows"] == [], body
    assert words in body["error"], body["error"]


def a_normal_page(response: httpx.Response, *statuses: int) -> None:
    assert response.status_code in statuses, f"{response.status_code} {response.text[:300]}"
    if response.headers["content-type"].startswith("text/html"):
        assert "<title>" in response.text and 'href="/-/static/app.css' in response.text


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_browsable(tmp_path_factory.mktemp("strangers") / "ledger.db")


@pytest.fixture(scope="module")
def server(ledger: Path) -> Iterator[Server]:
    with serving(ledger) as started:
        yield started


class TestHiddenTablesAreUnreadableBySql:
    @pytest.mark.parametrize(("sql", "words"), HIDDEN_SQL)
    def test_every_spelling_is_refused_by_the_authorizer(
        self, server: Server, sql: str, words: str
    ) -> None:
        refused(server.sql(sql), words)

    @pytest.mark.parametrize("sql", REFUSED_STATEMENTS)
    def test_writes_attach_and_pragma_statements_are_refused(
        self, server: Server, sql: str
    ) -> None:
        response = server.sql(sql)
        assert response.status_code == 400 and response.json()["ok"] is False

    def test_a_statement_datasette_ran_for_itself_is_authorized_afresh_for_a_visitor(
        self, server: Server
    ) -> None:
        # A table page carrying a WHERE clause runs on the visitors' threads, where Datasette
        # reads the table's schema with this very statement, which SQLite keeps prepared.
        sql = "select sql from sqlite_master where name = :n and type=:t"
        with ThreadPoolExecutor(max_workers=4) as pool:
            pages = list(pool.map(server.get, ["/ledger/runs?_where=1"] * 8))
            assert all(page.status_code == 200 for page in pages)
            params = {"sql": sql, "n": "stored_events", "t": "table"}
            url = f"{server.url}/ledger.json"
            answers = list(pool.map(lambda _: httpx.get(url, params=params), range(8)))
        for response in answers:
            refused(response, PROHIBITED)

    def test_a_where_clause_reading_the_event_store_is_refused(self, server: Server) -> None:
        where = "run_id in (select originator_id from stored_events)"
        response = server.get(f"/ledger/runs.json?_where={where}")
        assert response.status_code == 400
        assert PROHIBITED in response.json()["error"]

    def test_shown_tables_describing_pragmas_and_search_still_answer(
        self, server: Server, ledger: Path
    ) -> None:
        body = server.sql("select count(*) as n from runs").json()
        assert body["rows"] == [[scalar(ledger, "SELECT count(*) FROM runs")]]
        columns = server.sql("select name from pragma_table_info('runs')").json()["rows"]
        assert ["run_id"] in columns
        found = server.get("/ledger/search.json?q=quokka&_shape=array")
        assert found.status_code == 200, found.text[:300]


class TestValuesAndTimeAreBounded:
    @pytest.mark.parametrize(("sql", "words"), [*TOO_LARGE, WIDE_ROW])
    def test_a_huge_value_or_page_is_a_query_error(
        self, server: Server, sql: str, words: str
    ) -> None:
        refused(server.sql(sql), words)

    def test_the_largest_value_the_ledger_shows_is_served_whole(
        self, server: Server, ledger: Path
    ) -> None:
        sql = "select max(length(data)) from events"
        largest = scalar(ledger, sql)
        assert server.sql(sql).json()["rows"] == [[largest]]
        assert 100 * largest < sql_guard.MAX_VALUE_BYTES

    def test_slow_queries_run_at_once_are_each_interrupted_not_left_hanging(
        self, server: Server
    ) -> None:
        with ThreadPoolExecutor(max_workers=7) as pool:
            slow = [pool.submit(server.sql, SLOW) for _ in range(6)]
            page = pool.submit(server.get, "/ledger/runs.json?_size=5&_shape=array")
            assert page.result().status_code == 200
            for response in (future.result() for future in slow):
                assert response.status_code == 400
                assert "SQL query took too long" in response.json()["error"]

    def test_the_limits_are_the_servers_settings(self, server: Server) -> None:
        settings = server.get("/-/settings.json").json()
        assert settings["sql_time_limit_ms"] == 3000
        assert settings["max_returned_rows"] == 1000
        assert settings["num_sql_threads"] == browse.SETTINGS["num_sql_threads"]


class TestNothingNamesTheLedgerFile:
    @pytest.mark.parametrize("path", PATH_FREE_PAGES)
    def test_no_page_or_error_names_the_path(self, server: Server, ledger: Path, path: str) -> None:
        response = server.get(path)
        assert response.status_code < 500, response.text[:300]
        assert str(ledger.parent) not in response.text

    @pytest.mark.parametrize("path", DEBUG_PAGES)
    def test_debug_pages_are_not_served(self, server: Server, path: str) -> None:
        a_normal_page(server.get(path), 403, 404)


class TestNoRequestIsAServerError:
    @pytest.mark.parametrize("table", UNREADABLE)
    def test_an_unreadable_tables_pages_are_forbidden_or_absent(
        self, server: Server, table: str
    ) -> None:
        for path in ("", ".json", "/1", "/1.json", ".csv?_stream=on", "?_where=1"):
            a_normal_page(server.get(f"/ledger/{table}{path}"), 403, 404)

    def test_the_event_stores_first_row_page_is_forbidden(self, server: Server) -> None:
        response = server.get("/ledger/stored_events/1")
        a_normal_page(response, 403)

    @pytest.mark.parametrize("table", ["runs", "cells", "latest", "events", "search"])
    def test_odd_parameters_and_row_keys_are_answered_without_a_500(
        self, server: Server, table: str
    ) -> None:
        paths = [f"/ledger/{table}{ext}{query}" for ext in ("", ".json", ".csv") for query in FUZZ]
        paths += [f"/ledger/{table}/{key}" for key in ODD_KEYS]
        with ThreadPoolExecutor(max_workers=4) as pool:
            statuses = dict(
                zip(paths, pool.map(lambda p: server.get(p).status_code, paths), strict=True)
            )
        assert {p: s for p, s in statuses.items() if s >= 500} == {}


class TestAVisitorsErrorsCostTheServerNothing:
    """Datasette prints every error's traceback with its local variables (through rich,
    where installed): a second of CPU per bad request, which a stranger could ask for as
    often as they like. A visitor's error gets its page and is not printed."""

    ERRORS = [
        ("/ledger/nope", 404),
        ("/ledger/nope.json", 404),
        ("/ledger/runs?_sort=nope", 400),
        ("/ledger/runs.json?_sort=nope", 400),
        ("/ledger/runs.json?_sort=rowid&_next=%27", 400),
        ("/ledger/stored_events", 403),
        ("/ledger/stored_events.json", 403),
        ("/ledger/runs/" + "x" * 2000, 404),
        ("/-/threads", 404),
    ]

    def test_an_error_page_is_served_and_nothing_is_printed(
        self, ledger: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        printed: list[str] = []
        rich = pytest.importorskip("rich")

        class Console:
            def print_exception(self, **_: Any) -> None:
                printed.append(path)

        monkeypatch.setattr(rich, "get_console", Console)
        monkeypatch.setattr("traceback.print_exc", lambda *_, **__: printed.append(path))
        ds = browse.datasette_for(ledger)
        path = ""

        async def ask() -> list[httpx.Response]:
            nonlocal path
            await ds.invoke_startup()
            answers = []
            for path, _ in self.ERRORS:
                answers.append(await ds.client.get(path))
            return answers

        answers = asyncio.run(ask())
        assert [a.status_code for a in answers] == [status for _, status in self.ERRORS]
        for (path, status), answer in zip(self.ERRORS, answers, strict=True):
            # Datasette answers a forbidden table with its HTML page, .json or not.
            if path.split("?")[0].endswith(".json") and status != 403:
                body = answer.json()
                assert body["ok"] is False and body["status"] == status and body["error"], path
            else:
                assert "text/html" in answer.headers["content-type"], path
                assert answer.text.startswith("<!DOCTYPE html>"), path
        assert printed == []


class TestAVisitorsOwnSqlWaitsForItsOwnThreads:
    def test_a_request_marked_as_carrying_sql_runs_on_the_visitors_threads(
        self, ledger: Path
    ) -> None:
        ds = browse.datasette_for(ledger)
        db = ds.databases["ledger"]

        def thread(_conn: Any) -> str:
            return threading.current_thread().name

        async def names() -> tuple[str, str]:
            await ds.invoke_startup()
            page = await db.execute_fn(thread)
            token = browse.VISITOR_SQL.set(True)
            try:
                visitor = await db.execute_fn(thread)
            finally:
                browse.VISITOR_SQL.reset(token)
            return page, visitor

        page, visitor = asyncio.run(names())
        assert visitor.startswith("visitor-sql") and not page.startswith("visitor-sql")

    @pytest.mark.parametrize(
        ("query", "marked"),
        [(b"sql=select+1", True), (b"_where=1&_size=5", True), (b"_size=5", False), (b"", False)],
    )
    def test_requests_carrying_sql_or_a_where_clause_are_marked(
        self, ledger: Path, query: bytes, marked: bool
    ) -> None:
        from datasette.plugins import pm

        browse.datasette_for(ledger)  # loads the project's plugins
        guard = next(p for p in pm.get_plugins() if p.__name__ == "benchledger_guard.py")
        seen: list[bool] = []

        async def app(scope: Any, receive: Any, send: Any) -> None:
            seen.append(browse.VISITOR_SQL.get())

        scope = {"type": "http", "path": "/ledger/runs", "query_string": query}
        asyncio.run(guard.asgi_wrapper()(app)(scope, None, None))
        assert seen == [marked]
        assert browse.VISITOR_SQL.get() is False


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared corpus is not at {CORPUS}")
def test_every_table_of_the_corpus_ledger_answers_odd_requests_without_a_500(
    tmp_path: Path,
) -> None:
    db = build_corpus(tmp_path / "corpus.db", CORPUS)
    ds = browse.datasette_for(db)

    async def fuzz() -> dict[str, int]:
        await ds.invoke_startup()
        tables = [t["name"] for t in (await ds.client.get("/corpus.json")).json()["tables"]]
        assert "runs" in tables and "stored_events" not in tables
        paths = [f"/corpus/{t}{ext}{q}" for t in tables for ext in ("", ".json") for q in FUZZ]
        paths += [f"/corpus/{t}/{key}" for t in tables for key in ODD_KEYS]
        return {path: (await ds.client.get(path)).status_code for path in paths}

    statuses = asyncio.run(fuzz())
    assert len(statuses) > 1000
    assert {p: s for p, s in statuses.items() if s >= 500} == {}


def test_the_server_stays_small_and_the_ledger_unchanged_while_strangers_probe_it(
    ledger: Path, tmp_path: Path
) -> None:
    db = copy_ledger(ledger, tmp_path / "ledger.db")
    before = digest(db)
    events = scalar(db, "SELECT count(*) FROM stored_events")
    probes = [sql for sql, _ in [*HIDDEN_SQL, *TOO_LARGE, WIDE_ROW]] * 2 + [SLOW] * 6
    with serving(db) as server:
        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(server.sql, probes))
            pages = list(pool.map(server.get, [*PATH_FREE_PAGES, *DEBUG_PAGES] * 2))
        assert len(answers) + len(pages) >= 45
        # Each answer that is not a refusal, with its probe and the server's words.
        assert [
            (sql[:80], r.status_code, r.text[:300])
            for sql, r in zip(probes, answers, strict=True)
            if r.status_code != 400
        ] == []
        assert [(r.url.path, r.status_code) for r in pages if r.status_code >= 500] == []
        peak = server.peak_memory_kb()
        assert peak < PEAK_MEMORY_KB, f"peak RSS {peak // 1024} MB"
    assert digest(db) == before
    assert scalar(db, "SELECT count(*) FROM stored_events") == events
