"""Intents of a running run's trajectory: record its turns as they arrive, read them."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING
from uuid import UUID

from benchledger.domain import run as run_model
from benchledger.domain import turn_rules
from benchledger.domain.base import Event
from benchledger.domain.errors import ConcurrencyError
from benchledger.domain.ledger_base import CELL_BATCH, LedgerBase
from benchledger.domain.records import Turn
from benchledger.domain.run import Run
from benchledger.domain.run_rules import first_statements

if TYPE_CHECKING:
    from benchledger.domain.executing import RunningRun


class ExecutingTurns(LedgerBase):
    def record_running_turns(self, running: RunningRun, turns: Sequence[Turn]) -> list[Turn]:
        """`record_running_cells` for trajectory turns: the new ones are appended, those
        that state a recorded place differently are returned."""
        run = running._run
        for _ in range(5):
            fresh, disagreeing = turn_rules.split_turns(run, turns)
            events = self._turn_batches(run, fresh)
            try:
                self._save(events)
            except ConcurrencyError:
                run = self.get_run(run.id)
                continue
            for event in events:
                run = run_model.mutate(event, run)  # type: ignore[assignment]
            running._run = run
            return disagreeing
        raise ConcurrencyError(f"could not record the turns of run {run.id}")

    def recorded_turns(
        self, run_id: UUID, keys: set[str], pending: Sequence[Turn] = ()
    ) -> dict[str, Turn]:
        """`recorded_cells` for turns, by place (`Turn.key`)."""
        recorded = (
            event.turns
            for event in self.events.get(run_id)
            if isinstance(event, run_model.TrajectoryRecorded)
        )
        return first_statements(chain(recorded, [pending]), keys)

    def _turn_batches(self, run: Run, turns: Sequence[Turn], after: int = 0) -> list[Event]:
        """Turns in events of CELL_BATCH, the first at the run's version + `after` + 1."""
        return [
            run_model.TrajectoryRecorded(
                originator_id=run.id,
                originator_version=run.version + after + 1 + n,
                turns=tuple(turns[i : i + CELL_BATCH]),
            )
            for n, i in enumerate(range(0, len(turns), CELL_BATCH))
        ]
