"""What the read models say, answered with plain sqlite3 and no event classes loaded: are
they current, and which checkpoint they hold a record of."""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchledger.adapters.store.ledger_file import EVENT_TABLE, LedgerFileError
from benchledger.projections.versions import READ_MODELS, STATE_TABLE

# `projections.store.REBUILD_SUFFIX`, without loading the writer: the names of a rebuild's
# tables until it swaps them in, left behind when it dies.
REBUILT_ASIDE = "__rebuild"


class ReadModelsBehindError(LedgerFileError):
    pass


@dataclass(frozen=True)
class Lag:
    head: int  # the event log's last position
    position: int  # every read model is folded up to here
    outdated: tuple[str, ...] = ()  # read models this code must rebuild (version or tables)
    leftovers: bool = False  # tables a rebuild made aside and never swapped in

    @property
    def current(self) -> bool:
        return not self.outdated and self.position >= self.head

    @property
    def behind(self) -> int:
        return max(self.head - self.position, 0)


def event_log_head(conn: sqlite3.Connection) -> int:
    row = conn.execute(f"SELECT max(rowid) FROM {EVENT_TABLE}").fetchone()
    return int(row[0] or 0)


def lag(conn: sqlite3.Connection, head: int) -> Lag:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    states: dict[str, tuple[int, int]] = {}
    if STATE_TABLE in tables:
        rows = conn.execute(f"SELECT projection, version, position FROM [{STATE_TABLE}]")
        states = {name: (version, position) for name, version, position in rows}
    outdated = tuple(
        name
        for name, (version, names) in READ_MODELS.items()
        if states.get(name, (None, 0))[0] != version or not set(names) <= tables
    )
    positions = [0 if name in outdated else states[name][1] for name in READ_MODELS]
    leftovers = any(name.endswith(REBUILT_ASIDE) for name in tables)
    return Lag(head=head, position=min(positions), outdated=outdated, leftovers=leftovers)


def behind_error(path: object, lag: Lag, *, remote: bool = False) -> ReadModelsBehindError:
    if lag.outdated:
        why = (
            f"the read models in {path} must be rebuilt for this version of benchledger "
            f"({', '.join(lag.outdated)}; {lag.head} events)"
        )
    else:
        why = (
            f"the read models in {path} are {lag.behind} events behind its event log "
            f"(position {lag.position} of {lag.head})"
        )
    catch_up = "--event-store URL --db COPY follow --polls 1" if remote else "--db COPY rebuild"
    return ReadModelsBehindError(
        f"{why}, and it is open read-only: copy the ledger to a writable place and run "
        f"`benchledger {catch_up}` there (or any command without --read-only), "
        "then read the copy"
    )


def rebuild_running(path: Path) -> bool:
    """Whether a process holds the rebuild lock of the ledger at `path` now (taken on its
    directory: `ReadModelStore.rebuild_lock`); its `__rebuild` tables are then its work."""
    try:
        descriptor = os.open(path.parent if str(path.parent) else Path("."), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)
    return False


# What a stamp says of a checkpoint: the recorded statement's fields, as JSON.
CHECKPOINT_FIELDS = (
    "ledger_id",
    "position",
    "head_sha256",
    "signed_at",
    "key_fingerprint",
    "signature",
)


def latest_checkpoint(models: sqlite3.Connection, position: int) -> dict[str, Any] | None:
    """The latest checkpoint the read models `models` hold a record of, up to `position`:
    what it signed, and where it was recorded. None when no checkpoint was made."""
    row = models.execute(
        "SELECT position, data FROM events WHERE type = 'CheckpointRecorded' AND position <= ? "
        "ORDER BY position DESC LIMIT 1",
        (position,),
    ).fetchone()
    if row is None:
        return None
    data = json.loads(row[1])
    return {**{k: data[k] for k in CHECKPOINT_FIELDS}, "recorded_at_position": row[0]}
