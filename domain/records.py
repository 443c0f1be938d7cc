"""Value objects for what a run reports: its header and its cells."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from benchledger.domain.cells import Cell, CellRows, Cells, cells_json
from benchledger.domain.config_memo import Memo, config_key, flat_key
from benchledger.domain.record_base import (
    CELL_OUTCOMES,
    CellOutcome,
    FiniteFloat,
    NonEmptyStr,
    Record,
    Score,
    TokenCount,
)
from benchledger.domain.secrets import mask_config
from benchledger.domain.signatures import comparison_signature, sha256_hex, signature, work_key

# Records and their values are named from here, wherever they are defined.
__all__ = [
    "CELL_OUTCOMES",
    "FINISHED_STATUSES",
    "LATER_FIELDS",
    "OPEN_STATUSES",
    "Cell",
    "CellOutcome",
    "CellRows",
    "FiniteFloat",
    "GroupRecord",
    "Memoized",
    "NonEmptyStr",
    "Record",
    "RunHeader",
    "RunRecord",
    "RunStatus",
    "Score",
    "SkipRecord",
    "SourceFile",
    "TokenCount",
    "Turn",
    "cells_json",
]


# Per distinct config (`config_memo`): an import's runs share a few hundred.
_SIGNATURES = Memo()
_COMPARISON_SIGNATURES = Memo()
_MASKED = Memo()


class RunStatus(StrEnum):
    RUNNING = "running"
    # Its lease expired and it was recovered; its process may still finish it later.
    RECOVERED = "recovered"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    ERROR = "error"


OPEN_STATUSES = (RunStatus.RUNNING, RunStatus.RECOVERED)
FINISHED_STATUSES = tuple(s for s in RunStatus if s not in OPEN_STATUSES)


class Memoized(Record):
    """A record that keeps what it derives from its own fields (its JSON, signatures):
    it is frozen, so they cannot change. Derived once where it was parsed, they travel
    with it (pickled, from a reading process to the importing one); equality and the
    hash ignore them, as they are not the record's value."""

    _derived: dict[str, Any] = PrivateAttr(default_factory=dict)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BaseModel):
            return NotImplemented
        return type(other) is type(self) and self.__dict__ == other.__dict__

    __hash__ = Record.__hash__

    def _derive(self, name: str, make: Callable[[], Any]) -> Any:
        # Read from the private values directly: `self._derived` goes through pydantic's
        # __getattr__, which costs more than most of what is derived.
        derived = self.__pydantic_private__["_derived"]  # type: ignore[index]
        if name not in derived:
            derived[name] = make()
        return derived[name]


class RunHeader(Memoized):
    """What a result source says about one run, before its cells."""

    run_key: NonEmptyStr | None = None
    benchmark: NonEmptyStr
    agent: NonEmptyStr
    provider: str = ""
    model: NonEmptyStr
    config: dict[str, Any] = Field(default_factory=dict)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    status: RunStatus
    score: Score | None = None
    unit: str | None = None
    higher_is_better: bool = True
    metrics: dict[str, Any] = Field(default_factory=dict)
    tokens: dict[str, TokenCount] = Field(default_factory=dict)
    error: str | None = None
    # What the source system itself says about the run: its ids, signature, flags.
    provenance: dict[str, Any] = Field(default_factory=dict)
    # The duration the source measured, when it states one (else it is ended - started).
    duration_seconds: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    # The source system's own signature of the work, when it computes one by the
    # ledger's algorithm (the orchestrator): the run's signature, as stated.
    work_signature: str | None = None
    # The benchmark's directory, where the source names it: part of the signature.
    directory: str | None = None

    @field_validator("status")
    @classmethod
    def _finished(cls, value: RunStatus) -> RunStatus:
        if value is RunStatus.RUNNING:
            raise ValueError("a recorded run must have ended, not be 'running'")
        return value

    def json_bytes(self) -> bytes:
        return self._derive("json", self._json_bytes)  # type: ignore[no-any-return]

    def _json_bytes(self) -> bytes:
        # Fields added later are left out while unset, so that a header that does not
        # use them hashes as it always did (existing ledgers recognise their runs).
        unset = {name for name in LATER_FIELDS if getattr(self, name) is None}
        return self.__pydantic_serializer__.to_json(self, exclude=unset or None)

    @property
    def signature(self) -> str:
        if self.work_signature is not None:
            return self.work_signature
        return self._derive("signature", self._signature)  # type: ignore[no-any-return]

    def _signature(self) -> str:
        args = (self.benchmark, self.agent, self.provider, self.model)
        return _SIGNATURES.get(
            config_key(self.config, *args, self.directory),
            lambda: signature(*args, self.config, directory=self.directory),
        )

    @property
    def comparison_signature(self) -> str:
        return self._derive(  # type: ignore[no-any-return]
            "comparison_signature", self._comparison_signature
        )

    def _comparison_signature(self) -> str:
        args = (self.benchmark, self.provider, self.model)
        return _COMPARISON_SIGNATURES.get(
            config_key(self.config, *args, self.directory, self.agent),
            lambda: comparison_signature(
                *args, self.config, directory=self.directory, agent=self.agent
            ),
        )

    @property
    def masked_config(self) -> dict[str, Any]:
        """The config as a run records it (`secrets.mask_config`): a new dict each time,
        whose nested values are shared (what holds them, an event, is frozen)."""
        masked = self._derive(
            "masked_config",
            lambda: _MASKED.get(flat_key(self.config), lambda: mask_config(self.config)),
        )
        return dict(masked)

    def natural_key(self) -> str:
        """The run's key within its source: given, or derived from who ran what when."""
        if self.run_key:
            return self.run_key
        started = self.started_at.isoformat() if self.started_at else ""
        work = work_key(self.benchmark, self.agent, self.provider, self.model, self.config)
        return f"{work}@{started}"


LATER_FIELDS = ("duration_seconds", "work_signature", "directory")


class Turn(Record):
    """One model call of a run's trajectory, as the source measured it."""

    trajectory_file: str
    turn_index: int
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cached_tokens: int | None = None
    cache_creation_tokens: int | None = None
    latency_ms: float | None = None
    prompt_chars: int | None = None

    @property
    def key(self) -> str:
        """The turn's place in the run: its trajectory and index, unique within the run."""
        return f"{self.turn_index}:{self.trajectory_file}"

    def digest(self) -> str:
        """Short fingerprint of the payload, to tell a repeat from a conflict."""
        return sha256_hex(self.json_bytes())[:16]


class RunRecord(Memoized):
    """One run as a result source states it: header plus cells."""

    # Cells kept as rows (`CellRows`) are held as they are.
    model_config = ConfigDict(arbitrary_types_allowed=True)

    header: RunHeader
    cells: Cells = ()
    # Its trajectory's turns, where the source keeps them (the orchestrator's database):
    # recorded with the run, but not part of its content, so a source without them
    # (a latest/ row) states the same run.
    turns: tuple[Turn, ...] = Field(default=(), exclude=True)
    # What only some of a source system's files state about the run (its own signature,
    # full config, exact times...): recorded from the first file that brings the run,
    # but not part of its content, so a sparser file stating the same run agrees with it.
    supplement: dict[str, Any] = Field(default_factory=dict, exclude=True)
    # The source system's own run group the run belongs to (its key), when it keeps
    # them (the orchestrator's run_groups): the run is recorded in that group.
    group_key: str | None = Field(default=None, exclude=True)
    # What the importer filled in because the source is silent (`facts.unstated`): header
    # field names (`model`) and provenance keys (`provenance.tags`). Placeholders, not
    # facts: a later source that states them fills them, and they never conflict. Not part
    # of the run's content, so a run recorded before marks existed keeps its hash.
    placeholders: tuple[str, ...] = Field(default=(), exclude=True)
    # The digest of the source row it was read from, where its format gives one
    # (`RunImported.source_row_sha256`): not part of its content.
    source_row_sha256: str | None = Field(default=None, exclude=True)

    def content_sha256(self, cell_batches: Sequence[bytes] | None = None) -> str:
        """Fingerprint of the run's content: fields in model order, independent of layout.

        `cell_batches`: the cells already serialized (`cells_json` of consecutive slices),
        hashed as they are instead of serialized again; the digest is the same.
        """
        if cell_batches is None:
            return self._derive(  # type: ignore[no-any-return]
                "content_sha256", lambda: self.content_sha256([cells_json(self.cells)])
            )
        digest = hashlib.sha256(b'{"header":')
        digest.update(self.header.json_bytes())
        digest.update(b',"cells":[')
        for i, batch in enumerate(cell_batches):
            if i:
                digest.update(b",")
            digest.update(batch[1:-1])  # the array's items, without its brackets
        digest.update(b"]}")
        return digest.hexdigest()


class SkipRecord(Record):
    """A source's record of work it chose not to run (skipped, incompatible): never a run."""

    benchmark: NonEmptyStr
    agent: NonEmptyStr
    provider: str = ""
    model: str = ""
    config: dict[str, Any] = Field(default_factory=dict)
    reason: NonEmptyStr
    detail: str | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)
    # When the source decided it and the attempt it counted, when it says.
    skipped_at: datetime | None = None
    attempt: int | None = None
    # The source's own id for this skip, so the same skip stated by several of the
    # source's files is recorded once.
    skip_key: str | None = None
    # The source system's signature of the work (as RunHeader.work_signature).
    work_signature: str | None = None
    # The source system's own run group the skip was decided in (as RunRecord.group_key).
    group_key: str | None = Field(default=None, exclude=True)
    # The digest of the source row it was read from (as RunRecord.source_row_sha256).
    source_row_sha256: str | None = Field(default=None, exclude=True)

    @property
    def signature(self) -> str:
        if self.work_signature is not None:
            return self.work_signature
        return signature(self.benchmark, self.agent, self.provider, self.model, self.config)


class GroupRecord(Record):
    """A source system's own run group (the orchestrator's run_groups row): one
    invocation of that system, with what it was asked to do and how it ended."""

    group_key: NonEmptyStr
    opened_at: datetime | None = None
    closed_at: datetime | None = None
    # What the invocation was asked (benchmarks, agent, provider, model, extra config,
    # flags), the benchmarks it selected, and the code it ran (commits, versions).
    request: dict[str, Any] = Field(default_factory=dict)
    selection: list[str] = Field(default_factory=list)
    repo_meta: dict[str, Any] = Field(default_factory=dict)
    # How the source says it ended (the orchestrator's cohort_status), and the rest it
    # states (execution namespace and contract, pause state, storage preflight...).
    status: str | None = None
    facts: dict[str, Any] = Field(default_factory=dict)


class SourceFile(Record):
    """Provenance of an imported file."""

    path: str
    sha256: str
    size: int
    format: str
    # What the importer was told for what files do not say (`import --model` ...): the
    # same file read with other options may state other facts (`Importing`).
    options: dict[str, str] = Field(default_factory=dict)
