"""Intents of importing: every run a result file states, appended atomically."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cached_property
from typing import Any, Literal, NamedTuple
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import StoredEvent

from benchledger.domain import benchmark as benchmark_model
from benchledger.domain import facts, result_import, run_rules
from benchledger.domain import run as run_model
from benchledger.domain import run_group as group_model
from benchledger.domain import signature as signature_model
from benchledger.domain.base import Event
from benchledger.domain.cells import cells_value
from benchledger.domain.errors import (
    ConcurrencyError,
    ImportConflictError,
    RuleViolationError,
)
from benchledger.domain.import_lookups import (
    LookupsAhead,
    UnchangedRow,
    is_unchanged_row,
    own_run_id,
)
from benchledger.domain.import_outcomes import RunOutcomes
from benchledger.domain.ledger_base import (
    CELL_BATCH,
    GroupHandle,
    ImportOutcome,
    PreparedEvent,
    RunOutcome,
    _project,
    _weight,
)
from benchledger.domain.masked_records import masked_record, masked_records
from benchledger.domain.records import (
    GroupRecord,
    RunRecord,
    SkipRecord,
    SourceFile,
    cells_json,
)
from benchledger.domain.run import Run, RunStarted
from benchledger.domain.signatures import (
    benchmark_id_for,
    import_id_for,
    natural_id,
    run_id_for,
    signature_id_for,
)

Parsed = RunRecord | SkipRecord | GroupRecord


class PreparedRun(NamedTuple):
    """A run that no stream held when its file was read, made into its stored events by
    the process that read it (`Importing.prepare`), with what the import keeps of it
    besides: sent to the importing process as plain data (`tuple(prepared)`), which
    appends the events as they are."""

    run_key: str
    run_id: bytes
    # Each event as (its stream's id, version, weight, topic, stored state).
    events: tuple[tuple[bytes, int, int, str, bytes], ...]
    attempt: int | None  # `counted_attempt`
    signature: str
    benchmark: str
    agent: str
    unit: str | None
    higher_is_better: bool

    def stored(self) -> list[PreparedEvent]:
        return [
            PreparedEvent(
                StoredEvent(
                    originator_id=UUID(bytes=stream),
                    originator_version=version,
                    topic=topic,
                    state=state,
                ),
                weight,
            )
            for stream, version, weight, topic, state in self.events
        ]


def serialized(record: RunRecord) -> tuple[list[bytes], str]:
    """The record's cells serialized once, in the slices their events will hold, and its
    content hash: the same bytes are hashed for the content and written to the store.
    Without cells, the hash derived where the file was read (`Memoized._derive`)."""
    batches = [
        cells_json(record.cells[i : i + CELL_BATCH])
        for i in range(0, len(record.cells), CELL_BATCH)
    ]
    return batches, record.content_sha256(batches) if batches else record.content_sha256()


# How a stored `RunImported` or `SkipNoted` that states its row's digest ends: that is
# its last field, and the mapper writes compact JSON. Matched at the very end, no string
# inside the event can pass for it (its quotes would be escaped).
_DIGEST_KEY = b'"source_row_sha256":"'


def _states_a_digest(state: bytes) -> bool:
    return state[-68:-66] == b':"' and state.endswith(b'"}')


def _states_digest(digest: str) -> bytes:
    return _DIGEST_KEY + digest.encode() + b'"}'


def counted_attempt(record: RunRecord) -> int | None:
    """The attempt the source counted at the run (None: none, or the run has no key)."""
    header = record.header
    if not header.run_key:
        return None
    # The provenance with the supplement over it, as the run's event states it: only
    # its attempt is read.
    stated = record.supplement if "attempt" in record.supplement else header.provenance
    return run_rules.stated_attempt(stated)


class _Attempts:
    """One signature's counted attempts, in the order counted, kept compactly: a file of a
    million runs holds one each until it ends. Per attempt: its number, its run id's 16
    bytes (zeros and a flag for a skip) and its source key, not a tuple and a bytes
    object (~90 B less each)."""

    __slots__ = ("agent", "benchmark", "ids", "keys", "numbers", "runs")

    def __init__(self, benchmark: str, agent: str) -> None:
        self.benchmark, self.agent = benchmark, agent
        self.numbers: list[int] = []
        self.ids = bytearray()
        self.runs = bytearray()  # 1 where the attempt is a run, 0 where it is a skip
        self.keys: list[str] = []

    def add(self, attempt: int, run_id: bytes | None, key: str) -> None:
        self.numbers.append(attempt)
        self.runs.append(run_id is not None)
        self.ids += run_id if run_id is not None else bytes(16)
        self.keys.append(key)

    def items(self) -> Iterator[tuple[int, bytes | None, str]]:
        """(attempt, run id's bytes or None, source key), in the order added."""
        ids, runs = self.ids, self.runs
        for i, (attempt, key) in enumerate(zip(self.numbers, self.keys, strict=True)):
            yield attempt, bytes(ids[16 * i : 16 * i + 16]) if runs[i] else None, key


class CountedAttempts:
    """The attempts the source counted at each piece of work, among the runs and skips a
    file records: appended to each signature's stream with the file, so that `run`
    continues the source's numbering and skips what it already succeeded. Held until
    the file ends (a signature's are one event), compactly (`_Attempts`)."""

    def __init__(self) -> None:
        self.by_signature: dict[str, _Attempts] = {}

    def _add(self, signature: str, benchmark: str, agent: str, item: tuple[Any, ...]) -> None:
        attempts = self.by_signature.get(signature)
        if attempts is None:
            attempts = self.by_signature[signature] = _Attempts(benchmark, agent)
        attempts.add(*item)

    def run(self, record: RunRecord, run_id: UUID) -> None:
        header = record.header
        attempt = counted_attempt(record)
        if attempt is not None:
            item = (attempt, run_id.bytes, header.run_key)
            self._add(header.signature, header.benchmark, header.agent, item)

    def prepared(self, run: PreparedRun, run_id: UUID) -> None:
        if run.attempt is not None:
            item = (run.attempt, run_id.bytes, run.run_key)
            self._add(run.signature, run.benchmark, run.agent, item)

    def skip(self, skip: SkipRecord) -> None:
        if skip.attempt is None or skip.attempt < 1 or not skip.skip_key:
            return
        self._add(skip.signature, skip.benchmark, skip.agent, (skip.attempt, None, skip.skip_key))

    def events(
        self,
        stream: Callable[[str], signature_model.Signature | None],
        present: Callable[[Sequence[UUID]], set[UUID]] | None = None,
    ) -> Iterator[Event]:
        """One event per signature with attempts its stream does not hold yet, made one
        at a time. `present`: which of the signatures' streams hold events, asked once
        for all of them (a file of 50k rows counts at a thousand pieces of work, most
        of them new); only those are read (`stream`)."""
        signatures = sorted(self.by_signature)
        ids = {sig: signature_id_for(sig) for sig in signatures}
        recorded = None if present is None or not ids else present(list(ids.values()))
        for sig in signatures:
            counted = self.by_signature[sig]
            event = signature_model.imported_attempts(
                ids[sig],
                stream(sig) if recorded is None or ids[sig] in recorded else None,
                signature=sig,
                benchmark=counted.benchmark,
                agent=counted.agent,
                attempts=(
                    {
                        "attempt": attempt,
                        "run_id": run_id,  # its 16 bytes, or None
                        "outcome": "skip" if run_id is None else "run",
                        "source_key": key,
                    }
                    for attempt, run_id, key in counted.items()
                ),
            )
            if event is not None:
                yield event


class Importing(LookupsAhead):
    # -- importing ------------------------------------------------------------

    def import_runs(
        self,
        system: str,
        source: SourceFile,
        records: Iterable[Parsed] | Callable[[], Iterable[Parsed]],
        *,
        group: GroupHandle | None = None,
        amend: bool = False,
    ) -> ImportOutcome:
        """Record every run a result file states, all in one atomic append.

        Runs are appended as they come (`records` may be a stream, or a function that
        reads it afresh for each attempt) inside one transaction of the event store:
        the file is recorded whole or not at all. A run already recorded with the same
        content is left alone; with different content it is a conflict, unless
        `amend`: then the recorded version is superseded by a new run holding the new
        content (never overwritten).
        """
        if not callable(records) and not isinstance(records, Sequence):
            records = list(records)  # a one-off stream: kept, so that a retry can read it
        if isinstance(records, Sequence):
            # Secrets are masked before anything is stored (`domain.masked_records`).
            records = [masked_record(record) for record in records]
        for _ in range(3):
            items = masked_records(records()) if callable(records) else records
            saved = (group.opened, group.version, dict(group.counts)) if group else None
            registered: set[UUID] = set()
            try:
                with self.appending_together():
                    outcome = self._import_once(system, source, items, group, amend, registered)
                # Committed: known registered from now on (never before: a rolled back
                # append registered nothing).
                self._registered_benchmarks.update(registered)
                return outcome
            except BaseException as e:
                if group is not None and saved is not None:
                    with group.lock:  # nothing was committed: the group is as it was
                        group.opened, group.version, group.counts = saved
                if not isinstance(e, ConcurrencyError):
                    raise
                # another writer recorded some of it first: decide again
        raise ConcurrencyError(f"{source.path}: other writers kept changing the same runs")

    def prepare(
        self, system: str, source: SourceFile, group: GroupHandle | None
    ) -> Callable[[list[Parsed]], list[Parsed | tuple[Any, ...]]] | None:
        """What a process forked from this one, reading `source`, may do to a batch of
        its records to spare this one work: each run that no stream holds yet (as
        committed) made into the stored events `import_runs` would append for it, a
        `PreparedRun` as plain data, which crosses to this process for a fraction of
        what the record would cost. The others are left as they are (a run recorded
        already is compared here; a key that may name a run of this ledger is looked up
        here). None where the store gives a forked process no lookup of its own."""
        present = self.streams_present_forked
        if present is None:
            return None
        mapper = self.mapper

        def prepare(records: list[Parsed]) -> list[Parsed | tuple[Any, ...]]:
            records = [masked_record(record) for record in records]
            runs = {
                i: (record, run_key, run_id_for(system, run_key))
                for i, record in enumerate(records)
                if isinstance(record, RunRecord)
                and own_run_id(run_key := record.header.natural_key()) is None
            }
            recorded = present([run_id for _, _, run_id in runs.values()]) if runs else set()
            done: list[Parsed | tuple[Any, ...]] = list(records)
            for i, (record, run_key, run_id) in runs.items():
                if run_id in recorded:
                    continue
                header = record.header
                batches, content = serialized(record)
                events = self._run_events(system, run_id, record, source, content, group, batches)
                stored = [(mapper.to_stored_event(e), _weight(e)) for e in events]
                done[i] = tuple(
                    PreparedRun(
                        run_key=run_key,
                        run_id=run_id.bytes,
                        events=tuple(
                            (e.originator_id.bytes, s.originator_version, w, s.topic, s.state)
                            for e, (s, w) in zip(events, stored, strict=True)
                        ),
                        attempt=counted_attempt(record),
                        signature=header.signature,
                        benchmark=header.benchmark,
                        agent=header.agent,
                        unit=header.unit,
                        higher_is_better=header.higher_is_better,
                    )
                )
            return done

        return prepare

    def unchanged_rows(
        self,
        system: str,
        key: Callable[[Any], str | None] | None,
        digest: Callable[[Any], str] | None,
        *,
        forked: bool = False,
    ) -> Callable[[list[Any]], list[Any]] | None:
        """What tells, of a batch of a source's units (rows as it holds them: `Units`),
        those recorded as they are: each such unit is given back as an `UnchangedRow`,
        the others as they are. A unit is recorded as it is when the run its key names
        holds one event, a `RunImported` stating the unit's digest: the run was read from
        this very row and nothing happened to it since, so reading the row again would
        make the same record and find it unchanged. Or when the skip it states was
        noted from this very row (a `SkipNoted` stating its digest): a keyed skip noted
        is never recorded again. Anything else (a row that changed, a run corrected,
        amended, invalidated or given more facts, an event that states no digest) is
        read and compared as before. One query per batch; a unit's digest is worked out
        only where such an event is found for its key.

        `forked`: for any process (this one, or one forked from it), asking through a
        read-only connection of that process's own, which sees what is committed (a row
        stated twice in a file is read twice, and refused as before); None where the
        store has none (PostgreSQL). Else through the store, for this process only. None
        where the format or the store tells nothing, and where the ledger holds no event."""
        sole = self.sole_events_forked if forked else self.sole_events
        mapper = self.mapper
        if key is None or digest is None or sole is None or mapper.compressor or mapper.cipher:
            return None
        if not self.recorder.max_notification_id():
            # A ledger without events records no row yet: a first import asks nothing
            # (at 50,000 orchestrator rows: two ids for each, a lookup for each 500).
            return None
        imported = run_model.RunImported.TOPIC
        noted = result_import.SkipNoted.TOPIC

        def unchanged(units: list[Any]) -> list[Any]:
            keys = [key(unit) for unit in units]
            ids = {
                k: (run_id_for(system, k), natural_id("skip", system, k))
                for k in keys
                if k is not None
            }
            held = sole([i for pair in ids.values() for i in pair]) if ids else {}
            if not held:
                return units
            out: list[Any] = []
            for unit, k in zip(units, keys, strict=True):
                told = None
                if k is not None:
                    run_id, note_id = ids[k]
                    for event, topic, marker in (
                        (held.get(run_id), imported, run_id.bytes),
                        (held.get(note_id), noted, b""),
                    ):
                        if event is not None and event[0] == topic and _states_a_digest(event[1]):
                            if event[1].endswith(_states_digest(digest(unit))):
                                told = UnchangedRow(k, marker)
                            break  # the run's event, when it has one, decides
                out.append(unit if told is None else told)
            return out

        return unchanged

    def _import_once(
        self,
        system: str,
        source: SourceFile,
        items: Iterable[Parsed],
        group: GroupHandle | None,
        amend: bool,
        registered: set[UUID],
    ) -> ImportOutcome:
        """`registered`: given the ids of the benchmarks the import found or made
        registered (see `_unregistered`)."""
        import_id = import_id_for(source.sha256)
        # Options fill what a file does not say (`import --model`): a file recorded
        # already is read again when given some, and compared run by run (a model it
        # now names is a conflict, or with `amend` a correction); its import stays the
        # one first recorded, so reading it again without options changes nothing.
        recorded = self._first_event(import_id) is not None
        if recorded and not source.options:
            return ImportOutcome("unchanged", (), 0)
        outcomes = RunOutcomes()
        keys: set[str] = set()
        # The benchmarks of its new runs, each with the unit and direction of its first.
        new_benchmarks: dict[str, tuple[str | None, bool]] = {}
        # Skips and their notes not saved yet: saved with the next run's events, so that
        # memory holds those of a batch, not of the file.
        pending: list[SkipRecord] = []
        notes: list[Event] = []
        seen_skips: set[str] = set()
        if isinstance(items, Sequence):
            # Skips known up front open the group with the first write, as they always did.
            self._new_skips(system, items, group, pending, notes, seen_skips)
        skipped = len(pending)
        # The attempts the source counted, by signature: small, and needed at the end.
        counted = CountedAttempts()
        for skip in pending:
            counted.skip(skip)
        appended = 0
        for item in self._looked_up(system, items):
            if is_unchanged_row(item):  # a row recorded as it is: not read again
                unchanged = UnchangedRow._make(item)
                if not unchanged.run_id:  # a skip, noted: as a recorded keyed skip is
                    continue
                if unchanged.run_key in keys:
                    raise ImportConflictError(
                        f"{source.path}: run '{unchanged.run_key}' appears twice in one file"
                    )
                keys.add(unchanged.run_key)
                outcomes.append(
                    RunOutcome(UUID(bytes=unchanged.run_id), unchanged.run_key, "unchanged")
                )
                continue
            if isinstance(item, tuple):  # a new run, made into its events where it was read
                prepared = PreparedRun._make(item)
                run_id = UUID(bytes=prepared.run_id)
                if prepared.run_key in keys:
                    raise ImportConflictError(
                        f"{source.path}: run '{prepared.run_key}' appears twice in one file"
                    )
                keys.add(prepared.run_key)
                if self._first_event(run_id) is not None:
                    # Another writer recorded it after it was read: decide again.
                    raise ConcurrencyError(
                        f"{source.path}: run '{prepared.run_key}' was recorded meanwhile"
                    )
                outcomes.append(RunOutcome(run_id, prepared.run_key, "imported"))
                new_benchmarks.setdefault(
                    prepared.benchmark, (prepared.unit, prepared.higher_is_better)
                )
                counted.prepared(prepared, run_id)
                appended += self._append(prepared.stored(), group, pending, notes, system)
                continue
            if isinstance(item, GroupRecord):
                group_events = self._source_group(system, item)
                if group_events:
                    appended += self._append(group_events, group, pending, notes, system)
                continue
            if isinstance(item, SkipRecord):
                if not isinstance(items, Sequence):
                    known = len(pending)
                    self._new_skips(system, [item], group, pending, notes, seen_skips)
                    for skip in pending[known:]:
                        counted.skip(skip)
                    skipped += len(pending) - known
                    if len(pending) >= CELL_BATCH and group is not None:  # no run among them
                        appended += self._append([], group, pending, notes, system)
                continue
            record = item
            run_key = record.header.natural_key()
            batches, content = serialized(record)
            base_id = run_id_for(system, run_key)
            if run_key in keys:
                raise ImportConflictError(
                    f"{source.path}: run '{run_key}' appears twice in one file"
                )
            keys.add(run_key)
            current = self._current_version(base_id)
            if current is None and (own := self._own_run(run_key)) is not None:
                # A row this ledger exported (`export-latest`, a comparison file): its
                # run_id is the id of a run executed here, and it is that run.
                base_id, current = own.id, own
            if current is not None and current.content_sha256 == content:
                outcomes.append(RunOutcome(current.id, run_key, "unchanged"))
                continue
            if current is not None:
                added, conflicts = self._merge(current, record, source)
                if not conflicts:
                    kept: Literal["merged", "unchanged"] = "merged" if added else "unchanged"
                    outcomes.append(RunOutcome(current.id, run_key, kept))
                    if added:
                        appended += self._append(added, group, pending, notes, system)
                    continue
                if not amend:
                    more = f" (and {len(conflicts) - 3} more)" if len(conflicts) > 3 else ""
                    raise ImportConflictError(
                        f"{source.path}: run '{run_key}' is already recorded with other "
                        f"facts: {'; '.join(str(c) for c in conflicts[:3])}{more}. Nothing "
                        "was appended; `import --amend` records the new version as a "
                        "correction"
                    )
            events: list[Event] = []
            run_id = base_id
            if current is not None:
                amended_key = f"{run_key}#amended:{content[:16]}"
                run_id = run_id_for(system, amended_key)
                events.append(
                    run_rules.supersede(
                        current,
                        run_id,
                        f"amended by {source.path}",
                        "import --amend",
                        source.sha256,
                    )
                )
            events.extend(self._run_events(system, run_id, record, source, content, group, batches))
            outcomes.append(
                RunOutcome(run_id, run_key, "imported" if current is None else "amended")
            )
            header = record.header
            new_benchmarks.setdefault(header.benchmark, (header.unit, header.higher_is_better))
            counted.run(record, run_id)
            appended += self._append(events, group, pending, notes, system)
        if not appended and not skipped:
            # Every run is already recorded with this content: the file adds no facts.
            return ImportOutcome("unchanged", outcomes, 0)
        if skipped and group is None:
            raise RuleViolationError(f"{source.path}: skips are recorded on a run group")
        # The attempts' events saved as they are made: together they hold every run.
        for attempts in counted.events(self._signature_stream, self.streams_present):
            appended += self._append([attempts], group, pending, notes, system)
        closing: list[Event] = []
        unregistered = self._unregistered(sorted(new_benchmarks), registered)
        for name in unregistered:
            unit, higher_is_better = new_benchmarks[name]
            registering = benchmark_model.register(
                benchmark_id_for(name), None, name, unit=unit, higher_is_better=higher_is_better
            )
            assert registering is not None
            closing.append(registering)
            registered.add(registering.originator_id)
        if not recorded:
            closing.append(
                result_import.imported(
                    import_id,
                    format=source.format,
                    path=source.path,
                    sha256=source.sha256,
                    size=source.size,
                    run_ids=outcomes.run_ids(),
                    run_group_id=group.id if group else None,
                )
            )
        appended += self._append(closing, group, pending, notes, system)
        if group is not None:
            for outcome, n in outcomes.counts().items():
                group.count(outcome, n)
            group.count("skipped", skipped)
        changed = outcomes.changed()
        state: Literal["imported", "unchanged"] = "imported" if changed or skipped else "unchanged"
        return ImportOutcome(state, outcomes, appended)

    def _unregistered(self, names: list[str], registered: set[UUID]) -> list[str]:
        """Those of the benchmarks `names` that are not registered yet (as committed), in
        order; the ids of the others are added to `registered`. A benchmark this ledger
        has seen registered is not asked of the store again, since events are never
        deleted; the others are asked in one query where the store allows. One seen
        unregistered is asked again by the next import: another writer may register it."""
        known = self._registered_benchmarks
        ids = {name: benchmark_id_for(name) for name in names}
        asked = [i for i in ids.values() if i not in known]
        if not asked:
            found: set[UUID] = set()
        elif self.streams_present is not None:
            found = self.streams_present(asked)
        else:
            found = {i for i in asked if self._first_event(i) is not None}
        registered.update(found)
        return [name for name, i in ids.items() if i not in known and i not in found]

    @cached_property
    def _registered_benchmarks(self) -> set[UUID]:
        """The ids of the benchmarks this ledger has seen registered, as committed."""
        return set()

    def _append(
        self,
        events: list[Event],
        group: GroupHandle | None,
        skips: list[SkipRecord],
        notes: list[Event],
        system: str,
    ) -> int:
        """Save the events with the skips and notes waiting (and forget those); how many
        events that saved."""
        saved = len(events) + len(skips) + len(notes)
        group_events = [self._skip_event(group, s, system) for s in skips]
        self._save_with_group([*notes, *events], group, group_events)
        skips.clear()
        notes.clear()
        return saved

    def _merge(
        self, current: Run, record: RunRecord, source: SourceFile
    ) -> tuple[list[Event], list[facts.Conflict]]:
        """The events that add what `record` states beyond the recorded run, or the
        facts it states differently (`domain.facts`)."""
        held = facts.recorded(self._stream(current.id))
        new = facts.stated(record)
        added, conflicts = facts.compare(held.facts, new)
        if record.cells:
            digests = {c.key: c.digest() for c in record.cells}
            if digests != held.cells:
                conflicts.append(
                    facts.Conflict(
                        "cells",
                        f"{len(held.cells)} cells",
                        f"{len(digests)} cells"
                        + (
                            " (same keys, other payloads)"
                            if digests.keys() == held.cells.keys()
                            else ""
                        ),
                    )
                )
        if conflicts:
            return [], conflicts
        events: list[Event] = []
        version = current.version
        if added:
            # An added benchmark, agent, provider or model fills a placeholder: the run's
            # identity, and so its signatures, change. They are the run's, not the file's
            # (whose own placeholders name nothing).
            identity = held.identity_after(added)
            renamed = identity != held.identity
            resigned = "config" in added or record.header.work_signature is not None or renamed
            header = facts.identified(record.header, identity) if resigned else record.header
            version += 1
            events.append(
                run_model.RunFactsAdded(
                    originator_id=current.id,
                    originator_version=version,
                    facts=added,
                    signature=header.signature if resigned else None,
                    comparison_signature=header.comparison_signature if resigned else None,
                    identity=identity if renamed else None,
                    source_format=source.format,
                    source_path=source.path,
                    source_sha256=source.sha256,
                )
            )
        if record.turns and not held.turns:
            for i in range(0, len(record.turns), CELL_BATCH):
                version += 1
                events.append(
                    run_model.TrajectoryRecorded(
                        originator_id=current.id,
                        originator_version=version,
                        turns=record.turns[i : i + CELL_BATCH],
                    )
                )
        return events, []

    def _signature_stream(self, signature: str) -> signature_model.Signature | None:
        try:
            found: signature_model.Signature = self.repository.get(
                signature_id_for(signature), projector_func=signature_model.project
            )
        except AggregateNotFoundError:
            return None
        return found

    def _source_group(self, system: str, record: GroupRecord) -> list[Event]:
        """The events recording a source's own run group, or finishing one recorded open."""
        group_id = group_model.source_group_id(system, record.group_key)
        if self._first_event(group_id) is None:
            return group_model.source_group(group_id, record)
        if record.closed_at is None:
            return []
        current: group_model.RunGroup = self._get(
            group_id, _project(group_model.mutate), "run group"
        )
        if current.closed:
            return []
        return [group_model.finish_source_group(group_id, current.version + 1, record)]

    def _own_run(self, run_key: str) -> Run | None:
        """The run executed in this ledger whose id the key is, as this ledger's exports
        state it (never a key the source system made: those are not its run ids)."""
        run_id = own_run_id(run_key)
        if run_id is None:
            return None
        first = self._first_event(run_id)
        if not isinstance(first, RunStarted) or first.source != "executed":
            return None
        return self._current_version(run_id)

    def _current_version(self, run_id: UUID) -> Run | None:
        """The run recorded under this key, following amendments to the newest version."""
        if self._first_event(run_id) is None:
            return None
        run = self.get_run(run_id)
        while run.superseded_by is not None:
            run = self.get_run(run.superseded_by)
        return run

    def _new_skips(
        self,
        system: str,
        items: Iterable[Parsed],
        group: GroupHandle | None,
        skips: list[SkipRecord],
        notes: list[Event],
        seen: set[str],
    ) -> None:
        """Add the skips not recorded yet, and the notes that mark keyed ones as recorded."""
        for item in items:
            if not isinstance(item, SkipRecord):
                continue
            if item.skip_key is not None:
                note_id = natural_id("skip", system, item.skip_key)
                if item.skip_key in seen or self._first_event(note_id) is not None:
                    continue
                seen.add(item.skip_key)
                if group is not None:
                    notes.append(
                        result_import.SkipNoted(
                            originator_id=note_id,
                            originator_version=1,
                            system=system,
                            skip_key=item.skip_key,
                            run_group_id=group.id,
                            source_row_sha256=item.source_row_sha256,
                        )
                    )
            skips.append(item)

    @staticmethod
    def _skip_event(
        group: GroupHandle | None, skip: SkipRecord, system: str
    ) -> Callable[[int], Event]:
        def build(version: int) -> Event:
            assert group is not None
            return group_model.BenchmarkSkipped(
                originator_id=group.id,
                originator_version=version,
                benchmark=skip.benchmark,
                agent=skip.agent,
                provider=skip.provider,
                model=skip.model,
                signature=skip.signature,
                reason=skip.reason,
                detail=skip.detail,
                skipped_at=skip.skipped_at,
                attempt=skip.attempt,
                provenance=skip.provenance,
                source_group=group_model.source_group_id(system, skip.group_key)
                if skip.group_key
                else None,
            )

        return build

    def _run_events(
        self,
        system: str,
        run_id: UUID,
        record: RunRecord,
        source: SourceFile,
        content: str,
        group: GroupHandle | None,
        batches: list[bytes] | None = None,
    ) -> list[Event]:
        where = f"{source.path}: run '{record.header.natural_key()}'"
        cells = run_rules.unique_cells(record.cells, where=where)
        run_group_id = (
            group_model.source_group_id(system, record.group_key)
            if record.group_key
            else group.id
            if group
            else None
        )
        # A run that ended as its source states is one event, with its turns when they
        # fit in one batch; a recovered one is started, recovered and given its facts.
        turns = record.turns if len(record.turns) <= CELL_BATCH else ()
        whole = run_rules.imported(
            run_id,
            record,
            source_file=source,
            run_group_id=run_group_id,
            content_sha256=content,
            turns=turns,
        )
        events: list[Event] = [
            whole
            if whole is not None
            else run_rules.start(
                run_id,
                record,
                source="imported",
                source_file=source,
                run_group_id=run_group_id,
                content_sha256=content,
            )
        ]
        # `batches` are the record's cells serialized: theirs while no repeat was dropped.
        serialized = batches is not None and len(cells) == len(record.cells)
        for k, i in enumerate(range(0, len(cells), CELL_BATCH)):
            batch = cells_value(cells[i : i + CELL_BATCH])
            version = len(events) + 1
            events.append(
                run_model.CellsRecorded.serialized(run_id, version, batch, batches[k])
                if serialized and batches is not None
                else run_model.CellsRecorded(
                    originator_id=run_id, originator_version=version, cells=batch
                )
            )
        if whole is None or not turns:  # turns it does not hold: in batches
            for i in range(0, len(record.turns), CELL_BATCH):
                events.append(
                    run_model.TrajectoryRecorded(
                        originator_id=run_id,
                        originator_version=len(events) + 1,
                        turns=record.turns[i : i + CELL_BATCH],
                    )
                )
        if whole is None:
            events.extend(run_rules.finish_from_record(run_id, len(events) + 1, record))
        return events
