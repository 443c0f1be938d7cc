"""Model profiles: the orchestrator's JSON profile files read unchanged, by path or by name
from a profiles folder, registry and TOML profiles as before, and bad files named."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.execution.profiles import (
    PROFILES_ENV,
    find_profile,
    profile_folders,
    read_profile,
)
from benchledger.adapters.execution.registry import load_registry
from benchledger.domain.errors import InputFormatError, NotFoundError

CHECKOUT = os.environ.get("BENCHLEDGER_ORCHESTRATOR_CHECKOUT", "")
REGISTRY = """\
[benchmarks.bfcl]
command = ["bench"]

[profiles.oss]
provider = "cerebras"
model = "gpt-oss-120b"
extra = { temperature = 0.0 }
"""


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def registry_in(folder: Path) -> Path:
    path = folder / "benchledger.toml"
    path.write_text(REGISTRY)
    return path


def found(value: str, registry_path: Path, environ: dict[str, str] | None = None) -> Any:
    registry = load_registry(registry_path) if registry_path.exists() else None
    return find_profile(value, registry, registry_path, environ or {})


class TestAnOrchestratorProfile:
    def test_provider_model_and_extra_are_read_as_the_file_states_them(
        self, tmp_path: Path
    ) -> None:
        path = write_json(
            tmp_path / "gpt.json",
            {"provider": "openai", "model": "gpt-x", "extra": {"reasoning_effort": "medium"}},
        )
        profile = read_profile(path)
        assert (profile.name, profile.provider, profile.model) == ("gpt", "openai", "gpt-x")
        assert profile.extra == {"reasoning_effort": "medium"}

    def test_a_per_benchmark_only_profile_has_no_provider_or_model(self, tmp_path: Path) -> None:
        path = write_json(tmp_path / "sample.json", {"per_benchmark": {"bfcl": {"sample": 10}}})
        profile = read_profile(path)
        assert (profile.provider, profile.model) == ("", "")
        assert profile.extra == {"per_benchmark": {"bfcl": {"sample": 10}}}

    def test_extra_per_benchmark_overlays_the_top_level_one_key_by_key(
        self, tmp_path: Path
    ) -> None:
        data = {
            "per_benchmark": {"bfcl": {"sample": 10, "mode": "quick"}, "mint": {"max_tasks": 1}},
            "extra": {"t": 1, "per_benchmark": {"bfcl": {"sample": 5}}},
        }
        profile = read_profile(write_json(tmp_path / "p.json", data))
        assert profile.extra == {
            "t": 1,
            "per_benchmark": {"bfcl": {"sample": 5, "mode": "quick"}, "mint": {"max_tasks": 1}},
        }

    @pytest.mark.parametrize(
        ("data", "field", "message"),
        [
            ({"provider": 3}, "provider", "must be a non-empty string"),
            ({"model": "  "}, "model", "must be a non-empty string"),
            ({"extra": [1]}, "extra", "must be an object"),
            ({"per_benchmark": {"bfcl": 10}}, "per_benchmark.bfcl", "must be an object"),
            ({"extra": {"per_benchmark": []}}, "extra.per_benchmark", "must be an object of"),
            ({"model": "m", "notes": "x"}, "notes", "unknown key"),
        ],
    )
    def test_a_bad_field_is_an_error_naming_the_file_and_the_field(
        self, tmp_path: Path, data: dict[str, Any], field: str, message: str
    ) -> None:
        path = write_json(tmp_path / "bad.json", data)
        with pytest.raises(InputFormatError) as caught:
            read_profile(path)
        assert (caught.value.path, caught.value.field) == (str(path), field)
        assert caught.value.message.startswith(message)

    def test_a_file_that_is_not_a_json_object_is_named_with_its_line(self, tmp_path: Path) -> None:
        (tmp_path / "list.json").write_text("[]")
        with pytest.raises(InputFormatError, match="a model profile is a JSON object"):
            read_profile(tmp_path / "list.json")
        (tmp_path / "broken.json").write_text('{\n  "model": "m",\n}')
        with pytest.raises(InputFormatError) as caught:
            read_profile(tmp_path / "broken.json")
        assert caught.value.line == 3 and caught.value.message.startswith("not JSON")

    @pytest.mark.skipif(
        not CHECKOUT, reason="set BENCHLEDGER_ORCHESTRATOR_CHECKOUT to a checkout of it"
    )
    def test_every_profile_of_the_orchestrator_checkout_reads_unchanged(self) -> None:
        folder = Path(CHECKOUT) / "suites" / "orchestrator" / "profiles"
        files = sorted(folder.glob("*.json"))
        assert files, f"no profiles in {folder}"
        for path in files:
            data = json.loads(path.read_text())
            profile = read_profile(path)
            assert profile.provider == data.get("provider", "")
            assert profile.model == data.get("model", "")
            extra = dict(data.get("extra", {}))
            if "per_benchmark" in data:
                extra["per_benchmark"] = data["per_benchmark"]
            assert profile.extra == extra, path.name


class TestFindingAProfile:
    def test_a_path_to_a_json_file_is_read(self, tmp_path: Path) -> None:
        path = write_json(tmp_path / "elsewhere" / "gpt.json", {"provider": "openai", "model": "g"})
        assert found(str(path), registry_in(tmp_path)).model == "g"

    def test_a_registry_profile_is_found_by_name(self, tmp_path: Path) -> None:
        assert found("oss", registry_in(tmp_path)).model == "gpt-oss-120b"

    def test_a_name_is_looked_up_as_name_json_in_profiles_beside_the_registry(
        self, tmp_path: Path
    ) -> None:
        write_json(tmp_path / "profiles" / "gpt-5.5.json", {"provider": "openai", "model": "g"})
        registry = registry_in(tmp_path)
        assert found("gpt-5.5", registry).model == "g"
        assert found("gpt-5.5.json", registry).model == "g"

    def test_the_env_folders_come_first_then_profiles_dir_then_profiles(
        self, tmp_path: Path
    ) -> None:
        for folder in ("env1", "env2", "mine", "profiles"):
            write_json(tmp_path / folder / "p.json", {"model": folder})
        registry = tmp_path / "benchledger.toml"
        registry.write_text('profiles_dir = "mine"\n' + REGISTRY)
        environ = {PROFILES_ENV: os.pathsep.join([str(tmp_path / "env1"), str(tmp_path / "env2")])}
        assert found("p", registry, environ).model == "env1"
        (tmp_path / "env1" / "p.json").unlink()
        assert found("p", registry, environ).model == "env2"
        assert found("p", registry).model == "mine"
        (tmp_path / "mine" / "p.json").unlink()
        assert found("p", registry).model == "profiles"
        folders = profile_folders(load_registry(registry), registry, environ)
        assert folders == [tmp_path / f for f in ("env1", "env2", "mine", "profiles")]

    def test_a_registry_profile_wins_over_a_file_of_that_name_in_a_folder(
        self, tmp_path: Path
    ) -> None:
        write_json(tmp_path / "profiles" / "oss.json", {"model": "from-folder"})
        assert found("oss", registry_in(tmp_path)).model == "gpt-oss-120b"

    def test_without_a_registry_file_profiles_beside_where_it_would_be_are_used(
        self, tmp_path: Path
    ) -> None:
        write_json(tmp_path / "profiles" / "p.json", {"model": "m"})
        assert found("p", tmp_path / "benchledger.toml").model == "m"

    def test_a_toml_profile_file_keeps_working(self, tmp_path: Path) -> None:
        path = tmp_path / "mine.toml"
        path.write_text('provider = "groq"\nmodel = "llama"\nextra = { limit = 3 }\n')
        profile = found(str(path), registry_in(tmp_path))
        assert (profile.provider, profile.model, profile.extra) == ("groq", "llama", {"limit": 3})

    def test_an_unknown_name_says_where_it_looked_and_what_is_known(self, tmp_path: Path) -> None:
        write_json(tmp_path / "profiles" / "gpt-5.5.json", {"model": "g"})
        with pytest.raises(NotFoundError) as caught:
            found("claude", registry_in(tmp_path))
        message = str(caught.value)
        assert message.startswith("unknown model profile 'claude'")
        assert f"no claude.json in {tmp_path / 'profiles'}" in message
        assert message.endswith("(known: oss, gpt-5.5)")

    def test_a_missing_path_is_not_looked_up_by_name(self, tmp_path: Path) -> None:
        write_json(tmp_path / "profiles" / "p.json", {"model": "m"})
        with pytest.raises(
            NotFoundError, match=re.escape("no model profile file 'nowhere/p.json'")
        ):
            found("nowhere/p.json", registry_in(tmp_path))

    def test_the_registry_resolves_profiles_dir_from_its_folder(self, tmp_path: Path) -> None:
        path = tmp_path / "benchledger.toml"
        path.write_text('profiles_dir = "../shared/profiles"\n' + REGISTRY)
        assert load_registry(path).profiles_dir == tmp_path / "../shared/profiles"
        assert load_registry(registry_in(tmp_path)).profiles_dir is None
