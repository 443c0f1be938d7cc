"""The sides `compare --run` takes, what it adds to their config, and each provider's
endpoint, as the orchestrator's compare and runner set them."""

from __future__ import annotations

import pytest

from benchledger.adapters.execution.providers import base_url, provider_env
from benchledger.adapters.publication.executed_compare import (
    RunSide,
    parse_run_side,
    side_extra,
)

URL = "http://127.0.0.1:9/v1"


class TestSides:
    def test_provider_model_and_base_url(self) -> None:
        assert parse_run_side(f"VLLM:elizaos/eliza-1@{URL}") == RunSide(
            "vllm", "elizaos/eliza-1", URL
        )
        assert parse_run_side("openai:gpt-4.1-mini") == RunSide("openai", "gpt-4.1-mini")
        # As the orchestrator splits it: at the first @, then at the first colon.
        assert parse_run_side("p:org:m@") == RunSide("p", "org:m", None)

    @pytest.mark.parametrize("text", ["", "model-only", ":m", "p:", "eliza@p:m"])
    def test_malformed_sides_are_refused(self, text: str) -> None:
        with pytest.raises(ValueError, match=r"provider:model\[@base_url\]"):
            parse_run_side(text)

    def test_spec_and_label(self) -> None:
        side = RunSide("vllm", "m2", URL)
        assert (side.spec, side.label) == (f"vllm:m2@{URL}", "vllm:m2")
        assert side.as_dict("compare")["base_url"] == URL


class TestExtra:
    def test_max_examples_under_every_sampling_key_and_the_base_url(self) -> None:
        assert side_extra(RunSide("vllm", "m", URL), 3, None) == {
            "vllm_base_url": URL,
            "max_examples": 3,
            "max_tasks": 3,
            "max_questions": 3,
            "sample": 3,
        }

    def test_nothing_unasked(self) -> None:
        assert side_extra(RunSide("openai", "m"), None, None) == {}
        assert side_extra(RunSide("openai", "m"), None, 0.0) == {"temperature": 0.0}


class TestProviderEnv:
    def test_vllm_defaults_to_the_local_server_with_a_dummy_key(self) -> None:
        assert provider_env("vllm", {}, {}) == {
            "VLLM_API_KEY": "dummy",
            "OPENAI_API_KEY": "dummy",
            "OPENAI_BASE_URL": "http://127.0.0.1:8001/v1",
            "VLLM_BASE_URL": "http://127.0.0.1:8001/v1",
        }

    def test_vllm_base_url_from_the_environment(self) -> None:
        environ = {"VLLM_BASE_URL": "http://a/v1", "OPENAI_BASE_URL": "http://b/v1"}
        assert base_url("vllm", {}, environ) == "http://a/v1"
        assert base_url("vllm", {}, {"BENCHMARK_BASE_URL": "http://c/v1"}) == "http://c/v1"
        assert base_url("vllm", {}, {"OPENAI_BASE_URL": "http://b/v1"}) == "http://b/v1"

    def test_the_config_wins_over_the_environment(self) -> None:
        environ = {"VLLM_BASE_URL": "http://a/v1"}
        assert base_url("vllm", {"vllm_base_url": URL, "base_url": "http://x"}, environ) == URL
        assert base_url("vllm", {"base_url": "http://x/v1"}, environ) == "http://x/v1"
        env = provider_env("vllm", {"vllm_base_url": URL}, {**environ, "VLLM_API_KEY": "k"})
        assert (env["OPENAI_BASE_URL"], env["VLLM_BASE_URL"]) == (URL, URL)
        assert env["OPENAI_API_KEY"] == "k" and "VLLM_API_KEY" not in env  # already set

    def test_other_compatible_providers_get_their_public_endpoint(self) -> None:
        env = provider_env("cerebras", {}, {"CEREBRAS_API_KEY": "ck"})
        assert env["OPENAI_BASE_URL"] == "https://api.cerebras.ai/v1" == env["CEREBRAS_BASE_URL"]
        assert env["OPENAI_API_KEY"] == "ck"
        assert "CEREBRAS_API_KEY" not in env  # no dummy key for a hosted provider

    def test_any_other_provider_only_takes_a_stated_base_url(self) -> None:
        assert provider_env("openai", {}, {"OPENAI_BASE_URL": "http://b/v1"}) == {}
        assert provider_env("openai", {"vllm_base_url": URL}, {}) == {"OPENAI_BASE_URL": URL}
        assert provider_env("openai", {"openai_base_url": "http://o"}, {}) == {
            "OPENAI_BASE_URL": "http://o"
        }
