"""The runtime-gate vocabulary (`requires`) and its probe, without a ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchledger.adapters.execution import runtime


class TestVocabulary:
    @pytest.mark.parametrize(
        ("text", "parsed"),
        [
            ("docker", [("docker", "")]),
            ("env:HL_PRIVATE_KEY", [("env", "HL_PRIVATE_KEY")]),
            ("command:opencode", [("command", "opencode")]),
            ("path:~/.eliza/bundle", [("path", "~/.eliza/bundle")]),
            ("env:MODAL_TOKEN_ID | docker", [("env", "MODAL_TOKEN_ID"), ("docker", "")]),
        ],
    )
    def test_each_kind_parses(self, text: str, parsed: list[tuple[str, str]]) -> None:
        assert runtime.parse(text) == parsed

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("gpu", "unknown requirement 'gpu'"),
            ("docker:remote", "unknown requirement 'docker:remote'"),
            ("env:", "requirement 'env:' names no env"),
            ("command", "requirement 'command' names no command"),
            ("", "a requirement is a non-empty string"),
            ("docker|", "unknown requirement ''"),
        ],
    )
    def test_anything_else_is_named(self, text: str, message: str) -> None:
        with pytest.raises(ValueError, match=message.replace("|", r"\|")):
            runtime.parse(text)


class TestProbe:
    def probe(self, **environ: str) -> runtime.Probe:
        asked: list[int] = []

        def docker(_environ: object) -> str | None:
            asked.append(1)
            return "no daemon" if len(asked) == 1 else "asked twice"

        return runtime.Probe({"PATH": "/nonexistent", **environ}, docker=docker)

    def test_env_is_met_when_set_and_not_empty_or_given_by_the_run(self, tmp_path: Path) -> None:
        probe = self.probe(SET="1", EMPTY="")
        assert probe.unmet("env:SET", tmp_path) is None
        assert probe.unmet("env:EMPTY", tmp_path) == "environment variable EMPTY is not set"
        assert probe.unmet("env:CODEX_HOME", tmp_path, given={"CODEX_HOME"}) is None

    def test_command_and_path_are_looked_up_on_path_and_under_cwd(self, tmp_path: Path) -> None:
        (tmp_path / "tool").write_text("")
        (tmp_path / "data").mkdir()
        probe = self.probe()
        assert probe.unmet("command:./tool", tmp_path) is None
        assert probe.unmet("command:tool", tmp_path) == "command 'tool' is not on PATH"
        assert probe.unmet("path:data", tmp_path) is None
        assert probe.unmet("path:nope", tmp_path) == f"path nope does not exist (under {tmp_path})"

    def test_docker_is_asked_once_per_probe(self, tmp_path: Path) -> None:
        probe = self.probe()
        missing = probe.missing("a", ["docker", "docker|env:X"], tmp_path)
        missing += probe.missing("b", ["docker"], tmp_path)
        assert [(m.benchmark, m.requirement, m.why) for m in missing] == [
            ("a", "docker", "no daemon"),
            ("a", "docker|env:X", "no daemon; environment variable X is not set"),
            ("b", "docker", "no daemon"),
        ]

    def test_the_docker_timeout_comes_from_the_environment(self) -> None:
        assert runtime.docker_timeout({}) == runtime.DEFAULT_DOCKER_TIMEOUT
        assert runtime.docker_timeout({runtime.DOCKER_TIMEOUT_ENV: "2.5"}) == 2.5
        assert runtime.docker_timeout({runtime.DOCKER_TIMEOUT_ENV: "x"}) == 10.0
        assert runtime.docker_timeout({runtime.DOCKER_TIMEOUT_ENV: "0"}) == 10.0
