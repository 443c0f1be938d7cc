"""Every Eval Ever records the project writes itself: keys, cells, refusals, export."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters import formats
from benchledger.adapters.formats import eee
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord
from tests.conftest import Invoke

UUID = "0b0c2f7e-1111-4222-8333-944455556666"


def result(name: str = "Accuracy", score: float = 0.5, **more: Any) -> dict[str, Any]:
    return {
        "evaluation_name": name,
        "source_data": {"dataset_name": "toy", "source_type": "hf_dataset", "hf_repo": "org/toy"},
        "metric_config": {
            "evaluation_description": "accuracy",
            "lower_is_better": False,
            "score_type": "continuous",
            "min_score": 0.0,
            "max_score": 1.0,
        },
        "score_details": {"score": score},
        **more,
    }


def record(*results: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {
        "schema_version": "0.2.2",
        "evaluation_id": "toy/org_model/1760000000.0",
        "retrieved_timestamp": "1760000000.5",
        "source_metadata": {
            "source_name": "Toy board",
            "source_type": "documentation",
            "source_organization_name": "Toy",
            "evaluator_relationship": "third_party",
        },
        "eval_library": {"name": "toylib", "version": "1.2"},
        "model_info": {"name": "Org Model", "id": "org/model", "developer": "org"},
        "evaluation_results": list(results) or [result()],
        **more,
    }


def write(root: Path, doc: dict[str, Any], name: str = UUID) -> Path:
    path = root / "data" / "toy" / "org" / "model" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def parse(path: Path) -> list[RunRecord]:
    return formats.parse(eee, path, path.read_bytes())  # type: ignore[return-value]


def refusal(path: Path) -> InputFormatError:
    with pytest.raises(InputFormatError) as caught:
        parse(path)
    return caught.value


def samples(root: Path, rows: list[dict[str, Any]], name: str = "samples.jsonl") -> str:
    """Instance-level rows written under the root; the record's pointer to them."""
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    (root / "instance_level_data").mkdir(parents=True, exist_ok=True)
    (root / "instance_level_data" / name).write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def row(sample_id: Any, score: Any, correct: Any = None, **more: Any) -> dict[str, Any]:
    evaluation = {"score": score, **({} if correct is None else {"is_correct": correct})}
    return {"sample_id": sample_id, "evaluation_name": "Accuracy", "evaluation": evaluation, **more}


def pointer(checksum: str, name: str = "samples.jsonl") -> dict[str, Any]:
    return {
        "format": "jsonl",
        "file_path": f"instance_level_data/{name}",
        "hash_algorithm": "sha256",
        "checksum": checksum,
    }


class TestReading:
    def test_a_result_is_a_run_keyed_by_file_and_index(self, tmp_path: Path) -> None:
        path = write(tmp_path, record(result("A", 0.25), result("B", 0.75)))
        runs = parse(path)
        assert [r.header.run_key for r in runs] == [f"{UUID}#0", f"{UUID}#1"]
        assert [(r.header.benchmark, r.header.score) for r in runs] == [("A", 0.25), ("B", 0.75)]
        assert runs[0].header.agent == "toylib"
        assert runs[0].header.model == "org/model"
        assert runs[0].header.config["model_name"] == "Org Model"
        assert runs[0].header.unit == "accuracy"
        assert runs[0].header.started_at is not None
        assert runs[0].header.started_at.timestamp() == 1760000000.5

    def test_evaluation_result_id_is_the_key_when_stated(self, tmp_path: Path) -> None:
        path = write(tmp_path, record(result(evaluation_result_id="acc")))
        assert parse(path)[0].header.run_key == f"{UUID}#acc"

    def test_lower_is_better_and_uncertainty_are_kept(self, tmp_path: Path) -> None:
        entry = result(score=3.5)
        entry["metric_config"] |= {"lower_is_better": True, "metric_name": "rmse"}
        entry["score_details"]["uncertainty"] = {"standard_error": {"value": 0.1}}
        [run] = parse(write(tmp_path, record(entry)))
        assert run.header.higher_is_better is False
        assert run.header.unit == "rmse"
        assert run.header.metrics["uncertainty"] == {"standard_error": {"value": 0.1}}

    def test_a_repeated_identical_entry_is_one_run_a_differing_one_is_two(
        self, tmp_path: Path
    ) -> None:
        assert len(parse(write(tmp_path, record(result(), result())))) == 1
        assert len(parse(write(tmp_path, record(result(), result(score=0.6))))) == 2

    def test_jsonl_rows_are_cells_with_their_verdicts(self, tmp_path: Path) -> None:
        rows = [
            row(1, 1.0, True),
            row("2", 0.0, False),
            row(3, 0.5),
            row(4, 0.0, error="timeout"),
            row(1, 1.0, True),
        ]
        checksum = samples(tmp_path, rows)
        path = write(tmp_path, record(detailed_evaluation_results=pointer(checksum)))
        [run] = parse(path)
        assert [(c.key, c.outcome, c.score) for c in run.cells] == [
            ("1", "passed", 1.0),
            ("2", "failed", 0.0),
            ("3", "failed", 0.5),
            ("4", "error", 0.0),
            ("1#2", "passed", 1.0),
        ]
        assert formats.members(eee, path) == [tmp_path / "instance_level_data" / "samples.jsonl"]

    def test_rows_go_to_the_result_they_name(self, tmp_path: Path) -> None:
        rows = [
            {**row(1, 1.0, True), "evaluation_result_id": "b"},
            {**row(2, 0.0, False), "evaluation_result_id": "a"},
            {**row(3, 1.0, True), "evaluation_result_id": "b"},
        ]
        checksum = samples(tmp_path, rows)
        doc = record(
            result("A", evaluation_result_id="a"),
            result("B", evaluation_result_id="b"),
            detailed_evaluation_results=pointer(checksum),
        )
        a, b = parse(write(tmp_path, doc))
        assert [c.key for c in a.cells] == ["2"] and [c.key for c in b.cells] == ["1", "3"]

    def test_rows_naming_no_result_belong_to_the_first_some_refuse(self, tmp_path: Path) -> None:
        doc = record(result("A"), result("B"))
        checksum = samples(tmp_path, [row(1, 1.0, True, evaluation_name="other")])
        doc["detailed_evaluation_results"] = pointer(checksum)
        first, second = parse(write(tmp_path, doc))
        assert [c.key for c in first.cells] == ["1"] and second.cells == ()
        checksum = samples(
            tmp_path, [row(1, 1.0, True, evaluation_name="B"), row(2, 1.0, evaluation_name="x")]
        )
        doc["detailed_evaluation_results"] = pointer(checksum)
        error = refusal(write(tmp_path, doc))
        assert error.line == 2 and error.field == "evaluation_result_id"

    def test_inline_samples_compare_response_and_ground_truth(self, tmp_path: Path) -> None:
        inline = [
            {"sample_id": "1", "ground_truth": "A", "response": "A"},
            {"sample_id": "2", "ground_truth": ["B", "C"], "response": "C"},
            {"sample_id": "3", "ground_truth": "D", "response": None},
        ]
        doc = record(result("A"), result("B"), detailed_evaluation_results_per_samples=inline)
        first, second = parse(write(tmp_path, doc))
        assert [c.outcome for c in first.cells] == ["passed", "failed", "skipped"]
        assert second.cells == ()

    def test_old_versions_state_their_source_data_once(self, tmp_path: Path) -> None:
        entry = result("choice")
        del entry["source_data"]
        doc = record(entry, schema_version="0.1.0", source_data={"dataset_name": "arc"})
        doc["source_metadata"]["source_type"] = "evaluation_run"
        del doc["eval_library"]
        [run] = parse(write(tmp_path, doc))
        assert run.header.benchmark == "arc"
        assert run.header.agent == "Toy board"
        assert run.header.provenance["evaluation_name"] == "choice"

    def test_iso_times_are_read(self, tmp_path: Path) -> None:
        doc = record(retrieved_timestamp="2025-11-28T00:36:05.010417Z")
        [run] = parse(write(tmp_path, doc))
        assert run.header.started_at is not None and run.header.started_at.year == 2025

    def test_other_json_is_not_claimed(self, tmp_path: Path) -> None:
        other = tmp_path / "x.json"
        other.write_text(json.dumps({"schema_version": "1.0.0", "results": {}}))
        assert not eee.detect(other, other.read_bytes())
        path = write(tmp_path, {k: v for k, v in reversed(record().items())})
        assert eee.detect(path, path.read_bytes())


class TestRefusals:
    @pytest.mark.parametrize(
        ("change", "field"),
        [
            (lambda d: d["evaluation_results"][0]["score_details"].update(score="0.5"),
             "evaluation_results[0].score_details.score"),
            (lambda d: d["evaluation_results"][0]["score_details"].update(score=True),
             "evaluation_results[0].score_details.score"),
            (lambda d: d.update(evaluation_results=[]), "evaluation_results"),
            (lambda d: d["model_info"].update(id="", name=""), "model_info.id"),
            (lambda d: d.update(retrieved_timestamp="yesterday"), "retrieved_timestamp"),
            (lambda d: d.update(model_info="org/model"), "model_info"),
        ],
    )  # fmt: skip
    def test_a_malformed_record_is_refused_naming_file_and_field(
        self, tmp_path: Path, change: Any, field: str
    ) -> None:
        doc = record()
        change(doc)
        path = write(tmp_path, doc)
        error = refusal(path)
        assert error.path == str(path) and error.field == field

    def test_a_key_stated_twice_is_refused(self, tmp_path: Path) -> None:
        path = write(tmp_path, record())
        path.write_text(
            path.read_text().replace(
                '"evaluation_id"', '"schema_version": "0.2.2", "evaluation_id"', 1
            )
        )
        assert "schema_version" in str(refusal(path))

    def test_a_missing_or_altered_samples_file_is_refused(self, tmp_path: Path) -> None:
        path = write(tmp_path, record(detailed_evaluation_results=pointer("0" * 64)))
        assert refusal(path).field == "detailed_evaluation_results.file_path"
        samples(tmp_path, [row(1, 1.0, True)])
        assert refusal(path).field == "detailed_evaluation_results.checksum"

    def test_a_bad_row_names_its_file_and_line(self, tmp_path: Path) -> None:
        checksum = samples(tmp_path, [row(1, 1.0, True), row(None, 1.0)])
        path = write(tmp_path, record(detailed_evaluation_results=pointer(checksum)))
        error = refusal(path)
        assert error.path.endswith("samples.jsonl") and error.line == 2
        assert error.field == "sample_id"


def figures(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return sorted(
            conn.execute(
                "SELECT benchmark, model, score, unit, higher_is_better, cells, cells_passed, "
                "cells_failed, cells_error, cells_skipped FROM runs"
            ).fetchall()
        )


class TestExport:
    def test_a_record_imported_then_exported_states_the_same_figures(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        source = tmp_path / "source"
        rows = [row(1, 1.0, True), row(2, 0.0, False), row(3, None, error="crash")]
        rows = [{**r, "evaluation_result_id": "A"} for r in rows]
        checksum = samples(source, rows)
        first, second = result("A", 0.5), result("B", 0.25)
        first["evaluation_result_id"], second["evaluation_result_id"] = "A", "B"
        second["metric_config"]["lower_is_better"] = True
        doc = record(first, second, detailed_evaluation_results=pointer(checksum))
        write(source, doc)
        invoke("import", str(source))
        out = tmp_path / "out"
        receipt = json.loads(invoke("export-eee", str(out), "--json").stdout)
        assert receipt["records"] == 2 and receipt["samples"] == 1
        again = tmp_path / "again.db"
        invoke("--db", str(again), "import", str(out))
        assert figures(again) == figures(db)
        exported = [json.loads(p.read_text()) for p in out.rglob("*.json")]
        assert {d["model_info"]["id"] for d in exported} == {"org/model"}
        assert {d["evaluation_id"] for d in exported} == {doc["evaluation_id"]}

    def test_benchmark_filters_choose_the_records(self, invoke: Invoke, tmp_path: Path) -> None:
        source = tmp_path / "source"
        write(source, record(result("A"), result("B")))
        invoke("import", str(source))
        out = tmp_path / "out"
        invoke("export-eee", str(out), "--include-benchmarks", "B")
        [only] = [json.loads(p.read_text()) for p in out.rglob("*.json")]
        assert only["evaluation_results"][0]["evaluation_name"] == "B"

    def test_reviewed_exports_nothing_no_review_covers(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        write(tmp_path / "source", record())
        invoke("import", str(tmp_path / "source"))
        receipt = json.loads(
            invoke("export-eee", str(tmp_path / "out"), "--reviewed", "--json").stdout
        )
        assert receipt["records"] == 0
