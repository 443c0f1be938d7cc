"""Recompute the hash chain from the event store and compare it with the store's own chain.

The chain the writer kept beside the events is the authority; verify never writes one.
The read models witness what the store held when they were folded: their copy of the
chain must agree with the store's, and a read model or tracking position past the
store's last event means events were removed from its end.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from uuid import UUID

from eventsourcing.persistence import Notification

from benchledger.adapters.store.chained import (
    PAGE,
    UPGRADE_COMMAND,
    ChainedLog,
    Entry,
    MissingChainError,
)
from benchledger.projections.chain import GENESIS, event_bytes, link
from benchledger.projections.versions import STATE_TABLE


@dataclass(frozen=True)
class Verification:
    """What verify found. `head_sha256` is the chain hash at `head_position`.

    `checked` events matched the store's chain up to `head_position`, the store's last
    event; `ledger_id` is the chain hash of its first event (None for an empty ledger).
    `heads` holds the chain hash at each position asked for (checkpoints' positions).
    """

    ok: bool
    checked: int
    head_position: int
    head_sha256: str
    ledger_id: str | None = None
    bad_position: int | None = None
    problem: str | None = None
    heads: dict[int, str] = field(default_factory=dict, compare=False, repr=False)


def _pages(log: ChainedLog, stop: int) -> Iterator[Entry]:
    after = 0
    while True:
        page = log.select_chain(after, PAGE, stop)
        if not page:
            return
        yield from page
        after = page[-1][0]


def _witnessed(conn: sqlite3.Connection, after: int) -> Iterator[tuple[int, str]]:
    """The read models' copy of the chain past `after`, in position order."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chain'").fetchone() is None:
        return
    yield from conn.execute(
        "SELECT position, chain_sha256 FROM chain WHERE position > ? ORDER BY position", (after,)
    )


def _tracked(conn: sqlite3.Connection) -> int:
    """The furthest position any read model was folded to."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (STATE_TABLE,)).fetchone():
        row = conn.execute(f"SELECT max(position) FROM [{STATE_TABLE}]").fetchone()
        return int(row[0] or 0)
    return 0


def _sha256(n: Notification) -> str:
    stream = UUID(str(n.originator_id))
    return hashlib.sha256(
        event_bytes(n.id, stream, n.originator_version, n.topic, n.state)
    ).hexdigest()


class _Check:
    """One pass over the store's events, its chain and the read models' witness."""

    def __init__(self, log: ChainedLog, conn: sqlite3.Connection, at: Collection[int]) -> None:
        self.log, self.conn, self.at = log, conn, at
        self.head, self.position, self.checked = GENESIS, 0, 0
        self.ledger_id: str | None = None
        self.heads: dict[int, str] = {}

    def failed(self, position: int, problem: str) -> Verification:
        return Verification(
            False,
            self.checked,
            self.position,
            self.head,
            self.ledger_id,
            bad_position=position,
            problem=problem,
            heads=self.heads,
        )

    def passed(self) -> Verification:
        return Verification(
            True, self.checked, self.position, self.head, self.ledger_id, heads=self.heads
        )

    def run(self) -> Verification:
        stop = int(self.log.max_notification_id() or 0)
        try:
            chain = _pages(self.log, stop)
            witness = _witnessed(self.conn, 0)
            seen = next(witness, None)
            after = 0
            while after < stop:
                notes = self.log.select_notifications(
                    after, PAGE, stop=stop, inclusive_of_start=False
                )
                if not notes:
                    break
                for note in notes:
                    if (problem := self._step(note, next(chain, None), seen)) is not None:
                        return problem
                    while seen is not None and seen[0] <= note.id:
                        seen = next(witness, None)
                after = notes[-1].id
            extra = next(chain, None)
        except MissingChainError as e:
            return self.failed(1, f"{e}: {self._unchained_hint()}")
        if extra is not None:
            return self.failed(extra[0], "the chain records an event the store no longer has")
        return self._after_head(stop, seen)

    def _step(
        self, note: Notification, entry: Entry | None, seen: tuple[int, str] | None
    ) -> Verification | None:
        position = note.id
        if seen is not None and seen[0] < position:
            return self.failed(
                seen[0],
                "the read models saw an event at this position that the store no longer has",
            )
        digest = _sha256(note)
        expected = link(self.head, digest)
        if entry is None:
            hint = self._unchained_hint() if self.checked == 0 else "appended past the writer"
            return self.failed(position, f"the event has no entry in the store's chain ({hint})")
        if entry[0] < position:
            return self.failed(
                entry[0],
                f"the chain records position {entry[0]} where the store has none: "
                "an event was removed",
            )
        if entry[0] > position:
            return self.failed(
                position,
                "the event has no entry in the store's chain (inserted, or its entry deleted)",
            )
        if entry[1] != digest:
            return self.failed(position, "the stored event does not match the hash recorded for it")
        if entry[2] != expected:
            return self.failed(
                position, "the recorded chain hash does not follow from the events before it"
            )
        if seen is not None and seen[0] == position and seen[1] != expected:
            return self.failed(
                position,
                "the read models' copy of the chain records another hash here: "
                "the store's events and chain were rewritten",
            )
        self.head, self.position, self.checked = expected, position, self.checked + 1
        if self.ledger_id is None:
            self.ledger_id = expected
        if position in self.at:
            self.heads[position] = expected
        return None

    def _after_head(self, stop: int, seen: tuple[int, str] | None) -> Verification:
        """Nothing past the store's head but what a writer appended meanwhile."""
        later = self.log.select_chain(stop, 1)
        if later and not self.log.select_notifications(later[0][0], 1, stop=later[0][0]):
            return self.failed(later[0][0], "the chain records an event the store no longer has")
        witnessed = max(seen[0] if seen else 0, _tracked(self.conn))
        if witnessed > stop and int(self.log.max_notification_id() or 0) < witnessed:
            return self.failed(
                self.position + 1,
                f"the read models were folded up to position {witnessed} but the store ends "
                f"at position {self.position}: events were removed from its end",
            )
        return self.passed()

    def _unchained_hint(self) -> str:
        return (
            "a ledger written before its writer kept the chain needs "
            f"`{UPGRADE_COMMAND}` once; otherwise the chain was removed"
        )


def verify(log: ChainedLog, conn: sqlite3.Connection, at: Collection[int] = ()) -> Verification:
    """Check every stored event against the store's chain and the read models' witness;
    `at`: positions whose chain hash to report (in `heads`)."""
    return _Check(log, conn, at).run()
