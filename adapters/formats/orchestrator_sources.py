"""The ElizaOS orchestrator's files, each read into the rows `orchestrator_rows` turns
into records: orchestrator.sqlite (any vintage), latest/quarantine/baselines rows
(checked against latest/index.json when it is there), viewer_data.json and
comparisons/compare-<id>.json.
"""

from __future__ import annotations

import math
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchledger.adapters.formats.common import loads
from benchledger.adapters.formats.common import read_json as load_json
from benchledger.adapters.formats.orchestrator_rows import GROUPS, Kind, read_group, read_row
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import GroupRecord, RunRecord, SkipRecord, Turn

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
JSON_COLUMNS = ("metrics", "extra_config", *GROUPS)
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
    for raw, turns in _sqlite_rows(path, data):
        if turns is None:  # a run_groups row
            yield read_group(name, raw, "run_groups.")
            continue
        record = read_row(name, _row_from_columns(name, raw), "benchmark_runs.", "database")
        if isinstance(record, RunRecord) and turns:
            record = RunRecord(
                header=record.header,
                cells=record.cells,
                supplement=record.supplement,
                turns=tuple(_turn(name, t) for t in turns),
                group_key=record.group_key,
            )
        if record is not None:
            yield record


TURN_FIELDS = tuple(Turn.model_fields)


def _turn(path: str, raw: dict[str, Any]) -> Turn:
    try:
        return Turn.model_validate({k: raw[k] for k in TURN_FIELDS if k in raw}, strict=True)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        where = f"run '{raw.get('run_id')}': " if raw.get("run_id") else ""
        field = f"benchmark_run_trajectories.{loc}"
        raise InputFormatError(path, where + first["msg"], field=field) from None


def _sqlite_rows(
    path: Path, data: bytes | None
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]] | None]]:
    """The rows of run_groups (with None for turns), then those of benchmark_runs, by
    run_id, each with its trajectory rows (by file and turn), from a private copy of
    the database (its bytes `data`, else its file) with its write-ahead log, where rows
    may still live: the orchestrator's own files are never locked or checkpointed by an
    import."""
    with tempfile.TemporaryDirectory(prefix="benchledger-orch-") as tmp:
        copy = Path(tmp) / "orchestrator.sqlite"
        if data is None:
            shutil.copyfile(path, copy)
        else:
            copy.write_bytes(data)
        if wal_file(path).is_file():
            shutil.copyfile(wal_file(path), wal_file(copy))
        try:
            conn = sqlite3.connect(copy)
        except sqlite3.Error as e:
            raise InputFormatError(str(path), f"cannot open the SQLite database: {e}") from None
        try:
            conn.row_factory = sqlite3.Row
            tables = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            if "benchmark_runs" not in tables:
                raise InputFormatError(
                    str(path), "no benchmark_runs table: not an orchestrator database"
                )
            if "run_groups" in tables:
                groups = conn.execute("SELECT * FROM run_groups ORDER BY run_group_id")
                while group_batch := groups.fetchmany(ROW_BATCH):
                    yield from ((dict(r), None) for r in group_batch)
            cursor = conn.execute("SELECT * FROM benchmark_runs ORDER BY run_id")
            trajectories = "benchmark_run_trajectories" in tables
            while rows := _dicts(cursor, ROW_BATCH):
                turns: dict[Any, list[dict[str, Any]]] = {}
                if trajectories:
                    ids = [r.get("run_id") for r in rows]
                    marks = ", ".join("?" * len(ids))
                    for t in _dicts(
                        conn.execute(
                            f"SELECT * FROM benchmark_run_trajectories WHERE run_id IN ({marks}) "
                            "ORDER BY run_id, trajectory_file, turn_index",
                            ids,
                        )
                    ):
                        turns.setdefault(t["run_id"], []).append(t)
                yield from ((r, turns.get(r.get("run_id"), [])) for r in rows)
        except sqlite3.Error as e:
            raise InputFormatError(str(path), f"unreadable SQLite database: {e}") from None
        except UnicodeDecodeError as e:
            raise InputFormatError(
                str(path), f"the database holds text that is not UTF-8 ({e.reason})"
            ) from None
        finally:
            conn.close()


def _dicts(cursor: sqlite3.Cursor, size: int | None = None) -> list[dict[str, Any]]:
    """The next `size` rows of a query (all of them if None) as dicts by column: built
    from plain tuples, twice as fast as from `sqlite3.Row`."""
    cursor.row_factory = None
    names = [d[0] for d in cursor.description]
    rows = cursor.fetchall() if size is None else cursor.fetchmany(size)
    return [dict(zip(names, row, strict=True)) for row in rows]


def _row_from_columns(path: str, raw: dict[str, Any]) -> dict[str, Any]:
    """A benchmark_runs row in the shape the JSON sources use; absent columns stay absent."""
    row = {k: raw[k] for k in PLAIN_COLUMNS if k in raw}
    for real in ("score", "duration_seconds"):
        value = row.get(real)
        if isinstance(value, int) and not isinstance(value, bool):
            row[real] = float(value)  # a REAL column may hand back an integer
    if "higher_is_better" in raw:
        hib = raw["higher_is_better"]
        row["higher_is_better"] = bool(hib) if hib in (0, 1) else hib  # INTEGER 0/1/NULL
    for name in JSON_COLUMNS:
        column = f"{name}_json"
        text = raw.get(column)
        if text is None:
            continue
        if not isinstance(text, str):
            row[name] = text  # wrong type: validation names the field
            continue
        row[name] = loads(path, text, field=f"benchmark_runs.{column}")
    # Every other column the row holds (command, cwd, log paths, versions and commits,
    # artifacts, high-score reference, comparison_id, the denormalised telemetry...):
    # kept as stated, `*_json` columns decoded.
    rest: dict[str, Any] = {}
    for column, value in raw.items():
        if column in MAPPED_COLUMNS:
            continue
        if column.endswith("_json") and isinstance(value, str):
            value = loads(path, value, field=f"benchmark_runs.{column}")
            column = column.removesuffix("_json")
        rest[column] = value
    if isinstance(row.get("token_metrics"), dict):
        rest["token_metrics"] = row["token_metrics"]  # raw, as the column holds it
    row["source_columns"] = rest
    return row


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
