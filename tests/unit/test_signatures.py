from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchledger.domain.signatures import (
    canonical_json,
    comparison_signature,
    effective_config,
    legacy_comparison_signature,
    legacy_signature,
    sha256_hex,
    signature,
)

# ORCHESTRATOR.md section 2, worked example.
BFCL = ("bfcl", "eliza", "cerebras", "gpt-oss-120b")
BFCL_EXTRA = {"agent": "eliza", "harness": "eliza", "limit": 10}
BFCL_SIGNATURE = "51c42ab183297eefc7c0679d98dca4976714e6532b6cc654bf08ad0f4c993fb0"
BFCL_COMPARISON = "9098938c364a65962e95157b703c96bb3f3dafaf3b14df3b51a44041299309a7"


class TestCanonicalJson:
    def test_sorts_keys_at_every_depth_and_drops_white_space(self) -> None:
        assert canonical_json({"b": 1, "a": {"d": [1, 2], "c": "é"}}) == (
            '{"a":{"c":"é","d":[1,2]},"b":1}'
        )

    def test_refuses_non_finite_numbers(self) -> None:
        with pytest.raises(ValueError):
            canonical_json({"x": math.nan})


class TestSignature:
    def test_the_worked_example_of_the_orchestrator(self) -> None:
        assert signature(*BFCL, BFCL_EXTRA, directory="bfcl") == BFCL_SIGNATURE

    def test_the_directory_defaults_to_the_benchmark_id(self) -> None:
        assert signature(*BFCL, BFCL_EXTRA) == BFCL_SIGNATURE
        assert signature(*BFCL, BFCL_EXTRA, directory="suites/bfcl") != BFCL_SIGNATURE

    def test_it_hashes_the_orchestrator_payload_ascii_escaped(self) -> None:
        expected = sha256_hex(
            '{"agent":"eliza","benchmark_directory":"d","benchmark_id":"b",'
            '"extra_config":{"note":"caf\\u00e9"},"model":"m","provider":"p"}'
        )
        assert signature("b", "eliza", "p", "m", {"note": "café"}, directory="d") == expected

    def test_non_finite_numbers_are_hashed_as_python_spells_them(self) -> None:
        expected = sha256_hex(
            '{"agent":"a","benchmark_directory":"b","benchmark_id":"b",'
            '"extra_config":{"t":NaN},"model":"m","provider":"p"}'
        )
        assert signature("b", "a", "p", "m", {"t": math.nan}) == expected

    def test_config_key_order_does_not_change_it(self) -> None:
        a = signature("b", "x", "p", "m", {"a": 1, "b": 2})
        assert a == signature("b", "x", "p", "m", {"b": 2, "a": 1})

    def test_agent_provider_and_model_are_hashed_as_given(self) -> None:
        base = signature("b", "eliza", "p", "m", {})
        assert signature("b", "Eliza", "p", "m", {}) != base
        assert signature("b", "eliza", " p", "m", {}) != base
        assert signature("b", "eliza", "p", "M", {}) != base

    def test_a_calibration_agent_hashes_the_calibration_spec_version_too(self) -> None:
        config: dict[str, Any] = {"limit": 2}
        with_key = {"limit": 2, "calibration_spec_version": "calibration_v1"}
        for agent in ("perfect_v1", "wrong_v1", "half_v1", " Half_V1 "):
            assert signature("b", agent, "p", "m", config) == signature(
                "b", agent, "p", "m", with_key
            )
        assert config == {"limit": 2}  # added to a copy
        # Not for other agents, the random baseline among them.
        for agent in ("eliza", "random_v1"):
            assert signature("b", agent, "p", "m", config) != signature(
                "b", agent, "p", "m", with_key
            )

    def test_a_calibration_agent_overrides_a_stated_spec_version(self) -> None:
        stated = {"calibration_spec_version": "calibration_v0"}
        plain = signature("b", "half_v1", "p", "m", {})
        assert signature("b", "half_v1", "p", "m", stated) == plain


class TestComparisonSignature:
    def test_the_worked_example_lines_up_eliza_and_hermes(self) -> None:
        hermes = {"agent": "hermes", "harness": "hermes", "limit": 10}
        bfcl = ("bfcl", "cerebras", "gpt-oss-120b")
        assert comparison_signature(*bfcl, BFCL_EXTRA, directory="bfcl") == BFCL_COMPARISON
        assert comparison_signature(*bfcl, hermes, agent="hermes") == BFCL_COMPARISON

    def test_it_hashes_the_payload_without_the_agent(self) -> None:
        expected = sha256_hex(
            '{"benchmark_directory":"d","benchmark_id":"b","extra_config":{"limit":1},'
            '"model":"m","provider":"p"}'
        )
        assert comparison_signature("b", "p", "m", {"limit": 1}, directory="d") == expected

    def test_agent_and_harness_are_dropped_only_when_they_name_a_known_agent(self) -> None:
        bare = comparison_signature("b", "p", "m", {})
        for known in ("eliza", " Hermes ", "openclaw", "random_v1", "compare", "smithers"):
            assert comparison_signature("b", "p", "m", {"agent": known, "harness": known}) == bare
        assert comparison_signature("b", "p", "m", {"agent": "codex"}) != bare
        assert comparison_signature("b", "p", "m", {"harness": "codex"}) != bare

    def test_the_code_agent_adapters_are_known_so_eliza_and_opencode_line_up(self) -> None:
        bfcl = ("bfcl", "cerebras", "gpt-oss-120b")
        for adapter in ("opencode", "elizaos", " OpenCode "):
            config = {"agent": adapter, "harness": adapter, "limit": 10}
            assert comparison_signature(*bfcl, config, agent=adapter) == BFCL_COMPARISON

    def test_the_orchestrators_own_known_agents_are_unchanged(self) -> None:
        from benchledger.domain.signatures import CODE_AGENTS, ORCHESTRATOR_KNOWN_AGENTS

        assert {
            "eliza", "hermes", "openclaw", "random_v1", "perfect_v1", "wrong_v1", "half_v1",
            "compare", "smithers",
        } == ORCHESTRATOR_KNOWN_AGENTS  # fmt: skip
        assert not CODE_AGENTS & ORCHESTRATOR_KNOWN_AGENTS

    def test_runtime_timeouts_do_not_change_the_comparison(self) -> None:
        bare = comparison_signature("b", "p", "m", {"limit": 3})
        for key in ("eliza_bench_http_timeout_s", "openclaw_timeout_s", "timeout_s"):
            assert comparison_signature("b", "p", "m", {"limit": 3, key: 60}) == bare
        assert comparison_signature("b", "p", "m", {"limit": 3, "max_turns": 60}) != bare

    def test_a_low_reasoning_effort_is_dropped_and_others_kept(self) -> None:
        bare = comparison_signature("b", "p", "m", {})
        assert comparison_signature("b", "p", "m", {"reasoning_effort": " LOW "}) == bare
        assert comparison_signature("b", "p", "m", {"reasoning_effort": "high"}) != bare

    def test_a_dataset_equal_to_the_suite_is_dropped(self) -> None:
        suite_only = comparison_signature("b", "p", "m", {"suite": "s"})
        assert comparison_signature("b", "p", "m", {"suite": "s", "dataset": " s"}) == suite_only
        assert comparison_signature("b", "p", "m", {"suite": "s", "dataset": "t"}) != suite_only
        dataset_only = comparison_signature("b", "p", "m", {"dataset": "s"})
        assert dataset_only != comparison_signature("b", "p", "m", {})

    def test_a_calibration_agent_adds_the_calibration_key(self) -> None:
        with_key = {"calibration_spec_version": "calibration_v1"}
        assert comparison_signature("b", "p", "m", {}, agent="wrong_v1") == (
            comparison_signature("b", "p", "m", with_key)
        )
        assert comparison_signature("b", "p", "m", {}) != (
            comparison_signature("b", "p", "m", with_key)
        )

    def test_the_callers_config_is_not_changed(self) -> None:
        config = {"agent": "eliza", "timeout_s": 5, "reasoning_effort": "low"}
        comparison_signature("b", "p", "m", config, agent="half_v1")
        assert config == {"agent": "eliza", "timeout_s": 5, "reasoning_effort": "low"}


class TestLegacySignatures:
    def test_the_signature_benchledger_recorded_before(self) -> None:
        expected = sha256_hex(
            '{"agent":"eliza","benchmark":"bfcl","config":{"limit":10},'
            '"model":"gpt-oss-120b","provider":"cerebras"}'
        )
        assert legacy_signature(*BFCL, {"limit": 10}) == expected
        assert expected == "0ece47c90a86dbe069913e05c7266d5241c99942b9203408ae1d51e5314ea65e"

    def test_the_comparison_signature_benchledger_recorded_before(self) -> None:
        expected = sha256_hex('{"benchmark":"b","config":{"é":1},"model":"m","provider":"p"}')
        assert legacy_comparison_signature("b", "p", "m", {"é": 1}) == expected


class TestEffectiveConfig:
    def test_the_worked_example_comes_from_a_limit_and_the_agent(self) -> None:
        config = effective_config("bfcl", "eliza", {"limit": 10})
        assert config == BFCL_EXTRA
        assert signature(*BFCL, config) == BFCL_SIGNATURE

    def test_agent_and_harness_are_the_label_unless_given(self) -> None:
        assert effective_config("b", " eliza ", {}) == {"agent": "eliza", "harness": "eliza"}
        given_agent = effective_config("b", "eliza", {"agent": "x"})
        assert given_agent == {"agent": "x", "harness": "eliza"}
        assert effective_config("b", "eliza", {"harness": "h"}) == {
            "agent": "eliza",
            "harness": "h",
        }
        # A default harness stays; a default agent is replaced by the label.
        defaults = {"agent": "d", "harness": "dh"}
        assert effective_config("b", "eliza", {}, defaults=defaults) == {
            "agent": "eliza",
            "harness": "dh",
        }

    def test_compare_sets_no_agent_and_an_empty_label_nothing(self) -> None:
        assert effective_config("b", "compare", {}) == {"harness": "compare"}
        assert effective_config("b", "  ", {"limit": 1}) == {"limit": 1}

    def test_a_positive_integer_sample_becomes_the_limit(self) -> None:
        defaults = {"limit": 2}
        assert effective_config("b", "", {"sample": 5}, defaults=defaults) == {
            "limit": 5,
            "sample": 5,
        }
        # ...unless the request gives the limit.
        assert effective_config("b", "", {"sample": 5, "limit": 1}) == {"sample": 5, "limit": 1}
        # A flag, zero or a negative number is not a sample size.
        for sample in (True, 0, -3, 2.0, "4"):
            assert effective_config("b", "", {"sample": sample}, defaults=defaults) == {
                "limit": 2,
                "sample": sample,
            }

    def test_a_default_sample_yields_to_a_default_limit(self) -> None:
        defaults = {"sample": 5, "limit": 2}
        assert effective_config("b", "", {}, defaults=defaults) == defaults
        # With no limit anywhere it is the limit, so the result is a fixed point.
        assert effective_config("b", "", {}, defaults={"sample": 5}) == {"sample": 5, "limit": 5}

    def test_trust_with_a_real_harness_is_judged_by_the_eliza_handler(self) -> None:
        for agent in ("eliza", "Hermes", "openclaw"):
            config = effective_config("trust", agent, {}, defaults={"handler": "x"})
            assert config["handler"] == "eliza"
        assert "handler" not in effective_config("trust", "codex", {})
        assert effective_config("trust", "codex", {}, provider=" Claude-Subscription ")[
            "handler"
        ] == ("eliza")
        assert effective_config("trust", "eliza", {"handler": "x"})["handler"] == "x"
        assert "handler" not in effective_config("bfcl", "eliza", {})

    def test_does_not_change_its_inputs(self) -> None:
        config, defaults = {"sample": 3}, {"limit": 1}
        effective_config("trust", "eliza", config, defaults=defaults)
        assert (config, defaults) == ({"sample": 3}, {"limit": 1})

    @given(
        benchmark=st.sampled_from(["trust", "bfcl"]),
        agent=st.sampled_from(["", " ", "eliza", " hermes", "compare", "half_v1", "codex"]),
        provider=st.sampled_from(["", "cerebras", "claude-subscription"]),
        config=st.dictionaries(
            st.sampled_from(["sample", "limit", "agent", "harness", "handler", "x"]),
            st.one_of(st.integers(-2, 9), st.booleans(), st.text(max_size=3), st.none()),
        ),
        defaults=st.dictionaries(
            st.sampled_from(["sample", "limit", "agent", "harness", "handler", "y"]),
            st.one_of(st.integers(-2, 9), st.booleans(), st.text(max_size=3)),
        ),
    )
    def test_an_effective_config_is_its_own_effective_config(
        self,
        benchmark: str,
        agent: str,
        provider: str,
        config: dict[str, Any],
        defaults: dict[str, Any],
    ) -> None:
        once = effective_config(benchmark, agent, config, defaults=defaults, provider=provider)
        assert effective_config(benchmark, agent, once, provider=provider) == once
