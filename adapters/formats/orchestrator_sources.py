"""The ElizaOS orchestrator's files, each read into the rows `orchestrator_rows` turns
into records: orchestrator.sqlite (any vintage), latest/quarantine/baselines rows
(checked against latest/index.json when it is there), viewer_data.json and
comparisons/compare-<id>.json.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import math
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from benchledger.adapters.formats import limits
from benchledger.adapters.formats.common import identity, loads_all
from benchledger.adapters.formats.common import read_json as load_json
from benchledger.adapters.formats.orchestrator_facts import canonical
from benchledger.adapters.formats.orchestrator_rows import Kind, read_group, read_row
from benchledger.adapters.formats.orchestrator_values import (
    Query,
    bound,
    check_kept_as_is,
    rows_within,
    too_big,
)
from benchledger.domain.errors import InputFormatError
from benchledger.domain.publication import TELEMETRY_GROUPS
from benchledger.domain.records import GroupRecord, RunHeader, RunRecord, SkipRecord, Turn

Parsed = RunRecord | SkipRecord | GroupRecord
SQLITE_MAGIC = b"SQLite format 3\x00"
ROW_DIRS = ("latest", "quarantine", "baselines")
# Columns read as they are; `*_json` columns are decoded under their name without the suffix.
PLAIN_COLUMNS = (
    "run_id",
    "benchmark_id",
    "benchmark_directory",
    "signature",
    "status",
    "agent",
    "provider",
    "model",
    "score",
    "unit",
    "error",
    "started_at",
    "ended_at",
    "duration_seconds",
    "attempt",
)
JSON_COLUMNS = ("metrics", "extra_config", *TELEMETRY_GROUPS)
MAPPED_COLUMNS = frozenset(
    {*PLAIN_COLUMNS, *(f"{name}_json" for name in JSON_COLUMNS), "higher_is_better"}
)


def _records(path: str, rows: list[Any], where: str, kind: Kind) -> Iterator[Parsed]:
    for i, raw in enumerate(rows):
        record = read_row(path, raw, f"{where}[{i}].", kind)
        if record is not None:
            yield record


# --- orchestrator.sqlite ---------------------------------------------------------------


def wal_file(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


def parse_sqlite(path: Path, data: bytes) -> Iterator[Parsed]:
    """Every finished row of benchmark_runs, by run_id; migration columns are optional."""
    if not data.startswith(SQLITE_MAGIC):
        raise InputFormatError(str(path), "not an SQLite database (bad header)")
    yield from _sqlite_records(path, data)


def stream_sqlite(path: Path) -> Iterator[Parsed]:
    """`parse_sqlite` of a file that starts with SQLITE_MAGIC, copying it file to file
    rather than holding it, and reading its rows a batch at a time: memory holds a
    batch, never the database."""
    yield from _sqlite_records(path, None)


# Rows fetched at a time from benchmark_runs.
ROW_BATCH = 500


def _sqlite_records(path: Path, data: bytes | None) -> Iterator[Parsed]:
    name = str(path)
    for unit in _sqlite_units(path, data):
        record = parse_unit(name, unit)
        if record is not None:
            yield record


def stream_units(path: Path) -> Iterator[Unit]:
    """The rows of an orchestrator.sqlite as the database hands them, a unit each
    (`_sqlite_units`), for `parse_unit` to read: plain data (what `marshal` writes), so
    that an import may read them in one process and parse each in whichever of two has
    time (`read_ahead`). `stream_sqlite` is these units parsed in order."""
    yield from _sqlite_units(path, None)


# A unit: a run_groups row (a dict by column), or a benchmark_runs row with its query's
# column names, and its trajectory rows with theirs (None: no trajectories table).
RunUnit = tuple[tuple[str, ...], tuple[Any, ...], tuple[str, ...] | None, Any]
Unit = dict[str, Any] | RunUnit


# What a row's digest is made of, before the row itself: bumped whenever the same row
# would be read into another record (a parse that states more of it), so that rows
# recorded under an older reading are read again.
ROW_DIGEST_PREFIX = b"benchledger orchestrator benchmark_runs row 1\0"


def unit_key(unit: Unit) -> str | None:
    """The run key a benchmark_runs unit states (its run_id), None for other units."""
    if isinstance(unit, dict):
        return None
    names, values = unit[0], unit[1]
    if "run_id" not in names:
        return None
    run_id = values[names.index("run_id")]
    return run_id if type(run_id) is str else None


def unit_digest(unit: Unit) -> str:
    """The SHA-256 of a benchmark_runs unit as the database hands it: its column names and
    values, its trajectory rows' names and values, in the query's order. By value:
    `marshal` version 2 writes no references (a value seen twice is written twice) and
    the same bytes for the same values, whichever objects hold them."""
    return marshalled_digest(marshal.dumps(unit, 2))


def marshalled_digest(dumped: bytes) -> str:
    """`unit_digest` of a unit marshalled already (version 2)."""
    return hashlib.sha256(ROW_DIGEST_PREFIX + dumped).hexdigest()


def parse_unit(name: str, unit: Unit) -> Parsed | None:
    """The record a unit of `stream_units` states (None: a row that states no record),
    refused as `parse_sqlite` refuses it; `name`: the file."""
    if isinstance(unit, dict):  # a run_groups row
        key = unit.get("run_group_id")
        check_kept_as_is(name, "run_groups", list(unit), list(unit.values()), key)
        return read_group(name, unit, "run_groups.")
    names, values, turn_names, turn_rows = unit
    run_id = values[names.index("run_id")] if "run_id" in names else None
    dumped = marshal.dumps(unit, 2)  # once, for its digest and its check
    check_unit_kept(name, unit, run_id, dumped)
    row, columns = _RunRow(_run_columns(names), values).row(name)
    record_of = None
    if turn_names is not None and turn_rows:  # a run's turns, validated with its record
        record_of = partial(_turns(turn_names, turn_rows).record, name)
    # Its run or skip states the unit's digest (`unit_digest`), made with it, not copied.
    digest = marshalled_digest(dumped) if unit_key(unit) is not None else None
    return read_row(
        name,
        row,
        "benchmark_runs.",
        "database",
        columns=columns,
        record_of=record_of,
        digest=digest,
    )


def check_unit_kept(name: str, unit: RunUnit, run_id: Any, dumped: bytes) -> None:
    """Refuse what a benchmark_runs unit keeps as it is past the string-length limit, as
    `check_kept_as_is` of its row, then of each of its trajectory rows, refuses it.
    `dumped`: the unit marshalled (version 2, as its digest is made), which holds each of
    its texts whole, at least a byte a character: no longer than the limit, it tells
    at once that no text is longer (as `within` tells of a row's values)."""
    names, values, turn_names, turn_rows = unit
    longest = limits.current().string_length
    short = len(dumped) <= longest
    if not (short and bytes not in map(type, values)):
        check_kept_as_is(name, "benchmark_runs", names, values, run_id)
    if not turn_rows or (short and bytes not in map(type, chain.from_iterable(turn_rows))):
        return
    if not rows_within(turn_rows, longest):
        for turn in turn_rows:
            check_kept_as_is(name, "benchmark_run_trajectories", turn_names or (), turn, run_id)


def unit_weight(unit: Unit) -> int:
    """What a unit's record holds beyond its header, roughly: its trajectory rows."""
    return 0 if isinstance(unit, dict) or unit[3] is None else len(unit[3])


# What a query's column names come to (`_RunColumns`, the trajectory fields), worked out
# once per distinct list of names: a file's rows share one.
_COLUMNS: dict[tuple[str, ...], _RunColumns] = {}
_TURN_COLUMNS: dict[tuple[str, ...], tuple[dict[str, int], tuple[tuple[str, int], ...]]] = {}


def _run_columns(names: tuple[str, ...]) -> _RunColumns:
    columns = _COLUMNS.get(names)
    if columns is None:
        if len(_COLUMNS) > 64:
            _COLUMNS.clear()
        columns = _COLUMNS[names] = _RunColumns(list(names))
    return columns


def _turns(names: tuple[str, ...], rows: list[tuple[Any, ...]]) -> _Turns:
    known = _TURN_COLUMNS.get(names)
    if known is None:
        if len(_TURN_COLUMNS) > 64:
            _TURN_COLUMNS.clear()
        index = {d: i for i, d in enumerate(names)}  # a repeated name: its last column
        fields = tuple((k, index[k]) for k in TURN_FIELDS if k in index)
        known = _TURN_COLUMNS[names] = (index, fields)
    return _Turns(known[0], known[1], rows)


TURN_FIELDS = tuple(Turn.model_fields)


class _Turns(NamedTuple):
    """A run's benchmark_run_trajectories rows (by file and turn), as the database hands
    them, with their query's columns (by name, a repeated name's last; the TURN_FIELDS
    it has, with their places)."""

    names: dict[str, int]
    fields: tuple[tuple[str, int], ...]
    rows: list[tuple[Any, ...]]

    def record(
        self, path: str, header: RunHeader, group_key: str | None, digest: str | None
    ) -> RunRecord:
        """The run's record: `header` with these rows as its turns, each validated as
        strictly as by `Turn.model_validate(..., strict=True)`, in the one validation of
        the record (which it passes otherwise: its other fields are a record's), stating
        `digest` (None: none); the first bad turn is named."""
        turns = tuple({k: row[i] for k, i in self.fields} for row in self.rows)
        stated = {"header": header, "cells": (), "turns": turns}
        stated.update(supplement={}, group_key=group_key)
        if digest is not None:
            stated["source_row_sha256"] = digest
        try:
            return RunRecord.model_validate(stated, strict=True)
        except ValidationError as e:
            first = e.errors()[0]
            _, at, *loc = first["loc"]  # ("turns", index, field)
            run_id = self.rows[int(at)][self.names["run_id"]]
            where = f"run '{run_id}': " if run_id else ""
            field = "benchmark_run_trajectories." + ".".join(str(p) for p in loc)
            raise InputFormatError(path, where + first["msg"], field=field) from None


class _RunColumns:
    """Where each column of a benchmark_runs query goes in the row `read_row` reads: a
    row in the shape the JSON sources use (absent columns stay absent), with every column
    `read_row` does not map kept as stated in `source_columns` (command, cwd, log paths,
    versions and commits, artifacts, high-score reference, comparison_id, the
    denormalised telemetry...), each `*_json` column decoded under its name without the
    suffix. Worked out once per query from its column names, rather than once per row."""

    def __init__(self, names: list[str]) -> None:
        index = {name: i for i, name in enumerate(names)}  # a repeated name: its last column
        self.plain = [(k, index[k]) for k in PLAIN_COLUMNS if k in index]
        self.reals = [k for k in ("score", "duration_seconds") if k in index]
        self.higher_is_better = index.get("higher_is_better")
        self.json = [
            (name, index[f"{name}_json"], f"benchmark_runs.{name}_json")
            for name in JSON_COLUMNS
            if f"{name}_json" in index
        ]
        # The other columns in table order, each with its `*_json` field (None: not one).
        self.rest = [
            (
                column,
                index[column],
                f"benchmark_runs.{column}" if column.endswith("_json") else None,
            )
            for column in index
            if column not in MAPPED_COLUMNS
        ]
        # Every JSON text a row may hold, in the order they are decoded.
        self.texts = [(i, field) for _, i, field in self.json]
        self.texts += [(i, field) for _, i, field in self.rest if field is not None]
        # The other columns by the key `source_columns` gives them (a `*_json` column's
        # without the suffix, and the token_metrics column's as its raw group: index None),
        # sorted: the order in which `_columns` keeps them. Only when every key is one
        # column's (else a later column replaces an earlier one: see `_RunRow.rest`).
        keyed = [(c.removesuffix("_json") if f else c, i, f) for c, i, f in self.rest]
        keys = [key for key, _, _ in keyed]
        self.sorted_rest: list[tuple[str, int | None, str | None]] | None = None
        if len(set(keys)) == len(keys) and "token_metrics" not in keys:
            self.sorted_rest = sorted([*keyed, ("token_metrics", None, None)])


class _RunRow(NamedTuple):
    """One benchmark_runs row as the database hands it, with its query's columns."""

    columns: _RunColumns
    values: tuple[Any, ...]

    def row(self, path: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The row `read_row` reads (a `*_json` column that is not JSON names itself),
        and its `source_columns` as `orchestrator_rows` keeps them (None: left to it)."""
        columns, values = self.columns, self.values
        row = {k: values[i] for k, i in columns.plain}
        for real in columns.reals:
            value = row[real]
            if isinstance(value, int) and not isinstance(value, bool):
                row[real] = float(value)  # a REAL column may hand back an integer
        if columns.higher_is_better is not None:
            hib = values[columns.higher_is_better]
            row["higher_is_better"] = bool(hib) if hib in (0, 1) else hib  # INTEGER 0/1/NULL
        found = [(i, field) for i, field in columns.texts if isinstance(values[i], str)]
        texts = [values[i] for i, _ in found]
        read = loads_all(path, texts, [field for _, field in found])
        decoded = dict(zip([i for i, _ in found], read, strict=True))
        for name, i, _ in columns.json:
            value = values[i]
            if value is not None:
                # Not a string: kept as it is, and validation names the field.
                row[name] = decoded.get(i, value)
        token_metrics = row.get("token_metrics")
        both = self._sorted_rest(decoded, token_metrics)
        if both is None:
            row["source_columns"], kept = self._rest(decoded, token_metrics), None
        else:
            row["source_columns"], kept = both
        return row, kept

    def _rest(self, decoded: dict[int, Any], token_metrics: Any) -> dict[str, Any]:
        """The row's other columns in table order, each `*_json` one that is a string
        decoded under its name without the suffix (a later one of the same name
        replacing an earlier one), the raw token_metrics group last."""
        rest: dict[str, Any] = {}
        for column, i, field in self.columns.rest:
            if field is not None and i in decoded:
                rest[column.removesuffix("_json")] = decoded[i]
            else:
                rest[column] = self.values[i]
        if isinstance(token_metrics, dict):
            rest["token_metrics"] = token_metrics  # raw, as the column holds it
        return rest

    def _sorted_rest(
        self, decoded: dict[int, Any], token_metrics: Any
    ) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        """`_rest` (in another order: nothing reads its order) with what `_columns` keeps
        of it, in the same walk over the columns sorted once per query; None when the
        columns are not sorted (see `_RunColumns`) or a `*_json` column is not a string
        (its key keeps the suffix). What `_columns` keeps is None when a string is not
        valid Unicode: `_columns` refuses it where it comes to it."""
        sorted_rest = self.columns.sorted_rest
        if sorted_rest is None:
            return None
        rest: dict[str, Any] = {}
        kept: dict[str, Any] | None = {}
        value: Any
        for key, i, field in sorted_rest:
            if i is None:
                if not isinstance(token_metrics, dict):
                    continue
                value = token_metrics  # raw, as the column holds it
            elif field is None:
                value = self.values[i]
            elif i in decoded:
                value = decoded[i]
            else:
                return None
            rest[key] = value
            if value is None or kept is None:
                continue  # a NULL column states nothing
            kind = type(value)
            if kind is int or kind is float or (kind is str and value.isascii()):
                kept[key] = value  # what `canonical` gives a plain number or ASCII text
                continue
            try:
                kept[key] = canonical(value)
            except UnicodeEncodeError:
                kept = None
        return rest, kept


def _sqlite_units(path: Path, data: bytes | None) -> Iterator[Unit]:
    """The rows of run_groups (dicts), then those of benchmark_runs, by run_id, each with
    its query's column names and its trajectory rows (None without the table). The
    orchestrator's own files are never locked, written or checkpointed by an import:
    a database file with no write-ahead log beside it is read where it is, opened
    read-only as immutable (no lock taken, nothing written; a file changed while it is
    read is refused, here or by the importer's check of its identity once read); one
    with a log, where rows may still live, is read from a private copy of the two
    (its bytes `data`, when given, are written to such a copy)."""
    in_place = data is None and not wal_file(path).is_file()
    with contextlib.ExitStack() as stack:
        if in_place:
            before = identity(path.stat())
            target = f"{path.resolve().as_uri()}?mode=ro&immutable=1"
        else:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="benchledger-orch-"))
            copy = Path(tmp) / "orchestrator.sqlite"
            if data is None:
                shutil.copyfile(path, copy)
            else:
                copy.write_bytes(data)
            if wal_file(path).is_file():
                shutil.copyfile(wal_file(path), wal_file(copy))
            target = str(copy)
        try:
            conn = sqlite3.connect(target, uri=in_place)
        except sqlite3.Error as e:
            raise InputFormatError(str(path), f"cannot open the SQLite database: {e}") from None
        stack.callback(conn.close)
        bound(conn)
        try:
            yield from _database_units(path, conn)
        except sqlite3.Error as e:
            if in_place and identity(path.stat()) != before:
                raise InputFormatError(
                    str(path), "changed while it was being imported; nothing was recorded"
                ) from None
            raise InputFormatError(str(path), f"unreadable SQLite database: {e}") from None
        except UnicodeDecodeError as e:
            raise InputFormatError(
                str(path), f"the database holds text that is not UTF-8 ({e.reason})"
            ) from None


def _database_units(path: Path, conn: sqlite3.Connection) -> Iterator[Unit]:
    """`_sqlite_units` of an open database."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "benchmark_runs" not in tables:
        raise InputFormatError(str(path), "no benchmark_runs table: not an orchestrator database")
    if "run_groups" in tables:
        query = Query("run_groups", "run_group_id")
        with _values(path, conn, query, 0):
            groups = conn.execute(query.sql())
        done = 0
        while True:
            with _values(path, conn, query, done):
                group_batch = _dicts(groups, ROW_BATCH)
            if not group_batch:
                break
            done += len(group_batch)
            yield from group_batch
    query = Query("benchmark_runs", "run_id")
    with _values(path, conn, query, 0):
        cursor = conn.execute(query.sql())
    names = tuple(d[0] for d in cursor.description)
    run_id = names.index("run_id") if "run_id" in names else None
    trajectories = "benchmark_run_trajectories" in tables
    done = 0
    while True:
        with _values(path, conn, query, done):
            rows = cursor.fetchmany(ROW_BATCH)
        if not rows:
            break
        done += len(rows)
        ids = [None if run_id is None else r[run_id] for r in rows]
        if not trajectories:
            yield from ((names, r, None, None) for r in rows)
            continue
        marks = ", ".join("?" * len(ids))
        turns = Query(
            "benchmark_run_trajectories",
            "run_id, trajectory_file, turn_index",
            f"run_id IN ({marks})",
            ids,
        )
        with _values(path, conn, turns, 0):
            found = conn.execute(turns.sql(), ids)
            turn_names = tuple(d[0] for d in found.description)
            turn_rows = found.fetchall()
        by_run: dict[Any, list[tuple[Any, ...]]] = {}
        at = len(turn_names) - 1 - turn_names[::-1].index("run_id")  # its last
        for t in turn_rows:
            by_run.setdefault(t[at], []).append(t)
        yield from (
            (names, r, turn_names, by_run.get(i, [])) for r, i in zip(rows, ids, strict=True)
        )


@contextlib.contextmanager
def _values(path: Path, conn: sqlite3.Connection, query: Query, start: int) -> Iterator[None]:
    """Reading `query` from its row `start`: a value past the value-size limit is refused
    by table, row and column."""
    try:
        yield
    except sqlite3.DataError as e:
        if "too big" not in str(e):
            raise
        raise too_big(str(path), conn, query, start) from None


def _dicts(cursor: sqlite3.Cursor, size: int | None = None) -> list[dict[str, Any]]:
    """The next `size` rows of a query (all of them if None) as dicts by column: built
    from plain tuples, twice as fast as from `sqlite3.Row`."""
    names = [d[0] for d in cursor.description]
    rows = cursor.fetchall() if size is None else cursor.fetchmany(size)
    return [dict(zip(names, row, strict=True)) for row in rows]


# --- latest/ quarantine/ baselines/ rows --------------------------------------------------


def index_file(path: Path) -> Path | None:
    """The latest/index.json a row file is listed in, if the row sits in a results root."""
    if path.parent.name not in ROW_DIRS:
        return None
    index = path.parent.parent / "latest" / "index.json"
    return index if index.is_file() else None


def parse_row_file(path: Path, doc: dict[str, Any]) -> Iterator[Parsed]:
    record = read_row(str(path), doc)
    index = index_file(path)
    if index is not None:
        _check_against_index(path, doc, _stated_status(doc, record), index)
    if record is not None:
        yield record


def _check_against_index(path: Path, row: dict[str, Any], row_status: Any, index: Path) -> None:
    """An index entry for this run_id must state the row's status and score.

    The row's status is compared after the orchestrator's own nonzero-return-code
    repair (a success with a nonzero exit is a failure), since the index is written
    from repaired rows: index `failed` vs row `succeeded` with return code 1 agree.
    """
    doc = load_json(index)
    if not isinstance(doc, dict):
        raise InputFormatError(str(index), "expected a JSON object")
    for section in ("latest", "latest_by_signature", "latest_by_comparison_signature"):
        entries = doc.get(section, {})
        if not isinstance(entries, dict):
            raise InputFormatError(str(index), "must be an object", field=section)
        for key, entry in entries.items():
            if not isinstance(entry, dict) or entry.get("run_id") != row.get("run_id"):
                continue
            where = f"{section}.{key}"
            if "status" in entry and entry["status"] != row_status:
                raise InputFormatError(
                    str(path),
                    f"latest/index.json ({where}) says run '{row.get('run_id')}' is "
                    f"{entry['status']!r}, this row says {row_status!r}",
                    field="status",
                )
            if "score" in entry and not _same_score(entry["score"], row.get("score")):
                raise InputFormatError(
                    str(path),
                    f"latest/index.json ({where}) gives run '{row.get('run_id')}' score "
                    f"{entry['score']!r}, this row {row.get('score')!r}",
                    field="score",
                )


def _stated_status(row: dict[str, Any], record: Parsed | None) -> Any:
    """The row's status as the orchestrator states it once its own repairs have run."""
    status = row.get("status")
    if status == "succeeded" and isinstance(record, RunRecord):
        return record.header.status.value
    return status


def _same_score(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    if not isinstance(a, int | float) or not isinstance(b, int | float):
        return False
    return a == b or (math.isnan(a) and math.isnan(b))


# --- viewer_data.json and comparisons ----------------------------------------------------


def parse_viewer(path: Path, doc: dict[str, Any]) -> Iterator[Parsed]:
    """viewer_data.json `run_groups` and `runs` (the database rows, JSON columns
    decoded); the summaries and latest_scores are derived from the same rows and add
    no facts."""
    runs = doc.get("runs")
    if not isinstance(runs, list):
        raise InputFormatError(str(path), "must be an array of runs", field="runs")
    groups = doc.get("run_groups", [])
    if not isinstance(groups, list):
        raise InputFormatError(str(path), "must be an array of run groups", field="run_groups")
    for i, group in enumerate(groups):
        yield read_group(str(path), group, f"run_groups[{i}].")
    yield from _records(str(path), runs, "runs", "viewer")


def parse_comparison(path: Path, doc: dict[str, Any]) -> Iterator[Parsed]:
    """compare-<id>.json: both sides' runs; every compare run has agent `compare`."""
    if not isinstance(doc.get("comparison_id"), str):
        raise InputFormatError(str(path), "must be a string", field="comparison_id")
    for side in ("a", "b"):
        block = doc.get(side)
        if not isinstance(block, dict) or not isinstance(block.get("runs"), list):
            raise InputFormatError(str(path), "must be an object with a runs array", field=side)
        tag = {"agent": "compare", "comparison_id": doc["comparison_id"]}
        runs = [{**tag, **r} if isinstance(r, dict) else r for r in block["runs"]]
        yield from _records(str(path), runs, f"{side}.runs", "comparison")
