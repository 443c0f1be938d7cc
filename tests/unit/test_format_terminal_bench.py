from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.adapters.formats import terminal_bench
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord, RunStatus

METADATA: dict[str, Any] = {
    "info": {"name": "Acme Agent", "site": "https://acme.example"},
    "tags": {
        "model": ["gpt-5", "claude-opus"],
        "org": "Acme",
        "os_model": False,
        "system": {"attempts": "1"},
        "benchmark": "terminal-bench-2",
        "dataset_size": "4",
        "eval_date": "2025-05-01",
        "scoring": "best-ever (resolved if passed at least once)",
        "notes": "first four tasks\n",
    },
}


def task(task_id: str, resolved: bool, **extra: Any) -> dict[str, Any]:
    body = {
        "task_id": task_id,
        "resolved": resolved,
        "test_pass": 1.0 if resolved else 0.0,
        "solution_judge": 1.0,
        "session_url": f"https://acme.example/sessions/{task_id}",
        "best_experiment": "tb2-full-20250501-101010",
        "n_attempts": 1,
        "difficulty": "medium",
        "category": "software-engineering",
    }
    return {**body, **extra}


TASKS = [
    task("fix-git", True),
    task("hello-world", True, difficulty="easy"),
    task("video-processing", False, test_pass=0.8, solution_judge=0.0, n_attempts=3),
    task("make-doom-for-mips", False, difficulty="hard", failure_reason="partial: 2/3 pass"),
]


def tally(tasks: list[dict[str, Any]], field: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for t in tasks:
        entry = out.setdefault(t[field], {"resolved": 0, "total": 0})
        entry["resolved"] += t["resolved"]
        entry["total"] += 1
    return out


def submission(
    root: Path,
    tasks: list[dict[str, Any]] | None = None,
    metadata: dict[str, Any] | None = None,
    name: str = "20250501_acme_agent",
    summarised: list[dict[str, Any]] | None = None,
) -> Path:
    """A submission directory as the vendor lays it out; returns detailed_results.json.

    The summaries (results.json, tallies) are made from `summarised`, by default the tasks.
    """
    tasks = TASKS if tasks is None else tasks
    summarised = tasks if summarised is None else summarised
    results = root / name / "results"
    results.mkdir(parents=True)
    if metadata is not None:
        (root / name / "metadata.yaml").write_text(yaml.safe_dump(metadata))
    resolved = [t["task_id"] for t in summarised if t["resolved"]]
    unresolved = [t["task_id"] for t in summarised if not t["resolved"]]
    write(results / "results.json", {"resolved": resolved, "unresolved": unresolved})
    write(results / "results_by_difficulty.json", tally(summarised, "difficulty"))
    write(results / "results_by_category.json", tally(summarised, "category"))
    return write(results / "detailed_results.json", tasks)


def write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc, indent=2))
    return path


def parse(path: Path, **defaults: Any) -> RunRecord:
    [record] = terminal_bench.parse(path, path.read_bytes(), defaults or None)
    assert isinstance(record, RunRecord)
    return record


def broken(path: Path) -> InputFormatError:
    with pytest.raises(InputFormatError) as e:
        parse(path)
    return e.value


class TestDetectingSubmissions:
    def test_claims_the_detailed_results_and_none_of_the_other_files(self, tmp_path: Path) -> None:
        primary = submission(tmp_path, metadata=METADATA)
        claimed = [
            p.name
            for p in sorted(tmp_path.rglob("*"))
            if p.is_file() and terminal_bench.detect(p, p.read_bytes()[:4096])
        ]
        assert claimed == ["detailed_results.json"]
        assert [p.name for p in sorted(terminal_bench.members(primary))] == [
            "metadata.yaml",
            "results.json",
            "results_by_category.json",
            "results_by_difficulty.json",
        ]

    def test_a_task_list_outside_a_results_folder_is_not_claimed(self, tmp_path: Path) -> None:
        path = write(tmp_path / "detailed_results.json", TASKS)
        assert not terminal_bench.detect(path, path.read_bytes())


class TestReadingASubmission:
    def test_tasks_are_cells_and_resolved_decides_the_outcome(self, tmp_path: Path) -> None:
        record = parse(submission(tmp_path, metadata=METADATA))
        assert [(c.key, c.outcome, c.score) for c in record.cells] == [
            ("fix-git", "passed", 1.0),
            ("hello-world", "passed", 1.0),
            ("video-processing", "failed", 0.0),  # test_pass 0.8, vetoed by the judge
            ("make-doom-for-mips", "failed", 0.0),
        ]
        assert record.cells[2].metrics["test_pass"] == 0.8
        assert record.cells[3].metrics["failure_reason"] == "partial: 2/3 pass"

    def test_the_header_follows_the_metadata(self, tmp_path: Path) -> None:
        header = parse(submission(tmp_path, metadata=METADATA)).header
        assert header.run_key == "20250501_acme_agent"
        assert (header.benchmark, header.agent, header.model) == (
            "terminal-bench-2",
            "Acme Agent",
            "gpt-5+claude-opus",
        )
        assert header.config == {"attempts": "1", "dataset_size": 4}
        assert header.started_at == datetime(2025, 5, 1, tzinfo=UTC) and header.ended_at is None
        assert (header.score, header.unit, header.status) == (
            0.5,
            "resolved_rate",
            RunStatus.SUCCEEDED,
        )
        assert header.metrics["by_difficulty"] == {
            "easy": {"resolved": 1, "total": 1},
            "hard": {"resolved": 0, "total": 1},
            "medium": {"resolved": 1, "total": 2},
        }
        assert header.provenance["models"] == ["gpt-5", "claude-opus"]
        assert header.provenance["notes"] == "first four tasks"

    def test_the_score_divides_by_the_stated_dataset_size(self, tmp_path: Path) -> None:
        meta = {**METADATA, "tags": {**METADATA["tags"], "dataset_size": "8"}}
        header = parse(submission(tmp_path, metadata=meta)).header
        assert header.score == 0.25
        assert "dataset_size says 8 but 4 tasks are listed" in header.provenance["quirks"]

    def test_a_metadata_file_that_says_one_attempt_while_tasks_record_more_is_flagged(
        self, tmp_path: Path
    ) -> None:
        quirks = parse(submission(tmp_path, metadata=METADATA)).header.provenance["quirks"]
        assert quirks == [
            "resolved is best-of-N over up to 3 attempts, not pass@1",
            "system.attempts says 1 but tasks record up to 3 attempts",
        ]

    def test_an_eval_date_before_the_experiments_it_reports_is_flagged(
        self, tmp_path: Path
    ) -> None:
        tasks = [task("a", True, best_experiment="tb2-rerun-20260503-135325")]
        meta = {**METADATA, "tags": {**METADATA["tags"], "dataset_size": "1"}}
        quirks = parse(submission(tmp_path, tasks, meta)).header.provenance["quirks"]
        assert quirks == ["eval_date 2025-05-01 precedes the experiments it reports"]

    def test_published_lists_and_tallies_that_disagree_are_flagged(self, tmp_path: Path) -> None:
        primary = submission(tmp_path, metadata=METADATA)
        write(primary.parent / "results.json", {"resolved": ["fix-git"], "unresolved": []})
        write(primary.parent / "results_by_category.json", {"x": {"resolved": 9, "total": 9}})
        quirks = parse(primary).header.provenance["quirks"]
        assert "results_by_category.json disagrees with the task results" in quirks
        assert any(q.startswith("results.json lists 1 resolved tasks") for q in quirks)
        assert any(q.startswith("results.json lists 0 unresolved tasks") for q in quirks)

    def test_without_metadata_the_defaults_say_who_ran_it(self, tmp_path: Path) -> None:
        primary = submission(tmp_path)
        bare = parse(primary).header
        assert (bare.benchmark, bare.agent, bare.model) == ("terminal-bench", "unknown", "unknown")
        assert "no metadata.yaml: agent and model are unknown" in bare.provenance["quirks"]
        given_ = parse(primary, agent="eliza", model="m", provider="p", config={"k": 1}).header
        assert (given_.agent, given_.model, given_.provider) == ("eliza", "m", "p")
        assert given_.config == {"k": 1, "dataset_size": 4}

    def test_an_empty_task_list_is_an_error_run(self, tmp_path: Path) -> None:
        header = parse(submission(tmp_path, tasks=[], metadata=METADATA)).header
        assert (header.status, header.score) == (RunStatus.ERROR, None)

    def test_the_same_files_give_identical_records(self, tmp_path: Path) -> None:
        primary = submission(tmp_path, metadata=METADATA)
        assert parse(primary).json_bytes() == parse(primary).json_bytes()


class TestRejectingBrokenSubmissions:
    def test_truncated_json_names_the_file_and_line(self, tmp_path: Path) -> None:
        primary = submission(tmp_path, metadata=METADATA)
        primary.write_text(primary.read_text()[:300])
        error = broken(primary)
        assert error.path == str(primary) and error.line is not None

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            (lambda t: t.pop("resolved"), "[1].resolved"),
            (lambda t: t.update(resolved="yes"), "[1].resolved"),
            (lambda t: t.update(task_id=""), "[1].task_id"),
            (lambda t: t.update(n_attempts=-1), "[1].n_attempts"),
            (lambda t: t.update(task_id="fix-git"), "[1].task_id"),
        ],
    )
    def test_a_bad_task_names_the_field(self, tmp_path: Path, change: Any, field: str) -> None:
        tasks = json.loads(json.dumps(TASKS))
        change(tasks[1])
        error = broken(submission(tmp_path, tasks, METADATA, summarised=TASKS))
        assert error.field == field

    def test_a_bad_member_names_that_file(self, tmp_path: Path) -> None:
        primary = submission(tmp_path, metadata=METADATA)
        meta = primary.parent.parent / "metadata.yaml"
        meta.write_text(yaml.safe_dump({**METADATA, "tags": {"model": 5}}))
        error = broken(primary)
        assert (error.path, error.field) == (str(meta), "tags.model")
        meta.write_text("info: [unclosed\n")
        assert broken(primary).path == str(meta)

    def test_a_bad_tally_names_its_key(self, tmp_path: Path) -> None:
        primary = submission(tmp_path, metadata=METADATA)
        write(primary.parent / "results_by_difficulty.json", {"hard": {"resolved": "1"}})
        assert broken(primary).field == "hard.resolved"


KEYS = ["task_id", "resolved", "test_pass", "solution_judge", "n_attempts", "difficulty"]
junk = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(), st.text(max_size=5), st.just([])
)


class TestFuzzing:
    @settings(
        max_examples=150,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(
        edits=st.lists(
            st.tuples(st.integers(0, 3), st.sampled_from(KEYS), st.booleans(), junk), max_size=4
        ),
        meta_value=st.one_of(st.just(None), junk),
    )
    def test_mutated_submissions_parse_or_are_refused(
        self,
        tmp_path_factory: pytest.TempPathFactory,
        edits: list[tuple[int, str, bool, Any]],
        meta_value: Any,
    ) -> None:
        tasks = json.loads(json.dumps(TASKS))
        for index, key, drop, value in edits:
            if drop:
                tasks[index].pop(key, None)
            else:
                tasks[index][key] = value
        meta = json.loads(json.dumps(METADATA))
        if meta_value is not None:
            meta["tags"]["dataset_size"] = meta_value
        primary = submission(tmp_path_factory.mktemp("fuzz"), tasks, meta, summarised=TASKS)
        try:
            record = parse(primary)
        except InputFormatError as e:
            assert e.path.endswith((".json", ".yaml"))
            return
        assert len({c.key for c in record.cells}) == len(record.cells)
