"""What a record derives once and carries (`records.Memoized`), and the limits check that
reads a record's JSON instead of walking its values (`kept._rest_within`)."""

from __future__ import annotations

import pickle
import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pydantic_core
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchledger.adapters.formats import kept, limits
from benchledger.adapters.formats.limits import Limits
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunHeader, RunRecord, Turn
from benchledger.domain.secrets import mask_config
from benchledger.domain.signatures import comparison_signature, signature

SMALL = Limits(string_length=24, int_digits=4, depth=5)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**7), max_value=10**7),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=2),
    st.datetimes(timezones=st.just(UTC)),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
objects = st.dictionaries(st.text(max_size=8), values, max_size=4)


def record(config: dict[str, Any], provenance: dict[str, Any], supplement: dict[str, Any]) -> Any:
    header = RunHeader.model_construct(
        **{
            **RunHeader(benchmark="b", agent="a", model="m", status="succeeded").__dict__,
            "config": config,
            "provenance": provenance,
        }
    )
    turn = Turn(trajectory_file="t.json", turn_index=1, prompt_tokens=12)
    return RunRecord.model_construct(
        header=header, cells=(), turns=(turn,), supplement=supplement, group_key=None
    )


class TestTheJsonCheck:
    @given(config=objects, provenance=objects, supplement=objects)
    def test_it_passes_only_what_the_walk_passes(
        self, config: dict[str, Any], provenance: dict[str, Any], supplement: dict[str, Any]
    ) -> None:
        run = record(config, provenance, supplement)
        rest = [v for k, v in run.__dict__.items() if k != "cells"]
        try:
            texts = [run.header.json_bytes(), pydantic_core.to_json(rest[1:])]
        except pydantic_core.PydanticSerializationError:
            assert not kept._rest_within(run, Limits())
            return
        # The tightest limits the text can prove, and each of them one lower.
        tight = Limits(
            string_length=max(map(len, texts)),
            depth=max(t.count(b"[") + t.count(b"{") for t in texts) + 2,
            int_digits=max(len(r) for t in texts for r in re.findall(rb"[0-9]*", t)),
        )
        assert kept._rest_within(run, tight)
        for bounds in (
            tight,
            replace(tight, string_length=tight.string_length - 1),
            replace(tight, depth=tight.depth - 1),
            replace(tight, int_digits=tight.int_digits - 1),
            SMALL,
            *(replace(tight, depth=d) for d in range(1, 12)),
        ):
            if kept._rest_within(run, bounds):
                assert not kept.breaks(rest, bounds, 0), bounds

    def test_it_passes_an_ordinary_run(self) -> None:
        run = record({"limit": 10, "tags": ["a", "b"]}, {"source": {"id": 3}}, {"x": 1.5})
        assert kept._rest_within(run, Limits())

    @pytest.mark.parametrize(
        "config",
        [
            {"s": "x" * 30},  # a string over the limit
            {"n": 123456},  # an integer over the limit
            {"a": [[[[[1]]]]]},  # too deep
            {"bad": "\ud800"},  # not storable
        ],
    )
    def test_what_it_cannot_prove_is_still_refused_by_field(self, config: dict[str, Any]) -> None:
        run = record(config, {}, {})
        assert not kept._rest_within(run, SMALL)
        with limits.applied(SMALL), pytest.raises(InputFormatError) as e:
            kept.check_kept("f.json", [run])
        assert "config" in str(e.value)


class TestDerived:
    def header(self) -> RunHeader:
        return RunHeader(
            benchmark="bfcl",
            agent="eliza",
            provider="openai",
            model="gpt-oss-120b",
            config={"limit": 5, "api_key": "sk-" + "a" * 40},
            status="succeeded",
            started_at=datetime(2026, 1, 5, tzinfo=UTC),
        )

    def test_what_it_derives_equals_what_is_computed_afresh(self) -> None:
        run = RunRecord(header=self.header())
        h = run.header
        _ = run.content_sha256(), h.signature, h.comparison_signature, h.masked_config
        assert h.signature == signature(
            h.benchmark, h.agent, h.provider, h.model, h.config, directory=None
        )
        assert h.comparison_signature == comparison_signature(
            h.benchmark, h.provider, h.model, h.config, directory=None, agent=h.agent
        )
        assert h.masked_config == mask_config(h.config)
        assert run.content_sha256() == RunRecord(header=self.header()).content_sha256([b"[]"])

    def test_it_travels_pickled_and_equality_ignores_it(self) -> None:
        derived = RunRecord(header=self.header())
        _ = derived.content_sha256(), derived.header.signature, derived.header.comparison_signature
        sent = pickle.loads(pickle.dumps(derived))
        assert sent.header._derived.keys() >= {"signature", "comparison_signature", "json"}
        fresh = RunRecord(header=self.header())
        assert sent == fresh and sent.header == fresh.header
        assert sent.content_sha256() == fresh.content_sha256()

    def test_a_masked_config_is_a_new_dict_each_time(self) -> None:
        h = self.header()
        first = h.masked_config
        first["limit"] = 99
        assert h.masked_config["limit"] == 5
        assert h.masked_config["api_key"] != h.config["api_key"]


def plain_json_within(text: bytes, bounds: Limits) -> bool:
    """`kept._json_within` as first written: each count and the digits' run on its own."""
    return (
        len(text) <= bounds.string_length
        and text.count(b",") < bounds.array_length
        and text.count(b"[") + text.count(b"{") < bounds.depth - 1
        and b"0" * (bounds.int_digits + 1)
        not in text.translate(bytes.maketrans(b"123456789", b"000000000"))
    )


class TestOneJsonText:
    @given(
        text=st.lists(
            st.sampled_from([b",", b"[", b"{", b"}", b"]", b"0", b"7", b"9", b"a", b'"', b":"]),
            max_size=60,
        ).map(b"".join),
        string_length=st.integers(min_value=0, max_value=70),
        array_length=st.integers(min_value=0, max_value=70),
        depth=st.integers(min_value=0, max_value=30),
        int_digits=st.integers(min_value=0, max_value=8),
    )
    def test_proves_what_each_count_on_its_own_proves(
        self, text: bytes, string_length: int, array_length: int, depth: int, int_digits: int
    ) -> None:
        bounds = Limits(
            string_length=string_length,
            array_length=array_length,
            depth=depth,
            int_digits=int_digits,
        )
        assert kept._json_within(text, bounds) == plain_json_within(text, bounds)
