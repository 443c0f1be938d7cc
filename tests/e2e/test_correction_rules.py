"""Corrections say why, and state only scores their unit allows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Invoke
from tests.helpers import run_json, write_json


def imported_run(tmp_path: Path, invoke: Invoke, unit: str | None, score: float = 0.5) -> str:
    doc = run_json(score=score, run_key=f"run-{unit}", cells=[{"key": "q1", "outcome": "passed"}])
    doc["unit"] = unit
    invoke("import", str(write_json(tmp_path / f"{unit}.json", doc)))
    [row] = [r for r in json.loads(invoke("runs", "--json").stdout) if r["unit"] == unit]
    return str(row["run_id"])


class TestABlankReasonIsRefused:
    @pytest.mark.parametrize("reason", ["", "   ", "\t\n"])
    @pytest.mark.parametrize(
        "command",
        [["invalidate"], ["reinstate"], ["correct-score", "--score", "0.4"]],
        ids=["invalidate", "reinstate", "correct-score"],
    )
    def test_with_an_error_naming_the_option_and_nothing_appended(
        self, tmp_path: Path, invoke: Invoke, command: list[str], reason: str
    ) -> None:
        run_id = imported_run(tmp_path, invoke, "accuracy")
        before = invoke("events", "--json").stdout
        result = invoke(command[0], run_id, *command[1:], "--reason", reason, expect=1)
        assert result.stderr == "Error: --reason must not be blank\n"
        assert invoke("events", "--json").stdout == before

    def test_the_domain_refuses_it_too(self) -> None:
        from benchledger.domain import run_rules
        from benchledger.domain.errors import BlankReasonError

        with pytest.raises(BlankReasonError, match="reason must not be blank"):
            run_rules.require_reason("  ")


class TestCorrectScoreStaysInItsUnitsRange:
    @pytest.mark.parametrize(
        ("unit", "score", "bounds"),
        [
            ("accuracy", "2", "[0, 1]"),
            ("accuracy", "-0.1", "[0, 1]"),
            ("resolved_rate", "1.5", "[0, 1]"),
            ("pass_rate", "7", "[0, 1]"),
            ("ratio", "-1", "[0, 1]"),
            ("percent", "101", "[0, 100]"),
        ],
    )
    def test_a_score_outside_the_range_is_refused_naming_the_range(
        self, tmp_path: Path, invoke: Invoke, unit: str, score: str, bounds: str
    ) -> None:
        run_id = imported_run(tmp_path, invoke, unit)
        before = invoke("events", "--json").stdout
        result = invoke("correct-score", run_id, "--score", score, "--reason", "x", expect=1)
        assert result.stderr.strip() == (
            f"Error: score {float(score):g} is outside {bounds} for unit {unit}"
        )
        assert invoke("events", "--json").stdout == before

    @pytest.mark.parametrize(
        ("unit", "score"),
        [
            ("accuracy", "1"),
            ("accuracy", "0"),
            ("percent", "55.5"),
            ("reward", "2"),
            ("elo", "-40"),
        ],
    )
    def test_a_score_inside_the_range_or_of_an_unbounded_unit_is_recorded(
        self, tmp_path: Path, invoke: Invoke, unit: str, score: str
    ) -> None:
        run_id = imported_run(tmp_path, invoke, unit)
        receipt = json.loads(
            invoke("correct-score", run_id, "--score", score, "--reason", "grader", "--json").stdout
        )
        assert receipt["score"] == float(score)
