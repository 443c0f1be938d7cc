"""Recompute the hash chain from the event store and compare it with the recorded one."""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass
from uuid import UUID

from eventsourcing.persistence import ApplicationRecorder

from benchledger.projections.chain import GENESIS, event_bytes, link

PAGE = 1000


@dataclass(frozen=True)
class Verification:
    ok: bool
    checked: int
    head_position: int
    head_sha256: str
    unchained: int = 0
    bad_position: int | None = None
    problem: str | None = None


def verify(recorder: ApplicationRecorder, conn: sqlite3.Connection) -> Verification:
    chain = conn.execute("SELECT position, event_sha256, chain_sha256 FROM chain ORDER BY position")
    head, head_position, checked, unchained = GENESIS, 0, 0, 0
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
            row = chain.fetchone()
            if row is None:
                unchained += 1
                head = expected
                continue
            position, event_sha, chain_sha = row
            if position != note.id:
                missing = min(position, note.id)
                return Verification(
                    False,
                    checked,
                    head_position,
                    head,
                    bad_position=missing,
                    problem=f"the chain records position {position} where the store has "
                    f"position {note.id}: an event was removed or inserted",
                )
            if event_sha != digest:
                return Verification(
                    False,
                    checked,
                    head_position,
                    head,
                    bad_position=note.id,
                    problem="the stored event does not match the hash recorded for it",
                )
            if chain_sha != expected:
                return Verification(
                    False,
                    checked,
                    head_position,
                    head,
                    bad_position=note.id,
                    problem="the recorded chain hash does not follow from the events before it",
                )
            head, head_position, checked = expected, note.id, checked + 1
        after = notes[-1].id
    extra = chain.fetchone()
    if extra is not None:
        return Verification(
            False,
            checked,
            head_position,
            head,
            bad_position=extra[0],
            problem="the chain records an event the store no longer has",
        )
    return Verification(True, checked, head_position, head, unchained=unchained)
