"""An inspect_ai eval recorded in a ledger while it runs, as importing its log records it.

The run is the importer's (`adapters.formats.inspect_ai`): the same run key (the eval's
`eval_id`), so the same stream, and its header and cells are built by the importer's
own functions from the hook's data, so they are identical by construction. Its start
(task, model, plan, config) is recorded when the task starts, each sample's cell when
the sample ends, and its end (status, metrics, the facts only the finished log states)
when the task ends. Importing the eval's log afterwards finds every fact recorded and
appends nothing.

The run starts with the facts that cannot change while it runs; what the log states
only once it ends (`VOLATILE` provenance, its start and end times, its status and
metrics) is added when it ends. It holds a lease, renewed as its samples end, so a run
whose process died is recovered as stale like any run executed here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from benchledger.adapters.formats import inspect_ai
from benchledger.adapters.formats.inspect_ai import NAME as FORMAT
from benchledger.adapters.formats.inspect_ai import _record
from benchledger.adapters.formats.inspect_ai_cells import sample_cell
from benchledger.adapters.formats.inspect_ai_header import headline_scorer
from benchledger.adapters.formats.inspect_ai_models import LogHeader, Sample
from benchledger.adapters.store import ledger_file
from benchledger.adapters.store.bootstrap import open_ledger
from benchledger.adapters.store.settings import Settings
from benchledger.domain import facts, run_rules
from benchledger.domain.executing import RunningRun
from benchledger.domain.ledger import Ledger
from benchledger.domain.masked_records import masked_record
from benchledger.domain.records import RunHeader, RunRecord, RunStatus
from benchledger.domain.signatures import run_id_for
from benchledger.projections.store import prepare_new_file

# Provenance the finished log states differently from, or beyond, the eval's start.
VOLATILE = frozenset(
    {"log_status", "scorers", "invalidated", "cells_from", "quirks", "recomputed_score"}
)
# The facts of a run's end (`RunFinished`'s): recorded as the run finishes.
ENDED = frozenset(
    {
        "status",
        "score",
        "unit",
        "higher_is_better",
        "metrics",
        "tokens",
        "duration_seconds",
        "error",
        "ended_at",
    }
)
LEASE_SECONDS = 600.0
POSTGRES_SCHEMES = ("postgresql://", "postgres://", "postgresql+psycopg://")


def open_target(target: str) -> Ledger:
    """The ledger `target` names: a PostgreSQL URL, else a ledger file's path."""
    if target.startswith(POSTGRES_SCHEMES):
        return open_ledger(Settings(event_store_url=target))
    path = Path(target)
    ledger_file.require_writable(path, creates=True, event_store=False)
    prepare_new_file(path)
    return open_ledger(Settings(db_path=path))


@dataclass
class LiveEval:
    """One eval being recorded: its run, and the samples ended so far (as the importer
    reads them: a few scalars each, never their messages)."""

    run_id: UUID
    start: LogHeader
    header: RunHeader  # as the log states it when the eval starts (secrets unmasked)
    running: RunningRun
    lease_expires_at: datetime
    samples: dict[str, Sample] = field(default_factory=dict)
    recorded: set[str] = field(default_factory=set)  # the keys of the cells recorded

    @property
    def with_epoch(self) -> bool:
        return (self.start.eval.config.epochs or 1) > 1


class LiveRecorder:
    """Records evals into one ledger, opened when the first eval starts."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._ledger: Ledger | None = None
        self.evals: dict[str, LiveEval] = {}

    @property
    def ledger(self) -> Ledger:
        if self._ledger is None:
            self._ledger = open_target(self.target)
        return self._ledger

    def close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None

    def task_start(self, eval_id: str, spec: dict[str, Any], plan: dict[str, Any]) -> UUID:
        """Start the eval's run with what its log states when it starts."""
        header = LogHeader.model_validate(
            {"version": 2, "status": "started", "eval": spec, "plan": plan}
        )
        stated = _record(FORMAT, header, [], "samples", {})
        record = masked_record(stated)  # secrets masked, as an import masks them
        run_id = run_id_for(FORMAT, record.header.natural_key())
        expires = datetime.now(UTC) + timedelta(seconds=LEASE_SECONDS)
        started = run_rules.start(run_id, record, source="imported")
        provenance = {k: v for k, v in started.provenance.items() if k not in VOLATILE}
        started = started.model_copy(update={"provenance": provenance, "lease_expires_at": expires})
        ledger = self.ledger
        ledger._save([started])
        running = ledger.running_run(run_id)
        self.evals[eval_id] = LiveEval(run_id, header, stated.header, running, expires)
        return run_id

    def sample_end(self, eval_id: str, sample: dict[str, Any]) -> None:
        """Record the cell of one ended sample (scored by the task's first scorer)."""
        live = self.evals.get(eval_id)
        if live is None:
            return
        read = Sample.model_validate(sample)
        live.samples[f"{read.id!r}:{read.epoch}"] = read
        cell = sample_cell(read, headline_scorer(live.start), live.with_epoch)
        # Masked as an import masks the log's cells: the config's secrets hunted too.
        [cell] = masked_record(RunRecord(header=live.header, cells=(cell,))).cells
        if cell.key not in live.recorded:
            self.ledger.record_running_cells(live.running, [cell])
            live.recorded.add(cell.key)
        if live.lease_expires_at - datetime.now(UTC) < timedelta(seconds=LEASE_SECONDS / 2):
            live.lease_expires_at = self.ledger.renew_lease(live.run_id, LEASE_SECONDS)

    def task_end(self, eval_id: str, log: dict[str, Any]) -> list[facts.Conflict]:
        """Finish the eval's run as its log states it ended (the log's header, and the
        samples that ended while it ran); the facts the live run stated otherwise than
        the log (none, unless the eval changed its own spec)."""
        live = self.evals.get(eval_id)
        if live is None:
            return []
        header = LogHeader.model_validate(log)
        samples = [(f"samples[{i}]", s) for i, s in enumerate(live.samples.values())]
        return self.finish(eval_id, _record(FORMAT, header, samples, "samples", {}))

    def task_end_from_file(self, eval_id: str, path: Path) -> list[facts.Conflict]:
        """Finish the eval's run as importing its log file records it: for an eval that
        ended without its task's end (interrupted), whose log holds samples that ended
        as it was stopped, never announced one by one."""
        if eval_id not in self.evals:
            return []
        [record] = [
            r for r in inspect_ai.parse(path, path.read_bytes()) if isinstance(r, RunRecord)
        ]
        return self.finish(eval_id, record)

    def finish(self, eval_id: str, record: RunRecord) -> list[facts.Conflict]:
        """Record the facts of `record` the run lacks, and its end."""
        live = self.evals.pop(eval_id)
        record = masked_record(record)  # secrets masked, as an import masks them
        ledger = self.ledger
        held = facts.recorded(ledger.events.get(live.run_id))
        beyond = {k: v for k, v in facts.stated(record).items() if k not in ENDED}
        added, conflicts = facts.compare(held.facts, beyond)
        outcome = run_rules.finished_fields(record)
        # An imported run's stream does not fold its cells' digests: the ones recorded
        # while it ran are compared here, and only the others appended.
        fresh = [c for c in record.cells if c.key not in held.cells]
        other = [c for c in record.cells if held.cells.get(c.key, c.digest()) != c.digest()]
        if other:
            recorded = ledger.recorded_cells(live.run_id, {c.key for c in other})
            message = run_rules.disagreement([(recorded.get(c.key), c) for c in other])
            outcome = {**outcome, "status": RunStatus.ERROR, "error": message}
        ledger.finish_run(live.run_id, fresh, added_facts=added, **outcome)
        self.register_benchmark(record)
        return conflicts

    def register_benchmark(self, record: RunRecord) -> None:
        """Register the run's benchmark as an import of its log would, when it is new."""
        header = record.header
        if self.ledger.get_benchmark(header.benchmark) is None:
            self.ledger.register_benchmark(
                header.benchmark, unit=header.unit, higher_is_better=header.higher_is_better
            )
