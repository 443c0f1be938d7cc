"""The ledger application: its methods are the intents users have."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime
from uuid import UUID

from benchledger.domain import benchmark as benchmark_model
from benchledger.domain import run as run_model
from benchledger.domain import run_rules, trust
from benchledger.domain.base import Event
from benchledger.domain.errors import ConcurrencyError
from benchledger.domain.executing import Executing
from benchledger.domain.importing import Importing
from benchledger.domain.ledger_base import (
    CELL_BATCH,
    GroupHandle,
    ImportOutcome,
    LedgerBase,
    RunOutcome,
    Skip,
    StartedAttempt,
)
from benchledger.domain.masked_records import masked_cells
from benchledger.domain.matrix import AgentRules
from benchledger.domain.publishing import Publishing
from benchledger.domain.records import Cell
from benchledger.domain.signatures import (
    benchmark_id_for,
)

__all__ = [
    "CELL_BATCH",
    "GroupHandle",
    "ImportOutcome",
    "Ledger",
    "LedgerBase",
    "RunOutcome",
    "Skip",
    "StartedAttempt",
]


class Ledger(Importing, Executing, Publishing):
    """Importing and executing runs, corrections, benchmarks and publication records."""

    # -- integrity ------------------------------------------------------------------

    def record_checkpoint(
        self,
        ledger_id: str,
        position: int,
        head_sha256: str,
        signed_at: datetime,
        key_fingerprint: str,
        signature: str,
    ) -> int:
        """Record that a checkpoint was signed; returns its number (1 for the first)."""
        previous = list(self.events.get(trust.CHECKPOINT_STREAM, desc=True, limit=1))
        version = previous[0].originator_version + 1 if previous else 1
        self._save(
            [
                trust.CheckpointRecorded(
                    originator_id=trust.CHECKPOINT_STREAM,
                    originator_version=version,
                    ledger_id=ledger_id,
                    position=position,
                    head_sha256=head_sha256,
                    signed_at=signed_at,
                    key_fingerprint=key_fingerprint,
                    signature=signature,
                )
            ]
        )
        return version

    def latest_checkpoint(self) -> trust.CheckpointRecorded | None:
        for event in self.events.get(trust.CHECKPOINT_STREAM, desc=True, limit=1):
            return event  # type: ignore[return-value]
        return None

    # -- corrections ------------------------------------------------------------

    def invalidate_run(self, run_id: UUID, reason: str, actor: str) -> None:
        self._save([run_rules.invalidate(self.get_run(run_id), reason, actor)])

    def reinstate_run(self, run_id: UUID, reason: str, actor: str) -> None:
        self._save([run_rules.reinstate(self.get_run(run_id), reason, actor)])

    def correct_score(
        self, run_id: UUID, new_score: float | None, reason: str, actor: str
    ) -> float | None:
        run = self.get_run(run_id)
        self._save([run_rules.correct_score(run, new_score, reason, actor)])
        return run.score

    def record_cells(self, run_id: UUID, cells: Sequence[Cell]) -> int:
        run = self.get_run(run_id)
        fresh = run_rules.new_cells(run, masked_cells(cells))
        if not fresh:
            return 0
        self._save(
            [
                run_model.CellsRecorded(
                    originator_id=run_id,
                    originator_version=run.version + 1,
                    cells=tuple(fresh),
                )
            ]
        )
        return len(fresh)

    # -- benchmarks ---------------------------------------------------------------

    def register_benchmark(
        self,
        benchmark: str,
        *,
        directory: str | None = None,
        unit: str | None = None,
        higher_is_better: bool = True,
        description: str | None = None,
    ) -> bool:
        """Register or update a benchmark; an unchanged registration appends nothing."""
        for _ in range(5):
            event = benchmark_model.register(
                benchmark_id_for(benchmark),
                self.get_benchmark(benchmark),
                benchmark,
                directory=directory,
                unit=unit,
                higher_is_better=higher_is_better,
                description=description,
            )
            if event is None:
                return False
            try:
                self._save([event])
            except ConcurrencyError:
                continue  # another process registered it meanwhile: look again
            return True
        raise ConcurrencyError(f"could not register benchmark {benchmark}")

    def reference_high_score(
        self,
        benchmark: str,
        *,
        label: str,
        value: float,
        unit: str | None = None,
        source: str | None = None,
        as_of: date | None = None,
    ) -> bool:
        """Reference a high score; repeating the current reference appends nothing."""
        for _ in range(5):
            current = self.get_benchmark(benchmark)
            if current is None:
                self.register_benchmark(benchmark, unit=unit)
                continue
            event = benchmark_model.reference_high_score(
                current, label=label, value=value, unit=unit, source=source, as_of=as_of
            )
            if event is None:
                return False
            try:
                self._save([event])
            except ConcurrencyError:
                continue
            return True
        raise ConcurrencyError(f"could not reference a high score of {benchmark}")

    def declare_required_agents(
        self,
        benchmark: str,
        required: Sequence[str],
        *,
        compatible: Sequence[str] | None = None,
        unsupported: dict[str, str] | None = None,
        source: str,
    ) -> bool:
        """Declare the agents a complete matrix row of a benchmark needs (the registry's,
        or an imported matrix contract's); repeating the current rule appends nothing.

        An importer calls it once per benchmark after the file's `import_runs` returned:
        the rule is a fact of its own, and it registers a benchmark not registered yet.
        """
        rule = AgentRules(
            required=tuple(required),
            compatible=None if compatible is None else tuple(compatible),
            unsupported=dict(unsupported or {}),
            source=source,
        )
        return self.declare_rules({benchmark: rule}) == 1

    def declare_rules(self, rules: Mapping[str, AgentRules]) -> int:
        """Declare several benchmarks' rules (`declare_required_agents`) in one save: all
        of them or none; returns how many were new (a repeated rule appends nothing)."""
        for _ in range(5):
            events: list[Event] = []
            declared = 0
            for benchmark, rule in sorted(rules.items()):
                current = self.get_benchmark(benchmark)
                registration: list[Event] = []
                if current is None:
                    registered = benchmark_model.register(
                        benchmark_id_for(benchmark), None, benchmark
                    )
                    assert registered is not None
                    current = benchmark_model.mutate(registered, None)
                    registration.append(registered)
                assert current is not None
                event = benchmark_model.declare_required_agents(
                    current,
                    tuple(rule.required),
                    compatible=None if rule.compatible is None else tuple(rule.compatible),
                    unsupported=dict(rule.unsupported),
                    source=rule.source,
                    required_env=dict(rule.required_env),
                )
                if event is not None:
                    events += [*registration, event]
                    declared += 1
            if not events:
                return 0
            try:
                self._save(events)
            except ConcurrencyError:
                continue  # another process registered or declared one meanwhile
            return declared
        raise ConcurrencyError(f"could not declare the required agents of {', '.join(rules)}")
