"""A frozen, self-contained snapshot of a ledger: its read models and events up to one position.

What `publish` writes for others to browse or download: the read models at a position,
the stored events up to it (so `verify` can recompute the hash chain) and a one-row
`snapshot` table stamping that position and its chain hash. The read models are read
through SQLite's backup API, so whatever still sits in the ledger's -wal file is in it
(a file copy would lose that). They are then copied table by table into a fresh file,
so no free page keeps a row a rebuild or a deletion left behind, and nothing but the read
models, the events and the stamp is in it: no event-store internals, no path of the
machine that published it. The file is written beside its target and renamed at the end,
so a failed publish leaves nothing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import tempfile
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

from benchledger.adapters.store.chained import CHAIN_SUFFIX, ChainedLog, sqlite_chain_schema
from benchledger.adapters.store.ledger_file import (
    EVENT_TABLE,
    SNAPSHOT_TABLE,
    Kind,
    LedgerFileError,
    NotALedgerError,
    inspect,
)
from benchledger.adapters.store.read_side import latest_checkpoint
from benchledger.adapters.store.verify import Verification
from benchledger.adapters.store.verify import verify as verify_chain
from benchledger.projections.chain import GENESIS
from benchledger.projections.store import PAGE_SIZE
from benchledger.projections.versions import READ_MODELS, STATE_TABLE

PAGE = 1000
# The event store's table as eventsourcing's SQLite recorder makes it; its rowid is the
# notification id (the ledger position), so it is always copied explicitly.
EVENTS_SCHEMA = (
    f"CREATE TABLE {EVENT_TABLE} (originator_id TEXT, originator_version INTEGER, "
    "topic TEXT, state BLOB, PRIMARY KEY (originator_id, originator_version))"
)
STAMP_SCHEMA = (
    f"CREATE TABLE [{SNAPSHOT_TABLE}] (position INTEGER NOT NULL, head_sha256 TEXT NOT NULL, "
    "events INTEGER NOT NULL, published_at TEXT NOT NULL, checkpoint TEXT)"
)
READ_MODEL_TABLES = (STATE_TABLE, *(t for _, tables in READ_MODELS.values() for t in tables))


class SnapshotError(LedgerFileError):
    """A snapshot cannot be written there, or its read models are not at one position."""


@dataclass(frozen=True)
class Stamp:
    """Where a snapshot stops: its last position, the chain hash there, its event count,
    and the latest checkpoint recorded up to there (None: no checkpoint was made)."""

    position: int
    head_sha256: str
    events: int
    published_at: str
    checkpoint: dict[str, Any] | None = None


def read_stamp(conn: sqlite3.Connection) -> Stamp | None:
    """The stamp of the snapshot `conn` reads; None for a ledger that is not one."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (SNAPSHOT_TABLE,)).fetchone():
        columns = {r[1] for r in conn.execute(f"PRAGMA table_info([{SNAPSHOT_TABLE}])")}
        checkpoint = "checkpoint" if "checkpoint" in columns else "NULL"
        row = conn.execute(
            f"SELECT position, head_sha256, events, published_at, {checkpoint} "
            f"FROM [{SNAPSHOT_TABLE}]"
        ).fetchone()
        if row is not None:
            position, head, events, published_at, checkpoint_json = row
            checkpoint_of = json.loads(checkpoint_json) if checkpoint_json else None
            return Stamp(position, head, events, published_at, checkpoint_of)
    return None


def check_target(out: Path, *, replace: bool) -> None:
    """Refuse a target that is not a missing file or (with `replace`) an older snapshot."""
    kind = inspect(out)
    if kind is Kind.MISSING:
        parent = out.parent if str(out.parent) else Path(".")
        if not parent.is_dir():
            raise SnapshotError(f"directory {parent} does not exist (create it first)")
        return
    if kind is Kind.SNAPSHOT:
        if not replace:
            raise SnapshotError(f"{out} is a snapshot already: --force replaces it")
        return
    if kind is Kind.LEDGER:
        raise NotALedgerError(
            f"{out} is a ledger with its own events, not a snapshot: publish never replaces "
            "a ledger (choose another path); it was left untouched"
        )
    raise NotALedgerError(
        f"{out} exists and is not a benchledger snapshot ({kind.value}); it was left untouched"
    )


def write(
    models: sqlite3.Connection,
    recorder: ChainedLog,
    out: Path,
    *,
    published_at: str,
    replace: bool = False,
) -> Stamp:
    """Write the read models `models` reads, and the events up to their position, to `out`."""
    check_target(out, replace=replace)
    parent = out.parent if str(out.parent) else Path(".")
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.", dir=parent) as work:
        stage_path, written = Path(work) / "stage.db", Path(work) / "snapshot.db"
        stage = sqlite3.connect(stage_path)
        try:
            models.backup(stage)
            position, head = _position_and_head(stage, out)
        finally:
            stage.close()
        stamp = _copy(stage_path, recorder, written, position, head, published_at)
        check_target(out, replace=replace)  # nothing appeared there meanwhile
        os.replace(written, out)
    _sync_directory(parent)
    return stamp


def _position_and_head(stage: sqlite3.Connection, out: Path) -> tuple[int, str]:
    states = dict(stage.execute(f"SELECT projection, position FROM [{STATE_TABLE}]").fetchall())
    positions = {states.get(name) for name in READ_MODELS}
    if len(positions) != 1 or None in positions:
        raise SnapshotError(
            f"cannot publish {out}: the read models are not all at one position ({states})"
        )
    position = int(positions.pop() or 0)
    last = stage.execute(
        "SELECT position, chain_sha256 FROM chain ORDER BY position DESC LIMIT 1"
    ).fetchone()
    if (last[0] if last else 0) != position:
        raise SnapshotError(f"cannot publish {out}: the chain does not end at position {position}")
    return position, last[1] if last else GENESIS


def _copy(
    stage_path: Path,
    recorder: ChainedLog,
    written: Path,
    position: int,
    head: str,
    published_at: str,
) -> Stamp:
    conn = sqlite3.connect(written, isolation_level=None)
    try:
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        conn.execute("ATTACH DATABASE ? AS stage", (str(stage_path),))
        conn.execute("BEGIN")
        for table in READ_MODEL_TABLES:
            (sql,) = conn.execute(
                "SELECT sql FROM stage.sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
            conn.execute(sql)
            # Its columns but those SQLite works out itself (generated: hidden 2 or 3).
            columns = ", ".join(
                f"[{row[1]}]"
                for row in conn.execute(f"PRAGMA stage.table_xinfo([{table}])")
                if row[6] == 0
            )
            conn.execute(
                f"INSERT INTO main.[{table}] ({columns}) SELECT {columns} FROM stage.[{table}]"
            )
        indexes = conn.execute(
            "SELECT sql FROM stage.sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
            f"AND tbl_name IN ({','.join('?' * len(READ_MODEL_TABLES))})",
            READ_MODEL_TABLES,
        ).fetchall()
        for (sql,) in indexes:
            conn.execute(sql)
        conn.execute(EVENTS_SCHEMA)
        events = 0
        for rows in _event_pages(recorder, position):
            conn.executemany(
                f"INSERT INTO main.{EVENT_TABLE} "
                "(rowid, originator_id, originator_version, topic, state) VALUES (?, ?, ?, ?, ?)",
                rows,
            )
            events += len(rows)
        chain = EVENT_TABLE + CHAIN_SUFFIX
        conn.execute(sqlite_chain_schema(chain))
        after = 0
        while page := recorder.select_chain(after, PAGE, position):
            conn.executemany(f"INSERT INTO main.{chain} VALUES (?, ?, ?)", page)
            after = page[-1][0]
        stamp = Stamp(position, head, events, published_at, latest_checkpoint(conn, position))
        conn.execute(STAMP_SCHEMA)
        conn.execute(
            f"INSERT INTO main.[{SNAPSHOT_TABLE}] VALUES (?, ?, ?, ?, ?)",
            (
                stamp.position,
                stamp.head_sha256,
                stamp.events,
                stamp.published_at,
                json.dumps(stamp.checkpoint) if stamp.checkpoint else None,
            ),
        )
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE stage")
    finally:
        conn.close()
    with open(written, "rb") as f:
        os.fsync(f.fileno())
    return stamp


def _event_pages(
    recorder: ChainedLog, position: int
) -> Iterator[list[tuple[int, str, int, str, bytes]]]:
    after = 0
    while after < position:
        notes = recorder.select_notifications(after, PAGE, stop=position, inclusive_of_start=False)
        rows = [
            (n.id, UUID(str(n.originator_id)).hex, n.originator_version, n.topic, n.state)
            for n in notes
            if n.id <= position
        ]
        if not rows:
            return
        yield rows
        after = rows[-1][0]


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def verify(
    recorder: ChainedLog, conn: sqlite3.Connection, at: Collection[int] = ()
) -> Verification:
    """`verify.verify`, and what a snapshot must be besides: its stamp and every read
    model at the chain's head."""
    result = verify_chain(recorder, conn, at)
    stamp = read_stamp(conn)
    if not result.ok or stamp is None:
        return result

    def failed(problem: str) -> Verification:
        bad = result.head_position
        return dataclasses.replace(result, ok=False, bad_position=bad, problem=problem)

    if (stamp.position, stamp.head_sha256) != (result.head_position, result.head_sha256):
        return failed(
            f"the snapshot is stamped position {stamp.position}, hash {stamp.head_sha256}, "
            "which is not the head of its events"
        )
    behind = conn.execute(
        f"SELECT group_concat(projection, ', ') FROM [{STATE_TABLE}] WHERE position != ?",
        (stamp.position,),
    ).fetchone()[0]
    if behind:
        return failed(f"read models not at the snapshot's position: {behind}")
    return result
