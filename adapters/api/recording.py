"""One run recorded from Python code: its cells as they come, then its end.

The same path as `benchledger run` (`execution/runner.py`, `execution/live.py`): the
attempt is claimed by `start_attempt`, cells are appended while it runs by
`record_running_cells` (masked, within the limits) and the read models caught up, and
`finish_run` ends it. Cells are buffered and appended at least every FLUSH_SECONDS (by
a background thread, which also renews the run's lease) or FLUSH_CELLS cells, so other
processes see them within about a second.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from pydantic import ValidationError

from benchledger.adapters.execution.live import RECORD_CELLS, LiveCells
from benchledger.adapters.formats.kept import check_kept
from benchledger.adapters.formats.native_common import field_error
from benchledger.domain.errors import LedgerError, RunAlreadyFinishedError
from benchledger.domain.ledger import GroupHandle, Ledger
from benchledger.domain.ledger_base import StartedAttempt
from benchledger.domain.records import Cell, Record, RunStatus

log = logging.getLogger("benchledger")

# Buffered cells are appended at least this often, and whenever this many are waiting.
FLUSH_SECONDS = 1.0
FLUSH_CELLS = RECORD_CELLS
# A run's lease, and how often it is renewed while the run is open (as `run`'s default).
LEASE_SECONDS = 300.0
RENEW_SECONDS = 60.0
# What a run without a stated score is scored in: the share of its scored cells passed.
DERIVED_UNIT = "pass_rate"


class _Cells(Record):
    """One cell as the limits check it (`check_kept`)."""

    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Ending:
    """How a run ended: its status, score and error, as recorded."""

    status: str
    score: float | None
    error: str | None


@dataclass
class Tally:
    """The outcome of each distinct cell key recorded, to score a run on its cells."""

    outcomes: dict[str, str]

    def score(self) -> float | None:
        """passed / (passed + failed + error): skipped cells are left out (the JUnit
        rule); None when no cell counts."""
        counted = [o for o in self.outcomes.values() if o != "skipped"]
        if not counted:
            return None
        return sum(o == "passed" for o in counted) / len(counted)


class Run:
    """A run being recorded: add cells with `cell`, end it with `finish`.

    Used from one thread (its background flusher takes its own lock). As a context
    manager, an exception inside the block ends it as failed with the error text
    (secrets masked) and is raised again; leaving the block unfinished ends it as its
    cells say (see `finish`).
    """

    def __init__(
        self,
        ledger: Ledger,
        group: GroupHandle,
        started: StartedAttempt,
        scrub: Callable[[Any], Any],
        catch_up: Callable[[], None],
        on_end: Callable[[Run], None],
    ) -> None:
        self._ledger, self._group, self._scrub = ledger, group, scrub
        self._catch_up, self._on_end = catch_up, on_end
        self._started = started
        self._live = LiveCells(
            ledger, ledger.running_run(started.run_id), scrub, _warn, self._caught_up
        )
        self._lock = threading.RLock()
        self._buffer: list[Cell] = []
        self._since: float | None = None  # when the oldest buffered cell came
        self._tally = Tally({})
        self._began = time.monotonic()
        self._ending: Ending | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._tick, name=f"benchledger-run-{started.run_key}", daemon=True
        )
        self._thread.start()

    # -- what the run is -----------------------------------------------------------

    @property
    def run_id(self) -> str:
        return str(self._started.run_id)

    @property
    def run_key(self) -> str:
        return self._started.run_key

    @property
    def attempt(self) -> int:
        """The attempt of its work this run is (1 for the first that ran)."""
        return self._started.attempt

    @property
    def ending(self) -> Ending | None:
        """How it ended; None while it is open."""
        return self._ending

    # -- recording ------------------------------------------------------------------

    def cell(
        self,
        key: str,
        outcome: str = "passed",
        score: float | None = None,
        metrics: Mapping[str, Any] | None = None,
        *,
        cluster: str | None = None,
    ) -> None:
        """Record one cell (a task, sample, instance); `outcome` is passed, failed,
        error or skipped. A key recorded again with the same content is a repeat;
        stated differently, the run ends as an error naming it."""
        if self._ending is not None:
            raise RunAlreadyFinishedError(f"run {self.run_key} has ended; it takes no cells")
        fields: dict[str, Any] = {"key": key, "outcome": outcome, "score": score}
        fields["metrics"] = dict(metrics) if metrics is not None else {}
        if cluster is not None:
            fields["cluster"] = cluster
        try:
            cell = Cell.model_validate(fields)
        except ValidationError as e:
            raise field_error(f"cell {key!r} of run {self.run_key}", e, line=None) from None
        # Refused here, naming the field, rather than when its batch is appended.
        check_kept(f"cell {key!r} of run {self.run_key}", [_Cells(cells=(cell,))])
        with self._lock:
            self._buffer.append(cell)
            if self._since is None:
                self._since = time.monotonic()
            if len(self._buffer) >= FLUSH_CELLS:
                self._flush()

    def flush(self) -> None:
        """Append the buffered cells now and bring the read models up to date."""
        with self._lock:
            self._flush()

    def finish(
        self,
        score: float | None = None,
        metrics: Mapping[str, Any] | None = None,
        status: str = "succeeded",
        *,
        error: str | None = None,
        unit: str | None = None,
        higher_is_better: bool = True,
        tokens: Mapping[str, int] | None = None,
    ) -> Ending:
        """End the run. Without a `score`, a succeeding run is scored on its cells
        (passed / (passed + failed + error), unit pass_rate); with no cell to score it
        fails, as `run` fails a result without a numeric score."""
        if status not in {s.value for s in RunStatus} - {"running", "recovered"}:
            raise LedgerError(f"run {self.run_key}: status must be a finished one, not {status!r}")
        with self._lock:
            if self._ending is not None:
                raise RunAlreadyFinishedError(f"run {self.run_key} has already ended")
            self._stop.set()
            self._live_flush_or_keep(self._take())
            # What could not be appended while it ran is stated with its end.
            pending = self._take()
            for cell in pending:
                self._tally.outcomes.setdefault(cell.key, cell.outcome)
            fields = self._outcome(score, status, error, unit)
            fields.update(
                metrics=dict(metrics or {}),
                tokens=dict(tokens or {}),
                higher_is_better=higher_is_better,
                duration_seconds=round(time.monotonic() - self._began, 3),
                ended_at=datetime.now(UTC),
            )
            try:
                ended = self._ledger.finish_run(
                    self._started.run_id,
                    [*pending, *self._live.disagreeing],
                    **self._scrub(fields),
                )
            except Exception:
                self._buffer = pending  # nothing was written: `finish` may be called again
                raise
            self._ending = Ending(ended.status.value, ended.score, ended.error)
            self._close_group()
        self._thread.join(timeout=5)
        self._caught_up()
        self._on_end(self)
        return self._ending

    def _outcome(
        self, score: float | None, status: str, error: str | None, unit: str | None
    ) -> dict[str, Any]:
        if score is not None or status != "succeeded":
            return {"status": status, "score": score, "unit": unit, "error": error}
        derived = self._tally.score()
        if derived is None:
            return {
                "status": "failed",
                "score": None,
                "unit": unit,
                "error": error or "the run states no score and has no cell to score",
            }
        return {"status": status, "score": derived, "unit": unit or DERIVED_UNIT, "error": error}

    # -- as a context manager -------------------------------------------------------

    def __enter__(self) -> Run:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._ending is not None:
            return
        if error is None:
            self.finish()
            return
        cancelled = isinstance(error, KeyboardInterrupt | SystemExit)
        text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        try:
            self.finish(status="cancelled" if cancelled else "failed", error=text)
        except Exception as e:  # the block's own error is the one raised
            log.warning("run %s could not be ended: %s", self.run_key, self._scrub(str(e)))

    # -- appending --------------------------------------------------------------------

    def _take(self) -> list[Cell]:
        buffered, self._buffer, self._since = self._buffer, [], None
        return buffered

    def _flush(self) -> None:
        """Append the buffered cells (the lock held); kept buffered if appending fails."""
        if self._buffer and not self._live_flush_or_keep(self._take()):
            self._since = time.monotonic()

    def _live_flush_or_keep(self, cells: list[Cell]) -> bool:
        """Append `cells` while the run is open; on failure keep them for its end. The
        cells recorded are tallied (a disagreeing one is kept to name at the end)."""
        if not cells:
            return True
        try:
            before = len(self._live.disagreeing)
            self._live.record(cells)
        except (LedgerError, OSError) as e:
            log.warning("cells of run %s not recorded yet: %s", self.run_key, self._scrub(str(e)))
            self._buffer = [*cells, *self._buffer]
            return False
        disagreeing = {c.key for c in self._live.disagreeing[before:]}
        for cell in cells:
            if cell.key not in disagreeing:
                self._tally.outcomes.setdefault(cell.key, cell.outcome)
        return True

    def _tick(self) -> None:
        """Flush cells older than FLUSH_SECONDS and renew the lease, until the run ends."""
        renew_at = time.monotonic() + RENEW_SECONDS
        while not self._stop.wait(FLUSH_SECONDS / 4):
            with self._lock:
                if self._stop.is_set():
                    return
                since = self._since
                if since is not None and time.monotonic() - since >= FLUSH_SECONDS:
                    self._flush()
                if time.monotonic() >= renew_at:
                    renew_at = time.monotonic() + RENEW_SECONDS
                    self._renew()

    def _close_group(self) -> None:
        """Close the run's group (one run each), counting how the run ended."""
        ended = self._ending
        self._group.count("succeeded" if ended and ended.status == "succeeded" else "failed")
        try:
            self._ledger.close_group(self._group)
        except LedgerError as e:  # the run has ended; a sweep closes the group later
            log.warning("run group of run %s not closed: %s", self.run_key, e)

    def _renew(self) -> None:
        try:
            self._ledger.renew_lease(self._started.run_id, LEASE_SECONDS)
        except LedgerError as e:  # a missed heartbeat must not end the run
            log.warning("lease renewal of run %s failed: %s", self.run_key, e)

    def _caught_up(self) -> None:
        self._catch_up()


def _warn(message: str) -> None:
    log.warning("%s", message)
