"""HELM run folders written here: runs/<suite>/<run>/ with run_spec.json as the entry."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters import formats
from benchledger.adapters.formats import helm
from benchledger.domain.errors import InputFormatError, PartOfResultError
from benchledger.domain.records import RunRecord
from tests.conftest import Invoke

RUN = "mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2"


def stat(name: str, mean: float, split: str = "test", **extra: Any) -> dict[str, Any]:
    """A Stat as HELM writes one for a single value (count 1)."""
    return {
        "name": {"name": name, "split": split, **extra},
        "count": 1,
        "sum": mean,
        "sum_squared": mean * mean,
        "min": mean,
        "max": mean,
        "mean": mean,
        "variance": 0.0,
        "stddev": 0.0,
    }


WORST = {"name": "robustness", "robustness": True, "fairness": False, "computed_on": "worst"}
STATS = [
    stat("exact_match", 0.5),
    stat("exact_match", 0.25, perturbation=WORST),
    stat("exact_match", 0.75, split="valid"),
    stat("num_instances", 2),
    {"name": {"name": "training_co2_cost", "split": "test"}, "count": 0, "sum": 0},
]
PER_INSTANCE = [
    {"instance_id": "id1", "train_trial_index": 0, "stats": [stat("exact_match", 1.0)]},
    {"instance_id": "id2", "train_trial_index": 0, "stats": [stat("exact_match", 0.0)]},
    {"instance_id": "id1", "train_trial_index": 0, "stats": [stat("num_prompt_tokens", 12)]},
    {"instance_id": "id2", "train_trial_index": 0, "stats": [stat("num_prompt_tokens", 30)]},
]


def schema(main: str = "exact_match", lower: bool = False) -> dict[str, Any]:
    return {
        "metrics": [{"name": main, "display_name": main, "lower_is_better": lower}],
        "run_groups": [
            {"name": "mmlu", "environment": {"main_name": main, "main_split": "test"}},
        ],
    }


def write(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))
    return path


def run_folder(
    root: Path,
    *,
    name: str = RUN,
    suite: str = "v1",
    stats: list[dict[str, Any]] | None = None,
    per_instance: list[dict[str, Any]] | None = None,
    suite_schema: dict[str, Any] | None = None,
) -> Path:
    """A run folder under `root/runs/<suite>/`, with the suite's schema.json unless None."""
    folder = root / "runs" / suite / name
    spec = {
        "name": name,
        "scenario_spec": {
            "class_name": "helm.benchmark.scenarios.mmlu_scenario.MMLUScenario",
            "args": {"subject": "anatomy"},
        },
        "adapter_spec": {
            "method": "multiple_choice_joint",
            "max_eval_instances": 2,
            "model_deployment": "huggingface/gpt2",
            "model": "openai/gpt2",
            "temperature": 0.0,
        },
        "metric_specs": [{"class_name": "helm.benchmark.metrics.basic_metrics.X", "args": {}}],
        "groups": ["mmlu"],
    }
    write(folder / "run_spec.json", spec)
    write(folder / "stats.json", STATS if stats is None else stats)
    write(
        folder / "per_instance_stats.json", PER_INSTANCE if per_instance is None else per_instance
    )
    write(folder / "scenario_state.json", {"request_states": []})
    if suite_schema is not None:
        write(folder.parent / "schema.json", suite_schema)
        write(
            folder.parent / "summary.json",
            {"suites": [suite], "suite": suite, "date": "2024-06-09"},
        )
    return folder / "run_spec.json"


def read(spec: Path) -> RunRecord:
    [record] = formats.parse(helm, spec, spec.read_bytes())
    assert isinstance(record, RunRecord)
    return record


class TestTheRunFromItsFolder:
    def test_the_score_is_the_schemas_main_metric_on_its_split_unperturbed(
        self, tmp_path: Path
    ) -> None:
        run = read(run_folder(tmp_path, suite_schema=schema())).header
        assert (run.benchmark, run.agent, run.model, run.provider) == (
            "mmlu",
            "helm",
            "openai/gpt2",
            "huggingface",
        )
        assert (run.score, run.unit, run.higher_is_better) == (0.5, "exact_match", True)
        assert run.run_key == f"v1/{RUN}"
        assert run.provenance["main_metric"] == {
            "group": "mmlu",
            "name": "exact_match",
            "split": "test",
        }
        assert run.provenance["summary_date"] == "2024-06-09"

    def test_every_stat_is_kept_under_its_whole_name(self, tmp_path: Path) -> None:
        metrics = read(run_folder(tmp_path, suite_schema=schema())).header.metrics
        perturbed = (
            'exact_match@test~computed_on="worst",fairness=false,name="robustness",robustness=true'
        )
        assert metrics["exact_match@test"]["mean"] == 0.5
        assert metrics["exact_match@valid"]["mean"] == 0.75
        assert metrics[perturbed]["mean"] == 0.25
        assert metrics["num_instances@test"]["mean"] == 2
        assert metrics["training_co2_cost@test"] == {"count": 0, "sum": 0}
        assert len(metrics) == len(STATS)

    def test_the_scenario_and_adapter_are_config(self, tmp_path: Path) -> None:
        config = read(run_folder(tmp_path, suite_schema=schema())).header.config
        assert config["scenario_spec"]["args"] == {"subject": "anatomy"}
        assert config["adapter_spec"]["max_eval_instances"] == 2
        assert config["groups"] == ["mmlu"]

    def test_a_lower_is_better_main_metric_says_so(self, tmp_path: Path) -> None:
        spec = run_folder(
            tmp_path, stats=[stat("ece", 0.2)], per_instance=[], suite_schema=schema("ece", True)
        )
        run = read(spec).header
        assert (run.score, run.higher_is_better) == (0.2, False)

    def test_without_a_schema_there_is_no_score_and_it_says_why(self, tmp_path: Path) -> None:
        record = read(run_folder(tmp_path))
        assert record.header.score is None and record.header.unit is None
        assert "schema.json" in record.header.provenance["no_score"]
        assert record.header.metrics["exact_match@test"]["mean"] == 0.5
        assert {c.outcome for c in record.cells} == {"skipped"}

    def test_a_schema_without_the_runs_group_gives_no_score(self, tmp_path: Path) -> None:
        other = {"run_groups": [{"name": "bbq", "environment": {"main_name": "exact_match"}}]}
        run = read(run_folder(tmp_path, suite_schema=other)).header
        assert run.score is None and "no main metric" in run.provenance["no_score"]

    def test_a_main_metric_missing_from_stats_gives_no_score(self, tmp_path: Path) -> None:
        run = read(run_folder(tmp_path, suite_schema=schema("bbq_accuracy"))).header
        assert run.score is None and "bbq_accuracy@test" in run.provenance["no_score"]


class TestCells:
    def test_entries_of_one_instance_merge_into_one_cell(self, tmp_path: Path) -> None:
        record = read(run_folder(tmp_path, suite_schema=schema()))
        cells = {c.key: c for c in record.cells}
        assert set(cells) == {"id1", "id2"}
        assert (cells["id1"].outcome, cells["id1"].score) == ("passed", 1.0)
        assert (cells["id2"].outcome, cells["id2"].score) == ("failed", 0.0)
        assert cells["id1"].metrics["num_prompt_tokens@test"]["mean"] == 12
        assert cells["id1"].metrics["exact_match@test"]["sum"] == 1.0

    def test_trials_and_perturbations_are_kept_apart(self, tmp_path: Path) -> None:
        entries = [
            {"instance_id": "id1", "train_trial_index": 0, "stats": [stat("exact_match", 1.0)]},
            {"instance_id": "id1", "train_trial_index": 1, "stats": [stat("exact_match", 0.0)]},
            {
                "instance_id": "id1",
                "train_trial_index": 0,
                "perturbation": {"name": "typos", "prob": 0.1},
                "stats": [stat("exact_match", 0.0)],
            },
        ]
        record = read(run_folder(tmp_path, per_instance=entries, suite_schema=schema()))
        scores = {c.key: c.score for c in record.cells}
        assert scores == {
            "id1#trial=0": 1.0,
            "id1#trial=1": 0.0,
            'id1#trial=0~name="typos",prob=0.1': 0.0,
        }

    def test_a_run_level_main_metric_scores_cells_by_exact_match(self, tmp_path: Path) -> None:
        stats = [stat("bbq_accuracy", 0.5), stat("exact_match", 0.5)]
        spec = run_folder(tmp_path, stats=stats, suite_schema=schema("bbq_accuracy"))
        record = read(spec)
        assert record.header.score == 0.5
        assert record.header.provenance["cell_metric"] == "exact_match@test"
        assert sorted((c.key, c.score) for c in record.cells) == [("id1", 1.0), ("id2", 0.0)]

    def test_a_graded_value_is_kept_as_the_score(self, tmp_path: Path) -> None:
        entries = [{"instance_id": "a", "stats": [stat("exact_match", 0.25)]}]
        [cell] = read(run_folder(tmp_path, per_instance=entries, suite_schema=schema())).cells
        assert (cell.key, cell.outcome, cell.score) == ("a", "passed", 0.25)

    def test_a_value_that_is_not_finite_is_no_score(self, tmp_path: Path) -> None:
        spec = run_folder(tmp_path, suite_schema=schema())
        text = json.dumps([{"instance_id": "a", "stats": [stat("exact_match", 0.0)]}])
        (spec.parent / "per_instance_stats.json").write_text(
            text.replace('"mean": 0.0', '"mean": NaN')
        )
        [cell] = read(spec).cells
        assert (cell.outcome, cell.score, cell.metrics["score_not_finite"]) == (
            "skipped",
            None,
            "nan",
        )


class TestBadInput:
    def test_a_stat_stated_twice_is_refused_naming_file_and_entry(self, tmp_path: Path) -> None:
        spec = run_folder(tmp_path, stats=[stat("exact_match", 0.5), stat("exact_match", 0.6)])
        with pytest.raises(InputFormatError) as e:
            read(spec)
        assert e.value.path.endswith("stats.json") and e.value.field == "[1].name"

    def test_one_instance_stat_stated_differently_is_refused(self, tmp_path: Path) -> None:
        entries = [
            {"instance_id": "a", "stats": [stat("exact_match", 1.0)]},
            {"instance_id": "a", "stats": [stat("exact_match", 0.0)]},
        ]
        with pytest.raises(InputFormatError) as e:
            read(run_folder(tmp_path, per_instance=entries))
        assert e.value.path.endswith("per_instance_stats.json")
        assert e.value.field == "[1].stats[0]"

    def test_a_key_stated_twice_in_json_is_refused(self, tmp_path: Path) -> None:
        spec = run_folder(tmp_path)
        (spec.parent / "stats.json").write_text(
            '[{"name": {"name": "a", "split": "test"}, "count": 1, "count": 2}]'
        )
        with pytest.raises(InputFormatError) as e:
            read(spec)
        assert e.value.path.endswith("stats.json") and "count" in str(e.value)

    def test_a_run_spec_without_a_model_names_the_field(self, tmp_path: Path) -> None:
        spec = run_folder(tmp_path)
        raw = json.loads(spec.read_text())
        del raw["adapter_spec"]["model"]
        spec.write_text(json.dumps(raw))
        with pytest.raises(InputFormatError) as e:
            read(spec)
        assert e.value.path == str(spec) and e.value.field == "adapter_spec.model"

    def test_a_run_without_stats_is_refused(self, tmp_path: Path) -> None:
        spec = run_folder(tmp_path)
        (spec.parent / "stats.json").unlink()
        with pytest.raises(InputFormatError) as e:
            read(spec)
        assert e.value.path.endswith("stats.json")

    def test_a_stat_of_the_wrong_shape_names_the_field(self, tmp_path: Path) -> None:
        spec = run_folder(tmp_path, stats=[{"name": {"name": "a"}, "count": "many"}])
        with pytest.raises(InputFormatError) as e:
            read(spec)
        assert e.value.path.endswith("stats.json") and e.value.field == "[0].count"


def runs(db: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        query = "SELECT run_key, score, cells, model_id FROM runs ORDER BY run_key"
        return [dict(r) for r in conn.execute(query)]


class TestImportingFolders:
    def test_a_suite_imports_one_run_per_folder_its_files_members(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        run_folder(tmp_path, suite_schema=schema())
        run_folder(tmp_path, name="mmlu:subject=anatomy,model=openai_gpt2", suite_schema=schema())
        write(tmp_path / "runs" / "v1" / "groups" / "mmlu.json", [{"title": "x", "rows": []}])
        reports = json.loads(invoke("import", str(tmp_path), "--json").stdout)
        imported = [r for r in reports if r["state"] == "imported"]
        assert [r["format"] for r in imported] == ["helm", "helm"]
        members = [r for r in reports if "member of imported run" in (r["message"] or "")]
        # stats, per-instance stats, scenario state of each run; schema and summary once.
        assert len(members) == 8
        [table] = [r for r in reports if r["path"].endswith("groups/mmlu.json")]
        assert table["state"] == "ignored" and "not a result" in table["message"]
        assert [(r["score"], r["cells"]) for r in runs(db)] == [(0.5, 2), (0.5, 2)]

    def test_a_member_alone_names_its_run(self, tmp_path: Path) -> None:
        spec = run_folder(tmp_path)
        member = spec.parent / "per_instance_stats.json"
        with pytest.raises(PartOfResultError) as e:
            formats.detect(member, member.read_bytes())
        assert e.value.primary == str(spec) and e.value.target == str(spec.parent)

    def test_a_suite_copied_to_a_second_output_folder_is_not_counted_twice(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        run_folder(tmp_path / "benchmark_output", suite_schema=schema())
        shutil.copytree(tmp_path / "benchmark_output", tmp_path / "benchmark_output_copy")
        invoke("import", str(tmp_path))
        [run] = runs(db)
        assert (run["run_key"], run["score"], run["model_id"]) == (f"v1/{RUN}", 0.5, "openai/gpt2")

    def test_reimporting_changes_nothing(self, invoke: Invoke, db: Path, tmp_path: Path) -> None:
        run_folder(tmp_path, suite_schema=schema())
        invoke("import", str(tmp_path))
        [report] = [
            r
            for r in json.loads(invoke("import", str(tmp_path), "--json").stdout)
            if r["format"] == "helm"
        ]
        assert report["state"] == "unchanged"
