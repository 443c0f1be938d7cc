from __future__ import annotations

from uuid import uuid4

import pytest

from benchledger.domain.agent_identity import agent_identity
from benchledger.domain.errors import RuleViolationError
from benchledger.domain.model_aliases import declare
from benchledger.domain.model_identity import bfcl_entry, implied_provider, resolve_model


def ids(*names: str) -> set[str]:
    return {resolve_model(name).model_id for name in names}


class TestSpellingsOfOneModelResolveToOneId:
    def test_hugging_face_ids_differing_in_case_are_one_model(self) -> None:
        assert ids("Qwen/Qwen2.5-1.5B", "qwen/qwen2.5-1.5B") == {"qwen/qwen2.5-1.5b"}

    def test_a_local_copy_of_the_hub_is_the_repo_its_path_ends_in(self) -> None:
        assert ids(
            "meta-llama/Meta-Llama-3-8B",
            "/data/public_models/huggingface/meta-llama/Meta-Llama-3-8B",
            "/cache/models--meta-llama--Meta-Llama-3-8B/snapshots/0123abc",
        ) == {"meta-llama/meta-llama-3-8b"}

    def test_leaderboard_display_names_with_dates_are_the_vendor_s_dated_ids(self) -> None:
        assert ids(
            "Claude 3.5 Sonnet (20241022)",
            "Claude-3.5 Sonnet (20241022)",
            "Claude 3.5 Sonnet (2024-10-22)",
            "claude-3-5-sonnet-20241022",
        ) == {"claude-3-5-sonnet-20241022"}
        assert ids("GPT 4o (2024-05-13)", "gpt-4o-2024-05-13") == {"gpt-4o-2024-05-13"}
        assert ids("O3 Mini (20250131)") == {"o3-mini-2025-01-31"}

    def test_bfcl_s_function_calling_spellings_are_one_model_and_one_entry(self) -> None:
        names = ("Claude-Sonnet-4-5-20250929 (FC)", "claude-sonnet-4-5-20250929-FC")
        assert ids(*names) == {"claude-sonnet-4-5-20250929"}
        assert {bfcl_entry(n) for n in names} == {"claude-sonnet-4-5-20250929-FC"}
        assert {
            bfcl_entry(n) for n in ("DeepSeek-V3.1-Terminus (FC)", "DeepSeek-V3.1-Terminus-FC")
        } == {"DeepSeek-V3.1-Terminus-FC"}

    def test_the_rule_that_joined_a_name_is_named(self) -> None:
        assert resolve_model("Qwen/Qwen2.5-1.5B").rule == "hf_repo_case"
        assert resolve_model("GPT 4o (2024-05-13)").rule == "display_name"
        assert resolve_model("gpt-4o").rule == "stated"


class TestRulesNeverJoinTwoModels:
    def test_an_undated_name_is_not_a_dated_release(self) -> None:
        assert len(ids("gpt-4o", "GPT 4o (2024-05-13)")) == 2

    def test_different_dates_sizes_and_versions_stay_apart(self) -> None:
        assert len(ids("GPT 4o (2024-05-13)", "GPT 4o (2024-08-06)")) == 2
        assert len(ids("Qwen/Qwen2.5-1.5B", "Qwen/Qwen2.5-7B")) == 2
        assert len(ids("Claude 3.5 Sonnet (20241022)", "Claude 3.7 Sonnet (20241022)")) == 2

    def test_a_mode_is_kept_in_the_entry_though_the_model_is_one(self) -> None:
        assert bfcl_entry("gpt-4o-2024-11-20-FC") != bfcl_entry("GPT-4o-2024-11-20 (Prompt)")

    @pytest.mark.parametrize(
        "name",
        [
            "unknown",
            "GPT4o",
            "gpt2",
            "Gemini 2.0 Flash (Experimental)",
            "GPT 4o & Claude 3 Opus",
            "Glyphh Ada 1.1 (HDC+FC)",
            "/gaueko1/hizkuntza-ereduak/LLaMA/lm/huggingface/7B",
            "../prompt-pursuit/results/aug17/epoch_20",
        ],
    )
    def test_a_name_no_rule_resolves_stays_itself(self, name: str) -> None:
        assert resolve_model(name).model_id == name
        assert resolve_model(name).rule == "stated"


class TestImpliedProviders:
    @pytest.mark.parametrize(
        ("model_id", "provider"),
        [
            ("claude-3-5-sonnet-20241022", "anthropic"),
            ("gpt-4o-2024-05-13", "openai"),
            ("o3-mini-2025-01-31", "openai"),
            ("gemini-2.5-pro", "google"),
            ("gpt-oss-120b", None),
            ("gpt2", None),
            ("qwen/qwen2.5-1.5b", None),
            ("claude-opus-4-6+gpt-5.5-high", None),
        ],
    )
    def test_only_a_vendor_s_own_id_implies_its_provider(
        self, model_id: str, provider: str | None
    ) -> None:
        assert implied_provider(model_id) == provider


class TestAgentKeptApartFromItsHarness:
    def test_lm_eval_in_the_agent_slot_is_the_harness_and_no_agent(self) -> None:
        assert agent_identity("lm-evaluation-harness", "lm_eval") == (
            None,
            "lm-evaluation-harness",
        )

    def test_an_inspect_solver_chain_is_no_agent_but_a_named_plan_is(self) -> None:
        assert agent_identity("system_message+generate", "inspect_ai") == (None, "inspect_ai")
        assert agent_identity("react_agent", "inspect_ai") == ("react_agent", "inspect_ai")

    def test_an_agent_under_a_harness_stays_the_agent(self) -> None:
        assert agent_identity("SWE-agent", "swebench") == ("SWE-agent", "swebench")
        assert agent_identity("eliza", "orchestrator") == ("eliza", None)


class TestAliasDeclarations:
    @pytest.mark.parametrize(("name", "model_id"), [("unknown", "x"), ("x", ""), (" x", "y")])
    def test_an_alias_must_name_a_model_on_both_sides(self, name: str, model_id: str) -> None:
        with pytest.raises(RuleViolationError):
            declare(uuid4(), name, model_id, "me", "")
