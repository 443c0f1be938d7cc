"""The values of an orchestrator.sqlite within the limits, refused by table, row and column.

SQLite itself refuses to hand over a value past the value-size limit (it checks a
value's stated length before reading it), so a huge text or blob never reaches memory;
the value that stopped a read is then found again, one column at a time, to be named.
A value kept as it is (any column but a `*_json` one, whose text is decoded and checked
as what it holds) counts against the string-length limit: a text by its characters,
a blob by its bytes.
"""

from __future__ import annotations

import marshal
import sqlite3
from collections.abc import Sequence
from itertools import chain
from typing import Any, NamedTuple, cast

from benchledger.adapters.formats import limits
from benchledger.domain.errors import InputFormatError, InputLimitError


def bound(conn: sqlite3.Connection) -> None:
    """Make `conn` refuse any text or blob past the value-size limit, before reading it."""
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limits.current().value_size)


class Query(NamedTuple):
    """A read of every column of `table`'s rows that match `where` (with `params`),
    in `order`; written out by `sql`, and one row's column at a time by `one`."""

    table: str
    order: str
    where: str = ""
    params: Sequence[Any] = ()

    def sql(self, what: str = "*") -> str:
        where = f" WHERE {self.where}" if self.where else ""
        return f"SELECT {what} FROM {self.table}{where} ORDER BY {self.order}"

    def one(self, column: str, what: str = "{}") -> str:
        """Row `?` (from 0) of the read, only `what` of `column`: no other value is read
        (nor is this one, for `typeof` and a blob's `length`)."""
        return self.sql(what.format(quoted(column))) + " LIMIT 1 OFFSET ?"


def too_big(path: str, conn: sqlite3.Connection, query: Query, start: int) -> InputFormatError:
    """The refusal of the value past the value-size limit that stopped `query` at or
    after its row `start` (from 0), naming table, row and column."""
    names = [d[1] for d in conn.execute(f"PRAGMA table_info({quoted(query.table)})")]
    row = start
    while conn.execute(query.sql("1") + " LIMIT 1 OFFSET ?", (*query.params, row)).fetchone():
        for name in names:
            try:
                conn.execute(query.one(name), (*query.params, row)).fetchone()
            except sqlite3.DataError:
                return _refusal(path, conn, query, row, name)
        row += 1
    return InputFormatError(path, "a value is too big to read", field=query.table)


def _refusal(
    path: str, conn: sqlite3.Connection, query: Query, row: int, column: str
) -> InputLimitError:
    args = (*query.params, row)
    # Each its own query: SQLite reads neither a blob's content for length() nor any
    # content for typeof() only when the column is the function's direct argument.
    (kind,) = conn.execute(query.one(column, "typeof({})"), args).fetchone()
    size = None
    if kind == "blob":
        (size,) = conn.execute(query.one(column, "length({})"), args).fetchone()
    what = f"a blob of {size} bytes" if size is not None else f"a {kind} value"
    about = _row_name(conn, query, args)
    return limits.exceeded(path, about + what, "value_size", field=f"{query.table}.{column}")


def _row_name(conn: sqlite3.Connection, query: Query, args: Sequence[Any]) -> str:
    """`run 'id': ` (or `run group 'id': `) for the row, when its id can be read."""
    table = query.table
    key = "run_group_id" if table == "run_groups" else "run_id"
    try:
        found = conn.execute(query.one(key), args).fetchone()
    except sqlite3.Error:
        found = None
    if found is None or not isinstance(found[0], str):
        return f"row {args[-1] + 1} of {table}: "
    what = "run group" if table == "run_groups" else "run"
    return f"{what} '{found[0][:200]}': "


def check_kept_as_is(
    path: str, table: str, names: Sequence[str], values: Sequence[Any], key: Any
) -> None:
    """Refuse a text or blob of a column kept as it is (not `*_json`) past the
    string-length limit, naming the row by `key` (its id) and the column."""
    longest = limits.current().string_length
    if within(values, longest):
        return
    for i in _kept_places(tuple(names)):
        value = values[i]
        kind = type(value)
        if kind is str:
            if len(value) > longest:
                raise limits.exceeded(
                    path,
                    f"{_about(table, key)}a string of {len(value)} characters",
                    "string_length",
                    field=f"{table}.{names[i]}",
                )
        elif kind is bytes:
            _check_blob(path, table, names[i], value, key, longest)


def within(values: Sequence[Any], longest: int) -> bool:
    """Whether `values` (a row's, as the database hands them) surely hold no blob and no
    text longer than `longest`, told in C: their marshalled form, which writes each
    distinct text at least once and at least a byte per character, is no longer. False
    only means: look at each value."""
    return bytes not in map(type, values) and len(marshal.dumps(cast(Any, values))) <= longest


def rows_within(rows: Sequence[Sequence[Any]], longest: int) -> bool:
    """`within` for many rows at once (a run's trajectory rows)."""
    return bytes not in map(type, chain.from_iterable(rows)) and (
        len(marshal.dumps(cast(Any, rows))) <= longest
    )


def _check_blob(path: str, table: str, name: str, value: bytes, key: Any, longest: int) -> None:
    if not _utf8(value):
        # Kept as the text it spells; one that spells none cannot be written.
        raise InputFormatError(
            path,
            f"{_about(table, key)}a blob that is not UTF-8 text; a column is kept as text",
            field=f"{table}.{name}",
        )
    if len(value) > longest:
        raise limits.exceeded(
            path,
            f"{_about(table, key)}a blob of {len(value)} bytes",
            "string_length",
            field=f"{table}.{name}",
        )


# The places of the columns kept as they are (not `*_json`), per query's column names:
# worked out once per distinct list of names, not once per row (a file's rows share one).
_KEPT_PLACES: dict[tuple[str, ...], tuple[int, ...]] = {}


def _kept_places(names: tuple[str, ...]) -> tuple[int, ...]:
    places = _KEPT_PLACES.get(names)
    if places is None:
        if len(_KEPT_PLACES) > 64:
            _KEPT_PLACES.clear()
        places = tuple(i for i, name in enumerate(names) if not name.endswith("_json"))
        _KEPT_PLACES[names] = places
    return places


def _about(table: str, key: Any) -> str:
    who = "run group" if table == "run_groups" else "run"
    return f"{who} '{key[:200]}': " if isinstance(key, str) else ""


def _utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def quoted(name: str) -> str:
    """An SQL identifier, quoted."""
    return '"' + name.replace('"', '""') + '"'
