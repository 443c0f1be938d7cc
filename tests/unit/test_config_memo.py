"""Derivations from a config are kept per distinct config, and told apart as JSON tells
configs apart: a value equal in Python but written differently never shares a result."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchledger.adapters.formats import orchestrator_facts
from benchledger.domain import config_memo
from benchledger.domain.config_memo import Memo, flat_key
from benchledger.domain.records import RunHeader, RunStatus
from benchledger.domain.secrets import mask_config
from benchledger.domain.signatures import comparison_signature, signature

# Equal as Python values, different as JSON (and so as signatures).
LOOKALIKES = [{"limit": 1}, {"limit": 1.0}, {"limit": True}, {"limit": 0.0}, {"limit": -0.0}]


def header(config: dict[str, Any], **fields: Any) -> RunHeader:
    stated = {"benchmark": "bfcl", "agent": "eliza", "provider": "openai", "model": "gpt-4.1"}
    return RunHeader(config=config, status=RunStatus.SUCCEEDED, **(stated | fields))


def test_configs_equal_in_python_but_not_in_json_have_different_keys() -> None:
    keys = {flat_key(c) for c in LOOKALIKES}
    assert len(keys) == len(LOOKALIKES)
    assert flat_key({"a": {"b": 1}}) is None
    assert flat_key({"a": [1]}) is None
    assert flat_key({"a": 1, "b": "x"}) == flat_key({"a": 1, "b": "x"})


@pytest.mark.parametrize("first", range(len(LOOKALIKES)))
def test_each_lookalike_gets_its_own_signatures(
    first: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    order = LOOKALIKES[first:] + LOOKALIKES[:first]  # whichever is worked out first
    for config in order:
        h = header(dict(config))
        assert h.signature == signature("bfcl", "eliza", "openai", "gpt-4.1", config)
        assert h.comparison_signature == comparison_signature(
            "bfcl", "openai", "gpt-4.1", config, agent="eliza"
        )
        args = ("bfcl", "bfcl", "eliza", "openai", "gpt-4.1", config)
        memoized = orchestrator_facts.derive_signature(*args)
        monkeypatch.setattr(orchestrator_facts, "_SIGNATURES", config_memo.Memo())
        assert orchestrator_facts.derive_signature(*args) == memoized  # worked out afresh
    assert len({header(dict(c)).signature for c in LOOKALIKES}) == len(LOOKALIKES)


def test_every_argument_is_part_of_the_key() -> None:
    config = {"limit": 5}
    assert header(config).comparison_signature != header(config, model="other").comparison_signature
    assert header(config).signature != header(config, agent="hermes").signature
    assert header(config).signature != header(config, directory="elsewhere").signature


def test_the_masked_config_is_a_copy_of_the_kept_one() -> None:
    config = {"api_key": "sk-live-0123456789abcdef0123", "limit": 5}
    first = header(config).masked_config
    assert first == mask_config(config)
    first["limit"] = 99  # the caller's copy
    assert header(config).masked_config == mask_config(config)


def test_a_memo_forgets_when_full_and_never_keys_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config_memo, "KEPT", 2)
    memo, calls = Memo(), []

    def make(n: int) -> int:
        calls.append(n)
        return n * 10

    assert [memo.get(k, lambda k=k: make(k)) for k in (1, 1, 2, 3, 1)] == [10, 10, 20, 30, 10]
    assert calls == [1, 2, 3, 1]  # 1 was forgotten when 3 came
    assert memo.get(None, lambda: make(7)) == memo.get(None, lambda: make(7)) == 70
    assert calls[-2:] == [7, 7]


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-3, max_value=3),
    st.sampled_from(["", "a", "1", "True"]),
)


@given(st.lists(st.dictionaries(st.sampled_from(["a", "b", "c"]), SCALARS, max_size=3), max_size=6))
def test_memoized_signatures_equal_the_functions(configs: list[dict[str, Any]]) -> None:
    for config in configs:
        assert header(config).signature == signature("bfcl", "eliza", "openai", "gpt-4.1", config)
        assert header(config).comparison_signature == comparison_signature(
            "bfcl", "openai", "gpt-4.1", config, agent="eliza"
        )
        assert header(config).masked_config == mask_config(config)
