"""The SQLite rules a served ledger's connections run under, on a small database of its own."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from benchledger.adapters.publication import sql_guard


@pytest.fixture
def conn() -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(":memory:")
    connection.executescript(
        "CREATE TABLE shown (a TEXT); INSERT INTO shown VALUES ('x'), ('y');"
        "CREATE TABLE stored_events (state BLOB); INSERT INTO stored_events VALUES (x'00');"
        "CREATE TABLE secret (b TEXT); INSERT INTO secret VALUES ('s');"
    )
    sql_guard.guard(connection, hidden={"Secret"})
    yield connection
    connection.close()


class TestAVisitorsSql:
    def test_reads_shown_tables(self, conn: sqlite3.Connection) -> None:
        assert conn.execute("SELECT count(*) FROM shown").fetchone() == (2,)

    @pytest.mark.parametrize(
        "sql",
        [
            "SELECT * FROM stored_events",
            "SELECT * FROM SECRET",
            "SELECT * FROM main.[secret]",
            "SELECT name FROM sqlite_master",
            "SELECT file FROM pragma_database_list",
            "SELECT * FROM pragma_table_info('stored_events')",
            "SELECT fts3_tokenizer('simple')",
        ],
    )
    def test_cannot_read_what_is_hidden_or_call_what_is_refused(
        self, conn: sqlite3.Connection, sql: str
    ) -> None:
        with pytest.raises(sqlite3.DatabaseError, match=r"prohibited|not authorized"):
            conn.execute(sql).fetchall()

    def test_cannot_write_even_on_a_writable_connection(self, conn: sqlite3.Connection) -> None:
        for sql in ("INSERT INTO shown VALUES ('z')", "CREATE TABLE t (x)", "DELETE FROM shown"):
            with pytest.raises(sqlite3.DatabaseError):
                conn.execute(sql)
        assert conn.execute("SELECT count(*) FROM shown").fetchone() == (2,)

    def test_cannot_make_a_value_past_the_length_limit(self, conn: sqlite3.Connection) -> None:
        with pytest.raises(sqlite3.DataError, match="too big"):
            conn.execute("SELECT randomblob(?)", (sql_guard.MAX_VALUE_BYTES + 1,)).fetchall()

    def test_cannot_read_a_page_of_results_past_its_bound(
        self, conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(sql_guard, "MAX_RESULT_BYTES", 1500)
        cursor = conn.execute(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5)"
            " SELECT randomblob(400) FROM c"
        )
        assert len(cursor.fetchmany(3)) == 3
        with pytest.raises(sqlite3.OperationalError, match="results larger than"):
            cursor.fetchmany(2)


class TestDatasettesOwnIntrospection:
    def test_reads_the_schema_while_trusted_and_a_visitor_then_cannot(
        self, conn: sqlite3.Connection
    ) -> None:
        sql = "SELECT sql FROM sqlite_master WHERE name = 'stored_events'"
        sql_guard.trust(conn, True)
        assert conn.execute(sql).fetchone()[0].startswith("CREATE TABLE")
        # The same text again: SQLite's prepared statement must be authorized afresh.
        sql_guard.trust(conn, False)
        with pytest.raises(sqlite3.DatabaseError, match="prohibited"):
            conn.execute(sql).fetchall()

    def test_still_cannot_write_while_trusted(self, conn: sqlite3.Connection) -> None:
        sql_guard.trust(conn, True)
        with pytest.raises(sqlite3.DatabaseError):
            conn.execute("DROP TABLE shown")


@pytest.mark.parametrize(
    ("table", "hidden"),
    [("STORED_EVENTS", True), ("sqlite_stat1", True), ("Secret", True), ("runs", False)],
)
def test_hidden_tables_are_named_as_sqlite_names_them(table: str, hidden: bool) -> None:
    assert sql_guard.is_hidden(table, {"secret"}) is hidden
