"""Pydantic events in eventsourcing's store: a mapper and a pydantic-core transcoder."""

from __future__ import annotations

from typing import Any, cast

import pydantic_core
from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import Mapper, StoredEvent, Transcoder
from eventsourcing.utils import get_topic, register_topic, resolve_topic

from benchledger import domain
from benchledger.domain.base import PACKAGE, Event
from benchledger.domain.ledger_base import PreparedEvent
from benchledger.domain.topics import CELLS_RECORDED

# Stored topics say `domain.<module>:<Event>` (see Event.TOPIC): resolve them in the
# installed namespace, never as a top-level `domain` package.
register_topic(domain.__name__.removeprefix(PACKAGE + "."), domain)


class PydanticTranscoder(Transcoder):
    """JSON through pydantic-core: fast, and it knows UUIDs and datetimes."""

    def encode(self, obj: Any) -> bytes:
        return pydantic_core.to_json(obj)

    def decode(self, data: bytes) -> Any:
        return pydantic_core.from_json(data)


class PydanticMapper(Mapper[Any]):
    """Stores an event as its own JSON; upcasts older class versions on the way back."""

    def to_stored_event(self, domain_event: DomainEventProtocol[Any]) -> StoredEvent:
        if type(domain_event) is PreparedEvent:  # made by this mapper where it was read
            return cast(StoredEvent, domain_event.stored)
        event = cast(Event, domain_event)
        cls = type(event)
        if cls.class_version > 1:
            state: dict[str, Any] = event.model_dump(mode="json")
            state["class_version"] = cls.class_version
            data = self.transcoder.encode(state)
        elif cls.TOPIC == CELLS_RECORDED and (cells := cast(Any, event).cells_json):
            # Cells serialized already (to hash them) are written as they are; `cells` is
            # the event's last field, so its JSON is the rest plus them.
            head = cls.__pydantic_serializer__.to_json(event, exclude={"cells"})
            data = b"".join((head[:-1], b',"cells":', cells, b"}"))
        else:
            data = cls.__pydantic_serializer__.to_json(event)
        if self.compressor:
            data = self.compressor.compress(data)
        if self.cipher:
            data = self.cipher.encrypt(data)
        return StoredEvent(
            originator_id=event.originator_id,
            originator_version=event.originator_version,
            topic=get_topic(cls),
            state=data,
        )

    def to_domain_event(self, stored_event: StoredEvent) -> DomainEventProtocol[Any]:
        data = stored_event.state
        if self.cipher:
            data = self.cipher.decrypt(data)
        if self.compressor:
            data = self.compressor.decompress(data)
        cls = cast(type[Event], resolve_topic(stored_event.topic))
        return decode_event(cls, data, self.transcoder)


def decode_event(cls: type[Event], data: bytes, transcoder: Transcoder) -> Event:
    if cls.class_version == 1:
        return cls.model_validate_json(data)
    state = transcoder.decode(data)
    version = state.pop("class_version", 1)
    while version < cls.class_version:
        getattr(cls, f"upcast_v{version}_v{version + 1}")(state)
        version += 1
    return cls.model_validate(state)
