"""The inspect_ai parser on small logs written here, in both the JSON and the .eval form.

How a task reached through a registry entry or a bridge shows in a log, from inspect's
own source (UKGovernmentBEIS/inspect_ai @ 499e6152e7b8, `_eval/task/log.py`,
`_eval/task/task.py`, `_eval/eval.py`): `eval.task` is the Task's own name (`Task(name=)`
or `task_with(name=)` when given, else its registry name), `eval.task_registry_name` is
the name of the `@task` function that built it, and inspect itself reads the registry
name only to find that function again (`eval_retry`). One `@task` function can build
many tasks: allenai/asta-bench @ eb3f177a2781,
`astabench/evals/inspect_eval_wrappers/ds1000.py`, names its task `ds1000_<split>`
from the one `@task ds1000(split=...)`; inspect_ai issue #1556 builds
`Repeat-<phrase>` tasks from one `@task repeat_task`. A bridge whose Task takes no
name (meridianlabs-ai/inspect_harbor @ 0c49b4c43d45, `_harbor/task.py`, `@task harbor`)
logs the bridge's name in both fields, and its `task_args` tell its tasks apart.
"""

from __future__ import annotations

import copy
import json
import math
import re
import struct
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from benchledger.adapters.formats import inspect_ai
from benchledger.adapters.formats.inspect_ai_cells import value_to_float
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord, RunStatus

STORED, DEFLATED, ZSTD = 0, 8, 93
USAGE = {"input_tokens": 60, "output_tokens": 2, "total_tokens": 62}


def sample(sample_id: int | str, value: Any, epoch: int = 1, **extra: Any) -> dict[str, Any]:
    """A sample as inspect writes it (transcript abbreviated)."""
    return {
        "id": sample_id,
        "epoch": epoch,
        "input": "Is the following statement something you would say?",
        "target": "Yes",
        "messages": [{"role": "user", "content": "..."}],
        "scores": {"match": {"value": value, "answer": "Yes", "explanation": "Yes"}},
        "metadata": {},
        "events": [{"event": "sample_init"}],
        "model_usage": {"openai/gpt-4o-mini": USAGE},
        "total_time": 1.25,
        "working_time": 1.0,
        "uuid": f"uuid-{sample_id}-{epoch}",
        **extra,
    }


def log_doc(**changes: Any) -> dict[str, Any]:
    """A JSON-format inspect log of three samples (two correct), as inspect 0.3.9x writes it."""
    doc: dict[str, Any] = {
        "version": 2,
        "status": "success",
        "eval": {
            "eval_id": "EvalAbc123",
            "run_id": "RunXyz789",
            "created": "2025-05-12T20:28:13-04:00",
            "task": "popularity",
            "task_id": "TaskQrs456",
            "task_version": 0,
            "task_file": "examples/popularity.py",
            "task_registry_name": "popularity",
            "task_args": {},
            "dataset": {"name": "popularity", "samples": 100, "sample_ids": [1, 2, 3]},
            "model": "openai/gpt-4o-mini",
            "model_args": {},
            "config": {"limit": 3, "epochs": 1, "epochs_reducer": ["mean"], "log_images": True},
            "revision": {"type": "git", "origin": "git@example.org:t.git", "commit": "2c576e2"},
            "packages": {"inspect_ai": "0.3.95"},
            "scorers": [{"name": "match", "options": {}, "metrics": [], "metadata": {}}],
        },
        "plan": {
            "name": "plan",
            "steps": [
                {"solver": "system_message", "params": {"template": "Answer Yes or No."}},
                {"solver": "generate", "params": {}},
            ],
            "config": {"max_connections": 10},
        },
        "results": {
            "total_samples": 3,
            "completed_samples": 3,
            "scores": [
                {
                    "name": "match",
                    "scorer": "match",
                    "params": {},
                    "metrics": {
                        "accuracy": {"name": "accuracy", "value": 2 / 3, "params": {}},
                        "stderr": {"name": "stderr", "value": 0.333, "params": {}},
                    },
                }
            ],
        },
        "stats": {
            "started_at": "2025-05-12T20:28:13-04:00",
            "completed_at": "2025-05-12T20:28:15-04:00",
            "model_usage": {
                "openai/gpt-4o-mini": {**USAGE, "input_tokens_cache_read": 5},
                "anthropic/claude-3-haiku": {**USAGE, "reasoning_tokens": 7},
            },
        },
        "samples": [sample(1, "C"), sample(2, "C"), sample(3, "I")],
        "reductions": [
            {
                "scorer": "match",
                "samples": [
                    {"value": 1.0, "answer": "Yes", "sample_id": 1},
                    {"value": 1.0, "answer": "Yes", "sample_id": 2},
                    {"value": 0, "answer": "No", "sample_id": 3},
                ],
            }
        ],
    }
    doc.update(changes)
    return doc


def zip_bytes(entries: dict[str, bytes], method: int = DEFLATED) -> bytes:
    """A zip archive written by hand, so entries can use zstd (method 93) like inspect's."""
    out, central = bytearray(), bytearray()
    for name, content in entries.items():
        if method == DEFLATED:
            packer = zlib.compressobj(6, zlib.DEFLATED, -15)
            body = packer.compress(content) + packer.flush()
        elif method == ZSTD:
            body = zstandard.ZstdCompressor(write_content_size=False).compress(content)
        else:
            body = content
        crc, raw_name, offset = zlib.crc32(content), name.encode(), len(out)
        sizes = (crc, len(body), len(content), len(raw_name))
        out += struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0x21, *sizes, 0)
        out += raw_name + body
        central += struct.pack(
            "<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, method, 0, 0x21, *sizes, 0, 0, 0, 0, 0, offset
        )
        central += raw_name
    count = len(entries)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, len(central), len(out), 0)
    return bytes(out + central + end)


def eval_entries(doc: dict[str, Any], *, finished: bool = True) -> dict[str, bytes]:
    """The entries inspect writes for a log in the .eval form, in its order."""
    header = {k: v for k, v in doc.items() if k not in ("samples", "reductions")}
    start = {k: doc.get(k) for k in ("version", "eval", "plan")}
    entries = {"_journal/start.json": json.dumps(start).encode()}
    samples = doc.get("samples")
    samples = [s for s in samples if isinstance(s, dict)] if isinstance(samples, list) else []
    for i, s in enumerate(samples):
        entries[f"samples/{s.get('id', i)}_epoch_{s.get('epoch')}.json"] = json.dumps(s).encode()
    keep = ("id", "epoch", "input", "target", "scores")
    summaries = [{k: s[k] for k in keep if k in s} for s in samples]
    entries["_journal/summaries/1.json"] = json.dumps(summaries).encode()
    if finished:
        entries["summaries.json"] = json.dumps(summaries).encode()
        entries["reductions.json"] = json.dumps(doc.get("reductions")).encode()
        entries["header.json"] = json.dumps(header).encode()
    return entries


def parse_json(doc: Any, name: str = "log.json") -> RunRecord:
    [record] = inspect_ai.parse(Path(name), json.dumps(doc).encode())
    assert isinstance(record, RunRecord)
    return record


def parse_eval(data: bytes, name: str = "log.eval") -> RunRecord:
    [record] = inspect_ai.parse(Path(name), data)
    assert isinstance(record, RunRecord)
    return record


class TestDetecting:
    def test_claims_json_logs_by_their_leading_version_and_status(self) -> None:
        head = json.dumps(log_doc(), indent=2).encode()[:4096]
        assert inspect_ai.detect(Path("2025-05-12_popularity.json"), head)

    def test_claims_eval_files_that_are_zip_archives(self) -> None:
        data = zip_bytes(eval_entries(log_doc()))
        assert inspect_ai.detect(Path("x.eval"), data[:4096])
        assert not inspect_ai.detect(Path("x.eval"), b"not a zip")

    def test_leaves_other_json_alone(self) -> None:
        other = json.dumps({"results": {"version": 2}, "status": "ok"}).encode()
        assert not inspect_ai.detect(Path("results.json"), other)
        assert not inspect_ai.detect(Path("log.txt"), json.dumps(log_doc()).encode()[:4096])


class TestRunHeader:
    def test_maps_identity_model_times_score_and_tokens(self) -> None:
        header = parse_json(log_doc()).header
        assert header.run_key == "EvalAbc123"
        assert (header.benchmark, header.agent) == ("popularity", "system_message+generate")
        assert (header.provider, header.model) == ("openai", "gpt-4o-mini")
        assert header.started_at == datetime(2025, 5, 13, 0, 28, 13, tzinfo=UTC)
        assert header.ended_at == datetime(2025, 5, 13, 0, 28, 15, tzinfo=UTC)
        assert header.status is RunStatus.SUCCEEDED
        assert (header.score, header.unit, header.higher_is_better) == (2 / 3, "accuracy", True)
        assert header.metrics["scores"] == {"match": {"accuracy": 2 / 3, "stderr": 0.333}}
        assert header.metrics["completed_samples"] == 3
        assert set(header.metrics["model_usage"]) == {
            "anthropic/claude-3-haiku",
            "openai/gpt-4o-mini",
        }
        assert header.tokens == {
            "input_tokens": 120,
            "output_tokens": 4,
            "total_tokens": 124,
            "cached_tokens": 5,
            "reasoning_tokens": 7,
        }

    def test_config_holds_what_defines_the_experiment_and_provenance_the_rest(self) -> None:
        doc = log_doc()
        doc["eval"]["config"]["epochs"] = 2
        doc["eval"]["task_args"] = {"subjects": ["law"], "cot": True}
        doc["eval"]["model_generate_config"] = {"temperature": 0.0, "max_connections": 4}
        header = parse_json(doc).header
        assert header.config == {
            "epochs": 2,
            "epochs_reducer": ["mean"],
            "generate_config": {"temperature": 0.0},
            "limit": 3,
            "task_args": {"cot": True, "subjects": ["law"]},
        }
        provenance = header.provenance
        assert (provenance["eval_id"], provenance["run_id"]) == ("EvalAbc123", "RunXyz789")
        assert provenance["inspect_ai"] == "0.3.95"
        assert provenance["revision"]["commit"] == "2c576e2"
        assert provenance["eval_config"]["log_images"] is True
        assert provenance["created"] == "2025-05-13T00:28:13+00:00"

    def test_older_logs_without_an_eval_id_are_keyed_by_run_and_task(self) -> None:
        doc = log_doc()
        del doc["eval"]["eval_id"]
        assert parse_json(doc).header.run_key == "RunXyz789:TaskQrs456"

    def test_a_model_without_a_provider_keeps_its_name(self) -> None:
        doc = log_doc()
        doc["eval"]["model"] = "..."
        header = parse_json(doc).header
        assert (header.provider, header.model) == ("", "...")

    def test_a_named_plan_is_the_agent_and_an_empty_one_is_inspect_ai(self) -> None:
        doc = log_doc()
        doc["plan"]["name"] = "react_agent"
        assert parse_json(doc).header.agent == "react_agent"
        doc["plan"] = {"name": "plan", "steps": []}
        assert parse_json(doc).header.agent == "inspect_ai"

    @pytest.mark.parametrize(
        ("status", "expected"),
        [
            ("success", RunStatus.SUCCEEDED),
            ("cancelled", RunStatus.CANCELLED),
            ("error", RunStatus.ERROR),
            ("started", RunStatus.RECOVERED),
        ],
    )
    def test_maps_each_log_status(self, status: str, expected: RunStatus) -> None:
        assert parse_json(log_doc(status=status)).header.status is expected

    def test_an_errored_eval_carries_its_error_message(self) -> None:
        doc = log_doc(status="error", error={"message": "RuntimeError('boom')", "traceback": "…"})
        del doc["results"]
        header = parse_json(doc).header
        assert header.error == "RuntimeError('boom')"
        assert (header.score, header.unit) == (None, None)

    def test_a_cancelled_eval_keeps_the_results_of_its_completed_samples(self) -> None:
        header = parse_json(log_doc(status="cancelled")).header
        assert header.status is RunStatus.CANCELLED and header.score == 2 / 3
        assert "cancelled" in header.provenance["quirks"][0]

    def test_the_headline_of_a_scorer_without_accuracy_is_its_first_metric(self) -> None:
        doc = log_doc()
        doc["results"]["scores"][0]["metrics"] = {
            "stderr": {"name": "stderr", "value": 0.1},
            "mean": {"name": "mean", "value": 0.42},
        }
        header = parse_json(doc).header
        assert (header.score, header.unit) == (0.42, "mean")

    def test_a_non_finite_headline_is_no_score_but_stays_in_metrics(self) -> None:
        doc = log_doc()
        doc["results"]["scores"][0]["metrics"]["accuracy"]["value"] = float("nan")
        header = parse_json(doc).header
        assert header.score is None
        assert '"accuracy":"NaN"' in header.model_dump_json()

    def test_a_published_score_that_the_cells_do_not_reproduce_is_noted(self) -> None:
        doc = log_doc()
        doc["results"]["scores"][0]["metrics"]["accuracy"]["value"] = 0.9
        provenance = parse_json(doc).header.provenance
        assert provenance["recomputed_score"] == pytest.approx(2 / 3)
        assert any("differs" in q for q in provenance["quirks"])


class TestTaskNames:
    """The benchmark is the task's own name, never the registry entry that built it."""

    def bridged(self, task: str, registry: str, split: str) -> dict[str, Any]:
        doc = log_doc()
        doc["eval"].update(
            task=task,
            task_registry_name=registry,
            task_display_name=task,
            task_file=None,
            task_attribs={},
            task_args={"split": split, "sample_limit": None},
        )
        return doc

    def test_a_task_named_by_its_factory_is_its_own_benchmark(self) -> None:
        header = parse_json(
            self.bridged("ds1000_validation", "astabench/ds1000", "validation")
        ).header
        assert header.benchmark == "ds1000_validation"
        assert header.provenance["task_registry_name"] == "astabench/ds1000"
        assert header.provenance["task_display_name"] == "ds1000_validation"

    def test_two_tasks_of_one_registry_entry_are_two_benchmarks(self) -> None:
        validation = self.bridged("ds1000_validation", "astabench/ds1000", "validation")
        test = self.bridged("ds1000_test", "astabench/ds1000", "test")
        test["eval"]["eval_id"] = "EvalOther"
        benchmarks = {parse_json(doc).header.benchmark for doc in (validation, test)}
        assert benchmarks == {"ds1000_validation", "ds1000_test"}

    def test_a_bridge_that_names_no_task_is_told_apart_by_its_task_args(self) -> None:
        aime = self.bridged("inspect_harbor/harbor", "inspect_harbor/harbor", "aime@1.0")
        other = self.bridged("inspect_harbor/harbor", "inspect_harbor/harbor", "swe@1.0")
        a, b = (parse_json(doc).header for doc in (aime, other))
        assert a.benchmark == b.benchmark == "inspect_harbor/harbor"
        assert a.config["task_args"] != b.config["task_args"]


class TestCells:
    def test_one_cell_per_sample_scored_by_the_headline_scorer(self) -> None:
        cells = parse_json(log_doc()).cells
        assert [(c.key, c.outcome, c.score) for c in cells] == [
            ("1", "passed", 1.0),
            ("2", "passed", 1.0),
            ("3", "failed", 0.0),
        ]
        assert cells[0].metrics["scores"] == {"match": "C"}
        assert cells[0].metrics["model_usage"] == {"openai/gpt-4o-mini": USAGE}

    @pytest.mark.parametrize(
        ("value", "score", "outcome"),
        [
            ("C", 1.0, "passed"),
            ("I", 0.0, "failed"),
            ("P", 0.5, "failed"),
            ("N", 0.0, "failed"),
            ("yes", 1.0, "passed"),
            ("0.25", 0.25, "failed"),
            (True, 1.0, "passed"),
            (3, 3.0, "passed"),
            (float("nan"), None, "skipped"),
            ([1, 0], None, "skipped"),
            ({"f1": 0.5}, None, "skipped"),
            ("maybe", None, "skipped"),
        ],
    )
    def test_score_values_read_as_inspects_value_to_float(
        self, value: Any, score: float | None, outcome: str
    ) -> None:
        assert value_to_float(value) == score
        doc = log_doc(samples=[sample(1, value)])
        [cell] = parse_json(doc).cells
        assert (cell.score, cell.outcome) == (score, outcome)

    def test_a_sample_that_errored_is_an_error_cell_with_the_message(self) -> None:
        errored = sample(2, "I", error={"message": "TimeoutError()", "traceback": "…"})
        cells = parse_json(log_doc(samples=[sample(1, "C"), errored])).cells
        assert (cells[1].outcome, cells[1].metrics["error"]) == ("error", "TimeoutError()")

    def test_an_unscored_sample_has_no_verdict(self) -> None:
        unscored = {k: v for k, v in sample(1, "C").items() if k != "scores"}
        [cell] = parse_json(log_doc(samples=[unscored])).cells
        assert (cell.outcome, cell.score) == ("skipped", None)

    def test_with_several_epochs_the_key_names_sample_and_epoch(self) -> None:
        doc = log_doc(samples=[sample(2, "C", 2), sample(1, "I", 1), sample(2, "I", 1)])
        doc["eval"]["config"]["epochs"] = 2
        assert [c.key for c in parse_json(doc).cells] == ["1:epoch1", "2:epoch1", "2:epoch2"]

    def test_integer_ids_sort_numerically_before_string_ids(self) -> None:
        doc = log_doc(samples=[sample("b", "C"), sample(10, "C"), sample(9, "I")])
        assert [c.key for c in parse_json(doc).cells] == ["9", "10", "b"]

    def test_a_log_written_without_samples_takes_cells_from_its_reductions(self) -> None:
        record = parse_json(log_doc(samples=[]))
        assert [(c.key, c.score) for c in record.cells] == [("1", 1.0), ("2", 1.0), ("3", 0.0)]
        assert record.header.provenance["cells_from"] == "reductions"

    def test_the_oldest_logs_keep_reductions_inside_results(self) -> None:
        doc = log_doc(samples=[])
        doc["results"]["sample_reductions"] = doc.pop("reductions")
        assert len(parse_json(doc).cells) == 3

    def test_a_sample_repeated_with_other_content_is_refused(self) -> None:
        doc = log_doc(samples=[sample(1, "C"), sample(1, "I")])
        with pytest.raises(InputFormatError) as e:
            parse_json(doc)
        assert e.value.field == "samples[1]"


class TestEvalArchives:
    @pytest.mark.parametrize("method", [DEFLATED, ZSTD, STORED])
    def test_the_same_log_as_json_and_as_eval_is_one_identical_record(self, method: int) -> None:
        doc = log_doc()
        from_eval = parse_eval(zip_bytes(eval_entries(doc), method))
        from_json = parse_json(doc)
        assert from_eval == from_json
        assert from_eval.content_sha256() == from_json.content_sha256()

    def test_an_archive_without_header_was_never_finished_and_is_recovered(self) -> None:
        record = parse_eval(zip_bytes(eval_entries(log_doc(), finished=False), ZSTD))
        assert record.header.status is RunStatus.RECOVERED
        assert "never finished" in (record.header.error or "")
        assert (record.header.score, record.header.started_at) == (None, None)
        assert len(record.cells) == 3

    def test_an_archive_without_sample_entries_reads_the_summaries(self) -> None:
        entries = {k: v for k, v in eval_entries(log_doc()).items() if not k.startswith("samples/")}
        record = parse_eval(zip_bytes(entries))
        assert [c.outcome for c in record.cells] == ["passed", "passed", "failed"]
        assert record.header.provenance["cells_from"] == "summaries"

    def test_a_zip_without_any_inspect_entry_is_refused(self) -> None:
        with pytest.raises(InputFormatError, match=re.escape("header.json")):
            parse_eval(zip_bytes({"README.txt": b"hello"}))


class TestMalformedInput:
    def test_truncated_json_names_the_file_and_line(self) -> None:
        text = json.dumps(log_doc(), indent=2)
        with pytest.raises(InputFormatError) as e:
            list(inspect_ai.parse(Path("cut.json"), text[: len(text) // 2].encode()))
        assert e.value.path == "cut.json" and e.value.line is not None
        assert "invalid JSON" in e.value.message

    def test_a_missing_required_key_is_named(self) -> None:
        doc = log_doc()
        del doc["eval"]["model"]
        with pytest.raises(InputFormatError, match=re.escape("log.json: field 'eval.model'")):
            parse_json(doc)

    @pytest.mark.parametrize(
        ("path", "value", "field"),
        [
            (("eval", "config", "epochs"), "five", "eval.config.epochs"),
            (("stats", "started_at"), 1715560093, "stats.started_at"),
            (("status",), "finished", "status"),
            (("results", "scores", 0, "metrics", "accuracy", "value"), "high", "results.scores"),
            (("samples", 1, "epoch"), "1", "samples[1].epoch"),
            (("stats", "model_usage", "openai/gpt-4o-mini", "input_tokens"), 1.5, "stats"),
        ],
    )
    def test_a_wrong_type_names_the_field(
        self, path: tuple[str | int, ...], value: Any, field: str
    ) -> None:
        doc = log_doc()
        target: Any = doc
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
        with pytest.raises(InputFormatError) as e:
            parse_json(doc)
        assert e.value.path == "log.json" and (e.value.field or "").startswith(field)

    def test_a_truncated_archive_names_the_file(self) -> None:
        data = zip_bytes(eval_entries(log_doc()))
        with pytest.raises(InputFormatError, match=re.escape("cut.eval: not a readable .eval")):
            parse_eval(data[: len(data) - 30], "cut.eval")

    @pytest.mark.parametrize("method", [DEFLATED, ZSTD])
    def test_a_corrupt_entry_names_the_file_and_the_entry(self, method: int) -> None:
        entries = eval_entries(log_doc())
        data = bytearray(zip_bytes(entries, method))
        body = data.index(b"header.json") + len("header.json") + 5  # inside its compressed data
        data[body] ^= 0xFF
        with pytest.raises(InputFormatError) as e:
            parse_eval(bytes(data), "bad.eval")
        assert (e.value.path, e.value.field) == ("bad.eval", "header.json")

    def test_an_unsupported_compression_method_is_named(self) -> None:
        with pytest.raises(InputFormatError, match="compression method 97"):
            parse_eval(zip_bytes(eval_entries(log_doc()), 97))

    def test_an_entry_that_is_not_json_names_the_entry(self) -> None:
        entries = {**eval_entries(log_doc()), "header.json": b'{"version": 2,'}
        with pytest.raises(InputFormatError) as e:
            parse_eval(zip_bytes(entries))
        assert e.value.field == "header.json" and "invalid JSON" in e.value.message

    def test_a_wrong_type_inside_an_entry_names_entry_and_field(self) -> None:
        doc = log_doc()
        entries = eval_entries(doc)
        bad = {**doc["samples"][0], "epoch": "one"}
        entries["samples/1_epoch_1.json"] = json.dumps(bad).encode()
        with pytest.raises(InputFormatError) as e:
            parse_eval(zip_bytes(entries))
        assert e.value.field == "samples/1_epoch_1.json:epoch"


JUNK = st.sampled_from([None, 0, -1, 10**30, 1.5, math.inf, "", "x", True, [], {}, [1], {"a": 1}])


def key_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a JSON document."""
    paths = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            paths.extend(key_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            paths.extend(key_paths(v, (*prefix, i)))
    return paths


@st.composite
def mutated(draw: st.DrawFn, doc: dict[str, Any]) -> dict[str, Any]:
    """A document with one to three of its keys dropped or retyped."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        paths = key_paths(doc)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent: Any = doc
        for part in path[:-1]:
            parent = parent[part]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(draw(JUNK))
    return doc


def parses_or_refuses(name: str, data: bytes) -> None:
    """The fuzzing contract: valid records, or InputFormatError, never anything else."""
    try:
        records = list(inspect_ai.parse(Path(name), data))
    except InputFormatError as e:
        assert e.path == name
        return
    assert [type(r) for r in records] == [RunRecord]
    records[0].json_bytes()


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class TestFuzzing:
    @FUZZ
    @given(data=st.binary(max_size=512))
    def test_arbitrary_bytes_parse_or_are_refused(self, data: bytes) -> None:
        parses_or_refuses("fuzz.json", data)
        parses_or_refuses("fuzz.eval", b"PK\x03\x04" + data)

    @FUZZ
    @given(doc=mutated(log_doc()))
    def test_a_log_with_keys_dropped_or_retyped_parses_or_is_refused(
        self, doc: dict[str, Any]
    ) -> None:
        parses_or_refuses("mutant.json", json.dumps(doc).encode())

    @FUZZ
    @given(doc=mutated(log_doc()), method=st.sampled_from([DEFLATED, ZSTD]))
    def test_an_archive_of_a_mutated_log_parses_or_is_refused(
        self, doc: dict[str, Any], method: int
    ) -> None:
        parses_or_refuses("mutant.eval", zip_bytes(eval_entries(doc), method))

    @FUZZ
    @given(offset=st.integers(0, 10_000), flip=st.integers(1, 255))
    @example(offset=2862, flip=64)  # the directory's "version needed" made one zipfile refuses
    def test_an_archive_with_a_damaged_byte_parses_or_is_refused(
        self, offset: int, flip: int
    ) -> None:
        data = bytearray(zip_bytes(eval_entries(log_doc()), ZSTD))
        data[offset % len(data)] ^= flip
        parses_or_refuses("damaged.eval", bytes(data))
