"""The Terminal-Bench parser on every submission of the shared corpus, checked against the
submissions' own lists and tallies."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.adapters import formats
from benchledger.adapters.formats import terminal_bench
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord
from tests.conftest import CORPUS, Invoke

ROOT = CORPUS / "terminal_bench"
VORFLUX = ROOT / "vorflux"
SUBMISSIONS = 4
FULL = VORFLUX / "20260506_vorflux_gpt55h_opus47_thinking"
PARTS = ("20250430_vorflux_agent_v1", "20250503_vorflux_agent_v1_remaining39")

pytestmark = pytest.mark.skipif(
    not VORFLUX.is_dir(), reason=f"the shared Terminal-Bench corpus is not at {VORFLUX}"
)


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def parse(primary: Path) -> RunRecord:
    [record] = terminal_bench.parse(primary, primary.read_bytes())
    assert isinstance(record, RunRecord)
    return record


@pytest.fixture(scope="module")
def runs() -> dict[str, RunRecord]:
    """Every file the parser claims, by submission folder."""
    claimed = {}
    for path in sorted(p for p in ROOT.rglob("*") if p.is_file()):
        if terminal_bench.detect(path, path.read_bytes()[:4096]):
            claimed[path.parent.parent.name] = parse(path)
    return claimed


class TestWhatIsClaimed:
    def test_each_submission_is_claimed_once_through_its_detailed_results(
        self, runs: dict[str, RunRecord]
    ) -> None:
        assert sorted(runs) == sorted(p.name for p in VORFLUX.iterdir())
        assert len(runs) == SUBMISSIONS
        assert {r.header.run_key for r in runs.values()} == set(runs)

    def test_no_other_format_claims_a_file_of_a_submission(self) -> None:
        for path in sorted(p for p in VORFLUX.rglob("*") if p.is_file()):
            others = [
                f.NAME
                for f in formats.all_formats()
                if f.NAME != terminal_bench.NAME and f.detect(path, path.read_bytes()[:4096])
            ]
            assert others == [], path


class TestAgainstTheSubmissionsOwnTotals:
    def test_cells_match_the_resolved_and_unresolved_lists(
        self, runs: dict[str, RunRecord]
    ) -> None:
        for name, record in runs.items():
            published = load(VORFLUX / name / "results" / "results.json")
            passed = {c.key for c in record.cells if c.outcome == "passed"}
            failed = {c.key for c in record.cells if c.outcome == "failed"}
            assert (passed, failed) == (set(published["resolved"]), set(published["unresolved"]))

    def test_scores_are_resolved_over_the_dataset_size(self, runs: dict[str, RunRecord]) -> None:
        for name, record in runs.items():
            resolved = len(load(VORFLUX / name / "results" / "results.json")["resolved"])
            size = int(
                yaml.safe_load((VORFLUX / name / "metadata.yaml").read_text())["tags"][
                    "dataset_size"
                ]
            )
            assert record.header.score == resolved / size
            assert len(record.cells) == record.header.metrics["tasks"] == size
        assert {n: round(r.header.score or 0, 4) for n, r in runs.items()} == {
            "20250430_vorflux_agent_v1": 0.8,
            "20250503_vorflux_agent_v1_remaining39": 0.6923,
            "20260506_vorflux_gpt55h_opus47_thinking": 0.9551,
            "combined_full_89": 0.7528,
        }

    def test_the_newest_run_matches_the_count_its_notes_state(
        self, runs: dict[str, RunRecord]
    ) -> None:
        notes = yaml.safe_load((FULL / "metadata.yaml").read_text())["tags"]["notes"]
        stated = re.search(r"Resolved: (\d+)/(\d+)", notes)
        assert stated is not None
        metrics = runs[FULL.name].header.metrics
        assert (metrics["resolved"], metrics["tasks"]) == tuple(map(int, stated.groups()))

    def test_recomputed_tallies_equal_the_published_ones(self, runs: dict[str, RunRecord]) -> None:
        for name, record in runs.items():
            for key in ("by_difficulty", "by_category"):
                published = load(VORFLUX / name / "results" / f"results_{key}.json")
                assert record.header.metrics[key] == published
            assert not any("disagree" in q for q in record.header.provenance["quirks"])

    def test_the_combined_run_is_the_union_of_the_two_partial_runs(
        self, runs: dict[str, RunRecord]
    ) -> None:
        union = {c.key: c for part in PARTS for c in runs[part].cells}
        combined = {c.key: c for c in runs["combined_full_89"].cells}
        assert combined == union


class TestQuirks:
    def test_a_task_with_most_tests_passing_but_not_resolved_fails(
        self, runs: dict[str, RunRecord]
    ) -> None:
        [cell] = [c for c in runs[FULL.name].cells if c.key == "video-processing"]
        assert (cell.outcome, cell.metrics["test_pass"], cell.metrics["solution_judge"]) == (
            "failed",
            0.8,
            0.0,
        )

    def test_single_attempt_claims_contradicted_by_the_tasks_are_flagged(
        self, runs: dict[str, RunRecord]
    ) -> None:
        flagged = {
            name
            for name, record in runs.items()
            if any(
                q.startswith("system.attempts says 1") for q in record.header.provenance["quirks"]
            )
        }
        assert flagged == {*PARTS, "combined_full_89"}
        assert runs[FULL.name].header.config == {"attempts": "best-of-3", "dataset_size": 89}

    def test_eval_dates_a_year_before_their_experiments_are_flagged(
        self, runs: dict[str, RunRecord]
    ) -> None:
        flagged = {
            name
            for name, record in runs.items()
            if any("precedes the experiments" in q for q in record.header.provenance["quirks"])
        }
        assert flagged == {"20250430_vorflux_agent_v1", "combined_full_89"}

    def test_two_models_make_one_model_name(self, runs: dict[str, RunRecord]) -> None:
        header = runs[FULL.name].header
        assert header.model == "gpt-5.5-high+opus-4.7-thinking"
        assert header.agent == "Vorflux Agent (GPT-5.5 High + Opus 4.7 Thinking)"


KEYS = ["task_id", "resolved", "test_pass", "n_attempts", "difficulty", "category"]


class TestMutatedRealSubmissions:
    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(
        edits=st.lists(
            st.tuples(
                st.integers(0, 88),
                st.sampled_from(KEYS),
                st.one_of(st.just("drop"), st.none(), st.integers(), st.text(max_size=3)),
            ),
            min_size=1,
            max_size=5,
        ),
        cut=st.one_of(st.none(), st.integers(0, 30000)),
    )
    def test_dropped_or_retyped_keys_parse_or_are_refused(
        self,
        tmp_path_factory: pytest.TempPathFactory,
        edits: list[tuple[int, str, Any]],
        cut: int | None,
    ) -> None:
        copy = tmp_path_factory.mktemp("tb") / FULL.name
        shutil.copytree(FULL, copy)
        primary = copy / "results" / "detailed_results.json"
        tasks = load(primary)
        for index, key, value in edits:
            if value == "drop":
                tasks[index].pop(key, None)
            else:
                tasks[index][key] = value
        text = json.dumps(tasks, indent=2)
        primary.write_text(text if cut is None else text[:cut])
        try:
            record = parse(primary)
        except InputFormatError as e:
            assert e.path == str(primary)
            return
        assert len({c.key for c in record.cells}) == len(record.cells) == len(tasks)


class TestImportingTheCorpus:
    def test_the_cli_imports_each_submission_once(self, invoke: Invoke) -> None:
        reports = json.loads(invoke("import", str(ROOT), "--json").stdout)
        states = {r["path"]: r["state"] for r in reports}
        imported = sorted(Path(p).parent.parent.name for p, s in states.items() if s == "imported")
        assert imported == sorted(p.name for p in VORFLUX.iterdir())
        assert {s for s in states.values() if s != "imported"} == {"ignored"}
        again = json.loads(invoke("import", str(ROOT), "--json").stdout)
        assert {r["state"] for r in again if r["state"] != "ignored"} == {"unchanged"}
        runs = json.loads(invoke("runs", "--json").stdout)
        assert len(runs) == SUBMISSIONS
        assert sorted(r["cells"] for r in runs) == [39, 50, 89, 89]
