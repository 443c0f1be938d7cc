from __future__ import annotations

import json
import os
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.adapters.formats import swebench, swebench_common
from benchledger.adapters.formats import swebench_logs as logs
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord

IDS = [f"django__django-{n}" for n in (11001, 11002, 11003, 11004, 11005)]


def write(path: Path, content: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2))
    return path


def parse(path: Path, data: bytes | None = None, **defaults: Any) -> list[RunRecord]:
    records = list(swebench.parse(path, path.read_bytes() if data is None else data, defaults))
    assert all(isinstance(r, RunRecord) for r in records)
    return [r for r in records if isinstance(r, RunRecord)]


def detects(path: Path) -> bool:
    return swebench.detect(path, path.read_bytes()[:4096])


def instance_report(resolved: bool, f2p_failed: int = 0) -> dict[str, Any]:
    return {
        "patch_is_None": False,
        "patch_exists": True,
        "patch_successfully_applied": True,
        "resolved": resolved,
        "tests_status": {
            "FAIL_TO_PASS": {"success": ["t1"], "failure": ["t2"] * f2p_failed},
            "PASS_TO_PASS": {"success": ["t3", "t4"], "failure": []},
        },
    }


def submission(
    root: Path,
    folder: str = "20240620_agent_model",
    split: str = "verified",
    results: dict[str, Any] | None = None,
    metadata: str | None = "info:\n  name: Agent + Model\ntags:\n  model: [m-1]\n",
    reports: dict[str, bool] | None = None,
) -> Path:
    """An experiments submission directory; returns its results/results.json."""
    base = root / "evaluation" / split / folder
    if metadata is not None:
        write(base / "metadata.yaml", metadata)
    for iid, resolved in (reports or {}).items():
        write(base / "logs" / iid / "report.json", {iid: instance_report(resolved)})
    doc = results or {"no_generation": [IDS[3]], "no_logs": [IDS[4]], "resolved": IDS[:2]}
    return write(base / "results" / "results.json", doc)


def run_report(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "total_instances": 23,
        "submitted_instances": 4,
        "completed_instances": 3,
        "resolved_instances": 2,
        "unresolved_instances": 1,
        "empty_patch_instances": 1,
        "error_instances": 0,
        "completed_ids": IDS[:3],
        "incomplete_ids": ["x__y-1"],
        "empty_patch_ids": [IDS[3]],
        "submitted_ids": IDS[:4],
        "resolved_ids": IDS[:2],
        "unresolved_ids": [IDS[2]],
        "error_ids": [],
        "schema_version": 2,
    }
    doc.update(overrides)
    return doc


def row(folder: str, resolved: float) -> dict[str, Any]:
    return {"name": "Agent + Model", "folder": folder, "resolved": resolved, "date": "2025-01-02"}


def leaderboards(*boards: tuple[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {"leaderboards": [{"name": name, "results": rows} for name, rows in boards]}


class TestDetection:
    def test_a_submission_is_claimed_through_its_results_json_only(self, tmp_path: Path) -> None:
        results = submission(tmp_path, reports={IDS[0]: True})
        base = results.parent.parent
        assert detects(results)
        assert not detects(base / "logs" / IDS[0] / "report.json")
        assert not swebench.detect(base / "metadata.yaml", b"info:\n  name: x\n")

    def test_another_benchmarks_results_json_in_the_same_layout_is_not_claimed(
        self, tmp_path: Path
    ) -> None:
        path = write(
            tmp_path / "vorflux" / "run" / "results" / "results.json",
            {"resolved": ["bn-fit-modify", "build-pmars"]},
        )
        assert not detects(path)

    def test_a_harness_log_directory_is_claimed_through_its_first_instance_only(
        self, tmp_path: Path
    ) -> None:
        model = tmp_path / "logs" / "run_evaluation" / "run-1" / "org__model"
        paths = [write(model / i / "report.json", {i: instance_report(True)}) for i in IDS[:3]]
        assert [detects(p) for p in paths] == [True, False, False]
        assert swebench.members(paths[0]) == paths[1:]

    def test_instance_logs_next_to_their_run_report_are_its_members_not_a_run(
        self, tmp_path: Path
    ) -> None:
        report = write(tmp_path / "org__model.run-1.json", run_report())
        logs = tmp_path / "logs" / "run_evaluation" / "run-1" / "org__model"
        first = write(logs / IDS[0] / "report.json", {IDS[0]: instance_report(True)})
        assert detects(report) and not detects(first)
        assert swebench.members(report) == [first]

    def test_predictions_are_not_results(self, tmp_path: Path) -> None:
        preds = {IDS[0]: {"model_name_or_path": "m", "instance_id": IDS[0], "model_patch": ""}}
        assert not detects(write(tmp_path / "run" / "preds.json", preds))

    def test_leaderboards_and_run_reports_are_recognised_by_shape(self, tmp_path: Path) -> None:
        assert detects(write(tmp_path / "data.json", leaderboards(("Lite", []))))
        assert detects(write(tmp_path / "whatever.json", run_report()))
        assert not detects(write(tmp_path / "other.json", {"results": {"x": 1}}))


class TestExperimentsSubmissions:
    def test_instances_are_cells_and_the_score_is_resolved_over_the_split(
        self, tmp_path: Path
    ) -> None:
        [run] = parse(submission(tmp_path))
        h = run.header
        assert (h.benchmark, h.score, h.unit, h.higher_is_better) == (
            "swe_bench_verified",
            2 / 500,
            "resolved_rate",
            True,
        )
        outcomes = {c.key: (c.outcome, c.metrics.get("status")) for c in run.cells}
        assert outcomes == {
            IDS[0]: ("passed", None),
            IDS[1]: ("passed", None),
            IDS[3]: ("failed", "no_generation"),
            IDS[4]: ("failed", "no_logs"),
        }
        assert "496 of 500 instances are in no list" in h.provenance["quirks"][0]

    def test_each_instance_is_clustered_on_its_repository(self, tmp_path: Path) -> None:
        [run] = parse(submission(tmp_path))
        assert {c.cluster for c in run.cells} == {"django/django"}

    @pytest.mark.parametrize(
        ("instance_id", "repository"),
        [
            ("django__django-11099", "django/django"),
            ("scikit-learn__scikit-learn-10297", "scikit-learn/scikit-learn"),
            ("sphinx-doc__sphinx-8721", "sphinx-doc/sphinx"),
            ("psf__requests-2317", "psf/requests"),
            ("my_org__my-repo-12", "my_org/my-repo"),
            ("not-an-instance", None),
            ("django__django", None),
        ],
    )
    def test_the_repository_is_read_from_the_instance_id(
        self, instance_id: str, repository: str | None
    ) -> None:
        assert swebench_common.repository(instance_id) == repository

    def test_the_run_key_is_the_split_and_folder_whatever_the_copys_version_suffix(
        self, tmp_path: Path
    ) -> None:
        [current] = parse(submission(tmp_path / "a", folder="20250101_x"))
        [older] = parse(
            submission(
                tmp_path / "b",
                folder="20250101_x@751809c",
                split="verified_superseded",
                metadata=None,
            )
        )
        assert current.header.run_key == older.header.run_key == "verified/20250101_x"
        assert older.header.provenance["folder_version"] == "751809c"
        assert older.header.benchmark == "swe_bench_verified"

    def test_new_schema_metadata_gives_agent_models_and_attempts(self, tmp_path: Path) -> None:
        meta = (
            "info:\n  name: Vorflux (Opus + GPT Review)\n"
            "tags:\n  model: [claude-opus-4-6, gpt-5.5-high]\n  org: [Vorflux]\n"
            "  system:\n    attempts: '3'\n    harness: two models\n"
        )
        [run] = parse(submission(tmp_path, metadata=meta))
        h = run.header
        assert (h.agent, h.model, h.config) == (
            "Vorflux (Opus + GPT Review)",
            "claude-opus-4-6+gpt-5.5-high",
            {"attempts": 3},
        )
        assert h.provenance["system"] == {"attempts": "3", "harness": "two models"}
        assert h.provenance["submission_date"] == "2024-06-20"
        assert h.started_at is None  # a folder date is not a start time

    def test_the_old_schema_names_the_model_only_in_the_submission_name(
        self, tmp_path: Path
    ) -> None:
        meta = "name: SWE-agent + Claude 3.5 Sonnet\noss: true\nsite: null\nverified: true\n"
        [run] = parse(submission(tmp_path, metadata=meta))
        assert (run.header.agent, run.header.model) == ("SWE-agent", "Claude 3.5 Sonnet")
        assert run.header.provenance["verified"] is True
        assert "model taken from the submission name" in run.header.provenance["quirks"][0]

    def test_without_metadata_the_runner_defaults_name_agent_and_model(
        self, tmp_path: Path
    ) -> None:
        path = submission(tmp_path, metadata=None)
        [bare] = parse(path)
        assert (bare.header.agent, bare.header.model) == ("unknown", "unknown")
        [filled] = parse(path, agent="vorflux", model="opus", provider="anthropic")
        assert (filled.header.agent, filled.header.model, filled.header.provider) == (
            "vorflux",
            "opus",
            "anthropic",
        )

    def test_instance_reports_add_metrics_and_a_disagreement_is_flagged(
        self, tmp_path: Path
    ) -> None:
        path = submission(tmp_path, reports={IDS[0]: True, IDS[1]: False, IDS[2]: False})
        [run] = parse(path)
        cells = {c.key: c for c in run.cells}
        assert cells[IDS[0]].metrics["fail_to_pass_success"] == 1
        assert cells[IDS[2]].outcome == "failed"  # a report but in no list: unresolved
        assert cells[IDS[1]].outcome == "passed"  # results.json is the submission's word
        assert cells[IDS[1]].metrics["report_resolved"] is False
        assert run.header.provenance["mismatch"] == {"instance_reports": [IDS[1]]}

    def test_a_published_resolve_rate_that_disagrees_is_kept_and_flagged(
        self, tmp_path: Path
    ) -> None:
        doc = {"resolved": IDS[:2], "not_resolved": IDS[2:], "resolve_rate": 52.8}
        [run] = parse(submission(tmp_path, results=doc))
        assert run.header.score == 2 / 500 and run.header.metrics["resolve_rate"] == 52.8
        mismatch = run.header.provenance["mismatch"]["resolve_rate"]
        assert (mismatch["published_pct"], mismatch["recomputed_pct"]) == (52.8, 0.4)
        assert [c.outcome for c in run.cells].count("failed") == 3

    def test_a_partial_run_is_flagged_from_its_per_repo_totals(self, tmp_path: Path) -> None:
        path = submission(tmp_path)
        write(
            path.parent / "resolved_by_repo.json", {"django/django": {"resolved": 2, "total": 20}}
        )
        [run] = parse(path)
        assert run.header.metrics["instances_evaluated"] == 20
        assert run.header.provenance["quirks"] == ["partial run: 20 of 500 instances evaluated"]
        assert path.parent / "resolved_by_repo.json" in swebench.members(path)

    def test_members_are_metadata_derived_results_and_instance_reports(
        self, tmp_path: Path
    ) -> None:
        path = submission(tmp_path, reports={IDS[0]: True})
        base = path.parent.parent
        write(base / "README.md", "# notes")
        assert sorted(swebench.members(path)) == sorted(
            [base / "metadata.yaml", base / "logs" / IDS[0] / "report.json"]
        )

    def test_the_same_content_gives_identical_records_whatever_the_list_order(
        self, tmp_path: Path
    ) -> None:
        [a] = parse(submission(tmp_path / "a"))
        doc = {"resolved": IDS[1::-1], "no_logs": [IDS[4]], "no_generation": [IDS[3]]}
        [b] = parse(submission(tmp_path / "b", results=doc))
        assert a.content_sha256() == b.content_sha256()


class TestHarnessReports:
    def test_each_id_list_gives_its_cell_outcome(self, tmp_path: Path) -> None:
        doc = run_report(error_ids=["e__e-1"], error_instances=1)
        [run] = parse(write(tmp_path / "org__model.run-1.json", doc))
        outcomes = {c.key: (c.outcome, c.metrics.get("status")) for c in run.cells}
        assert outcomes == {
            IDS[0]: ("passed", None),
            IDS[1]: ("passed", None),
            IDS[2]: ("failed", None),
            IDS[3]: ("failed", "empty_patch"),
            "e__e-1": ("error", None),
            "x__y-1": ("skipped", "incomplete"),
        }

    def test_what_a_newer_harness_adds_to_its_report_is_kept(self, tmp_path: Path) -> None:
        doc = run_report(
            infra_failure_instances=1,
            infra_failure_ids=[IDS[2]],
            failure_reasons={IDS[2]: "docker build timed out"},
        )
        [run] = parse(write(tmp_path / "org__model.run-1.json", doc))
        metrics = run.header.metrics
        assert metrics["infra_failure_instances"] == 1
        assert metrics["infra_failure_ids"] == [IDS[2]]
        assert metrics["failure_reasons"] == {IDS[2]: "docker build timed out"}

    def test_the_split_comes_from_its_size_and_the_name_is_not_split(self, tmp_path: Path) -> None:
        [run] = parse(write(tmp_path / "openai__gpt-4.1.lite_dev.json", run_report()))
        h = run.header
        assert (h.run_key, h.model, h.benchmark, h.score) == (
            "harness/openai__gpt-4.1.lite_dev",
            "unknown",
            "swe_bench_lite_dev",
            2 / 23,
        )
        assert "benchmark inferred from total_instances = 23" in " ".join(h.provenance["quirks"])
        assert h.metrics["resolved_rate_of_submitted"] == 0.5

    def test_sb_cli_reports_name_dataset_split_and_run_in_the_filename(
        self, tmp_path: Path
    ) -> None:
        doc = {k: v for k, v in run_report().items() if "empty_patch" not in k}
        doc.update(pending_instances=0, failed_instances=0, pending_ids=[], failed_ids=[])
        [run] = parse(write(tmp_path / "swe-bench_verified__test__my-run.json", doc))
        h = run.header
        assert (h.run_key, h.benchmark, h.provenance["layout"]) == (
            "sb-cli/swe-bench_verified/test/my-run",
            "swe_bench_verified",
            "sb_cli",
        )
        assert "swe_bench_verified has 500 instances, not 23" in h.provenance["quirks"]

    def test_a_rerun_with_the_same_count_but_other_instances_is_another_run(
        self, tmp_path: Path
    ) -> None:
        [first] = parse(write(tmp_path / "m.dev.json", run_report()))
        flipped = run_report(resolved_ids=[IDS[0], IDS[2]], unresolved_ids=[IDS[1]])
        [rerun] = parse(write(tmp_path / "m.dev_rerun.json", flipped))
        assert first.header.score == rerun.header.score
        assert first.header.run_key != rerun.header.run_key
        passed = [{c.key for c in r.cells if c.outcome == "passed"} for r in (first, rerun)]
        assert passed == [set(IDS[:2]), {IDS[0], IDS[2]}]

    def test_counts_that_disagree_with_the_ids_are_flagged(self, tmp_path: Path) -> None:
        [run] = parse(write(tmp_path / "m.r.json", run_report(resolved_instances=3)))
        assert run.header.score == 3 / 23
        assert run.header.provenance["mismatch"] == {
            "resolved_ids": {"resolved_instances": 3, "listed": 2}
        }

    def test_a_run_report_reads_the_instance_reports_of_its_logs(self, tmp_path: Path) -> None:
        report = write(tmp_path / "org__model.run-1.json", run_report())
        logs = tmp_path / "logs" / "run_evaluation" / "run-1" / "org__model"
        write(logs / IDS[0] / "report.json", {IDS[0]: instance_report(True)})
        write(logs / IDS[2] / "report.json", {IDS[2]: instance_report(True, f2p_failed=1)})
        [run] = parse(report)
        cells = {c.key: c for c in run.cells}
        assert cells[IDS[0]].metrics["pass_to_pass_success"] == 2
        assert cells[IDS[2]].metrics["report_resolved"] is True
        assert run.header.provenance["mismatch"] == {"instance_reports": [IDS[2]]}

    def test_a_log_directory_alone_is_a_run_over_its_reports(self, tmp_path: Path) -> None:
        model = tmp_path / "run_evaluation" / "run-9" / "org__model"
        first = write(model / IDS[0] / "report.json", {IDS[0]: instance_report(True)})
        write(model / IDS[1] / "report.json", {IDS[1]: instance_report(False)})
        [run] = parse(first, benchmark="swe_bench_lite")
        h = run.header
        assert (h.run_key, h.model, h.benchmark, h.score) == (
            "harness/run-9/org__model",
            "org/model",
            "swe_bench_lite",
            0.5,
        )


class TestHarnessReportNames:
    """`<model>.<run_id>.json`: the model and the run id may both hold dots, so the name is
    never split; the model comes from what the files state. The harness (SWE-bench/SWE-bench
    @ 7a21e05772954cc81471ae19d56f436cecf43c54, `swebench/harness/reporting.py`) writes the
    name from `model_name_or_path` (`/` as `__`) and `run_id`, and no model inside the
    report; its per-instance logs sit under `logs/run_evaluation/<run_id>/<model>/`."""

    def logs(self, root: Path, run_id: str, model_dir: str) -> Path:
        model = root / "logs" / "run_evaluation" / run_id / model_dir
        write(model / IDS[0] / "report.json", {IDS[0]: instance_report(True)})
        return model

    def test_a_model_with_dots_is_read_from_its_log_directory(self, tmp_path: Path) -> None:
        self.logs(tmp_path, "run-1", "claude-haiku-4.5")
        [run] = parse(write(tmp_path / "claude-haiku-4.5.run-1.json", run_report()))
        h = run.header
        assert (h.model, h.run_key, h.provenance["run_id"]) == (
            "claude-haiku-4.5",
            "harness/run-1/claude-haiku-4.5",
            "run-1",
        )
        assert h.provenance["instance_reports"] == 1

    def test_a_run_id_with_dots_is_read_from_its_log_directory(self, tmp_path: Path) -> None:
        self.logs(tmp_path, "eval.2025.06", "anthropic__claude-haiku-4.5")
        path = write(tmp_path / "anthropic__claude-haiku-4.5.eval.2025.06.json", run_report())
        [run] = parse(path)
        assert (run.header.model, run.header.provenance["run_id"]) == (
            "anthropic/claude-haiku-4.5",
            "eval.2025.06",
        )

    def test_the_reports_own_model_field_names_the_model(self, tmp_path: Path) -> None:
        doc = run_report(model_name_or_path="anthropic/claude-haiku-4.5")
        [run] = parse(write(tmp_path / "anthropic__claude-haiku-4.5.nightly.1.json", doc))
        h = run.header
        assert (h.model, h.run_key, h.provenance["run_id"]) == (
            "anthropic/claude-haiku-4.5",
            "harness/nightly.1/anthropic__claude-haiku-4.5",
            "nightly.1",
        )

    def test_a_model_field_the_name_does_not_start_with_leaves_the_run_id_unsaid(
        self, tmp_path: Path
    ) -> None:
        doc = run_report(model_name_or_path="org/model-2.5")
        [run] = parse(write(tmp_path / "renamed.run.json", doc))
        h = run.header
        assert (h.model, h.run_key, h.provenance["report_name"]) == (
            "org/model-2.5",
            "harness/renamed.run",
            "renamed.run",
        )
        assert "run_id" not in h.provenance
        assert any("does not start with" in q for q in h.provenance["quirks"])

    def test_a_report_that_names_no_model_keeps_its_name_whole(self, tmp_path: Path) -> None:
        [run] = parse(write(tmp_path / "claude-haiku-4.5.run-1.json", run_report()))
        h = run.header
        assert (h.model, h.run_key, h.provenance["report_name"]) == (
            "unknown",
            "harness/claude-haiku-4.5.run-1",
            "claude-haiku-4.5.run-1",
        )
        assert "run_id" not in h.provenance
        assert any("not split" in q for q in h.provenance["quirks"])

    def test_the_model_given_by_the_caller_fills_what_the_report_leaves_out(
        self, tmp_path: Path
    ) -> None:
        path = write(tmp_path / "claude-haiku-4.5.run-1.json", run_report())
        [run] = parse(path, model="claude-haiku-4.5")
        assert (run.header.model, run.header.run_key) == (
            "claude-haiku-4.5",
            "harness/claude-haiku-4.5.run-1",
        )

    def test_log_directories_that_pair_with_the_name_two_ways_name_no_model(
        self, tmp_path: Path
    ) -> None:
        self.logs(tmp_path, "c", "a.b")
        self.logs(tmp_path, "b.c", "a")
        [run] = parse(write(tmp_path / "a.b.c.json", run_report()))
        assert run.header.model == "unknown"
        assert "instance_reports" not in run.header.provenance
        assert any("2 log directories" in q for q in run.header.provenance["quirks"])

    def test_the_instance_reports_of_a_dotted_name_are_its_members(self, tmp_path: Path) -> None:
        model = self.logs(tmp_path, "eval.2025.06", "org__m-4.5")
        report = write(tmp_path / "org__m-4.5.eval.2025.06.json", run_report())
        assert swebench.members(report) == [model / IDS[0] / "report.json"]
        assert not detects(model / IDS[0] / "report.json")


class TestOwners:
    """A file a result is made of names the file the result is read through."""

    def test_every_member_of_a_submission_names_its_results_json(self, tmp_path: Path) -> None:
        path = submission(tmp_path, reports={IDS[0]: True, IDS[1]: False})
        write(path.parent / "resolved_by_repo.json", {"django/django": {"resolved": 1, "total": 2}})
        write(path.parent.parent / "README.md", "# notes")
        members = swebench.members(path)
        assert len(members) == 4
        for member in members:
            assert swebench.owner(member) == (path, "a SWE-bench submission", path.parent.parent)
        assert swebench.owner(path) is None
        assert swebench.owner(path.parent.parent / "README.md") is None

    def test_the_instances_of_a_log_directory_name_its_first_instance(self, tmp_path: Path) -> None:
        model = tmp_path / "logs" / "run_evaluation" / "run-1" / "org__model"
        paths = [write(model / i / "report.json", {i: instance_report(True)}) for i in IDS[:3]]
        assert swebench.owner(paths[0]) is None
        assert [swebench.owner(p) for p in paths[1:]] == [(paths[0], "a harness run", model)] * 2

    def test_instance_logs_beside_their_run_report_name_the_report(self, tmp_path: Path) -> None:
        report = write(tmp_path / "org__model.run-1.json", run_report())
        logs = tmp_path / "logs" / "run_evaluation" / "run-1" / "org__model"
        paths = [write(logs / i / "report.json", {i: instance_report(True)}) for i in IDS[:2]]
        assert [swebench.owner(p) for p in paths] == [(report, "a harness run", report)] * 2

    def test_logs_a_run_report_does_not_read_are_not_its_members(self, tmp_path: Path) -> None:
        # a.b.c.json pairs with two log directories, so it reads neither: each is its own run.
        write(tmp_path / "a.b.c.json", run_report())
        runs = tmp_path / "logs" / "run_evaluation"
        first = write(runs / "c" / "a.b" / IDS[0] / "report.json", {IDS[0]: instance_report(True)})
        other = write(runs / "b.c" / "a" / IDS[0] / "report.json", {IDS[0]: instance_report(True)})
        assert swebench.members(tmp_path / "a.b.c.json") == []
        assert detects(first) and detects(other)
        assert swebench.owner(first) is None and swebench.owner(other) is None


class TestLargeLogDirectories:
    """A run's instances are asked about one by one (is it the primary, whose is it): an
    import reads their directory and their run report once, not once per instance."""

    def test_the_first_instance_is_the_first_by_name_that_has_a_report(
        self, tmp_path: Path
    ) -> None:
        model = tmp_path / "logs" / "run_evaluation" / "run-1" / "org__model"
        (model / "a__no-report").mkdir(parents=True)  # first by name, but holds no report
        write(model / "b__file", "not a directory")
        target = write(tmp_path / "elsewhere" / "report.json", {IDS[0]: instance_report(True)})
        (model / "c__linked").symlink_to(target.parent, target_is_directory=True)
        later = write(model / "d__later" / "report.json", {IDS[1]: instance_report(False)})
        write(model / ".hidden" / "report.json", {IDS[2]: instance_report(False)})
        expected = min(model.glob("*/report.json"), key=lambda p: p.parent.name)
        assert logs.first_instance_report(model) == expected == model / ".hidden" / "report.json"
        (model / ".hidden" / "report.json").unlink()
        assert logs.first_instance_report(model) == model / "c__linked" / "report.json"
        (model / "c__linked").unlink()
        assert logs.first_instance_report(model) == later
        assert logs.first_instance_report(tmp_path / "missing") is None

    @pytest.mark.parametrize("with_run_report", [False, True])
    def test_an_import_reads_a_run_of_many_instances_once(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_run_report: bool
    ) -> None:
        from click.testing import CliRunner

        from benchledger.adapters.formats import swebench_harness
        from benchledger.commands.cli import cli

        n = 40
        root = tmp_path / "results"
        if with_run_report:
            ids = [f"proj__proj-{i}" for i in range(n)]
            write(
                root / "org__model.run-1.json",
                run_report(completed_ids=ids, submitted_ids=ids, resolved_ids=ids[:10]),
            )
        model = root / "logs" / "run_evaluation" / "run-1" / "org__model"
        for i in range(n):
            write(model / f"proj__proj-{i}" / "report.json", {IDS[0]: instance_report(True)})
        listed: list[str] = []
        scandir = os.scandir

        def counted_scandir(path: Any = ".") -> Any:
            listed.append(str(path))
            return scandir(path)

        read_reports: list[Path] = []
        members = swebench_harness.report_members

        def counted_members(path: Path) -> list[Path]:
            read_reports.append(path)
            return members(path)

        monkeypatch.setattr(os, "scandir", counted_scandir)
        monkeypatch.setattr(swebench_harness, "report_members", counted_members)
        monkeypatch.setattr(logs, "report_members", counted_members)
        result = CliRunner().invoke(
            cli, ["--db", str(tmp_path / "ledger.db"), "import", str(root), "--json"]
        )
        assert result.exit_code == 0, result.output
        reports = json.loads(result.stdout)
        assert sum(r["state"] == "imported" for r in reports) == 1
        members = [r for r in reports if r["state"] == "ignored" and r["member_of"]]
        assert len(members) == n - (0 if with_run_report else 1)
        # A few listings whatever N (the walk, the first-instance listing, the members and
        # the parse) and the run report read twice (its members, its parse): each instance
        # listed the directory and read the report again before, 83 listings here.
        assert listed.count(str(model)) <= 6
        assert len(read_reports) <= 3


class TestLeaderboards:
    def test_each_row_is_a_run_keyed_by_board_and_folder(self, tmp_path: Path) -> None:
        rows = [
            {**row("20250101_a", 33.6), "tags": ["Model: m-1", "Org: o", "System: Attempts - 2+"]},
            row("20250102_b", 20.0),
        ]
        path = write(tmp_path / "leaderboards.json", leaderboards(("Verified", rows)))
        a, b = parse(path)
        assert (a.header.run_key, a.header.benchmark, a.header.score) == (
            "leaderboard/verified/20250101_a",
            "swe_bench_verified",
            0.336,
        )
        assert (a.header.agent, a.header.model, a.header.config) == (
            "Agent",
            "m-1",
            {"attempts": "2+"},
        )
        assert b.header.model == "Model" and "model taken from the row's name" in str(
            b.header.provenance["quirks"]
        )
        assert a.header.metrics["published_resolved_pct"] == 33.6 and not a.cells

    def test_per_instance_details_become_cells_and_a_disagreement_is_kept(
        self, tmp_path: Path
    ) -> None:
        details = {i: {"resolved": i == IDS[0], "cost": 0.5, "api_calls": 3} for i in IDS}
        doc = leaderboards(("Lite", [{**row("20250101_a", 52.8), "per_instance_details": details}]))
        [run] = parse(write(tmp_path / "l.json", doc))
        assert run.header.score == 0.528  # the published figure
        assert run.header.metrics["resolved_instances"] == 1
        assert run.cells[0].metrics == {"cost": 0.5, "api_calls": 3}
        mismatch = run.header.provenance["mismatch"]["per_instance_details"]
        assert (mismatch["published_pct"], mismatch["recomputed_pct"]) == (52.8, 0.33)
        assert "per-instance details cover 5 of 300 instances" in run.header.provenance["quirks"]

    def test_a_percentage_of_499_instances_is_flagged(self, tmp_path: Path) -> None:
        doc = leaderboards(("Verified", [row("20250101_a", 64.93), row("20250101_b", 64.8)]))
        a, b = parse(write(tmp_path / "l.json", doc))
        assert "published 64.93% is 324/499, not a count of 500" in a.header.provenance["quirks"]
        assert not any("published" in q for q in b.header.provenance["quirks"])

    def test_bash_only_rows_are_mini_swe_agent_on_verified(self, tmp_path: Path) -> None:
        bash = {**row("20250101_a", 10.0), "mini-swe-agent_version": "1.0.0", "name": "GPT-5"}
        doc = leaderboards(("bash-only", [bash]), ("Verified", [bash]))
        a, b = parse(write(tmp_path / "l.json", doc))
        assert (a.header.agent, a.header.benchmark) == ("mini-swe-agent", "swe_bench_verified")
        assert a.header.run_key == "leaderboard/bash-only/20250101_a"
        assert b.header.run_key == "leaderboard/verified/20250101_a"

    def test_a_folder_twice_on_one_board_is_refused(self, tmp_path: Path) -> None:
        doc = leaderboards(("Lite", [row("f", 1.0), row("f", 2.0)]))
        with pytest.raises(InputFormatError) as e:
            parse(write(tmp_path / "l.json", doc))
        assert e.value.field == "leaderboards[0].results[1].folder"

    def test_the_sites_per_instance_file_gives_a_run_per_model_alias(self, tmp_path: Path) -> None:
        doc = {"gpt-5": {i: {"resolved": True, "cost": 0.1, "api_calls": 2} for i in IDS}}
        [run] = parse(write(tmp_path / "info_for_leaderboard.json", doc))
        assert (run.header.run_key, run.header.model, run.header.score) == (
            "info_for_leaderboard/gpt-5",
            "gpt-5",
            1.0,
        )


class TestBrokenInput:
    def test_truncated_json_names_the_file_and_line(self, tmp_path: Path) -> None:
        path = submission(tmp_path)
        with pytest.raises(InputFormatError) as e:
            parse(path, path.read_bytes()[:-15])
        assert e.value.path == str(path) and e.value.line is not None

    def test_a_missing_resolved_list_is_named(self, tmp_path: Path) -> None:
        with pytest.raises(InputFormatError, match="field 'resolved'"):
            parse(submission(tmp_path, results={"no_logs": [IDS[0]]}))

    def test_a_wrong_type_names_the_field(self, tmp_path: Path) -> None:
        with pytest.raises(InputFormatError) as e:
            parse(write(tmp_path / "m.r.json", run_report(resolved_ids=[IDS[0], 7])))
        assert e.value.field == "resolved_ids[1]"

    def test_bad_metadata_yaml_names_that_file(self, tmp_path: Path) -> None:
        path = submission(tmp_path, metadata="info: [unclosed\n")
        with pytest.raises(InputFormatError) as e:
            parse(path)
        assert e.value.path.endswith("metadata.yaml")

    def test_metadata_without_a_name_is_refused(self, tmp_path: Path) -> None:
        with pytest.raises(InputFormatError, match=r"field 'info\.name'"):
            parse(submission(tmp_path, metadata="tags:\n  model: [m]\n"))

    def test_a_broken_instance_report_names_that_file_and_field(self, tmp_path: Path) -> None:
        path = submission(tmp_path, reports={IDS[0]: True})
        report = path.parent.parent / "logs" / IDS[0] / "report.json"
        write(report, {IDS[0]: {**instance_report(True), "resolved": "yes"}})
        with pytest.raises(InputFormatError) as e:
            parse(path)
        assert (e.value.path, e.value.field) == (str(report), f"{IDS[0]}.resolved")

    def test_a_leaderboard_percentage_out_of_range_names_the_row(self, tmp_path: Path) -> None:
        doc = leaderboards(("Lite", [row("a", 1.0), row("b", 140.0)]))
        with pytest.raises(InputFormatError) as e:
            parse(write(tmp_path / "l.json", doc))
        assert e.value.field == "leaderboards[0].results[1].resolved"

    def test_a_file_of_no_known_layout_is_refused_when_forced(self, tmp_path: Path) -> None:
        with pytest.raises(InputFormatError, match="not a SWE-bench result"):
            parse(write(tmp_path / "preds.json", {IDS[0]: {"model_patch": ""}}))


def mutate(value: Any, rng: random.Random) -> Any:
    """Drop, retype or replace one random key or item somewhere in a JSON value."""
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        copy = dict(value)
        action = rng.randrange(4)
        if action == 0:
            del copy[key]
        elif action == 1:
            copy[key] = rng.choice([None, "x", 3, -1, 2.5, [], {}, True, float("nan")])
        else:
            copy[key] = mutate(copy[key], rng)
        return copy
    if isinstance(value, list) and value:
        i = rng.randrange(len(value))
        copy = list(value)
        copy[i] = mutate(copy[i], rng) if rng.random() < 0.5 else rng.choice([None, 1, {}])
        return copy
    return rng.choice([None, "x", 0, -5, 1e308, [], {"k": 1}, True])


DOCS: dict[str, Any] = {
    "results/results.json": {"no_generation": [IDS[3]], "no_logs": [IDS[4]], "resolved": IDS[:2]},
    "org__m.run.json": run_report(),
    "swe-bench_lite__dev__r.json": {**run_report(), "pending_instances": 0, "pending_ids": []},
    "leaderboards.json": leaderboards(
        (
            "Verified",
            [
                {
                    **row("f", 20.0),
                    "tags": ["Model: m"],
                    "per_instance_details": {
                        IDS[0]: {"resolved": True, "cost": 1.0, "api_calls": 2}
                    },
                }
            ],
        )
    ),
    "info_for_leaderboard.json": {"a": {IDS[0]: {"resolved": True, "cost": 0.1, "api_calls": 1}}},
}


class TestFuzzing:
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(seed=st.integers(0, 2**32), name=st.sampled_from(sorted(DOCS)), rounds=st.integers(1, 3))
    def test_mutated_documents_give_records_or_an_input_format_error(
        self, seed: int, name: str, rounds: int
    ) -> None:
        rng = random.Random(seed)
        doc = DOCS[name]
        for _ in range(rounds):
            doc = mutate(doc, rng)
        data = json.dumps(doc).encode()
        if rng.random() < 0.2:
            data = data[: rng.randrange(len(data) + 1)]
        path = Path("/nonexistent/verified/20250101_x") / name
        try:
            records = list(swebench.parse(path, data))
        except InputFormatError:
            return
        for record in records:
            assert isinstance(record, RunRecord)
            record.json_bytes()  # every record serialises

    @settings(max_examples=150, deadline=None)
    @given(text=st.text(max_size=200))
    def test_arbitrary_metadata_yaml_gives_a_run_or_an_input_format_error(self, text: str) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = submission(Path(tmp), metadata=text)
            try:
                [run] = parse(path)
            except InputFormatError as e:
                assert e.path.endswith(("metadata.yaml", "results.json"))
                return
            run.json_bytes()
