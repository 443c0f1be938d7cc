"""A signature's attempts continue the orchestrator's (imported) and the ledger's own
attempts recorded under the legacy signature, in a real ledger file."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest

from benchledger.adapters.store.bootstrap import Settings, build
from benchledger.domain.ledger import Ledger, Skip, StartedAttempt
from benchledger.domain.records import RunHeader, RunRecord, RunStatus, SourceFile
from benchledger.domain.run import RunStarted
from benchledger.domain.signature import AttemptClaimed, Mode
from benchledger.domain.signatures import (
    effective_config,
    legacy_signature,
    natural_id,
    sha256_hex,
    signature,
    signature_id_for,
)
from tests import helpers

BENCHMARK, AGENT, PROVIDER, MODEL, DIRECTORY = "bfcl", "eliza", "cerebras", "gpt-oss-120b", "bfcl"
# The config as `run` overlaid it before, and the effective config it hashes now.
LEGACY_CONFIG = {"limit": 10}
CONFIG = effective_config(BENCHMARK, AGENT, LEGACY_CONFIG)
SIGNATURE = signature(BENCHMARK, AGENT, PROVIDER, MODEL, CONFIG, directory=DIRECTORY)
LEGACY = legacy_signature(BENCHMARK, AGENT, PROVIDER, MODEL, LEGACY_CONFIG)
NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with build(Settings(db_path=tmp_path / "ledger.db")) as services:
        yield services.ledger


def test_the_worked_example_is_this_works_signature() -> None:
    assert SIGNATURE == "51c42ab183297eefc7c0679d98dca4976714e6532b6cc654bf08ad0f4c993fb0"


def import_run(ledger: Ledger, run_key: str, status: RunStatus) -> UUID:
    """An orchestrator run as an importer records it: an ordinary imported Run."""
    record = RunRecord(
        header=RunHeader(
            run_key=run_key,
            benchmark=BENCHMARK,
            agent=AGENT,
            provider=PROVIDER,
            model=MODEL,
            config=CONFIG,
            status=status,
            score=0.5,
        )
    )
    data = record.model_dump_json().encode()
    source = SourceFile(
        path=f"{run_key}.json", sha256=sha256_hex(data), size=len(data), format="native"
    )
    [outcome] = ledger.import_runs("native", source, [record]).runs
    return outcome.run_id


def ran(attempt: int, run_id: UUID) -> dict[str, Any]:
    return {"attempt": attempt, "run_id": run_id, "outcome": "run", "source_key": f"run{attempt}"}


def skipped(attempt: int) -> dict[str, Any]:
    return {"attempt": attempt, "run_id": None, "outcome": "skip", "source_key": f"skip{attempt}"}


def note(ledger: Ledger, *attempts: dict[str, Any]) -> None:
    ledger.import_attempts(
        signature=SIGNATURE, benchmark=BENCHMARK, agent=AGENT, attempts=list(attempts)
    )


def start(ledger: Ledger, mode: Mode) -> StartedAttempt | Skip:
    return ledger.start_attempt(
        None,
        benchmark=BENCHMARK,
        agent=AGENT,
        provider=PROVIDER,
        model=MODEL,
        config=CONFIG,
        directory=DIRECTORY,
        legacy_config=LEGACY_CONFIG,
        mode=mode,
        command=["bench"],
        cwd=".",
        host="h",
        lease_seconds=60,
        run_key=f"k-{uuid4().hex[:8]}",
        run_dir="d",
        now=lambda: NOW,
    )


def finish(ledger: Ledger, started: StartedAttempt | Skip, status: RunStatus) -> StartedAttempt:
    assert isinstance(started, StartedAttempt), started
    ledger.finish_run(started.run_id, (), status=status, score=0.5)
    return started


class TestImportedAttempts:
    def test_an_imported_success_is_skipped_deferring_to_it(self, ledger: Ledger) -> None:
        failed = import_run(ledger, "run_bfcl_1", RunStatus.FAILED)
        ok = import_run(ledger, "run_bfcl_2", RunStatus.SUCCEEDED)
        note(ledger, ran(1, failed), ran(2, ok), skipped(3))
        assert start(ledger, "default") == Skip("already_succeeded", ok)

    def test_rerun_failed_runs_one_past_every_attempt_skip_rows_included(
        self, ledger: Ledger
    ) -> None:
        failed = import_run(ledger, "run_bfcl_1", RunStatus.FAILED)
        note(ledger, ran(1, failed), skipped(2), skipped(3))
        started = finish(ledger, start(ledger, "rerun_failed"), RunStatus.FAILED)
        assert started.attempt == 4 and started.signature == SIGNATURE
        claims = [e for e in ledger.events.get(signature_id_for(SIGNATURE)) if e]
        assert [type(e).__name__ for e in claims] == ["AttemptsImported", "AttemptClaimed"]
        last = claims[-1]
        assert isinstance(last, AttemptClaimed) and (last.attempt, last.mode) == (4, "rerun_failed")
        # The run states the same signature (benchmark directory included) and attempt.
        [run_started, *_] = ledger.events.get(started.run_id)
        assert isinstance(run_started, RunStarted)
        assert (run_started.signature, run_started.attempt) == (SIGNATURE, 4)
        # The next attempt follows the one claimed here.
        assert finish(ledger, start(ledger, "force"), RunStatus.SUCCEEDED).attempt == 5
        assert start(ledger, "default") == Skip("already_succeeded", _run_of(ledger, 5))

    def test_rerun_failed_skips_when_the_latest_execution_succeeded_despite_later_skip_rows(
        self, ledger: Ledger
    ) -> None:
        failed = import_run(ledger, "run_bfcl_1", RunStatus.FAILED)
        ok = import_run(ledger, "run_bfcl_2", RunStatus.SUCCEEDED)
        note(ledger, ran(1, failed), ran(2, ok), skipped(3), skipped(4))
        assert start(ledger, "rerun_failed") == Skip("latest_attempt_succeeded", ok)

    def test_an_invalidated_imported_success_no_longer_counts(self, ledger: Ledger) -> None:
        ok = import_run(ledger, "run_bfcl_1", RunStatus.SUCCEEDED)
        note(ledger, ran(1, ok), skipped(2))
        ledger.invalidate_run(ok, "scored against the wrong split", "tester")
        assert finish(ledger, start(ledger, "default"), RunStatus.SUCCEEDED).attempt == 3

    def test_force_always_runs_the_next_attempt(self, ledger: Ledger) -> None:
        ok = import_run(ledger, "run_bfcl_7", RunStatus.SUCCEEDED)
        note(ledger, ran(7, ok), skipped(2))
        assert finish(ledger, start(ledger, "force"), RunStatus.SUCCEEDED).attempt == 8

    def test_importing_the_same_attempts_again_appends_nothing(self, ledger: Ledger) -> None:
        ok = import_run(ledger, "run_bfcl_1", RunStatus.SUCCEEDED)
        note(ledger, ran(1, ok), skipped(2))
        before = ledger.signature_of(SIGNATURE)
        assert before is not None and before.version == 1
        assert (
            ledger.import_attempts(
                signature=SIGNATURE,
                benchmark=BENCHMARK,
                agent=AGENT,
                attempts=[ran(1, ok), skipped(2)],
            )
            is None
        )
        note(ledger, skipped(2), skipped(3))
        after = ledger.signature_of(SIGNATURE)
        assert after is not None and after.version == 2
        assert [a.attempt for a in after.attempts] == [1, 2, 3]

    def test_an_imported_run_missing_from_the_ledger_counts_but_decides_nothing(
        self, ledger: Ledger
    ) -> None:
        note(ledger, ran(1, uuid4()))
        known = ledger.attempts(SIGNATURE)
        assert (len(known.known), known.runs, known.next_attempt) == (1, (), 2)
        assert finish(ledger, start(ledger, "default"), RunStatus.SUCCEEDED).attempt == 2


def legacy_attempt(ledger: Ledger, attempt: int, status: RunStatus) -> UUID:
    run_id: UUID = helpers.legacy_attempt(
        ledger,
        benchmark=BENCHMARK,
        agent=AGENT,
        provider=PROVIDER,
        model=MODEL,
        config=LEGACY_CONFIG,
        attempt=attempt,
        status=status,
        started_at=NOW - timedelta(days=1),
    )
    assert run_id == natural_id("run", "executed", LEGACY, str(attempt))
    return run_id


class TestLegacyLedgers:
    def test_work_that_succeeded_under_the_legacy_signature_is_skipped(
        self, ledger: Ledger
    ) -> None:
        ok = legacy_attempt(ledger, 1, RunStatus.SUCCEEDED)
        assert start(ledger, "default") == Skip("already_succeeded", ok)
        assert start(ledger, "rerun_failed") == Skip("latest_attempt_succeeded", ok)

    def test_numbering_continues_from_the_legacy_attempts_on_the_new_stream(
        self, ledger: Ledger
    ) -> None:
        legacy_attempt(ledger, 1, RunStatus.FAILED)
        legacy_attempt(ledger, 2, RunStatus.FAILED)
        started = finish(ledger, start(ledger, "rerun_failed"), RunStatus.SUCCEEDED)
        assert (started.attempt, started.signature) == (3, SIGNATURE)
        legacy_stream = ledger.signature_of(LEGACY)
        assert legacy_stream is not None and legacy_stream.version == 2  # left as it was
        assert start(ledger, "default") == Skip("already_succeeded", started.run_id)
        known = ledger.attempts(SIGNATURE, legacy=LEGACY)
        assert [k.attempt for k in known.known] == [1, 2, 3]

    def test_without_the_legacy_config_the_legacy_attempts_are_not_found(
        self, ledger: Ledger
    ) -> None:
        legacy_attempt(ledger, 1, RunStatus.SUCCEEDED)
        other = legacy_signature(BENCHMARK, AGENT, PROVIDER, MODEL, CONFIG)
        assert ledger.attempts(SIGNATURE, legacy=other).runs == ()


def _run_of(ledger: Ledger, attempt: int) -> UUID:
    known = ledger.attempts(SIGNATURE, legacy=LEGACY)
    [run_id] = [k.run_id for k in known.known if k.attempt == attempt and k.run_id]
    return run_id
