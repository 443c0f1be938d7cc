"""What folds share: the read models' JSON text, and one decode per stored event."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from benchledger.domain import run as run_model
from benchledger.domain.records import RunStatus
from benchledger.projections.base import Envelope, _default, iso, to_json

VALUES: list[Any] = [
    {"b": 1, "a": [1.5, float("nan"), float("inf"), None, True, 'é\n"\u2028\\']},
    {"z": {"y": {"x": [{"w": 1}]}}, "10": 0, "2": -1},
    "text",
    3,
    10**40,
    0.1,
    [],
    {},
    (1, 2),
    {1: "int keys", 2: "sorted too"},
    {"when": datetime(2026, 1, 5, 8, 0, tzinfo=UTC), "id": uuid.UUID(int=7)},
]


@pytest.mark.parametrize("value", VALUES)
def test_read_model_json_is_what_json_dumps_writes(value: Any) -> None:
    expected = json.dumps(value, sort_keys=True, ensure_ascii=False, default=_default)
    assert to_json(value) == expected


def test_read_model_json_refuses_what_json_dumps_refuses() -> None:
    assert to_json(None) is None
    with pytest.raises(TypeError):
        to_json({1: "a", "b": 2})  # keys that cannot be sorted
    with pytest.raises(TypeError):
        to_json({"x": object()})


def test_an_envelope_decodes_its_event_once_for_every_fold_that_reads_it() -> None:
    stream = uuid.uuid4()
    event = run_model.RunFinished(
        originator_id=stream,
        originator_version=2,
        status=RunStatus.SUCCEEDED,
        metrics={"b": 2, "a": 1},
        tokens={"prompt_tokens": 3},
    )
    decoded: list[int] = []

    def decode() -> run_model.RunFinished:
        decoded.append(1)
        return event

    envelope = Envelope(5, stream, 2, event.TOPIC, b"{}", decode)
    for _ in range(3):  # as several folds would
        assert envelope.json("metrics") == '{"a": 1, "b": 2}'
        assert envelope.json("tokens") == to_json(event.tokens)
        assert envelope.json("artifacts") == "[]"
        assert envelope.recorded_at == iso(event.timestamp)
        assert envelope.stream_id == str(stream)
    assert decoded == [1]


_ZONES = st.sampled_from(
    [
        None,
        UTC,
        timezone(timedelta(0)),
        timezone(timedelta(hours=-5)),
        timezone(timedelta(hours=5, minutes=30)),
        ZoneInfo("Europe/London"),
        ZoneInfo("America/New_York"),
        ZoneInfo("Australia/Lord_Howe"),
    ]
)


@given(
    st.datetimes(min_value=datetime(1900, 1, 2), max_value=datetime(2200, 1, 1)),
    _ZONES,
    st.booleans(),
)
def test_iso_is_the_utc_text_of_the_time(moment: datetime, zone: Any, fold: bool) -> None:
    """Whatever zone a time is in (none: taken as UTC; offset zero, as decoded events hold
    it; another offset; a zone with daylight saving, either side of a fold), its text is
    that of the same instant in UTC."""
    value = moment.replace(tzinfo=zone, fold=int(fold))
    expected = (value.replace(tzinfo=UTC) if zone is None else value.astimezone(UTC)).isoformat()
    assert iso(value) == expected
    assert iso(value).endswith("+00:00")


def test_iso_of_a_decoded_event_time_is_its_utc_text() -> None:
    """pydantic reads `Z` into a zone of its own (offset zero), written as UTC is."""
    stamp = TypeAdapter(datetime).validate_json('"2026-01-05T08:00:00.123456Z"')
    assert type(stamp.tzinfo) is not type(UTC)
    assert iso(stamp) == "2026-01-05T08:00:00.123456+00:00"
    assert iso(None) is None
