"""The inspect_ai parser on every inspect log of the shared corpus, checked against the logs'
own totals (results.scores accuracy, completed_samples, stats.model_usage)."""

from __future__ import annotations

import copy
import io
import json
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.adapters.formats import inspect_ai
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord, RunStatus
from tests.conftest import CORPUS, Invoke
from tests.unit.test_format_inspect_ai import mutated, parses_or_refuses

ROOT = CORPUS / "inspect_ai"
FILES = (
    sorted(p for p in ROOT.rglob("*") if p.suffix in (".json", ".eval")) if ROOT.is_dir() else []
)
JSON_FILES = [p for p in FILES if p.suffix == ".json"]
# Written with deflate, so the test reads the source with nothing but the stdlib.
DEFLATE_FILES = [
    p
    for p in FILES
    if p.suffix == ".eval"
    and all(i.compress_type == zipfile.ZIP_DEFLATED for i in zipfile.ZipFile(p).infolist())
]
ZSTD_FILES = ["legacy__retry-2-then-success.eval", "postfix__retry-2-then-success.eval"]
EVAL_SET = "Fcv3TQy7U5DffzLHPyyLGn"
CELLS = 212  # 199 in the .eval logs and 14 in the JSON logs, less log_formats' twin
# Heavy transcript parts of a sample, left out before mutating so mutations hit what is read.
TRANSCRIPT = ("messages", "events", "transcript", "output", "attachments", "store", "input")

# file stem -> (status, score, cells, outcome counts), as each log states them.
EXPECTED: dict[str, tuple[RunStatus, float | None, int, dict[str, int]]] = {
    "2024-11-05T13-32-37-05-00_input-task_hxs4q9azL3ySGkjJirypKZ": (
        RunStatus.SUCCEEDED, 1.0, 1, {"passed": 1}),
    "2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr": (
        RunStatus.SUCCEEDED, None, 10, {"skipped": 10}),
    "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB": (
        RunStatus.SUCCEEDED, 0.8, 10, {"passed": 8, "failed": 2}),
    "2025-09-12T11-41-56-04-00_popularity_HdSVrmTDEge636qZ2op64f": (
        RunStatus.SUCCEEDED, 0.0, 1, {"failed": 1}),
    "2025-09-23T08-09-58-04-00_security-guide_LuxZJVwvymC3S3SyoJczxB": (
        RunStatus.SUCCEEDED, 0.6875, 16, {"passed": 11, "failed": 5}),
    "2025-09-15T15-04-34-04-00_popularity_CuCFPdqnwXupUkxp69nJ2a": (
        RunStatus.SUCCEEDED, 0.6, 50, {"passed": 30, "failed": 20}),
    "2025-09-15T15-04-34-04-00_popularity_J5EskSJVsBD9iRd47twk8x": (
        RunStatus.SUCCEEDED, 0.7, 50, {"passed": 35, "failed": 15}),
    "2025-09-15T15-04-34-04-00_popularity_jKN69eAYYpZFAZhRgMAztp": (
        RunStatus.SUCCEEDED, 0.6599999999999999, 50, {"passed": 33, "failed": 17}),
    "legacy__retry-2-then-success": (RunStatus.SUCCEEDED, None, 1, {"skipped": 1}),
    "postfix__retry-2-then-success": (RunStatus.SUCCEEDED, None, 1, {"skipped": 1}),
    "log_formats": (RunStatus.SUCCEEDED, 0.0, 1, {"failed": 1}),
    "log_message_deduplication": (RunStatus.SUCCEEDED, 0.0, 1, {"failed": 1}),
    "log_read_sample": (RunStatus.SUCCEEDED, 1.0, 1, {"passed": 1}),
    "log_streaming": (RunStatus.SUCCEEDED, 0.75, 4, {"passed": 3, "failed": 1}),
    "mmlu-no-summary-choices": (RunStatus.SUCCEEDED, 0.0, 1, {"failed": 1}),
    "mmlu-summary-choices": (RunStatus.SUCCEEDED, 0.0, 1, {"failed": 1}),
    "2024-11-05T13-31-45-05-00_input-task_8zXjbRzCWrL9GXiXo2vus9": (
        RunStatus.SUCCEEDED, 1.0, 1, {"passed": 1}),
    "2025-05-12T20-28-13-04-00_no-samples": (
        RunStatus.CANCELLED, 2 / 3, 3, {"passed": 2, "failed": 1}),
    "2025-05-12T20-28-13-04-00_popularity": (
        RunStatus.CANCELLED, 2 / 3, 3, {"passed": 2, "failed": 1}),
    "2025-05-12T20-28-26-04-00_security-guide": (RunStatus.SUCCEEDED, 1.0, 3, {"passed": 3}),
    "log_images": (RunStatus.SUCCEEDED, 0.0, 1, {"failed": 1}),
    "log_tool_call_error": (RunStatus.SUCCEEDED, 1.0, 1, {"skipped": 1}),
}  # fmt: skip

pytestmark = pytest.mark.skipif(
    not ROOT.is_dir(), reason=f"the shared inspect_ai corpus is not at {ROOT}"
)


def parse(path: Path) -> RunRecord:
    [record] = inspect_ai.parse(path, path.read_bytes())
    assert isinstance(record, RunRecord)
    return record


def source_header(path: Path) -> dict[str, Any]:
    """The log's own header, read with the stdlib alone (JSON logs and deflate .eval)."""
    if path.suffix == ".json":
        return dict(json.loads(path.read_bytes()))
    return dict(json.loads(zipfile.ZipFile(path).read("header.json")))


def slim(doc: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    for sample in doc.get("samples") or []:
        for key in TRANSCRIPT:
            sample.pop(key, None)
    return doc


@pytest.fixture(scope="module")
def records() -> dict[Path, RunRecord]:
    return {path: parse(path) for path in FILES}


class TestWhatIsClaimed:
    def test_every_log_is_claimed_and_the_notes_are_not(self) -> None:
        assert len(FILES) == 24
        assert all(inspect_ai.detect(p, p.read_bytes()[:4096]) for p in FILES)
        notes = [ROOT / "FORMAT.md", ROOT / "SOURCES.tsv"]
        assert not any(inspect_ai.detect(p, p.read_bytes()[:4096]) for p in notes)

    def test_the_same_run_in_both_formats_is_one_identical_record(
        self, records: dict[Path, RunRecord]
    ) -> None:
        as_json = records[ROOT / "json" / "log_formats.json"]
        as_eval = records[ROOT / "eval" / "log_formats.eval"]
        assert as_json.header.run_key == as_eval.header.run_key
        assert as_json.content_sha256() == as_eval.content_sha256()
        keys = Counter(r.header.run_key for r in records.values())
        assert len(keys) == 23 and keys.most_common(1)[0][1] == 2

    def test_the_benchmark_is_each_logs_own_task_name(self, records: dict[Path, RunRecord]) -> None:
        readable = [p for p in FILES if p.suffix == ".json" or p in DEFLATE_FILES]
        for path in readable:
            spec = source_header(path)["eval"]
            header = records[path].header
            assert header.benchmark == spec["task"], path
            assert header.provenance.get("task_registry_name") == spec.get("task_registry_name")
        # mmlu is reached through the inspect_evals registry; its display name is shorter.
        mmlu = records[ROOT / "eval" / "mmlu-summary-choices.eval"].header
        assert (mmlu.benchmark, mmlu.provenance["task_display_name"]) == (
            "inspect_evals/mmlu_0_shot",
            "mmlu_0_shot",
        )


class TestAgainstTheLogsOwnTotals:
    def test_status_score_and_cells_are_what_each_log_states(
        self, records: dict[Path, RunRecord]
    ) -> None:
        for path, record in records.items():
            status, score, count, outcomes = EXPECTED[path.stem]
            header = record.header
            assert (header.status, header.score, len(record.cells)) == (status, score, count), path
            assert Counter(c.outcome for c in record.cells) == outcomes, path

    def test_published_accuracy_completed_samples_and_tokens_match_the_source(
        self, records: dict[Path, RunRecord]
    ) -> None:
        for path in JSON_FILES + DEFLATE_FILES:
            source, record = source_header(path), records[path]
            results, usage = source.get("results") or {}, source["stats"]["model_usage"]
            scores = results.get("scores") or []
            published = scores[0]["metrics"]["accuracy"]["value"] if scores else None
            assert record.header.score == published, path
            assert record.header.unit == ("accuracy" if scores else None), path
            assert record.header.metrics.get("completed_samples") == results["completed_samples"]
            for ledger, field in (
                ("input_tokens", "input_tokens"),
                ("total_tokens", "total_tokens"),
            ):
                total = sum(u[field] for u in usage.values())
                assert record.header.tokens.get(ledger, 0) == total, path
            assert record.header.run_key == source["eval"].get("eval_id", record.header.run_key)

    def test_the_cells_reproduce_every_published_accuracy(
        self, records: dict[Path, RunRecord]
    ) -> None:
        checked = 0
        for path, record in records.items():
            scores = [c.score for c in record.cells if c.score is not None]
            if record.header.score is None or len(scores) != len(record.cells):
                continue
            assert sum(scores) / len(scores) == pytest.approx(record.header.score), path
            assert "recomputed_score" not in record.header.provenance, path
            checked += 1
        assert checked == 20

    def test_a_log_that_holds_fewer_samples_than_it_counts_says_so(
        self, records: dict[Path, RunRecord]
    ) -> None:
        header = records[ROOT / "json" / "log_tool_call_error.json"].header
        assert header.metrics["completed_samples"] == 4
        assert "the log holds 1 samples of the 4" in header.provenance["quirks"][0]

    def test_the_log_without_samples_takes_its_cells_from_reductions(
        self, records: dict[Path, RunRecord]
    ) -> None:
        record = records[ROOT / "json" / "2025-05-12T20-28-13-04-00_no-samples.json"]
        assert record.header.provenance["cells_from"] == "reductions"
        assert [c.key for c in record.cells] == ["1", "2", "3"]

    def test_the_eval_set_is_three_models_on_one_task_with_five_epochs(
        self, records: dict[Path, RunRecord]
    ) -> None:
        members = [
            r for r in records.values() if r.header.provenance.get("eval_set_id") == EVAL_SET
        ]
        assert sorted((r.header.provider, r.header.model) for r in members) == [
            ("anthropic", "claude-sonnet-4-20250514"),
            ("google", "gemini-2.5-pro"),
            ("openai", "gpt-5"),
        ]
        setups = {(r.header.benchmark, r.header.agent, str(r.header.config)) for r in members}
        assert len(setups) == 1 and all(r.header.config["epochs"] == 5 for r in members)
        assert all(r.cells[0].key == "1:epoch1" for r in members)

    def test_zstd_compressed_logs_are_read(self, records: dict[Path, RunRecord]) -> None:
        for name in ZSTD_FILES:
            path = ROOT / "eval" / name
            assert {i.compress_type for i in zipfile.ZipFile(path).infolist()} == {93}
            header = records[path].header
            assert header.provider == "mockllm" and header.provenance["revision"]["dirty"]

    def test_times_are_utc(self, records: dict[Path, RunRecord]) -> None:
        header = records[ROOT / "eval" / "log_read_sample.eval"].header
        assert header.started_at is not None and header.started_at.isoformat() == (
            "2025-07-05T13:59:48+00:00"
        )


class TestBrokenCopiesOfRealFiles:
    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
    def test_truncated_copies_are_refused_naming_the_file(self, path: Path) -> None:
        data = path.read_bytes()
        for cut in (len(data) // 3, len(data) - 40):
            with pytest.raises(InputFormatError) as e:
                list(inspect_ai.parse(path, data[:cut]))
            assert e.value.path == str(path)

    @pytest.mark.parametrize("name", ["log_read_sample.eval", *ZSTD_FILES])
    def test_a_damaged_entry_is_refused_naming_the_entry(self, name: str) -> None:
        path = ROOT / "eval" / name
        data = bytearray(path.read_bytes())
        info = zipfile.ZipFile(path).getinfo("header.json")
        start = info.header_offset + 30 + len(info.filename)
        data[start + info.compress_size // 2] ^= 0x55
        with pytest.raises(InputFormatError) as e:
            list(inspect_ai.parse(path, bytes(data)))
        assert (e.value.path, e.value.field) == (str(path), "header.json")

    def test_a_real_header_with_a_required_key_missing_names_the_field(self) -> None:
        path = ROOT / "json" / "log_read_sample.json"
        doc = json.loads(path.read_bytes())
        del doc["eval"]["task"]
        with pytest.raises(InputFormatError) as e:
            list(inspect_ai.parse(path, json.dumps(doc).encode()))
        assert e.value.field == "eval.task"

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(data=st.data(), path=st.sampled_from(JSON_FILES))
    def test_real_json_logs_with_keys_dropped_or_retyped_parse_or_are_refused(
        self, data: st.DataObject, path: Path
    ) -> None:
        doc = data.draw(mutated(slim(json.loads(path.read_bytes()))))
        parses_or_refuses(path.name, json.dumps(doc).encode())

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(data=st.data(), path=st.sampled_from(DEFLATE_FILES))
    def test_real_archives_with_a_mutated_header_parse_or_are_refused(
        self, data: st.DataObject, path: Path
    ) -> None:
        header = data.draw(mutated(source_header(path)))
        source, out = zipfile.ZipFile(path), io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as rebuilt:
            for info in source.infolist():
                body = json.dumps(header).encode() if info.filename == "header.json" else None
                rebuilt.writestr(info.filename, body or source.read(info))
        parses_or_refuses(path.name, out.getvalue())


class TestImportingTheCorpus:
    def test_every_log_imports_once_and_a_reimport_changes_nothing(self, invoke: Invoke) -> None:
        reports = json.loads(invoke("import", str(ROOT), "--json").stdout)
        states = {Path(r["path"]).name: r["state"] for r in reports}
        assert states.pop("FORMAT.md") == states.pop("SOURCES.tsv") == "ignored"
        # log_formats.eval comes first; its .json twin states the same run: nothing new.
        assert states.pop("log_formats.json") == "unchanged"
        assert set(states.values()) == {"imported"} and len(states) == 23
        assert {r["format"] for r in reports if r["state"] != "ignored"} == {"inspect_ai"}
        again = json.loads(invoke("import", str(ROOT), "--json").stdout)
        assert {r["state"] for r in again} == {"unchanged", "ignored"}
        runs = json.loads(invoke("runs", "--json").stdout)
        assert len(runs) == 23
        assert sum(r["cells"] for r in runs) == CELLS

    def test_json_then_eval_of_the_same_run_is_one_run_without_conflict(
        self, invoke: Invoke
    ) -> None:
        invoke("import", str(ROOT / "json" / "log_formats.json"))
        result = invoke("import", str(ROOT / "eval" / "log_formats.eval"), "--json")
        assert [r["state"] for r in json.loads(result.stdout)] == ["unchanged"]
        [run] = json.loads(invoke("runs", "--json").stdout)
        assert (run["benchmark"], run["model"], run["status"]) == (
            "popularity",
            "llama3.1",
            "succeeded",
        )
