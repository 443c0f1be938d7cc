"""The RunGroup aggregate: one CLI invocation that ran or imported several runs."""

from __future__ import annotations

from functools import singledispatch
from typing import Any, Literal
from uuid import UUID

from pydantic import Field

from benchledger.domain.base import Aggregate, Event
from benchledger.domain.errors import RuleViolationError


class RunGroupOpened(Event):
    label: str
    kind: Literal["run", "import", "demo"]
    request: dict[str, Any] = Field(default_factory=dict)
    selection: list[str] = Field(default_factory=list)
    repo_meta: dict[str, str] = Field(default_factory=dict)


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


class RunGroupClosed(Event):
    summary: dict[str, int] = Field(default_factory=dict)


class RunGroup(Aggregate):
    label: str
    closed: bool = False


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
    return group.advanced(event, closed=True)  # type: ignore[no-any-return]


def open_group(
    group_id: UUID,
    label: str,
    kind: Literal["run", "import", "demo"],
    *,
    request: dict[str, Any] | None = None,
    selection: list[str] | None = None,
    repo_meta: dict[str, str] | None = None,
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


def close_group(group: RunGroup, summary: dict[str, int]) -> RunGroupClosed:
    if group.closed:
        raise RuleViolationError(f"run group {group.label} is already closed")
    return RunGroupClosed(
        originator_id=group.id, originator_version=group.version + 1, summary=summary
    )
