"""An event's name and time read from its stored text are what decoding it gives: the
`events` read model holds the same rows whether its fold decodes an event or not."""

from __future__ import annotations

import enum
import hashlib
import importlib
import pkgutil
import types
import typing
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, cast

import pytest
from eventsourcing.compressor import ZlibCompressor
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from benchledger import domain
from benchledger.adapters.store.eventstore import PydanticMapper, PydanticTranscoder
from benchledger.adapters.store.projection_runner import (
    TIMESTAMP,
    ProjectionRunner,
    stored_time,
)
from benchledger.domain.base import Event
from benchledger.domain.cells import CellRows
from benchledger.domain.run_group import RunGroupOpened
from benchledger.projections.base import Envelope, iso
from benchledger.projections.chain import event_bytes, event_sha256
from benchledger.projections.events import EventsProjection

for module in pkgutil.iter_modules(domain.__path__):
    importlib.import_module(f"{domain.__name__}.{module.name}")


def subclasses(cls: type[Event]) -> Iterator[type[Event]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)


EVENT_TYPES = sorted(set(subclasses(Event)), key=lambda c: c.TOPIC)


def a_value(annotation: Any) -> Any:
    """Some value of a field's type: enough to make any event."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return a_value(args[0])
    if origin in (typing.Union, types.UnionType):
        return a_value(next(a for a in args if a is not type(None)))
    if origin is typing.Literal:
        return args[0]
    if origin in (list, tuple, set, frozenset, dict):
        return origin()
    simple = {uuid.UUID: uuid.uuid4(), datetime: datetime.now(UTC), bool: True}
    simple |= {CellRows: CellRows([])}
    simple |= {int: 1, float: 0.5, str: "x", list: [], tuple: (), dict: {}}
    if annotation in simple:
        return simple[annotation]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return next(iter(annotation))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return an_instance(annotation)
    raise TypeError(f"no value made for {annotation!r}: teach a_value")


def an_instance(cls: type[BaseModel], **given: Any) -> Any:
    fields = {
        name: a_value(f.annotation)
        for name, f in cls.model_fields.items()
        if f.is_required() and name not in given
    }
    return cls(**fields, **given)


class CountingMapper(PydanticMapper):
    decoded = 0

    def to_domain_event(self, stored_event: Any) -> Any:
        type(self).decoded += 1
        return super().to_domain_event(stored_event)


def runner(mapper: PydanticMapper | None = None) -> ProjectionRunner:
    mapper = mapper or CountingMapper(transcoder=PydanticTranscoder())
    return ProjectionRunner(cast(Any, None), mapper, cast(Any, None), [])


def stored(event: Event, mapper: PydanticMapper) -> tuple[int, str, int, str, bytes]:
    """The event as the SQLite store holds it: a row of `stored_events`."""
    s = mapper.to_stored_event(event)
    return 7, event.originator_id.hex, s.originator_version, s.topic, s.state


def events_row(envelope: Envelope) -> Any:
    [(_, row)] = EventsProjection().fold(envelope)
    return row


times = st.builds(
    lambda when, micro, zone: when.replace(microsecond=micro, tzinfo=zone),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.sampled_from([0, 1, 500_000, 999_999]) | st.integers(0, 999_999),
    st.sampled_from([UTC, None, timezone(timedelta(hours=5, minutes=30))])
    | st.builds(timezone, st.timedeltas(timedelta(hours=-23), timedelta(hours=23))),
)


@pytest.mark.parametrize("cls", EVENT_TYPES, ids=lambda c: c.__name__)
@settings(max_examples=30, deadline=None)
@given(at=times)
def test_every_event_is_named_and_timed_from_its_text_as_decoding_it_names_and_times_it(
    cls: type[Event], at: datetime
) -> None:
    event = an_instance(cls, originator_id=uuid.uuid4(), originator_version=3, timestamp=at)
    mapper = CountingMapper(transcoder=PydanticTranscoder())
    row = stored(event, mapper)
    slow = runner(mapper).envelope_of(*row)
    decoded = slow.event  # as the fold read every event before
    expected = events_row(slow)
    fast = runner(mapper).envelope_of(*row)
    before = CountingMapper.decoded
    assert events_row(fast) == expected
    assert CountingMapper.decoded == before  # read from the text, not decoded
    assert fast.head() == (type(decoded).__name__, iso(decoded.timestamp))


def test_every_event_type_starts_its_stored_text_with_the_fields_heads_are_read_from() -> None:
    for cls in EVENT_TYPES:
        assert list(cls.model_fields)[:3] == ["originator_id", "originator_version", "timestamp"]


def check_stored_time(text: str) -> None:
    state = (
        '{"originator_id":"8cd14f88-1707-50f5-bb6f-0d6faa08071f","originator_version":1,'
        f'"timestamp":"{text}","label":"x"}}'
    ).encode()
    try:
        expected: str | None = iso(TIMESTAMP.validate_json(f'"{text}"'))
    except ValueError:
        expected = None
    assert stored_time(state) == expected
    assert stored_time(state) == expected  # its second remembered


@settings(max_examples=500, deadline=None)
@given(
    text=st.text(alphabet="0123456789-:T.Z+ zx", max_size=32)
    | times.map(lambda t: t.isoformat().replace("+00:00", "Z"))
)
def test_a_stored_time_is_what_the_event_parser_makes_of_it(text: str) -> None:
    check_stored_time(text)


@pytest.mark.parametrize(
    "text",
    [
        "2024-02-30T00:00:00Z",  # no such day: decoding refuses it
        "2024-01-01T23:59:60Z",
        "2024-01-01T24:00:00Z",
        "0000-01-01T00:00:00Z",
        "2024-01-01T00:00:00.000000Z",
        "2024-01-01T00:00:00.000100Z",
        "2024-01-01T00:00:00.1Z",
        "2024-01-01T00:00:00.1234567Z",
        "2024-01-01T00:00:00+05:30",
        "2024-01-01T00:00:00",
        "",
    ],
)
def test_stored_times_that_are_not_plain_utc_seconds(text: str) -> None:
    check_stored_time(text)


def opened(**given: Any) -> RunGroupOpened:
    return RunGroupOpened(
        originator_id=uuid.uuid4(), originator_version=1, label="l", kind="import", **given
    )


def test_a_compressed_store_decodes_every_event() -> None:
    mapper = CountingMapper(transcoder=PydanticTranscoder(), compressor=ZlibCompressor())
    envelope = runner(mapper).envelope_of(*stored(opened(), mapper))
    assert envelope.head() is None
    before = CountingMapper.decoded
    assert envelope.event_name == "RunGroupOpened"
    assert CountingMapper.decoded == before + 1


def test_a_text_not_written_as_the_serializer_writes_it_is_decoded() -> None:
    mapper = CountingMapper(transcoder=PydanticTranscoder())
    position, stream, version, topic, state = stored(opened(), mapper)
    spaced = state.replace(b'":', b'": ', 3)
    envelope = runner(mapper).envelope_of(position, stream, version, topic, spaced)
    assert envelope.head() is None
    assert envelope.recorded_at == iso(envelope.event.timestamp)


def test_an_upcast_event_is_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    mapper = CountingMapper(transcoder=PydanticTranscoder())
    row = stored(opened(), mapper)
    monkeypatch.setattr(RunGroupOpened, "class_version", 2)
    assert runner(mapper).envelope_of(*row).head() is None


@pytest.mark.parametrize(
    "form",
    [lambda u: u, lambda u: u.hex, str, lambda u: u.hex.upper(), lambda u: "{" + str(u) + "}"],
    ids=["uuid", "hex", "dashed", "upper", "braced"],
)
def test_a_stream_as_stored_is_the_stream_it_names(form: Any) -> None:
    stream = uuid.uuid4()
    state = b'{"a": 1}'
    envelope = Envelope(9, form(stream), 2, "domain.x:Y", state, decode=lambda: cast(Any, None))
    assert envelope.stream == stream
    assert envelope.stream_id == str(stream)
    assert envelope.stream_hex == stream.hex
    expected = hashlib.sha256(event_bytes(9, stream, 2, "domain.x:Y", state)).hexdigest()
    assert event_sha256(envelope) == expected


def test_a_stream_that_is_no_uuid_is_refused_when_a_fold_reads_it() -> None:
    envelope = Envelope(9, "not-a-uuid", 2, "domain.x:Y", b"{}", decode=lambda: cast(Any, None))
    with pytest.raises(ValueError):
        envelope.stream_id  # noqa: B018
