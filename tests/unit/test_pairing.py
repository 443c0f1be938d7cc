from __future__ import annotations

from benchledger.domain.pairing import differing_config_keys


class TestPairing:
    def test_equal_configs_pair(self) -> None:
        config = {"temperature": 0, "max_turns": 20}
        assert differing_config_keys(config, dict(config)) == []
        assert differing_config_keys(None, {}) == []

    def test_a_changed_or_one_sided_key_is_named(self) -> None:
        a = {"temperature": 0, "max_turns": 20, "tools": ["bash"]}
        b = {"temperature": 0.7, "tools": ["bash"], "split": "dev"}
        assert differing_config_keys(a, b) == ["max_turns", "split", "temperature"]

    def test_the_sides_own_identity_and_runtime_keys_do_not_count(self) -> None:
        a = {
            "model": "gpt-oss-120b",
            "provider": "cerebras",
            "agent": "eliza",
            "suite": "s",
            "timeout_s": 60,
        }
        b = {"model": "gpt-4.1-mini", "provider": "openai", "agent": "hermes", "suite": "s"}
        assert differing_config_keys(a, b, agent_a="eliza", agent_b="hermes") == []

    def test_a_calibration_agent_is_never_paired_with_a_real_one(self) -> None:
        keys = differing_config_keys({}, {}, agent_a="perfect_v1", agent_b="eliza")
        assert keys == ["calibration_spec_version"]
