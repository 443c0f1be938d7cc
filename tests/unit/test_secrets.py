"""Which values are secrets, and how they are masked in configs, commands and text."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchledger.adapters.execution.secrets import HostPaths, Redactor, mask_argv
from benchledger.domain.secrets import MASK, config_secrets, could_be_secret, mask_config
from benchledger.domain.signatures import signature

KEY = "sk-live-0123456789abcdefXYZ"


class TestWhatCouldBeASecret:
    @pytest.mark.parametrize("value", [KEY, "hunter22!", "a1b2c3d4", "ZXhhbXBsZQ=="])
    def test_long_values_that_are_no_plain_word(self, value: str) -> None:
        assert could_be_secret(value)

    @pytest.mark.parametrize(
        "value", ["passed", "failed", "enabled-for-tests", "interactive_login", "12345678",
                  "3.14159265", "short1", "two words here"],
    )  # fmt: skip
    def test_not_plain_words_numbers_short_values_or_sentences(self, value: str) -> None:
        assert not could_be_secret(value)


class TestConfigKeys:
    def test_secret_looking_keys_are_masked_at_any_depth(self) -> None:
        config = {
            "api_key": "anything",
            "provider": {"password": "hunter2", "hf_token": "hf_abcdef123456"},
            "clientSecret": "s3cr3t-value",
            "keys": [{"token": "tok-123456789"}],
        }
        assert mask_config(config) == {
            "api_key": MASK,
            "provider": {"password": MASK, "hf_token": MASK},
            "clientSecret": MASK,
            "keys": [{"token": MASK}],
        }

    def test_counts_limits_flags_and_plain_words_are_not_secrets(self) -> None:
        config = {
            "max_tokens": 512,
            "token_limit": 4096,
            "tokens_per_minute": "9000",
            "tokenizer": "meta-llama/Llama-3-8B",
            "sort_key": "score",
            "use_auth": "true",
            "keyword": "x1y2z3w4v5",
            "key_count": "12345678",
        }
        assert mask_config(config) == config

    def test_key_shapes_are_masked_under_any_key(self) -> None:
        assert mask_config({"prompt": f"use {KEY} please", "n": 3}) == {
            "prompt": f"use {MASK} please",
            "n": 3,
        }

    def test_only_values_that_could_be_secrets_are_hunted_elsewhere(self) -> None:
        assert config_secrets({"api_key": KEY, "password": "hunter2"}) == [KEY]

    def test_the_signature_of_a_config_without_secrets_is_unchanged_by_masking(self) -> None:
        config = {"limit": 5, "max_tokens": 100}
        assert signature("b", "a", "p", "m", mask_config(config)) == signature(
            "b", "a", "p", "m", config
        )


class TestCommandArguments:
    @pytest.mark.parametrize(
        ("argv", "masked"),
        [
            (["run", "--api-key", KEY], ["run", "--api-key", MASK]),
            (["run", f"--api-key={KEY}"], ["run", f"--api-key={MASK}"]),
            (["run", "--token", "abc123xyz9"], ["run", "--token", MASK]),
            (["run", "--token=abc123xyz9"], ["run", f"--token={MASK}"]),
            (["run", "--password", "hunter2"], ["run", "--password", MASK]),
            (["run", "--secret", "plainword"], ["run", "--secret", MASK]),
            (["run", f"model.api_key={KEY}"], ["run", f"model.api_key={MASK}"]),
            (["run", "--max-tokens", "512", "--limit", "5"], ["run", "--max-tokens", "512",
                                                             "--limit", "5"]),
            (["run", "--token-limit", "100"], ["run", "--token-limit", "100"]),
            (["run", "--password", "--verbose"], ["run", "--password", "--verbose"]),
        ],
    )  # fmt: skip
    def test_option_values_are_masked_by_their_name(
        self, argv: list[str], masked: list[str]
    ) -> None:
        assert mask_argv(argv)[0] == masked

    def test_a_rendered_config_is_masked_by_its_keys(self) -> None:
        masked, found = mask_argv(["run", '{"api_key":"' + KEY + '","limit":5}'])
        assert masked == ["run", '{"api_key":"' + MASK + '","limit":5}']
        assert found == [KEY]

    def test_the_values_found_are_those_that_could_be_secrets(self) -> None:
        _, found = mask_argv(["--api-key", KEY, "--password", "hunter2"])
        assert found == [KEY]


class TestKeyShapesAnywhere:
    @pytest.mark.parametrize(
        "secret",
        [KEY, "sk-ant-api03-abcdEFGH1234ijkl", "ghp_0123456789abcdefghijABCD",
         "github_pat_11ABCDEFG0123456789_abcdef", "hf_abcdefghij0123456789",
         "xoxb-1234567890-abcdef", "AKIAIOSFODNN7EXAMPLE"],
    )  # fmt: skip
    def test_well_known_key_prefixes_are_masked_in_text(self, secret: str) -> None:
        redactor = Redactor([])
        assert redactor.redact(f"using {secret} now") == f"using {MASK} now"
        assert redactor.redact_bytes(f"k={secret}".encode()) == f"k={MASK}".encode()

    @pytest.mark.parametrize(
        "text", ["Authorization: Bearer abc.def-123456", "curl -H 'Bearer abcdefgh12345678'"]
    )
    def test_bearer_credentials_are_masked(self, text: str) -> None:
        masked = Redactor([]).redact(text)
        assert MASK in masked and "abc" not in masked.split("Bearer")[-1]

    @pytest.mark.parametrize(
        "text", ["scikit-learn__scikit-learn-12345", "task-1234567890123456789", "sk-learn",
                 "the bearer of news", "hf_hub"],
    )  # fmt: skip
    def test_ordinary_text_is_left_alone(self, text: str) -> None:
        assert Redactor([]).redact(text) == text


class TestHostPaths:
    def test_paths_under_the_working_directory_become_relative(self, tmp_path: Path) -> None:
        paths = HostPaths(tmp_path)
        assert paths.scrub(f"cannot read {tmp_path}/out/r.json") == "cannot read out/r.json"
        assert paths.scrub(str(tmp_path)) == "."
        assert paths.scrub(f"{tmp_path}2/x") == f"{tmp_path}2/x"

    def test_the_results_root_elsewhere_and_the_home_directory_get_names(
        self, tmp_path: Path
    ) -> None:
        home = str(Path("~").expanduser())
        paths = HostPaths(tmp_path / "cwd", tmp_path / "results")
        assert paths.scrub(f"{tmp_path}/results/rg/out") == "<results>/rg/out"
        assert paths.scrub(f"--config={home}/conf.toml") == "--config=~/conf.toml"
