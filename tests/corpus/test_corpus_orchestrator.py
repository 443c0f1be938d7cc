"""The orchestrator parser on the corpus's ElizaOS files, checked against their own values."""

from __future__ import annotations

import json
import math
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.adapters.formats import orchestrator
from benchledger.domain import facts
from benchledger.domain.errors import InputFormatError
from benchledger.domain.publication import non_real_marker
from benchledger.domain.records import RunRecord, RunStatus, SkipRecord
from tests.conftest import CORPUS, Invoke

ROOT = CORPUS / "eliza_alwm" / "eliza"
LATEST = ROOT / "benchmark_results" / "latest"
HISTORY = ROOT / "benchmark_results" / "latest_history"
HYPERLIQUID = ROOT / "HyperliquidBench" / "runs" / "eliza-20260502-231604" / "eval_score.json"
ROWS = 10  # 9 latest rows + 1 superseded version in latest_history
RUNS = 10  # the rows less the incompatible one (a skip), plus the HyperliquidBench run
# The status each row ends with: bfcl__hermes says succeeded with return code 1, which the
# orchestrator's own repair (and index.json@091e291) makes failed; its score stays.
STATUSES = {
    "action-calling__eliza.json": "succeeded",
    "adhdbench__eliza.json": "succeeded",
    "agentbench__mock.json": "succeeded",
    "bfcl__eliza.json": "failed",
    "bfcl__hermes.json": "failed",
    "bfcl__perfect_v1.json": "succeeded",
    "bfcl__wrong_v1.json": "succeeded",
    "clawbench__hermes.json": "failed",
    "bfcl__eliza@914a397b.json": "failed",
}

pytestmark = pytest.mark.skipif(
    not ROOT.is_dir(), reason=f"the shared ElizaOS corpus is not at {ROOT}"
)


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def row_files() -> list[Path]:
    return sorted([*LATEST.glob("*.json"), *HISTORY.glob("*.json")])


@pytest.fixture(scope="module")
def claimed() -> dict[Path, list[RunRecord | SkipRecord]]:
    out = {}
    for path in sorted(p for p in ROOT.rglob("*") if p.is_file()):
        if orchestrator.detect(path, path.read_bytes()[:4096]):
            out[path] = list(orchestrator.parse(path, path.read_bytes()))
    return out


class TestWhatIsClaimed:
    def test_every_row_and_the_hyperliquid_score_file_and_nothing_else(
        self, claimed: dict[Path, list[RunRecord | SkipRecord]]
    ) -> None:
        assert sorted(claimed) == sorted([*row_files(), HYPERLIQUID])
        assert len(row_files()) == ROWS

    def test_nine_row_runs_one_skip_and_one_hyperliquid_run(
        self, claimed: dict[Path, list[RunRecord | SkipRecord]]
    ) -> None:
        records = [r for found in claimed.values() for r in found]
        runs = [r for r in records if isinstance(r, RunRecord)]
        skips = [r for r in records if isinstance(r, SkipRecord)]
        assert (len(runs), len(skips)) == (RUNS, 1)
        [skip] = skips
        assert (skip.benchmark, skip.agent, skip.reason) == (
            "action-calling",
            "openclaw",
            "incompatible",
        )
        assert skip.detail is not None and "supported: eliza" in skip.detail
        assert len({r.header.run_key for r in runs}) == len(runs)


class TestAgainstTheRowsOwnValues:
    def test_statuses_scores_and_run_keys_are_the_rows(
        self, claimed: dict[Path, list[RunRecord | SkipRecord]]
    ) -> None:
        for path in row_files():
            doc = load(path)
            if doc["status"] == "incompatible":
                continue
            [record] = claimed[path]
            assert isinstance(record, RunRecord)
            header = record.header
            assert header.status.value == STATUSES[path.name], path.name
            assert header.score == doc["score"] and header.run_key == doc["run_id"]
            assert (header.benchmark, header.agent, header.model) == (
                doc["benchmark_id"],
                doc["agent"],
                doc["model"],
            )

    def test_the_failed_row_with_a_score_keeps_it(
        self, claimed: dict[Path, list[RunRecord | SkipRecord]]
    ) -> None:
        [record] = claimed[LATEST / "clawbench__hermes.json"]
        assert isinstance(record, RunRecord)
        assert (record.header.status, record.header.score) == (RunStatus.FAILED, 0.4643)
        assert record.header.provenance["unsucceeded_with_score"] is True
        assert record.header.metrics["passed"] == 6 and record.header.metrics["total"] == 13

    def test_scores_agree_with_the_rows_own_summary_metrics(
        self, claimed: dict[Path, list[RunRecord | SkipRecord]]
    ) -> None:
        def header(name: str) -> Any:
            [record] = claimed[LATEST / name]
            assert isinstance(record, RunRecord)
            return record.header

        agentbench = header("agentbench__mock.json")
        m = agentbench.metrics
        assert agentbench.score == m["overall_success_rate"] == m["passed_tasks"] / m["total_tasks"]
        adhd = header("adhdbench__eliza.json")
        assert adhd.score == adhd.metrics["mean_score"]
        assert adhd.tokens == {"llm_call_count": 2}
        for name in ("bfcl__perfect_v1.json", "bfcl__wrong_v1.json"):
            calibration = header(name)
            assert calibration.score == calibration.metrics["synthetic_expected_score"]
        action = header("action-calling__eliza.json")
        assert action.score == action.metrics["score"] == 1.0000000000000007e-09

    def test_a_row_file_states_no_start_and_nothing_stands_in_for_it(
        self, claimed: dict[Path, list[RunRecord | SkipRecord]]
    ) -> None:
        # A latest/ row states when it was updated, not when its run started: the start is
        # left unstated (the database states it exactly), and the attempt is the run id's.
        for path in row_files():
            for record in claimed[path]:
                if isinstance(record, RunRecord):
                    assert record.header.started_at is None
                    attempt = record.header.provenance["attempt"]
                    assert f"Z_{attempt}_" in (record.header.run_key or "")
                    datetime.fromisoformat(load(path)["updated_at"])  # stated, and a time

    def test_host_paths_are_kept_as_stated_and_mock_runs_are_marked_non_real(
        self, claimed: dict[Path, list[RunRecord | SkipRecord]]
    ) -> None:
        for path, records in claimed.items():
            stated = path.read_text(encoding="utf-8")
            if "/Users/" in stated and records and isinstance(records[0], RunRecord):
                # The source's own paths are its facts: an export writes them back.
                assert "/Users/" in records[0].model_dump_json(), path
        [mock] = claimed[LATEST / "agentbench__mock.json"]
        assert isinstance(mock, RunRecord)
        assert non_real_marker({"metrics": mock.header.metrics}) is not None


class TestHyperliquidBench:
    def test_final_score_base_and_cells_agree_with_the_score_file(
        self, claimed: dict[Path, list[RunRecord | SkipRecord]]
    ) -> None:
        doc = load(HYPERLIQUID)
        [record] = claimed[HYPERLIQUID]
        assert isinstance(record, RunRecord)
        header = record.header
        assert header.score == doc["finalScore"] == doc["base"] + doc["bonus"] - doc["penalty"]
        assert math.isclose(sum(c.score or 0 for c in record.cells), doc["base"])
        assert [c.key for c in record.cells] == [d["name"] for d in doc["perDomain"]]
        assert header.metrics["unique_signatures"] == len(doc["uniqueSignatures"]) == 7
        assert "final_score_mismatch" not in header.provenance
        assert non_real_marker({"metrics": header.metrics}) == "truthy_non_real_flag"


class TestQuirksOnRealRows:
    def test_the_index_saying_failed_agrees_with_the_row_saying_succeeded_with_exit_1(
        self, tmp_path: Path
    ) -> None:
        latest = tmp_path / "latest"
        latest.mkdir()
        row = Path(shutil.copy(LATEST / "bfcl__hermes.json", latest / "bfcl__hermes.json"))
        entry = {"path": "/x/latest/bfcl__hermes.json", "run_id": load(row)["run_id"]}
        index: dict[str, Any] = {"latest": {"bfcl::hermes": {**entry, "status": "failed"}}}
        (latest / "index.json").write_text(json.dumps(index))
        [record] = orchestrator.parse(row, row.read_bytes())
        assert isinstance(record, RunRecord) and record.header.status is RunStatus.FAILED
        index["latest"]["bfcl::hermes"]["status"] = "incompatible"
        (latest / "index.json").write_text(json.dumps(index))
        with pytest.raises(InputFormatError, match="incompatible"):
            list(orchestrator.parse(row, row.read_bytes()))

    def test_a_real_row_gives_the_same_record_from_a_viewer_file(self, tmp_path: Path) -> None:
        for path in row_files():
            doc = load(path)
            run = {**doc, "started_at": doc["updated_at"], "input_tokens": 0, "call_count": 0}
            viewer = {"generated_at": doc["updated_at"], "runs": [run], "run_groups": []}
            target = tmp_path / "viewer_data.json"
            target.write_text(json.dumps(viewer, indent=2))
            from_viewer = list(orchestrator.parse(target, target.read_bytes()))
            from_row = list(orchestrator.parse(path, path.read_bytes()))
            # The viewer run this test builds states a start time the row file does not;
            # everything the row file states, the viewer states the same.
            for row, seen in zip(from_row, from_viewer, strict=True):
                if isinstance(row, SkipRecord):
                    assert isinstance(seen, SkipRecord) and seen.skipped_at is not None
                    # A latest row's token_metrics are completed ones: not the raw column.
                    viewed = seen.model_dump()
                    viewed["provenance"]["source_columns"].pop("token_metrics", None)
                    assert row.model_dump() == {**viewed, "skipped_at": None}
                    continue
                assert isinstance(row, RunRecord) and isinstance(seen, RunRecord)
                added, conflicts = facts.compare(facts.stated(seen), facts.stated(row))
                assert (added, conflicts) == ({}, []), path
                assert seen.header.started_at is not None


DOCS = {path.name: load(path) for path in row_files()} if ROOT.is_dir() else {}
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=4))


class TestFuzzingRealDocuments:
    @settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(data=st.data())
    def test_mutated_rows_yield_records_or_a_format_error(
        self, tmp_path: Path, data: st.DataObject
    ) -> None:
        name = data.draw(st.sampled_from(sorted(DOCS)))
        doc = dict(DOCS[name])
        for key in data.draw(st.sets(st.sampled_from(sorted(doc)), max_size=3)):
            del doc[key]
        for key in data.draw(st.sets(st.sampled_from(sorted(DOCS[name])), max_size=3)):
            doc[key] = data.draw(SCALARS | st.lists(SCALARS, max_size=2))
        path = tmp_path / name
        try:
            records = list(orchestrator.parse(path, json.dumps(doc).encode()))
        except InputFormatError as e:
            assert e.path == str(path)
            return
        assert all(isinstance(r, RunRecord | SkipRecord) for r in records)

    @settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(data=st.data())
    def test_mutated_score_files_yield_a_run_or_a_format_error(
        self, tmp_path: Path, data: st.DataObject
    ) -> None:
        doc = load(HYPERLIQUID)
        for key in data.draw(st.sets(st.sampled_from(sorted(doc)), max_size=2)):
            doc[key] = data.draw(SCALARS)
        folder = tmp_path / "eliza-20260502-231604"
        folder.mkdir(exist_ok=True)
        path = folder / "eval_score.json"
        try:
            records = list(orchestrator.parse(path, json.dumps(doc).encode()))
        except InputFormatError:
            return
        assert len(records) == 1 and isinstance(records[0], RunRecord)


class TestImportThroughTheCli:
    def test_the_corpus_imports_then_reimports_unchanged(self, invoke: Invoke) -> None:
        first = json.loads(invoke("import", str(ROOT), "--json").stdout)
        states = {Path(r["path"]).name: r["state"] for r in first}
        assert {states[p.name] for p in [*row_files(), HYPERLIQUID]} == {"imported"}
        others = {name: s for name, s in states.items() if name.endswith(".md")}
        assert set(others.values()) == {"ignored"}
        again = json.loads(invoke("import", str(ROOT), "--json").stdout)
        assert {r["state"] for r in again} <= {"unchanged", "ignored"}
        runs = json.loads(invoke("runs", "--json").stdout)
        assert len(runs) == RUNS
        by_key = {(r["benchmark"], r["agent"]): r for r in runs if r["benchmark"] == "bfcl"}
        assert by_key[("bfcl", "hermes")]["status"] == "failed"
