"""`chain`: a running SHA-256 over every stored event, for tamper evidence."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any
from uuid import UUID

from benchledger.domain.errors import TamperError
from benchledger.projections import versions
from benchledger.projections.base import Change, Envelope, Projection, Table

GENESIS = "0" * 64
INSERT = "INSERT INTO [{chain}] (position, event_sha256, chain_sha256) VALUES (?, ?, ?)"


def event_bytes(position: int, stream: UUID, version: int, topic: str, state: bytes) -> bytes:
    """The canonical bytes of a stored event: where it sits, whose it is, what it says."""
    head = f"{position}\n{stream.hex}\n{version}\n{topic}\n".encode()
    return head + state


def event_sha256(envelope: Envelope) -> str:
    """The SHA-256 of `event_bytes` of a stored event, without joining them first."""
    e = envelope
    digest = hashlib.sha256(f"{e.position}\n{e.stream_hex}\n{e.version}\n{e.topic}\n".encode())
    digest.update(e.state)
    return digest.hexdigest()


def stored_sha256(position: int, stream: UUID, version: int, topic: str, state: bytes) -> str:
    """`event_sha256` of an event as the writer holds it, before any read model sees it."""
    digest = hashlib.sha256(f"{position}\n{stream.hex}\n{version}\n{topic}\n".encode())
    digest.update(state)
    return digest.hexdigest()


def link(previous: str, event_sha256: str) -> str:
    return hashlib.sha256(f"{previous}{event_sha256}".encode("ascii")).hexdigest()


class ChainProjection(Projection):
    name = "chain"
    version = versions.version(name)
    tables = (
        Table(
            "chain",
            {"position": int, "event_sha256": str, "chain_sha256": str},
            pk=("position",),
        ),
    )

    def __init__(self) -> None:
        self.head = GENESIS

    def prepare(self, read: Any, names: dict[str, str]) -> None:
        row = read(f"SELECT chain_sha256 FROM [{names['chain']}] ORDER BY position DESC LIMIT 1")
        self.head = row[0] if row else GENESIS

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        digest = event_sha256(envelope)
        self.head = link(self.head, digest)
        yield INSERT, (envelope.position, digest, self.head)

    def check_rebuilt(self, read: Any, live: dict[str, str], fresh: dict[str, str]) -> None:
        # A rebuild must never launder an edited event into a fresh, self-consistent chain.
        if read(f"SELECT 1 FROM sqlite_master WHERE name = '{live['chain']}'") is None:
            return
        row = read(
            f"SELECT min(old.position) FROM [{live['chain']}] AS old "
            f"LEFT JOIN [{fresh['chain']}] AS new USING (position) "
            "WHERE new.chain_sha256 IS NULL OR new.chain_sha256 != old.chain_sha256"
        )
        if row is not None and row[0] is not None:
            raise TamperError(
                f"the event log no longer matches the recorded chain at position {row[0]}; "
                "refusing to rebuild the chain over it (run `benchledger verify`)"
            )
