"""The RunGroup aggregate: one CLI invocation that ran or imported several runs."""

from __future__ import annotations

from datetime import datetime
from functools import singledispatch
from typing import Any, Literal
from uuid import UUID

from pydantic import Field

from benchledger.domain.base import Aggregate, Event
from benchledger.domain.errors import RuleViolationError
from benchledger.domain.records import GroupRecord
from benchledger.domain.signatures import natural_id

GroupKind = Literal["run", "import", "demo", "source"]


class RunGroupOpened(Event):
    """A group opened: by a benchledger invocation (run, import, demo), or a source
    system's own group recorded from its records (`source`: the orchestrator's
    run_groups), with the time it opened and what else the source states of it."""

    label: str
    kind: GroupKind
    request: dict[str, Any] = Field(default_factory=dict)
    selection: list[str] = Field(default_factory=list)
    repo_meta: dict[str, Any] = Field(default_factory=dict)
    opened_at: datetime | None = None
    source: dict[str, Any] = Field(default_factory=dict)


class BenchmarkSkipped(Event):
    """A benchmark this invocation chose not to run: never a run, never an attempt."""

    benchmark: str
    agent: str
    provider: str
    model: str
    signature: str
    reason: str
    defer_to: UUID | None = None
    detail: str | None = None
    # As the source states them, for a skip imported from another system's records:
    # when it decided, the attempt it counted, and whatever else it said.
    skipped_at: datetime | None = None
    attempt: int | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)
    # The source system's own run group the skip was decided in, when it keeps them (an
    # orchestrator row's run_group_id); the skip itself is recorded on the import's group.
    source_group: UUID | None = None
    # For work the runner skipped: its effective config (secrets masked) and comparison
    # signature (of the real config), as a run of that work would state them.
    config: dict[str, Any] | None = None
    comparison_signature: str | None = None
    # For an agent the benchmark does not support: the agents it supports.
    supported_agents: list[str] | None = None


class LaunchRefused(Event):
    """A benchmark that could not be launched (e.g. missing environment): a failure."""

    benchmark: str
    agent: str
    provider: str
    model: str
    signature: str
    reason: str
    missing_env: list[str] = Field(default_factory=list)
    detail: str | None = None
    # The runtime-gate requirements (a registry entry's `requires`) this host did not
    # meet, as declared: `docker`, `env:NAME`, `command:NAME`, `path:PATH`.
    missing_requirements: list[str] = Field(default_factory=list)


class RunGroupClosed(Event):
    """The invocation ended; `interrupted` when recovery closed it for a process that
    stopped without closing it (a later close by that process is still recorded)."""

    summary: dict[str, int] = Field(default_factory=dict)
    interrupted: bool = False
    actor: str | None = None
    detail: str | None = None
    # For a source's group: when it says the group finished, and its final status.
    closed_at: datetime | None = None
    status: str | None = None


class RunGroup(Aggregate):
    label: str
    closed: bool = False
    interrupted: bool = False


@singledispatch
def mutate(event: Event, group: RunGroup | None) -> RunGroup | None:
    raise TypeError(f"RunGroup cannot apply {type(event).__name__}")


@mutate.register
def _(event: RunGroupOpened, group: None) -> RunGroup:
    return RunGroup(
        id=event.originator_id,
        version=event.originator_version,
        created_on=event.timestamp,
        modified_on=event.timestamp,
        label=event.label,
    )


@mutate.register
def _(event: BenchmarkSkipped | LaunchRefused, group: RunGroup) -> RunGroup:
    return group.advanced(event)  # type: ignore[no-any-return]


@mutate.register
def _(event: RunGroupClosed, group: RunGroup) -> RunGroup:
    return group.advanced(  # type: ignore[no-any-return]
        event, closed=True, interrupted=event.interrupted
    )


def open_group(
    group_id: UUID,
    label: str,
    kind: GroupKind,
    *,
    request: dict[str, Any] | None = None,
    selection: list[str] | None = None,
    repo_meta: dict[str, Any] | None = None,
) -> RunGroupOpened:
    return RunGroupOpened(
        originator_id=group_id,
        originator_version=1,
        label=label,
        kind=kind,
        request=request or {},
        selection=selection or [],
        repo_meta=repo_meta or {},
    )


def source_group_id(system: str, group_key: str) -> UUID:
    """A source system's own run group, by its key (the orchestrator's run_group_id)."""
    return natural_id("run-group", system, group_key)


def source_group(group_id: UUID, record: GroupRecord) -> list[Event]:
    """The events recording a source system's own run group (opened, and closed if it
    finished)."""
    events: list[Event] = [
        RunGroupOpened(
            originator_id=group_id,
            originator_version=1,
            label=record.group_key,
            kind="source",
            request=record.request,
            selection=record.selection,
            repo_meta=record.repo_meta,
            opened_at=record.opened_at,
            source={**record.facts, **({"status": record.status} if record.status else {})},
        )
    ]
    if record.closed_at is not None:
        events.append(finish_source_group(group_id, 2, record))
    return events


def finish_source_group(group_id: UUID, version: int, record: GroupRecord) -> RunGroupClosed:
    return RunGroupClosed(
        originator_id=group_id,
        originator_version=version,
        actor="import",
        closed_at=record.closed_at,
        status=record.status,
    )


def close_group(group: RunGroup, summary: dict[str, int]) -> RunGroupClosed:
    """The invocation's own close; after a recovery's close it is the final truth."""
    if group.closed and not group.interrupted:
        raise RuleViolationError(f"run group {group.label} is already closed")
    return close_own_group(group.id, group.version, summary)


def close_own_group(group_id: UUID, version: int, summary: dict[str, int]) -> RunGroupClosed:
    """The close of a group whose last event is the invocation's own, at `version`: it is
    open (only the invocation or a recovery closes it), so nothing needs reading back."""
    return RunGroupClosed(originator_id=group_id, originator_version=version + 1, summary=summary)


def is_stale(
    group: RunGroup, last_activity: datetime | None, now: datetime, age_cutoff: float
) -> bool:
    """Open, and nothing heard of it or of its runs for `age_cutoff` seconds."""
    if group.closed:
        return False
    heard = max(group.modified_on, last_activity or group.modified_on)
    return (now - heard).total_seconds() >= age_cutoff


def interrupt(group: RunGroup, now: datetime, age_cutoff: float, actor: str) -> RunGroupClosed:
    """Close a group its process left open (killed after its last write)."""
    if group.closed:
        raise RuleViolationError(f"run group {group.label} is already closed")
    quiet = (now - group.modified_on).total_seconds()
    return RunGroupClosed(
        originator_id=group.id,
        originator_version=group.version + 1,
        interrupted=True,
        actor=actor,
        detail=f"left open by its process; nothing heard for {age_cutoff:g} s or more "
        f"(group quiet for {quiet:.0f} s)",
    )
