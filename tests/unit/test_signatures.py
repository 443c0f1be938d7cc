from __future__ import annotations

import math

import pytest

from benchledger.domain.signatures import (
    canonical_json,
    comparison_signature,
    sha256_hex,
    signature,
)


class TestCanonicalJson:
    def test_sorts_keys_at_every_depth_and_drops_white_space(self) -> None:
        assert canonical_json({"b": 1, "a": {"d": [1, 2], "c": "é"}}) == (
            '{"a":{"c":"é","d":[1,2]},"b":1}'
        )

    def test_refuses_non_finite_numbers(self) -> None:
        with pytest.raises(ValueError):
            canonical_json({"x": math.nan})


class TestSignatures:
    def test_signature_is_the_sha256_of_the_canonical_work(self) -> None:
        expected = sha256_hex(
            '{"agent":"eliza","benchmark":"bfcl","config":{"limit":10},'
            '"model":"gpt-oss-120b","provider":"cerebras"}'
        )
        assert signature("bfcl", "eliza", "cerebras", "gpt-oss-120b", {"limit": 10}) == expected

    def test_config_key_order_does_not_change_the_signature(self) -> None:
        a = signature("b", "x", "p", "m", {"a": 1, "b": 2})
        assert a == signature("b", "x", "p", "m", {"b": 2, "a": 1})

    def test_comparison_signature_ignores_the_agent(self) -> None:
        a = signature("b", "eliza", "p", "m", {})
        b = signature("b", "hermes", "p", "m", {})
        assert a != b
        assert comparison_signature("b", "p", "m", {}) == comparison_signature("b", "p", "m", {})
        assert comparison_signature("b", "p", "m", {}) != comparison_signature("b", "p", "m2", {})
