"""Checking a review package against the ledger as it is now."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from benchledger.adapters.publication.review import GENESIS, Scope
from benchledger.domain.errors import NotFoundError, TamperError
from benchledger.domain.signatures import sha256_hex

# What can change a reviewed number: a run's own events, its benchmark's registration,
# high-score reference and required agents, or a record of an incompatible agent (a
# quarantine row). Other skips, refusals, verdicts and reviews change no row.
INCOMPATIBLE = (
    "(e.type = 'BenchmarkSkipped' AND (json_extract(e.data, '$.provenance.status') = "
    "'incompatible' OR (json_extract(e.data, '$.provenance.status') IS NULL AND "
    "json_extract(e.data, '$.reason') IN ('incompatible', 'incompatible_agent'))))"
)
CHANGES = (
    "SELECT e.position, e.type, coalesce(r.benchmark, "
    "CASE WHEN e.type IN ('BenchmarkRegistered', 'HighScoreReferenced', "
    f"'RequiredAgentsDeclared') OR {INCOMPATIBLE} "
    "THEN json_extract(e.data, '$.benchmark') END) AS benchmark, r.run_id "
    "FROM events AS e LEFT JOIN runs AS r ON r.run_id = e.stream "
    "WHERE e.position > ? ORDER BY e.position"
)


def verify(conn: sqlite3.Connection, directory: Path) -> dict[str, Any]:
    """Match a package to its review, check the log still holds what it saw, list later changes."""
    path = directory / "manifest.json"
    if not path.is_file():
        raise NotFoundError(f"{path}: no review manifest there")
    data = path.read_bytes()
    row = conn.execute(
        "SELECT review_id, reviewer, ok, scope, position, head_sha256 FROM reviews "
        "WHERE manifest_sha256 = ? ORDER BY event_position LIMIT 1",
        (sha256_hex(data),),
    ).fetchone()
    if row is None:
        raise TamperError(f"{path}: manifest does not match any recorded review (edited?)")
    review_id, reviewer, ok, scope_json, position, head = row
    manifest = json.loads(data)
    card = directory / "scorecard.md"
    if not card.is_file() or sha256_hex(card.read_bytes()) != manifest.get("scorecard_sha256"):
        raise TamperError(f"{card}: scorecard does not match its manifest (edited or missing?)")
    now = hash_at(conn, position)
    if now != head:
        raise TamperError(
            f"the ledger's hash at position {position} is {now}, the review saw {head}: "
            "the log was rewritten (run `benchledger verify`)"
        )
    scope = recorded_scope(scope_json)
    changes = changes_since(conn, position, scope)
    return {
        "ok": not changes,
        "review_id": review_id,
        "reviewer": reviewer,
        "review_ok": bool(ok),
        "position": position,
        "head_sha256": head,
        "scope": {"include": scope.include, "exclude": scope.exclude},
        "changes": changes,
    }


def hash_at(conn: sqlite3.Connection, position: int) -> str | None:
    """The chain hash the ledger holds at a position (the genesis hash at 0)."""
    found = conn.execute("SELECT chain_sha256 FROM chain WHERE position = ?", (position,))
    row = found.fetchone()
    return str(row[0]) if row else (GENESIS if position == 0 else None)


def recorded_scope(scope_json: str | None) -> Scope:
    """A review's scope (with the tolerance its gates used) as its `reviews` row holds it."""
    data = json.loads(scope_json or "{}")
    tolerance = data.get("tolerance")
    return Scope(
        data.get("include") or [],
        data.get("exclude") or [],
        float(tolerance) if isinstance(tolerance, int | float) else None,
    )


def changes_since(conn: sqlite3.Connection, position: int, scope: Scope) -> list[dict[str, Any]]:
    """The events after a position that touch a benchmark of the scope, in ledger order."""
    return [
        {"position": p, "type": t, "benchmark": b, "run_id": r}
        for p, t, b, r in conn.execute(CHANGES, (position,))
        if isinstance(b, str) and scope.covers(b)
    ]
