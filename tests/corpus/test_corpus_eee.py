"""The Every Eval Ever reader and export-eee on the shared corpus's EEE records: every
record imports with the scores it states and its samples as cells, and exported records
validate against the 0.2.1 schemas and state the same figures when imported again."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters import formats
from benchledger.adapters.formats import eee
from benchledger.domain.records import RunRecord
from tests.conftest import CORPUS, Invoke

ROOT = CORPUS / "eee"
SCHEMAS = ROOT / "schemas" / "v0.2.1"
RECORDS = sorted((ROOT / "data").rglob("*.json")) if ROOT.is_dir() else []

pytestmark = pytest.mark.skipif(
    not ROOT.is_dir(), reason=f"the shared Every Eval Ever corpus is not at {ROOT}"
)


def parse(path: Path) -> list[RunRecord]:
    records = formats.parse(eee, path, path.read_bytes())
    assert all(isinstance(r, RunRecord) for r in records)
    return records  # type: ignore[return-value]


def document(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def distinct_results(path: Path) -> list[tuple[int, dict[str, Any]]]:
    seen: list[dict[str, Any]] = []
    out = []
    for i, result in enumerate(document(path)["evaluation_results"]):
        if result not in seen:
            seen.append(result)
            out.append((i, result))
    return out


def by_name(name: str) -> Path:
    [path] = [p for p in RECORDS if p.stem.startswith(name)]
    return path


class TestImport:
    def test_the_corpus_holds_the_versions_libraries_and_source_types_described(self) -> None:
        docs = [document(p) for p in RECORDS]
        assert len(docs) == 25
        assert {d["schema_version"] for d in docs} == {"0.0.1", "0.1.0", "0.2.0", "0.2.2"}
        libraries = {
            (d.get("eval_library") or {}).get("name") or d["source_metadata"].get("source_name")
            for d in docs
            if "source_metadata" in d
        }
        assert {"HAL", "inspect_ai", "helm"} <= libraries

    @pytest.mark.parametrize("path", RECORDS, ids=lambda p: str(p.relative_to(ROOT)))
    def test_every_record_is_detected_and_gives_one_run_per_distinct_result(
        self, path: Path
    ) -> None:
        assert formats.detect(path, path.read_bytes()) is eee
        records = parse(path)
        results = distinct_results(path)
        assert len(records) == len(results)
        for record, (index, result) in zip(records, results, strict=True):
            assert record.header.score == result["score_details"]["score"]
            stated = result["metric_config"]["lower_is_better"]
            assert record.header.higher_is_better is (not stated)
            assert record.header.model == document(path)["model_info"]["id"]
            assert record.header.provenance["evaluation_result_index"] == index

    def test_run_keys_are_unique_though_evaluation_ids_repeat(self) -> None:
        keys = Counter(r.header.run_key for p in RECORDS for r in parse(p))
        assert keys and max(keys.values()) == 1
        ids = Counter(document(p)["evaluation_id"] for p in RECORDS)
        assert max(ids.values()) > 1  # the AtAndDev precisions, the truncated tulu name

    def test_exact_duplicate_results_are_one_run(self) -> None:
        path = by_name("a796664d")  # hellaswag, HELM converter: each metric twice
        assert len(document(path)["evaluation_results"]) == 24
        assert len(parse(path)) == 12

    @pytest.mark.parametrize(
        ("name", "cells", "passed"),
        [
            ("0479dd23", 5, 5),  # ai2_arc claude, instance-level JSONL
            ("75e7b3c4", 3, 1),  # ai2_arc qwen
            ("5917cc37", 2, 0),  # GAIA
            ("2522aa36", 5, 5),  # ai2_arc claude 0.1.0, inline samples
            ("cc8419df", 5, 5),  # inspect 0.0.1, inline samples
            ("a796664d", 10, 3),  # hellaswag 0.1.0, inline samples
        ],
    )
    def test_samples_are_the_cells_of_their_result(
        self, name: str, cells: int, passed: int
    ) -> None:
        first = parse(by_name(name))[0]
        assert len(first.cells) == cells
        assert sum(c.outcome == "passed" for c in first.cells) == passed
        assert first.header.score == pytest.approx(passed / cells)

    def test_instance_rows_keep_their_stated_scores_and_usage(self) -> None:
        [run] = parse(by_name("5917cc37"))
        assert [c.score for c in run.cells] == [0.0, 0.0]
        assert run.cells[0].metrics["token_usage"]["total_tokens"] == 9532

    def test_same_model_id_different_model_keeps_the_names_apart(self) -> None:
        runs = [parse(p)[0] for p in RECORDS if "hal-assistantbench" in str(p)]
        assert {r.header.model for r in runs} == {"deepseek/deepseek-r1"}
        assert len({r.header.signature for r in runs}) == 2
        assert len({r.header.config["model_name"] for r in runs}) == 2

    def test_the_whole_directory_imports_nothing_failing(self, invoke: Invoke) -> None:
        files = json.loads(invoke("import", str(ROOT), "--json").stdout)
        states = Counter(f["state"] for f in files)
        assert states["imported"] == 25 and states["failed"] == 0
        members = [f["path"] for f in files if f["member_of"]]
        assert len(members) == 3 and all(m.endswith(".jsonl") for m in members)

    def test_model_ids_differing_in_case_resolve_to_one_model(
        self, invoke: Invoke, db: Path
    ) -> None:
        invoke("import", str(ROOT / "data" / "reward-bench"))
        with sqlite3.connect(db) as conn:
            found = dict(conn.execute("SELECT name, model_id FROM models"))
        assert found["Anthropic/claude-3-haiku-20240307"] == "anthropic/claude-3-haiku-20240307"
        assert found["anthropic/claude-3-haiku-20240307"] == "anthropic/claude-3-haiku-20240307"


def validators() -> tuple[Any, Any]:
    jsonschema = pytest.importorskip("jsonschema")
    if not SCHEMAS.is_dir():
        pytest.skip(f"the 0.2.1 schemas are not at {SCHEMAS}")
    aggregate = json.loads((SCHEMAS / "eval.schema.json").read_text())
    instance = json.loads((SCHEMAS / "instance_level_eval.schema.json").read_text())
    return jsonschema.Draft7Validator(aggregate), jsonschema.Draft7Validator(instance)


def assert_valid(out: Path) -> tuple[int, int]:
    aggregate, instance = validators()
    records = sorted(out.rglob("*.json"))
    samples = sorted(out.rglob("*.jsonl"))
    for path in records:
        errors = [e.message for e in aggregate.iter_errors(json.loads(path.read_text()))]
        assert not errors, f"{path}: {errors[:3]}"
    for path in samples:
        for line in path.read_text().splitlines():
            errors = [e.message for e in instance.iter_errors(json.loads(line))]
            assert not errors, f"{path}: {errors[:3]}"
    return len(records), len(samples)


def figures(db: Path, rows_of: str = "latest") -> Counter[tuple[Any, ...]]:
    """What the runs of a ledger's latest rows (or all its runs) state."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT benchmark, model, score, unit, higher_is_better, cells, cells_passed, "
            f"cells_failed, cells_error, cells_skipped FROM runs WHERE run_id IN "
            f"(SELECT run_id FROM [{rows_of}])"
        ).fetchall()
    return Counter(rows)


class TestExport:
    def test_an_export_of_the_corpus_validates_and_states_the_same_figures(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        invoke("import", str(ROOT))
        out = tmp_path / "eee-out"
        invoke("export-eee", str(out))
        records, samples = assert_valid(out)
        with sqlite3.connect(db) as conn:
            (latest,) = conn.execute("SELECT count(*) FROM latest").fetchone()
        assert records == latest and samples >= 1
        again = tmp_path / "again.db"
        result = invoke("--db", str(again), "import", str(out), "--json")
        assert json.loads(result.stdout)
        assert figures(again) == figures(db)

    def test_re_export_is_idempotent(self, invoke: Invoke, tmp_path: Path) -> None:
        invoke("import", str(ROOT))
        out = tmp_path / "eee-out"
        first = json.loads(invoke("export-eee", str(out), "--json").stdout)
        before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
        second = json.loads(invoke("export-eee", str(out), "--json").stdout)
        assert second["written"] == [] and len(second["unchanged"]) == len(first["written"])
        assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before

    def test_an_export_of_the_demo_ledger_validates_and_states_the_same_figures(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        invoke("demo")
        out = tmp_path / "demo-eee"
        invoke("export-eee", str(out))
        records, samples = assert_valid(out)
        assert records > 0 and samples > 0
        again = tmp_path / "again.db"
        invoke("--db", str(again), "import", str(out))
        assert figures(again, "runs") == figures(db)
