"""A run whose benchmark or model is a placeholder or a stand-in is no publishable result."""

from __future__ import annotations

import pytest

from benchledger.domain.publication import identity_marker, label_marker


class TestPlaceholderIdentities:
    @pytest.mark.parametrize("name", ["...", "none", "None", " UNKNOWN ", "", "   ", "none/none"])
    def test_a_placeholder_benchmark_is_named_as_such(self, name: str) -> None:
        assert identity_marker(name, "openai", "gpt-4.1") == "placeholder_identity:benchmark"

    @pytest.mark.parametrize(
        ("provider", "model"),
        [("", "..."), ("openai", "none"), ("none", "none"), ("", "Unknown"), ("x", " ")],
    )
    def test_a_placeholder_model_is_named_as_such(self, provider: str, model: str) -> None:
        assert identity_marker("bfcl", provider, model) == "placeholder_identity:model"

    @pytest.mark.parametrize(
        ("provider", "model"),
        [("mockllm", "model"), ("MockLLM", "anything"), ("", "mockllm/model")],
    )
    def test_a_mock_model_is_a_mock_model(self, provider: str, model: str) -> None:
        assert identity_marker("bfcl", provider, model) == "mock_model"

    @pytest.mark.parametrize(
        ("benchmark", "provider", "model"),
        [
            ("bfcl", "openai", "gpt-4.1"),
            ("none_of_the_above", "anthropic", "claude-sonnet-4.5"),
            ("unknown-words", "", "gpt-oss-120b"),
            ("bfcl", "", "mock-turtle-7b"),
        ],
    )
    def test_real_names_that_merely_contain_the_words_are_real(
        self, benchmark: str, provider: str, model: str
    ) -> None:
        assert identity_marker(benchmark, provider, model) is None

    def test_the_agents_label_comes_first(self) -> None:
        assert label_marker("mock", "...", "", "...") == "non_real_agent_label"
        assert label_marker("eliza", "...", "", "...") == "placeholder_identity:benchmark"

    def test_a_placeholder_agent_is_named_after_the_benchmark_and_model(self) -> None:
        assert label_marker("...", "bfcl", "openai", "gpt-4.1") == "placeholder_identity:agent"
        assert label_marker("eliza", "bfcl", "openai", "gpt-4.1") is None
