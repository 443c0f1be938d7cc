"""Recompute the hash chain from the event store and compare it with the recorded one."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from uuid import UUID

from benchledger.adapters.store.projection_runner import NotificationLog
from benchledger.projections.chain import GENESIS, event_bytes, link

PAGE = 1000


@dataclass(frozen=True)
class Verification:
    """What verify found. `head_sha256` is the chain hash at `head_position`.

    `head_position` is the event store's last position; `checked` events matched
    the recorded chain, and the `unchained` ones after them (not folded into the
    chain yet, e.g. appended by another process) were hashed from the store.
    """

    ok: bool
    checked: int
    head_position: int
    head_sha256: str
    unchained: int = 0
    bad_position: int | None = None
    problem: str | None = None


def _recorded_chain(conn: sqlite3.Connection) -> Iterator[tuple[int, str, str]]:
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chain'").fetchone() is None:
        return  # read models never built here: nothing is chained yet
    yield from conn.execute(
        "SELECT position, event_sha256, chain_sha256 FROM chain ORDER BY position"
    )


def verify(recorder: NotificationLog, conn: sqlite3.Connection) -> Verification:
    chain = _recorded_chain(conn)
    head, head_position, checked, unchained = GENESIS, 0, 0, 0

    def failed(position: int, problem: str) -> Verification:
        return Verification(
            False, checked, head_position, head, bad_position=position, problem=problem
        )

    after = 0
    while True:
        notes = recorder.select_notifications(after, PAGE, inclusive_of_start=False)
        if not notes:
            break
        for note in notes:
            digest = hashlib.sha256(
                event_bytes(
                    note.id,
                    UUID(str(note.originator_id)),
                    note.originator_version,
                    note.topic,
                    note.state,
                )
            ).hexdigest()
            expected = link(head, digest)
            row = None if unchained else next(chain, None)
            if row is None:
                unchained += 1
                head, head_position = expected, note.id
                continue
            position, event_sha, chain_sha = row
            if position != note.id:
                return failed(
                    min(position, note.id),
                    f"the chain records position {position} where the store has "
                    f"position {note.id}: an event was removed or inserted",
                )
            if event_sha != digest:
                return failed(note.id, "the stored event does not match the hash recorded for it")
            if chain_sha != expected:
                return failed(
                    note.id, "the recorded chain hash does not follow from the events before it"
                )
            head, head_position, checked = expected, note.id, checked + 1
        after = notes[-1].id
    extra = None if unchained else next(chain, None)
    if extra is not None:
        return failed(extra[0], "the chain records an event the store no longer has")
    return Verification(True, checked, head_position, head, unchained=unchained)
