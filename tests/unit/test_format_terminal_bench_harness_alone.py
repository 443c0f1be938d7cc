"""A `tb run` results.json published alone: out of its run folder, without run_metadata.json,
often renamed by its run (`2025-08-25__12-29-38_results.json`, several in one folder, as in
laude-institute/terminal-bench-leaderboard's goose submissions). Shapes as in
test_format_terminal_bench_harness (values made up)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from benchledger.adapters import formats
from benchledger.adapters.formats import terminal_bench_harness
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord
from tests.conftest import Invoke
from tests.unit.test_format_terminal_bench_harness import (
    RUN_ID,
    TRIALS,
    benchmark_results,
    run_folder,
    run_metadata,
    trial,
    write,
)

OTHER_RUN = "2025-06-03__08-30-00"


def published(folder: Path, run_id: str = RUN_ID, sep: str = "_", **changes: Any) -> Path:
    """A run's results.json as a submission publishes it: renamed by its run."""
    trials = [trial("hello-world", True, run_id=run_id), trial("fix-git", False, run_id=run_id)]
    return write(folder / f"{run_id}{sep}results.json", benchmark_results(trials, **changes))


def detected(path: Path) -> str:
    return formats.detect(path, path.read_bytes()[:4096]).NAME


def parse(path: Path, **defaults: Any) -> RunRecord:
    [record] = terminal_bench_harness.parse(path, path.read_bytes(), defaults or None)
    assert isinstance(record, RunRecord)
    return record


def imported(invoke: Invoke, *args: str, expect: int = 0) -> list[dict[str, Any]]:
    reports = json.loads(invoke("import", *args, "--json", expect=expect).stdout)
    return [r for r in reports if r["state"] != "ignored"]


def runs(invoke: Invoke) -> list[dict[str, Any]]:
    return list(json.loads(invoke("runs", "--json").stdout))


class TestDetectingAPublishedCopy:
    def test_a_results_json_renamed_by_its_run_is_claimed(self, tmp_path: Path) -> None:
        assert detected(published(tmp_path, sep="_")) == "terminal_bench_harness"
        assert detected(published(tmp_path, OTHER_RUN, sep="__")) == "terminal_bench_harness"

    def test_a_renamed_copy_must_show_the_trial_list_itself(self, tmp_path: Path) -> None:
        # In its run folder the harness's computed figures are enough; a copy under
        # another name must show trials naming their task in its head.
        figures = {"n_resolved": 1, "resolved_ids": ["a"], "accuracy": 1.0, "results": []}
        path = write(tmp_path / "run1_results.json", figures)
        assert not terminal_bench_harness.detect(path, path.read_bytes()[:4096])
        assert terminal_bench_harness.detect(
            write(tmp_path / "run1" / "results.json", figures), path.read_bytes()[:4096]
        )
        untasked = write(tmp_path / "run2_results.json", {"results": [{"trial_name": "a"}]})
        assert not terminal_bench_harness.detect(untasked, untasked.read_bytes()[:4096])

    def test_other_harnesses_results_files_are_not_claimed_when_renamed(
        self, tmp_path: Path
    ) -> None:
        swebench = {
            "total_instances": 2,
            "resolved_instances": 1,
            "resolved_ids": ["astropy__astropy-12907"],
            "unresolved_ids": ["django__django-11099"],
        }
        submission = {"resolved": ["fix-git"], "unresolved": ["hello-world"]}
        lm_eval = {"results": {"arc_easy": {"acc": 0.5}}, "versions": {"arc_easy": 0}}
        inspect_like = {"results": [{"name": "accuracy", "task_id": "t", "value": 0.5}]}
        for name, doc in [
            ("model.run_results.json", swebench),
            ("acme_results.json", submission),
            ("lm_results.json", lm_eval),
            ("scores_results.json", inspect_like),
        ]:
            path = write(tmp_path / name, doc)
            assert not terminal_bench_harness.detect(path, path.read_bytes()[:4096]), name

    def test_a_trial_list_under_a_name_without_results_is_read_only_when_asked(
        self, tmp_path: Path, invoke: Invoke
    ) -> None:
        path = write(tmp_path / "goose-opus-run1.json", benchmark_results(TRIALS))
        assert not terminal_bench_harness.detect(path, path.read_bytes()[:4096])
        [report] = imported(invoke, str(path), "--format", "terminal_bench_harness")
        assert (report["state"], report["new_runs"]) == ("imported", 1)

    def test_a_copy_beside_a_run_metadata_json_does_not_take_it_for_its_own(
        self, tmp_path: Path
    ) -> None:
        folder = run_folder(tmp_path, metadata=run_metadata()).parent
        copy = published(folder, OTHER_RUN)
        assert terminal_bench_harness.members(copy) == []
        header = parse(copy).header
        assert (header.run_key, header.benchmark, header.model) == (
            OTHER_RUN,
            "terminal-bench",
            "unknown",
        )


class TestReadingACopyAlone:
    def test_one_run_with_the_stated_accuracy_and_one_cell_per_trial(self, tmp_path: Path) -> None:
        # The stated figure is the score, even where the trials say otherwise (flagged).
        path = published(tmp_path, accuracy=0.75)
        record = parse(path)
        stated = json.loads(path.read_text())
        assert record.header.score == stated["accuracy"] == 0.75
        assert len(record.cells) == len(stated["results"]) == 2
        assert record.header.provenance["mismatch"]["accuracy"] == {"stated": 0.75, "trials": 0.5}

    def test_the_run_is_keyed_by_the_run_id_its_trial_names_carry(self, tmp_path: Path) -> None:
        header = parse(published(tmp_path)).header
        assert header.run_key == header.provenance["run_id"] == RUN_ID
        assert header.provenance["results_id"] == "11111111-2222-4333-8444-555555555555"
        assert header.provenance["quirks"][:2] == [
            "no run_metadata.json: the dataset, agent and model are not stated",
            "a results.json published alone, renamed out of its run folder",
        ]

    def test_without_a_run_id_in_the_trial_names_the_results_id_keys_the_run(
        self, tmp_path: Path
    ) -> None:
        # Older writers name trials `<task>.<k>-of-<n>`; the folder is no run's name here.
        old = [{**t, "trial_name": t["trial_name"].removesuffix(f".{RUN_ID}")} for t in TRIALS]
        path = write(tmp_path / "first_results.json", benchmark_results(old))
        header = parse(path).header
        assert header.run_key == "11111111-2222-4333-8444-555555555555"
        assert "run_id" not in header.provenance
        anonymous = benchmark_results(old)
        del anonymous["id"]
        assert parse(write(tmp_path / "second_results.json", anonymous)).header.run_key == (
            "second_results"
        )

    def test_the_runners_options_fill_what_the_file_does_not_state(self, tmp_path: Path) -> None:
        header = parse(
            published(tmp_path),
            benchmark="terminal-bench-core@0.1.1",
            agent="goose",
            provider="anthropic",
            model="claude-opus-4-20250514",
        ).header
        assert (header.benchmark, header.agent, header.provider, header.model) == (
            "terminal-bench-core@0.1.1",
            "goose",
            "anthropic",
            "claude-opus-4-20250514",
        )

    def test_a_malformed_copy_names_the_file_and_the_field(self, tmp_path: Path) -> None:
        doc = benchmark_results(copy.deepcopy(TRIALS))
        doc["results"][1]["is_resolved"] = "yes"
        path = write(tmp_path / f"{RUN_ID}_results.json", doc)
        assert detected(path) == "terminal_bench_harness"
        try:
            parse(path)
        except InputFormatError as e:
            assert (e.path, e.field) == (str(path), "results[1].is_resolved")
        else:
            raise AssertionError("a trial whose is_resolved is not a bool was read")


class TestImportingCopiesWithTheCli:
    def test_each_copy_in_a_folder_is_its_own_run_and_again_appends_nothing(
        self, tmp_path: Path, invoke: Invoke
    ) -> None:
        published(tmp_path / "goose", RUN_ID)
        published(tmp_path / "goose", OTHER_RUN, sep="__")
        first = imported(invoke, str(tmp_path / "goose"))
        assert [(r["state"], r["format"], r["new_runs"]) for r in first] == [
            ("imported", "terminal_bench_harness", 1)
        ] * 2
        position = invoke("verify", "--json").stdout
        again = imported(invoke, str(tmp_path / "goose"))
        assert [(r["state"], r["new_runs"]) for r in again] == [("unchanged", 0)] * 2
        assert invoke("verify", "--json").stdout == position
        assert sorted((r["run_key"], r["score"], r["cells"]) for r in runs(invoke)) == [
            (RUN_ID, 0.5, 2),
            (OTHER_RUN, 0.5, 2),
        ]

    def test_without_model_the_run_is_recorded_with_a_placeholder_and_not_published(
        self, tmp_path: Path, invoke: Invoke
    ) -> None:
        imported(invoke, str(published(tmp_path)))
        [run] = runs(invoke)
        assert (run["provider"], run["model"]) == ("", "unknown")
        [row] = json.loads(invoke("latest", "--quarantine", "--json").stdout)
        assert row["quarantine_reason"] == "placeholder_identity:model"
        assert json.loads(invoke("latest", "--json").stdout) == []

    def test_model_names_the_model_the_file_does_not_state(
        self, tmp_path: Path, invoke: Invoke
    ) -> None:
        path = published(tmp_path)
        named = ("--agent", "goose", "--provider", "anthropic", "--model", "claude-opus-4")
        imported(invoke, str(path), *named)
        [run] = runs(invoke)
        assert (run["agent"], run["provider"], run["model"]) == (
            "goose",
            "anthropic",
            "claude-opus-4",
        )
        [row] = json.loads(invoke("latest", "--json").stdout)
        assert (row["model"], row["score"]) == ("claude-opus-4", 0.5)

    def test_model_never_overrides_the_model_a_file_states(
        self, tmp_path: Path, invoke: Invoke
    ) -> None:
        run_folder(tmp_path / "runs", metadata=run_metadata())
        published(tmp_path / "runs", OTHER_RUN)
        imported(invoke, str(tmp_path / "runs"), "--model", "gpt-5")
        assert sorted((r["run_key"], r["provider"], r["model"]) for r in runs(invoke)) == [
            (RUN_ID, "anthropic", "claude-sonnet-4-20250514"),
            (OTHER_RUN, "", "gpt-5"),
        ]

    def test_naming_the_model_of_a_run_recorded_unknown_fills_it(
        self, tmp_path: Path, invoke: Invoke
    ) -> None:
        path = published(tmp_path)
        imported(invoke, str(path))
        [filled] = imported(invoke, str(path), "--model", "gpt-5")
        assert (filled["state"], filled["merged_runs"]) == ("imported", 1)
        assert [(r["model"], r["superseded_by"]) for r in runs(invoke)] == [("gpt-5", None)]
        again = imported(invoke, str(path), "--model", "gpt-5") + imported(invoke, str(path))
        assert [r["state"] for r in again] == ["unchanged", "unchanged"]

    def test_naming_another_model_once_one_is_named_is_a_correction(
        self, tmp_path: Path, invoke: Invoke
    ) -> None:
        path = published(tmp_path)
        imported(invoke, str(path), "--model", "gpt-5")
        [conflict] = imported(invoke, str(path), "--model", "o3", expect=1)
        assert conflict["state"] == "conflict"
        assert "model: recorded 'gpt-5', this file states 'o3'" in conflict["message"]
        [amended] = imported(invoke, str(path), "--model", "o3", "--amend")
        assert amended["state"] == "amended"
        current = [r for r in runs(invoke) if not r["superseded_by"]]
        assert [r["model"] for r in current] == ["o3"]

    def test_a_malformed_copy_appends_nothing_and_names_file_and_field(
        self, tmp_path: Path, invoke: Invoke
    ) -> None:
        doc = benchmark_results(copy.deepcopy(TRIALS))
        del doc["results"][0]["task_id"]
        doc["results"][0] = {"task_id": None, **doc["results"][0]}  # keep it detectable
        path = write(tmp_path / f"{RUN_ID}_results.json", doc)
        [failed] = imported(invoke, str(path), expect=1)
        assert failed["state"] == "failed"
        assert f"{RUN_ID}_results.json: field 'results[0].task_id'" in failed["message"]
        assert runs(invoke) == []
