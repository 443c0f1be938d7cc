"""What an executed run's result file adds to the run it records (`facts.result_additions`)."""

from __future__ import annotations

from typing import Any

from benchledger.domain.facts import result_additions
from benchledger.domain.records import RunHeader, RunRecord, RunStatus


def record(config: dict[str, Any], provenance: dict[str, Any] | None = None) -> RunRecord:
    header = RunHeader(
        benchmark="quick",
        agent="eliza",
        model="m1",
        status=RunStatus.SUCCEEDED,
        score=0.5,
        config=config,
        provenance=provenance or {},
    )
    return RunRecord(header=header)


class TestResultAdditions:
    def test_a_result_that_restates_the_runs_config_adds_nothing(self) -> None:
        assert result_additions({"limit": 2}, record({"limit": 2})) == {}

    def test_the_config_keys_and_flags_a_result_states_are_added(self) -> None:
        added = result_additions({"limit": 2}, record({"limit": 2, "mock": True}, {"seed": 7}))
        assert added == {"config": {"mock": True}, "provenance": {"seed": 7}}

    def test_a_key_stated_differently_keeps_the_runs_value_and_the_files_whole_config(
        self,
    ) -> None:
        added = result_additions({"limit": 2}, record({"limit": 5, "demo": True}))
        assert added == {
            "config": {"demo": True},
            "provenance": {"result_config": {"limit": 5, "demo": True}},
        }

    def test_a_secret_looking_value_is_masked_before_it_is_compared(self) -> None:
        added = result_additions({}, record({"api_key": "sk-abcdefghijklmnopqrstuvwx"}))
        assert "sk-abcdefghijklmnopqrstuvwx" not in str(added)
