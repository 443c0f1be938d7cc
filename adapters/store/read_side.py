"""Are the read models current? Answered with plain sqlite3, no event classes loaded."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from benchledger.adapters.store.ledger_file import EVENT_TABLE, LedgerFileError
from benchledger.projections.versions import READ_MODELS, STATE_TABLE


class ReadModelsBehindError(LedgerFileError):
    pass


@dataclass(frozen=True)
class Lag:
    head: int  # the event log's last position
    position: int  # every read model is folded up to here
    outdated: tuple[str, ...] = ()  # read models this code must rebuild (version or tables)

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
    return Lag(head=head, position=min(positions), outdated=outdated)


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
