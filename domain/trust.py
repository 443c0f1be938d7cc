"""What the ledger records about its own integrity: its chain's upgrade, its checkpoints."""

from __future__ import annotations

from datetime import datetime

from benchledger.domain.base import Event
from benchledger.domain.signatures import natural_id

# One stream each: the chain is upgraded at most once; checkpoints follow one another.
CHAIN_STREAM = natural_id("chain", "upgrade")
CHECKPOINT_STREAM = natural_id("chain", "checkpoints")


class ChainUpgraded(Event):
    """The events of a ledger written before its writer kept the chain were chained once,
    up to `position`, whose chain hash is `head_sha256`."""

    position: int
    head_sha256: str


class CheckpointRecorded(Event):
    """A signed statement of (ledger id, position, head hash, time) was made; the
    statement itself is kept outside the ledger."""

    ledger_id: str
    position: int
    head_sha256: str
    signed_at: datetime
    key_fingerprint: str
    signature: str


def chain_upgraded(position: int, head_sha256: str) -> ChainUpgraded:
    return ChainUpgraded(
        originator_id=CHAIN_STREAM, originator_version=1, position=position, head_sha256=head_sha256
    )
