"""The whole shared corpus imported at once: no conflict over a placeholder or an added
detail. What conflicts remain are facts two versions of a source state differently."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CORPUS, Invoke

pytestmark = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"the shared corpus is not at {CORPUS} (it lives beside the repo)"
)
BOARDS = "swebench/leaderboards"
SUPERSEDED = (
    "swebench/experiments_submissions/verified_superseded/"
    "vorflux__20250519_vorflux_opus46-code_gpt55h-review@751809c/results/results.json"
)
# Each file refused, its first run stated differently and that run's first differing fact:
# the superseded submission's score, and the newer boards' link to the devlo site (their
# other differences: two published scores, and costs restated: FORMAT.md's history).
REFUSED = {
    SUPERSEDED: (
        "verified/vorflux__20250519_vorflux_opus46-code_gpt55h-review",
        "score: recorded 0.884, this file states 0.826",
    ),
    f"{BOARDS}/leaderboards_2025-11-18_newschema.json": (
        "leaderboard/verified/20241213_devlo",
        "provenance.site: recorded 'https://devlo.ai', this file states "
        "'https://devlo.ai/?utm_source=swe-bench'",
    ),
    f"{BOARDS}/leaderboards_2025-12-10_with_per_instance_details.json": (
        "leaderboard/verified/20241213_devlo",
        "provenance.site: recorded 'https://devlo.ai', this file states "
        "'https://devlo.ai/?utm_source=swe-bench'",
    ),
}
CONFLICT = re.compile(
    r"run '(?P<run>[^']+)' is already recorded with other facts: (?P<facts>.*?)"
    r"(?: \(and \d+ more\))?\. Nothing was appended"
)
# What importers fill in where a source is silent, as a conflict would show it.
PLACEHOLDERS = ("'unknown'", "''", "[]", "True", "'swe_bench_unknown'")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    from click.testing import CliRunner

    from benchledger.commands.cli import cli

    db = tmp_path_factory.mktemp("corpus") / "corpus.db"
    result = CliRunner().invoke(cli, ["--db", str(db), "import", str(CORPUS), "--json"])
    assert result.exit_code == 1, result.stderr  # the conflicts below, and nothing else
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def conflicts(reports: list[dict[str, Any]]) -> dict[str, tuple[str, list[str]]]:
    """Each refused file (relative to the corpus): its run and the facts named."""
    found = {}
    for report in reports:
        if report["state"] != "conflict":
            continue
        match = CONFLICT.search(report["message"])
        assert match, report["message"]
        path = Path(report["path"]).relative_to(CORPUS.name).as_posix()  # as imported
        found[path] = (match["run"], match["facts"].split("; "))
    return found


def test_no_conflict_is_over_a_placeholder(reports: list[dict[str, Any]]) -> None:
    for path, (run, named) in conflicts(reports).items():
        for fact in named:
            recorded, _, stated = fact.partition(": recorded ")[2].partition(", this file states ")
            assert recorded not in PLACEHOLDERS and stated not in PLACEHOLDERS, (path, run, fact)


def test_what_remains_are_facts_stated_differently(reports: list[dict[str, Any]]) -> None:
    found = conflicts(reports)
    assert {path: (run, named[0]) for path, (run, named) in found.items()} == REFUSED
    assert {r["state"] for r in reports} >= {"imported", "ignored"}
    assert not [r for r in reports if r["state"] == "failed"]


def test_a_newer_board_fills_what_the_older_schema_left_to_the_importer(
    tmp_path: Path, invoke: Invoke
) -> None:
    boards = CORPUS / BOARDS
    invoke("import", str(boards / "leaderboards_2025-05-07_oldschema.json"))
    result = invoke("import", str(boards / "leaderboards_2025-11-18_newschema.json"), expect=1)
    assert "'unknown'" not in result.stderr and "recorded []" not in result.stderr
    # Its refused rows aside (they state a fact differently), the newer board adds to the
    # older rows: the model, the tags, where the logs are.
    run = "leaderboard/test/20250227_sweagent-claude-3-7-20250219"
    invoke("import", str(boards / "leaderboards_2025-11-18_newschema.json"), "--amend")
    shown = json.loads(invoke("show", run, "--json").stdout)["run"]
    assert shown["model"] == "claude-3-7-sonnet-20250219"
    assert shown["provenance"]["tags"][0] == "Model: claude-3-7-sonnet-20250219"
    assert shown["provenance"]["logs"].startswith("s3://")
