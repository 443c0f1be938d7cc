"""`domain.facts`: a placeholder is no fact, neither recorded nor stated."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from benchledger.adapters.formats.swebench_leaderboard import parse_leaderboards
from benchledger.domain import facts
from benchledger.domain.records import RunHeader, RunRecord
from benchledger.domain.run import RunFactsAdded, RunImported


def record(placeholders: tuple[str, ...] = (), **fields: Any) -> RunRecord:
    header = {
        "run_key": "r1",
        "benchmark": "swe_bench",
        "agent": "SWE-agent",
        "model": "claude-3-7-sonnet-20250219",
        "status": "succeeded",
        "score": 0.3383,
        "provenance": {"tags": ["Model: claude-3-7-sonnet-20250219"], "logs": "s3://x/logs/"},
        **fields,
    }
    return RunRecord(header=RunHeader.model_validate(header), placeholders=placeholders)


def imported(source: RunRecord) -> RunImported:
    """The event recording `source` as a run's first source (what `run_rules` writes)."""
    header = source.header
    return RunImported(
        originator_id=uuid.uuid4(),
        originator_version=1,
        run_key="r1",
        benchmark=header.benchmark,
        agent=header.agent,
        provider=header.provider,
        model=header.model,
        config={},
        signature="s",
        comparison_signature="c",
        source="imported",
        provenance=header.provenance,
        unstated=list(facts.unstated(source)),
        status=header.status,
        score=header.score,
    )


def merged(first: RunRecord, later: RunRecord) -> tuple[dict[str, Any], list[str]]:
    added, conflicts = facts.compare(facts.recorded([imported(first)]).facts, facts.stated(later))
    return added, [c.path for c in conflicts]


OLD_ROW = record(
    ("model", "provenance.tags", "provenance.logs"),
    model="unknown",
    provenance={"tags": [], "logs": True, "site": "https://swe-agent.com"},
)


class TestARecordedPlaceholder:
    def test_counts_as_absent_so_the_stated_values_are_added(self) -> None:
        added, conflicts = merged(OLD_ROW, record())
        assert conflicts == []
        assert added == {
            "model": "claude-3-7-sonnet-20250219",
            "provenance": {"tags": ["Model: claude-3-7-sonnet-20250219"], "logs": "s3://x/logs/"},
        }

    def test_an_empty_provider_and_a_model_named_unknown_are_placeholders_unmarked(
        self,
    ) -> None:
        # Ledgers written before importers marked them hold them so.
        first = record(model="unknown", provider="")
        added, conflicts = merged(first, record(provider="anthropic"))
        assert conflicts == []
        assert (added["provider"], added["model"]) == ("anthropic", "claude-3-7-sonnet-20250219")

    def test_once_filled_is_a_fact(self) -> None:
        events = [
            imported(OLD_ROW),
            RunFactsAdded(
                originator_id=uuid.uuid4(), originator_version=2, facts={"model": "gpt-4o"}
            ),
        ]
        held = facts.recorded(events)
        added, conflicts = facts.compare(held.facts, facts.stated(record()))
        assert [c.path for c in conflicts] == ["model"]
        assert "model" not in added

    def test_a_provenance_key_that_was_not_marked_is_a_fact(self) -> None:
        first = record(("model",), model="unknown", provenance={"logs": True})
        assert merged(first, record())[1] == ["provenance.logs"]


class TestAStatedPlaceholder:
    def test_never_conflicts_with_a_recorded_fact(self) -> None:
        added, conflicts = merged(record(), OLD_ROW)
        assert conflicts == []
        assert added == {"provenance": {"site": "https://swe-agent.com"}}

    def test_is_left_out_of_what_a_record_states(self) -> None:
        stated = facts.stated(OLD_ROW)
        assert "model" not in stated
        assert stated["provenance"] == {"site": "https://swe-agent.com"}
        assert "provider" not in facts.stated(record(provider=""))


class TestAStatedValueThatDiffers:
    def test_from_a_recorded_stated_value_is_a_conflict(self) -> None:
        later = record(score=0.158, model="claude-3-opus-20240229")
        assert merged(record(), later)[1] == ["model", "score"]

    def test_beside_a_placeholder_is_still_a_conflict(self) -> None:
        assert merged(OLD_ROW, record(score=0.5))[1] == ["score"]


class TestTheRunsIdentity:
    def test_keeps_its_placeholders_and_takes_the_names_that_fill_them(self) -> None:
        held = facts.recorded([imported(OLD_ROW)])
        assert held.identity["model"] == "unknown"
        after = held.identity_after({"model": "gpt-4o", "score": 0.5})
        assert after == {**held.identity, "model": "gpt-4o"}

    def test_signs_the_header_with_the_runs_names_not_the_files_placeholders(self) -> None:
        header = OLD_ROW.header
        named = facts.identified(header, {"model": "gpt-4o"})
        assert named.model == "gpt-4o" and named.signature != header.signature
        assert facts.identified(header, {"model": "unknown"}) is header


def board_row(**row: Any) -> RunRecord:
    document = {"leaderboards": [{"name": "Test", "results": [row]}]}
    [parsed] = parse_leaderboards(Path("leaderboards.json"), document, None)
    return parsed


class TestALeaderboardRowMarks:
    def test_the_tags_and_log_flags_an_older_schema_leaves_to_the_importer(self) -> None:
        old = board_row(name="SWE-agent 1.0", folder="f", resolved=33.83, logs=True, trajs=False)
        assert old.placeholders == ("model", "provenance.tags", "provenance.logs")
        assert old.header.provenance["tags"] == []  # recorded as before: the same content

    def test_a_model_read_out_of_the_rows_name(self) -> None:
        named = board_row(name="AutoCodeRover + GPT 4o (2024-05-13)", folder="f", resolved=1.0)
        assert named.header.model == "GPT 4o (2024-05-13)"
        assert named.placeholders == ("model", "provenance.tags")

    def test_nothing_a_newer_row_states(self) -> None:
        new = board_row(
            name="SWE-agent 1.0",
            folder="f",
            resolved=33.83,
            logs="s3://x/logs/",
            tags=["Model: claude-3-7-sonnet-20250219"],
        )
        assert new.placeholders == ()
