"""A command that appends only publication records opens the ledger as `Publishing`
(`LedgerContext.publisher`); one that then needs the whole ledger gets it, once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from benchledger.commands.context import LedgerContext
from benchledger.domain.ledger import Ledger
from benchledger.domain.publishing import Publishing


def verdict(ctx: LedgerContext) -> None:
    ctx.publisher.ledger.record_gate(
        gate="publishability", ok=True, findings=[], actor="t", position=0, head_sha256=""
    )
    ctx.publisher.runner.catch_up()


def verdicts(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        (count,) = conn.execute("SELECT count(*) FROM gate_verdicts").fetchone()
    return int(count)


def test_the_whole_ledger_after_a_publisher_replaces_it(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    ctx = LedgerContext(str(db), None, creates=True)
    ctx.publishes = True
    try:
        verdict(ctx)
        publisher = ctx.publisher
        assert type(publisher.ledger) is Publishing
        services = ctx.services  # a write only the whole ledger makes: the publisher closes
        assert type(services.ledger) is Ledger and publisher._closed
        assert ctx.publisher is services  # one application per command from then on
        verdict(ctx)
        assert ctx.read_models() is services.store.conn
    finally:
        ctx.close()
    assert verdicts(db) == 2


def test_a_command_that_opened_the_whole_ledger_publishes_through_it(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    ctx = LedgerContext(str(db), None, creates=True)
    try:
        services = ctx.services
        ctx.publishes = True
        assert ctx.publisher is services
        verdict(ctx)
    finally:
        ctx.close()
    assert verdicts(db) == 1
