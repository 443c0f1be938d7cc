"""Signed checkpoints: a statement of (ledger id, position, head hash, time), kept outside.

An Ed25519 key signs the statement; the statement carries its public key, so anyone
can check the signature, and the key's fingerprint, which its owner publishes to say
which statements are theirs. A ledger extends a checkpoint when it is the same ledger
(same id: the chain hash of its first event), still holds the checkpoint's position,
and its chain hash there is the one signed: a past rewritten with a recomputed chain,
or a tail removed past the checkpoint, no longer does.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from datetime import datetime
from pathlib import Path
from typing import Literal

import pydantic
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from benchledger.adapters.store.verify import Verification
from benchledger.domain.errors import LedgerError

KEY_ENV = "BENCHLEDGER_SIGNING_KEY"
FORMAT = "benchledger-checkpoint/1"
MAX_BYTES = 64 * 1024  # a statement is a few hundred bytes
MAX_KEY_BYTES = 16 * 1024


class CheckpointError(LedgerError):
    """A key or statement that cannot be used: missing, unreadable, malformed, exposed."""


class Statement(pydantic.BaseModel):
    """The JSON a checkpoint writes; `signature` signs every other field but the
    fingerprint (which is the SHA-256 of the public key)."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    format: Literal["benchledger-checkpoint/1"]
    ledger_id: str = pydantic.Field(pattern=r"^[0-9a-f]{64}$")
    position: int = pydantic.Field(ge=1)
    head_sha256: str = pydantic.Field(pattern=r"^[0-9a-f]{64}$")
    signed_at: datetime
    public_key: str
    key_fingerprint: str
    signature: str

    def signed_bytes(self) -> bytes:
        return payload(
            self.ledger_id, self.position, self.head_sha256, self.signed_at, self.public_key
        )


def payload(
    ledger_id: str, position: int, head_sha256: str, signed_at: datetime, public_key: str
) -> bytes:
    """The exact bytes signed: canonical JSON of what the statement asserts."""
    fields = {
        "format": FORMAT,
        "ledger_id": ledger_id,
        "position": position,
        "head_sha256": head_sha256,
        "signed_at": signed_at.isoformat(),
        "public_key": public_key,
    }
    return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()


def fingerprint(public_key: str) -> str:
    """`sha256:` and the hex SHA-256 of the raw 32-byte public key."""
    return "sha256:" + hashlib.sha256(base64.b64decode(public_key)).hexdigest()


def _public_text(key: Ed25519PrivateKey) -> str:
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode()


def generate_key(out: Path) -> str:
    """Write a new private key to `out` (mode 0600, never replacing a file); its fingerprint."""
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    try:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise CheckpointError(f"{out} exists: a signing key is never replaced") from None
    except OSError as e:
        raise CheckpointError(f"cannot write {out}: {e.strerror or e}") from None
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    return fingerprint(_public_text(key))


def load_key(path: Path) -> Ed25519PrivateKey:
    """The private key at `path`; refused when others may read it or it is not one."""
    try:
        info = path.stat()
    except OSError as e:
        raise CheckpointError(f"signing key {path}: {e.strerror or e}") from None
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_KEY_BYTES:
        raise CheckpointError(f"signing key {path}: not a key file")
    if info.st_mode & 0o077:
        raise CheckpointError(
            f"signing key {path}: readable by others (mode {stat.S_IMODE(info.st_mode):04o}); "
            f"`chmod 600 {path}` first"
        )
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (ValueError, TypeError) as e:
        raise CheckpointError(f"signing key {path}: not an unencrypted PEM key ({e})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise CheckpointError(f"signing key {path}: not an Ed25519 key")
    return key


def sign(
    key: Ed25519PrivateKey, ledger_id: str, position: int, head_sha256: str, signed_at: datetime
) -> Statement:
    public = _public_text(key)
    signature = key.sign(payload(ledger_id, position, head_sha256, signed_at, public))
    return Statement(
        format=FORMAT,
        ledger_id=ledger_id,
        position=position,
        head_sha256=head_sha256,
        signed_at=signed_at,
        public_key=public,
        key_fingerprint=fingerprint(public),
        signature=base64.b64encode(signature).decode(),
    )


def to_json(statement: Statement) -> str:
    return statement.model_dump_json(indent=2) + "\n"


def read_statement(path: Path) -> Statement:
    """A statement file, checked for shape (not yet for its signature)."""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise CheckpointError(f"checkpoint {path}: {e.strerror or e}") from None
    if len(data) > MAX_BYTES:
        raise CheckpointError(f"checkpoint {path}: larger than {MAX_BYTES} bytes, not a statement")
    try:
        return Statement.model_validate_json(data)
    except pydantic.ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(the file)"
        raise CheckpointError(f"checkpoint {path}: field '{where}': {first['msg']}") from None


def check(statement: Statement, result: Verification) -> str | None:
    """Why the verified ledger does not extend `statement`; None when it does.
    `result` must hold the chain hash at the statement's position (`heads`)."""
    try:
        public = Ed25519PublicKey.from_public_bytes(base64.b64decode(statement.public_key))
        public.verify(base64.b64decode(statement.signature), statement.signed_bytes())
    except (InvalidSignature, ValueError):
        return "its signature does not verify: the statement was altered or not signed"
    if fingerprint(statement.public_key) != statement.key_fingerprint:
        return "its key fingerprint is not that of its public key"
    if statement.ledger_id != result.ledger_id:
        return f"it is a checkpoint of another ledger (ledger id {statement.ledger_id})"
    if statement.position > result.head_position:
        return (
            f"it signs position {statement.position} but the ledger ends at position "
            f"{result.head_position}: events were removed from its end"
        )
    held = result.heads.get(statement.position)
    if held is None:
        return f"the ledger no longer holds an event at position {statement.position}"
    if held != statement.head_sha256:
        return (
            f"the chain hash at position {statement.position} is {held}, not the one signed: "
            "the ledger's past was rewritten"
        )
    return None
