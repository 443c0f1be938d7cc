from __future__ import annotations

import sys
import textwrap
from datetime import date
from pathlib import Path

import pytest

import benchledger.adapters.execution.registry as registry_module
from benchledger.adapters.execution.defaults import DEFAULT_REGISTRY
from benchledger.adapters.execution.registry import (
    BenchmarkSpec,
    Gap,
    HighScore,
    Registry,
    inventory,
    load_registry,
    overlay_config,
    placeholders,
    render_command,
    split_ids,
    work_config,
)
from benchledger.domain.errors import InputFormatError, LedgerError, NotFoundError

FULL = """
results_root = "out"

[benchmarks.bfcl]
description = "Berkeley function calling"
directory = "bfcl-suite"
command = ["python", "run_bfcl.py", "--model", "{model}", "--limit", "{config.limit}"]
cwd = "suites/bfcl"
result = "*.json"
format = "native"
config = { limit = 10 }
required_env = ["OPENAI_API_KEY"]
agents = ["eliza", "hermes"]
unit = "accuracy"
higher_is_better = false
high_score = { label = "gpt-5", value = 0.891, unit = "acc", source = "lb", as_of = 2026-09-30 }

[benchmarks.hellaswag]
command = "python -m hs --out '{output_dir}'"

[profiles.cerebras-oss]
provider = "cerebras"
model = "gpt-oss-120b"
extra = { temperature = 0.0, per_benchmark = { bfcl = { limit = 5 } } }
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / DEFAULT_REGISTRY
    path.write_text(textwrap.dedent(text))
    return path


def load(tmp_path: Path, text: str) -> Registry:
    return load_registry(write(tmp_path, text))


def format_error(tmp_path: Path, text: str) -> InputFormatError:
    with pytest.raises(InputFormatError) as e:
        load(tmp_path, text)
    return e.value


class TestLoading:
    def test_reads_every_key_of_a_full_registry(self, tmp_path: Path) -> None:
        registry = load(tmp_path, FULL)
        bfcl = registry.get("bfcl")
        assert registry.path == tmp_path.resolve() / DEFAULT_REGISTRY
        assert registry.results_root == tmp_path.resolve() / "out"
        assert list(registry.benchmarks) == ["bfcl", "hellaswag"]
        assert bfcl.id == "bfcl"
        assert bfcl.description == "Berkeley function calling"
        assert bfcl.directory == "bfcl-suite"
        assert bfcl.command == (
            "python",
            "run_bfcl.py",
            "--model",
            "{model}",
            "--limit",
            "{config.limit}",
        )
        assert bfcl.cwd == tmp_path.resolve() / "suites" / "bfcl"
        assert (bfcl.result, bfcl.format, bfcl.config) == ("*.json", "native", {"limit": 10})
        assert bfcl.required_env == ("OPENAI_API_KEY",)
        assert bfcl.agents == ("eliza", "hermes")
        assert (bfcl.unit, bfcl.higher_is_better) == ("accuracy", False)
        assert bfcl.high_score == HighScore(
            label="gpt-5", value=0.891, unit="acc", source="lb", as_of=date(2026, 9, 30)
        )
        profile = registry.profile("cerebras-oss")
        assert (profile.name, profile.provider, profile.model) == (
            "cerebras-oss",
            "cerebras",
            "gpt-oss-120b",
        )
        assert profile.extra == {"temperature": 0.0, "per_benchmark": {"bfcl": {"limit": 5}}}

    def test_fills_defaults_for_optional_keys(self, tmp_path: Path) -> None:
        registry = load(tmp_path, '[benchmarks.b]\ncommand = ["run"]\n')
        spec = registry.get("b")
        assert registry.results_root == tmp_path.resolve() / "results"
        assert spec.cwd == tmp_path.resolve()
        assert (spec.result, spec.format, spec.config) == ("**/*.json", "native", {})
        assert (spec.required_env, spec.agents) == ((), ())
        assert (spec.description, spec.unit, spec.high_score) == (None, None, None)
        assert spec.directory == "b"  # the signature's benchmark directory: the id
        assert spec.higher_is_better is True
        assert registry.profiles == {}

    def test_resolves_paths_against_the_registry_folder_not_the_working_directory(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (tmp_path / "elsewhere").mkdir()
        monkeypatch.chdir(tmp_path / "elsewhere")
        path = write(tmp_path, '[benchmarks.b]\ncommand = ["run"]\ncwd = "suite"\n')
        spec = load_registry(path).get("b")
        assert spec.cwd == tmp_path.resolve() / "suite"

    def test_splits_a_command_string_like_a_shell(self, tmp_path: Path) -> None:
        registry = load(tmp_path, FULL)
        assert registry.get("hellaswag").command == ("python", "-m", "hs", "--out", "{output_dir}")

    def test_the_documented_example_loads(self, tmp_path: Path) -> None:
        doc = registry_module.__doc__ or ""
        example = doc[doc.index("    results_root") : doc.index("Command placeholders")]
        registry = load(tmp_path, example)
        assert registry.get("bfcl").high_score is not None
        assert registry.profile("cerebras-oss").model == "gpt-oss-120b"


class TestBadRegistryFiles:
    def test_a_directory_is_a_non_empty_string(self, tmp_path: Path) -> None:
        for bad in ('""', "3"):
            text = f'[benchmarks.b]\ncommand = ["run"]\ndirectory = {bad}\n'
            assert format_error(tmp_path, text).field == "benchmarks.b.directory"

    def test_an_unknown_key_names_its_path(self, tmp_path: Path) -> None:
        error = format_error(tmp_path, '[benchmarks.bfcl]\ncommand = ["run"]\ncomand = "x"\n')
        assert error.field == "benchmarks.bfcl.comand"
        assert "unknown key" in str(error)

    def test_an_unknown_key_inside_high_score_names_its_path(self, tmp_path: Path) -> None:
        text = '[benchmarks.b]\ncommand = ["r"]\nhigh_score = { label = "x", value = 1, by = 2 }\n'
        assert format_error(tmp_path, text).field == "benchmarks.b.high_score.by"

    def test_an_unknown_top_level_key_is_named(self, tmp_path: Path) -> None:
        assert format_error(tmp_path, 'result_root = "r"\n').field == "result_root"

    def test_a_missing_command_is_named(self, tmp_path: Path) -> None:
        error = format_error(tmp_path, '[benchmarks.bfcl]\nformat = "native"\n')
        assert error.field == "benchmarks.bfcl.command"
        assert "required" in error.message
        assert error.path == str(tmp_path / DEFAULT_REGISTRY)

    def test_a_wrong_type_names_the_field(self, tmp_path: Path) -> None:
        error = format_error(tmp_path, '[benchmarks.b]\ncommand = ["r"]\nagents = ["a", 3]\n')
        assert error.field == "benchmarks.b.agents[1]"

    def test_a_command_string_with_an_open_quote_is_refused(self, tmp_path: Path) -> None:
        error = format_error(tmp_path, '[benchmarks.b]\ncommand = "run \'x"\n')
        assert error.field == "benchmarks.b.command"
        assert "cannot split" in error.message

    def test_a_benchmark_id_with_other_characters_is_refused(self, tmp_path: Path) -> None:
        error = format_error(tmp_path, '[benchmarks."a b"]\ncommand = ["run"]\n')
        assert error.field == "benchmarks.a b"

    def test_an_id_key_inside_a_benchmark_is_unknown(self, tmp_path: Path) -> None:
        error = format_error(tmp_path, '[benchmarks.b]\nid = "c"\ncommand = ["run"]\n')
        assert error.field == "benchmarks.b.id"

    def test_a_profile_per_benchmark_entry_must_name_a_benchmark(self, tmp_path: Path) -> None:
        text = FULL.replace("per_benchmark = { bfcl", "per_benchmark = { bcfl")
        error = format_error(tmp_path, text)
        assert error.field == "profiles.cerebras-oss.extra.per_benchmark.bcfl"

    def test_bad_toml_names_the_file_and_line(self, tmp_path: Path) -> None:
        error = format_error(tmp_path, '[benchmarks.b]\ncommand = ["run"]\nformat = \n')
        assert error.path == str(tmp_path / DEFAULT_REGISTRY)
        assert error.line == 3
        assert error.message == "invalid TOML: Invalid value (column 10)"

    def test_bad_toml_without_a_line_still_names_the_file(self, tmp_path: Path) -> None:
        error = format_error(tmp_path, '[benchmarks.b]\ncommand = ["run"\n')
        assert error.path == str(tmp_path / DEFAULT_REGISTRY)
        assert "Unclosed array" in error.message

    def test_a_missing_file_is_reported_as_such(self, tmp_path: Path) -> None:
        with pytest.raises(InputFormatError) as e:
            load_registry(tmp_path / "nowhere.toml")
        assert e.value.path == str(tmp_path / "nowhere.toml")
        assert "no registry file" in e.value.message


class TestLookup:
    def test_an_unknown_benchmark_lists_the_known_ones(self, tmp_path: Path) -> None:
        with pytest.raises(NotFoundError) as e:
            load(tmp_path, FULL).get("x")
        assert str(e.value) == "unknown benchmark 'x' (known: bfcl, hellaswag)"

    def test_an_unknown_profile_is_not_found(self, tmp_path: Path) -> None:
        with pytest.raises(NotFoundError, match="cerebras-oss"):
            load(tmp_path, FULL).profile("groq")

    def test_select_keeps_the_requested_order(self, tmp_path: Path) -> None:
        specs = load(tmp_path, FULL).select(["hellaswag", "bfcl"])
        assert [s.id for s in specs] == ["hellaswag", "bfcl"]

    def test_select_names_every_unknown_id_at_once(self, tmp_path: Path) -> None:
        with pytest.raises(NotFoundError) as e:
            load(tmp_path, FULL).select(["a", "bfcl", "b"])
        assert str(e.value) == "unknown benchmarks: a, b (known: bfcl, hellaswag)"

    def test_split_ids_splits_strips_drops_empties_and_deduplicates(self) -> None:
        assert split_ids(["a, b", "c,,a", " ", "b ,d"]) == ["a", "b", "c", "d"]


class TestAgents:
    def test_a_benchmark_with_an_agent_list_accepts_only_those(self, tmp_path: Path) -> None:
        bfcl = load(tmp_path, FULL).get("bfcl")
        assert bfcl.accepts("eliza")
        assert not bfcl.accepts("codex")

    def test_a_benchmark_without_an_agent_list_accepts_any(self, tmp_path: Path) -> None:
        assert load(tmp_path, FULL).get("hellaswag").accepts("codex")

    def test_a_model_comparison_runs_what_more_than_one_agent_can_run(self, tmp_path: Path) -> None:
        registry = load(
            tmp_path,
            """
            [benchmarks.shared]
            command = "true"
            agents = ["eliza", "hermes"]
            [benchmarks.single]
            command = "true"
            agents = ["eliza"]
            [benchmarks.any]
            command = "true"
            """,
        )
        assert registry.get("shared").accepts("compare")
        assert registry.get("any").accepts("compare")
        # A benchmark wrapping a single implementation is not a model comparison's.
        assert not registry.get("single").accepts("compare")

    def test_a_calibration_agent_runs_any_benchmark(self, tmp_path: Path) -> None:
        single = load(tmp_path, '[benchmarks.single]\ncommand = "true"\nagents = ["eliza"]\n')
        for agent in ("perfect_v1", "wrong_v1", "half_v1", "random_v1"):
            assert single.get("single").accepts(agent)
        assert not single.get("single").accepts("hermes")


class TestOverlayConfig:
    def test_overlays_per_benchmark_then_the_rest_of_each_extra(self) -> None:
        extra = {"per_benchmark": {"bfcl": {"limit": 5}, "x": {"limit": 1}}, "t": 1}
        assert overlay_config({"limit": 10, "t": 0}, "bfcl", extra) == {"limit": 5, "t": 1}

    def test_a_plain_key_wins_over_per_benchmark_within_one_extra(self) -> None:
        extra = {"per_benchmark": {"bfcl": {"t": 2}}, "t": 1}
        assert overlay_config({}, "bfcl", extra) == {"t": 1}

    def test_later_extras_win_over_earlier_ones(self) -> None:
        profile = {"t": 1, "per_benchmark": {"bfcl": {"limit": 5}}}
        cli = {"per_benchmark": {"bfcl": {"limit": 7}}}
        assert overlay_config({"limit": 10}, "bfcl", profile, cli) == {"t": 1, "limit": 7}

    def test_does_not_mutate_its_inputs(self) -> None:
        spec = {"limit": 10}
        extra = {"per_benchmark": {"bfcl": {"limit": 5}}, "t": 1}
        overlay_config(spec, "bfcl", extra)
        assert spec == {"limit": 10}
        assert extra == {"per_benchmark": {"bfcl": {"limit": 5}}, "t": 1}


VALUES = {
    "agent": "eliza",
    "provider": "cerebras",
    "model": "gpt-oss-120b",
    "benchmark": "bfcl",
    "run_id": "r1",
    "output_dir": "/tmp/out",
}


class TestWorkConfig:
    def spec(self, tmp_path: Path, config: str) -> BenchmarkSpec:
        return load(tmp_path, f'[benchmarks.bfcl]\ncommand = ["run"]\nconfig = {config}\n').get(
            "bfcl"
        )

    def test_the_overlaid_config_then_the_orchestrators_rules(self, tmp_path: Path) -> None:
        spec = self.spec(tmp_path, "{ limit = 2, t = 0 }")
        profile = {"t": 1, "per_benchmark": {"bfcl": {"sample": 5}}}
        assert work_config(spec, "eliza", "cerebras", profile, {"u": 2}) == {
            "limit": 5,
            "t": 1,
            "sample": 5,
            "u": 2,
            "agent": "eliza",
            "harness": "eliza",
        }
        # What benchledger hashed before: the overlay alone.
        assert overlay_config(spec.config, "bfcl", profile, {"u": 2}) == {
            "limit": 2,
            "t": 1,
            "sample": 5,
            "u": 2,
        }

    def test_a_limit_given_by_an_extra_wins_over_its_sample(self, tmp_path: Path) -> None:
        spec = self.spec(tmp_path, "{ limit = 2 }")
        given = {"sample": 5, "per_benchmark": {"bfcl": {"limit": 3}}}
        assert work_config(spec, "hermes", "", given)["limit"] == 3


class TestRenderCommand:
    def test_substitutes_run_values_inside_arguments(self) -> None:
        command = ["run", "--model={provider}/{model}", "{agent}", "{benchmark}-{run_id}"]
        assert render_command(command, VALUES, {}) == [
            "run",
            "--model=cerebras/gpt-oss-120b",
            "eliza",
            "bfcl-r1",
        ]

    def test_config_strings_stay_as_is_and_other_values_become_json(self) -> None:
        config = {"split": "test", "limit": 5, "greedy": True, "tags": ["a", "b"], "x": None}
        command = [f"{{config.{key}}}" for key in config]
        assert render_command(command, VALUES, config) == ["test", "5", "true", '["a","b"]', "null"]

    def test_the_whole_config_renders_as_compact_json(self) -> None:
        rendered = render_command(["--config={config}"], VALUES, {"b": 1, "a": "x"})
        assert rendered == ['--config={"a":"x","b":1}']

    def test_doubled_braces_are_literal(self) -> None:
        assert render_command(["{{{model}}}", "}}{{"], VALUES, {}) == ["{gpt-oss-120b}", "}{"]

    def test_an_unknown_placeholder_names_itself_and_the_argument(self) -> None:
        values = {**VALUES, "modle": "m"}  # a stray value does not make a name known
        with pytest.raises(LedgerError, match=r"unknown placeholder \{modle\}.*'--m=\{modle\}'"):
            render_command(["run", "--m={modle}"], values, {})

    def test_a_missing_config_key_is_an_error(self) -> None:
        with pytest.raises(LedgerError, match=r"\{config.limit\}.*'limit'"):
            render_command(["{config.limit}"], VALUES, {"split": "x"})

    def test_a_known_placeholder_without_a_value_is_an_error(self) -> None:
        with pytest.raises(LedgerError, match=r"\{run_id\}"):
            render_command(["{run_id}"], {"model": "m"}, {})

    def test_a_single_brace_is_an_error(self) -> None:
        with pytest.raises(LedgerError, match="literal brace"):
            render_command(["{model"], VALUES, {})

    def test_placeholders_lists_the_names_used_but_not_literal_braces(self) -> None:
        command = ["{model}", "{{x}}", "--n={config.limit}-{config}", "{model}"]
        assert placeholders(command) == {"model", "config.limit", "config"}


class TestInventory:
    def good(self, tmp_path: Path, extra: str = "") -> str:
        (tmp_path / "suite").mkdir(exist_ok=True)
        command = [sys.executable, "run.py", "{model}", "{config.limit}", "{config}"]
        words = ", ".join(f"'{word}'" for word in command)  # literal strings: no escapes
        return (
            f'[benchmarks.b]\ncommand = [{words}]\ncwd = "suite"\nconfig = {{ limit = 3 }}\n'
            + extra
        )

    def gaps(self, tmp_path: Path, text: str) -> list[Gap]:
        return inventory(load(tmp_path, text), known_formats={"native"})

    def test_a_good_registry_has_no_gaps(self, tmp_path: Path) -> None:
        assert self.gaps(tmp_path, self.good(tmp_path)) == []

    def test_a_script_under_cwd_counts_as_resolvable(self, tmp_path: Path) -> None:
        (tmp_path / "suite").mkdir()
        (tmp_path / "suite" / "run.sh").write_text("#!/bin/sh\n")
        text = '[benchmarks.b]\ncommand = ["./run.sh"]\ncwd = "suite"\n'
        assert self.gaps(tmp_path, text) == []

    def test_finds_a_command_that_cannot_be_resolved(self, tmp_path: Path) -> None:
        text = self.good(tmp_path).replace(sys.executable, "no-such-prog-x")
        [gap] = self.gaps(tmp_path, text)
        assert gap.benchmark == "b"
        assert "no-such-prog-x" in gap.problem

    def test_finds_an_empty_command(self, tmp_path: Path) -> None:
        gaps = self.gaps(tmp_path, "[benchmarks.b]\ncommand = []\n")
        assert gaps == [Gap("b", "command is empty")]

    def test_finds_a_missing_cwd(self, tmp_path: Path) -> None:
        text = self.good(tmp_path).replace('cwd = "suite"', 'cwd = "gone"')
        [gap] = self.gaps(tmp_path, text)
        assert "gone" in gap.problem and "does not exist" in gap.problem

    def test_finds_a_cwd_that_is_a_file(self, tmp_path: Path) -> None:
        (tmp_path / "file").write_text("")
        text = self.good(tmp_path).replace('cwd = "suite"', 'cwd = "file"')
        [gap] = self.gaps(tmp_path, text)
        assert "not a directory" in gap.problem

    def test_finds_an_unknown_format(self, tmp_path: Path) -> None:
        [gap] = self.gaps(tmp_path, self.good(tmp_path, 'format = "junit"\n'))
        assert gap.problem == "format 'junit' is not known (known: native)"

    def test_finds_an_unknown_placeholder(self, tmp_path: Path) -> None:
        text = self.good(tmp_path).replace("{model}", "{modle}")
        assert self.gaps(tmp_path, text) == [Gap("b", "unknown placeholder {modle}")]

    def test_finds_a_config_placeholder_without_a_default(self, tmp_path: Path) -> None:
        text = self.good(tmp_path).replace("limit = 3", "split = 'x'")
        assert self.gaps(tmp_path, text) == [Gap("b", "placeholder {config.limit} has no default")]

    def test_agent_and_harness_placeholders_need_no_default(self, tmp_path: Path) -> None:
        text = self.good(tmp_path).replace("{config}", "{config.harness}={config.agent}")
        assert self.gaps(tmp_path, text) == []

    def test_finds_a_single_brace(self, tmp_path: Path) -> None:
        text = self.good(tmp_path).replace("'{model}'", "'{model'")
        [gap] = self.gaps(tmp_path, text)
        assert "single brace" in gap.problem
