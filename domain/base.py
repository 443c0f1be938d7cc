"""Immutable pydantic building blocks for events and aggregates."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

PACKAGE = "benchledger"


def utc_now() -> datetime:
    return datetime.now(UTC)


def _unset(value: Any) -> bool:
    return value is None


def written_when_set() -> Any:
    """An optional field (None by default) that an event's stored JSON holds only when it
    is set: events that leave it unset are stored byte for byte as before it existed."""
    return Field(default=None, exclude_if=_unset)


class Immutable(BaseModel):
    # Validators and serializers are built on first use, not when the module loads: a
    # command opening the event store imports every event and aggregate class but uses
    # a few (a gate recording its verdict: ~7% less CPU). Safe across threads from
    # pydantic 2.14, which builds a model under a lock. tests/unit/test_models_build.py
    # builds every one.
    model_config = ConfigDict(
        extra="forbid", frozen=True, ser_json_inf_nan="strings", defer_build=True
    )


class Event(Immutable):
    """A fact appended to one aggregate's stream; named in the past tense."""

    originator_id: UUID
    originator_version: int
    timestamp: datetime = Field(default_factory=utc_now)

    # Bump when an event's schema changes and add an upcast_vN_vN+1 method.
    class_version: ClassVar[int] = 1

    # The stored topic names an event by its module inside the project
    # (`domain.run:RunStarted`), not by where the package happens to be installed,
    # so a ledger's events keep their names when the install layout changes.
    TOPIC: ClassVar[str]

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls.TOPIC = f"{cls.__module__.removeprefix(PACKAGE + '.')}:{cls.__qualname__}"

    @classmethod
    def event_type(cls) -> str:
        return cls.__name__


class Aggregate(Immutable):
    """Small, immutable aggregate state rebuilt by a projector function."""

    id: UUID
    version: int
    created_on: datetime
    modified_on: datetime

    def advanced(self, event: Event, **changes: Any) -> Any:
        """The next state of this aggregate after `event`."""
        return self.model_copy(
            update={
                "version": event.originator_version,
                "modified_on": event.timestamp,
                **changes,
            }
        )
