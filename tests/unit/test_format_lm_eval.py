from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.adapters import formats
from benchledger.adapters.formats import lm_eval
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord, RunStatus, SkipRecord

STAMP = "2025-03-03T00-05-12.300060"
DATE = 1740959572.2608943  # 2025-03-02T23:52:52.260894Z


def results_doc(**extra: Any) -> dict[str, Any]:
    """A small 0.4.x-style results file: two tasks of a group, and a gsm8k task."""
    doc: dict[str, Any] = {
        "results": {
            "suite": {"acc,none": 0.55, "acc_stderr,none": 0.02, "alias": "suite"},
            "suite_a": {
                "alias": " - suite_a",
                "acc,none": 0.5,
                "acc_stderr,none": 0.03,
                "acc_norm,none": 0.7,
                "acc_norm_stderr,none": "N/A",
            },
            "suite_b": {"alias": " - suite_b", "acc,none": 0.6, "acc_stderr,none": 0.04},
            "gsm8k": {
                "alias": "gsm8k",
                "exact_match,strict-match": 0.25,
                "exact_match_stderr,strict-match": 0.01,
                "exact_match,flexible-extract": 0.5,
                "exact_match_stderr,flexible-extract": 0.01,
            },
        },
        "groups": {"suite": {"acc,none": 0.55, "acc_stderr,none": 0.02, "alias": "suite"}},
        "group_subtasks": {"suite": ["suite_a", "suite_b"], "gsm8k": []},
        "configs": {
            "gsm8k": {
                "task": "gsm8k",
                "dataset_path": "gsm8k",
                "output_type": "generate_until",
                "metric_list": [{"metric": "exact_match", "aggregation": "mean"}],
            }
        },
        "versions": {"suite_a": 1.0, "suite_b": 1.0, "gsm8k": 3.0},
        "n-shot": {"suite": 0, "suite_a": 0, "suite_b": 0, "gsm8k": 5},
        "higher_is_better": {"gsm8k": {"exact_match": True}},
        "n-samples": {"gsm8k": {"original": 1319, "effective": 4}},
        "config": {
            "model": "hf",
            "model_args": "pretrained=Qwen/Qwen2.5-1.5B,trust_remote_code=True,max_length=4096",
            "batch_size": "8",
            "limit": None,
            "gen_kwargs": None,
            "random_seed": 0,
        },
        "git_hash": "82b812f",
        "date": DATE,
        "model_source": "hf",
        "model_name": "Qwen/Qwen2.5-1.5B",
        "model_name_sanitized": "Qwen__Qwen2.5-1.5B",
        "start_time": 8402299.774089962,
        "end_time": 8403051.572065903,
        "total_evaluation_time_seconds": "751.7979759406298",
    }
    doc.update(extra)
    return doc


def old_doc() -> dict[str, Any]:
    """A v0.3-era file: unfiltered metric keys, one run-wide few-shot, no date or hash."""
    return {
        "results": {
            "lambada_openai": {"ppl": 26.0, "ppl_stderr": 0.9, "acc": 0.38, "acc_stderr": 0.006},
            "wikitext": {"word_perplexity": 37.4, "byte_perplexity": 1.6},
        },
        "versions": {"lambada_openai": 0, "wikitext": 1},
        "config": {
            "model": "hf-causal-experimental",
            "model_args": "pretrained=bigscience/bloom-1b1,use_accelerate=True",
            "num_fewshot": 0,
            "batch_size": "auto",
            "limit": None,
        },
    }


def dump(doc: Any) -> bytes:
    return json.dumps(doc, indent=2).encode()  # bare NaN / Infinity, as lm-eval writes them


def parse_bytes(path: Path, data: bytes) -> list[RunRecord]:
    records = list(lm_eval.parse(path, data))
    assert all(isinstance(r, RunRecord) for r in records)
    return [r for r in records if isinstance(r, RunRecord)]


def parse_doc(doc: Any, path: Path = Path("results.json")) -> list[RunRecord]:
    return parse_bytes(path, dump(doc))


def parse_path(path: Path) -> list[RunRecord]:
    return parse_bytes(path, path.read_bytes())


def by_task(records: list[RunRecord]) -> dict[str, RunRecord]:
    return {r.header.benchmark: r for r in records}


def write_sample_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def sample(doc_id: int, **values: Any) -> dict[str, Any]:
    line = {"doc_id": doc_id, "doc": {"q": f"question {doc_id}"}, "target": "42"}
    line.update({"doc_hash": f"d{doc_id}", "prompt_hash": f"p{doc_id}", "target_hash": "t"})
    line.update(values)
    return line


class TestDetection:
    def test_a_results_file_is_claimed_by_its_leading_results_key(self) -> None:
        assert lm_eval.detect(Path("results_x.json"), dump(results_doc())[:4096])
        assert lm_eval.detect(Path("old.json"), json.dumps(old_doc()).encode())

    def test_a_results_file_with_sorted_keys_is_claimed_by_the_harness_own_keys(self) -> None:
        head = json.dumps(results_doc(), sort_keys=True).encode()[:4096]
        assert not head.lstrip(b"{ ").startswith(b'"results"')
        assert lm_eval.detect(Path("r.json"), head)

    @pytest.mark.parametrize(
        ("name", "text"),
        [
            ("samples_gsm8k_2025-01-01T00-00-00.jsonl", json.dumps(sample(0, acc=1.0))),
            ("summary.json", '{"elapsed_time": "02:23:09", "gpu": "A100"}'),
            ("other.json", '{"results": [1, 2, 3]}'),
            ("inspect.json", '{"version": 2, "status": "success", "results": {"scores": []}}'),
            ("results.txt", json.dumps(results_doc())),
        ],
    )
    def test_samples_logs_and_other_files_are_not_claimed(self, name: str, text: str) -> None:
        assert not lm_eval.detect(Path(name), text.encode()[:4096])

    def test_the_registry_picks_this_format_for_a_results_file(self) -> None:
        assert formats.detect(Path("results.json"), dump(results_doc())).NAME == "lm_eval"


class TestOneRunPerTask:
    def test_every_task_and_group_row_is_a_run_named_after_it(self) -> None:
        runs = by_task(parse_doc(results_doc()))
        assert list(runs) == ["suite", "suite_a", "suite_b", "gsm8k"]
        assert runs["suite"].header.provenance["group_subtasks"] == ["suite_a", "suite_b"]
        assert "group_subtasks" not in runs["gsm8k"].header.provenance
        assert {r.header.status for r in runs.values()} == {RunStatus.SUCCEEDED}

    def test_a_group_header_without_an_aggregate_of_its_own_is_not_a_run(self) -> None:
        doc = results_doc()
        doc["results"]["suite"] = {"alias": "suite"}
        del doc["groups"]
        assert "suite" not in by_task(parse_doc(doc))

    def test_a_group_listed_only_under_groups_is_still_a_run(self) -> None:
        doc = results_doc()
        del doc["results"]["suite"]
        assert by_task(parse_doc(doc))["suite"].header.score == 0.55

    def test_agent_is_the_harness_provider_the_backend_and_model_the_model_name(self) -> None:
        header = parse_doc(results_doc())[0].header
        assert (header.agent, header.provider, header.model) == (
            "lm-evaluation-harness",
            "hf",
            "Qwen/Qwen2.5-1.5B",
        )

    def test_an_empty_model_name_falls_back_to_the_model_args(self) -> None:
        doc = results_doc(
            model_name="", config={"model": "vllm", "model_args": {"pretrained": "/m/x"}}
        )
        header = parse_doc(doc)[0].header
        assert (header.provider, header.model) == ("vllm", "/m/x")
        assert "model_name_empty" in header.provenance["quirks"]

    def test_a_file_naming_no_model_says_unknown_unless_the_caller_knows(self) -> None:
        doc = {
            "results": {"arc_easy": {"acc": 0.25, "acc_stderr": 0.01}},
            "versions": {"arc_easy": 0},
        }
        [record] = parse_doc(doc)
        assert (record.header.model, record.header.provider) == ("unknown", "")
        assert "model_unknown" in record.header.provenance["quirks"]
        [given] = lm_eval.parse(Path("r.json"), dump(doc), {"model": "gpt2", "provider": "hf"})
        assert isinstance(given, RunRecord)
        assert (given.header.model, given.header.provider) == ("gpt2", "hf")

    def test_a_task_without_any_metric_is_a_run_without_a_score(self) -> None:
        doc = results_doc()
        doc["results"]["gsm8k"] = {"alias": "gsm8k"}
        header = by_task(parse_doc(doc))["gsm8k"].header
        assert header.score is None and "no_metrics" in header.provenance["quirks"]


class TestHeadlineScore:
    def test_acc_is_the_headline_over_acc_norm(self) -> None:
        header = by_task(parse_doc(results_doc()))["suite_a"].header
        assert (header.score, header.unit) == (0.5, "acc")

    def test_strict_match_is_the_headline_filter_over_flexible_extract(self) -> None:
        header = by_task(parse_doc(results_doc()))["gsm8k"].header
        assert (header.score, header.unit) == (0.25, "exact_match,strict-match")
        assert header.provenance["headline"] == "exact_match,strict-match"

    def test_without_a_known_metric_the_task_config_metric_list_decides(self) -> None:
        doc = results_doc()
        doc["results"]["gsm8k"] = {"bleu,none": 0.1, "chrf,none": 40.0}
        doc["configs"]["gsm8k"]["metric_list"] = [{"metric": "chrf"}, {"metric": "bleu"}]
        assert by_task(parse_doc(doc))["gsm8k"].header.unit == "chrf"

    def test_old_unfiltered_keys_are_read_and_perplexity_is_lower_is_better(self) -> None:
        runs = by_task(parse_doc(old_doc()))
        assert (runs["lambada_openai"].header.score, runs["lambada_openai"].header.unit) == (
            0.38,
            "acc",
        )
        wikitext = runs["wikitext"].header
        assert (wikitext.unit, wikitext.higher_is_better) == ("word_perplexity", False)

    def test_the_file_own_direction_wins_over_the_metric_name(self) -> None:
        doc = results_doc(higher_is_better={"gsm8k": {"exact_match": False}})
        assert by_task(parse_doc(doc))["gsm8k"].header.higher_is_better is False

    def test_an_infinite_headline_has_no_score_and_says_so(self) -> None:
        doc = results_doc()
        doc["results"]["gsm8k"] = {"mae,none": float("inf"), "mae_stderr,none": float("nan")}
        header = by_task(parse_doc(doc))["gsm8k"].header
        assert header.score is None and header.unit == "mae"
        assert {"headline_not_finite", "non_finite_metric_values"} <= set(
            header.provenance["quirks"]
        )
        assert header.metrics["mae,none"] == "Infinity"
        assert header.metrics["mae_stderr,none"] == "NaN"
        assert b'"mae,none":"Infinity"' in header.json_bytes()

    def test_every_metric_filter_pair_and_stderr_is_kept_na_as_a_string(self) -> None:
        runs = by_task(parse_doc(results_doc()))
        assert runs["suite_a"].header.metrics == {
            "acc,none": 0.5,
            "acc_stderr,none": 0.03,
            "acc_norm,none": 0.7,
            "acc_norm_stderr,none": "N/A",
        }
        assert "stderr_not_available" in runs["suite_a"].header.provenance["quirks"]
        gsm8k = runs["gsm8k"].header.metrics
        assert gsm8k["exact_match,flexible-extract"] == 0.5
        assert gsm8k["n-samples"] == {"original": 1319, "effective": 4}


class TestConfig:
    def test_model_args_as_a_string_or_a_dict_give_the_same_config_and_signature(self) -> None:
        as_dict = {"pretrained": "Qwen/Qwen2.5-1.5B", "trust_remote_code": True, "max_length": 4096}
        doc = results_doc()
        doc["config"] = {**doc["config"], "model_args": as_dict}
        string_run, dict_run = parse_doc(results_doc())[3], parse_doc(doc)[3]
        assert string_run.header.config["model_args"] == as_dict
        assert string_run.header.signature == dict_run.header.signature
        assert string_run.header.provenance["model_args_form"] == "str"
        assert dict_run.header.provenance["model_args_form"] == "dict"

    def test_per_task_few_shot_and_task_version_are_part_of_the_config(self) -> None:
        config = by_task(parse_doc(results_doc()))["gsm8k"].header.config
        assert (config["num_fewshot"], config["task_version"], config["batch_size"]) == (
            5,
            3.0,
            "8",
        )
        old = by_task(parse_doc(old_doc()))["wikitext"].header.config
        assert (old["num_fewshot"], old["task_version"]) == (0, 1)

    def test_credentials_in_model_args_are_redacted_but_flags_are_not(self) -> None:
        doc = results_doc()
        doc["config"]["model_args"] = "model=gpt-4o,api_key=sk-secret,add_bos_token=True"
        header = parse_doc(doc)[0].header
        assert header.config["model_args"] == {
            "model": "gpt-4o",
            "api_key": "<redacted>",
            "add_bos_token": True,
        }
        assert b"sk-secret" not in parse_doc(doc)[0].json_bytes()


class TestTimes:
    def test_date_is_the_start_and_total_evaluation_time_gives_the_end(self) -> None:
        header = parse_doc(results_doc())[0].header
        assert header.started_at is not None and header.ended_at is not None
        assert header.started_at.isoformat() == "2025-03-02T23:52:52.260894+00:00"
        assert (header.ended_at - header.started_at).total_seconds() == pytest.approx(751.798)

    def test_monotonic_start_and_end_times_are_provenance_never_times(self) -> None:
        doc = results_doc()
        del doc["date"]
        header = parse_doc(doc)[0].header
        assert header.started_at is None and header.ended_at is None
        assert header.provenance["start_time"] == 8402299.774089962
        assert "monotonic_times_not_used" in header.provenance["quirks"]

    def test_an_old_file_without_a_date_has_no_times(self) -> None:
        header = parse_doc(old_doc())[0].header
        assert header.started_at is None and "no_wall_clock_time" in header.provenance["quirks"]


class TestProvenance:
    def test_version_and_git_hash_are_kept_as_stated_even_when_they_disagree(self) -> None:
        # A file saying 0.4.8 whose hash describes as v0.4.9+34: neither is "corrected".
        doc = results_doc(lm_eval_version="0.4.8", git_hash="8c05cfe0", transformers_version="4.5")
        prov = parse_doc(doc)[0].header.provenance
        assert (prov["lm_eval_version"], prov["git_hash"]) == ("0.4.8", "8c05cfe0")

    def test_a_null_git_hash_is_left_out(self) -> None:
        assert "git_hash" not in parse_doc(results_doc(git_hash=None))[0].header.provenance


class TestRunKeys:
    def test_the_same_file_always_gives_the_same_records(self) -> None:
        first = parse_doc(results_doc())
        assert [r.json_bytes() for r in first] == [r.json_bytes() for r in parse_doc(results_doc())]
        # Re-serialised elsewhere with sorted keys: the same runs with the same content.
        reordered = json.dumps(results_doc(), sort_keys=True).encode()
        again = by_task(parse_bytes(Path("elsewhere/results.json"), reordered))
        assert {t: r.json_bytes() for t, r in by_task(first).items()} == {
            t: r.json_bytes() for t, r in again.items()
        }

    def test_keys_name_the_model_the_task_and_the_evaluation_start(self) -> None:
        header = by_task(parse_doc(results_doc()))["gsm8k"].header
        assert header.run_key == "hf:Qwen/Qwen2.5-1.5B|gsm8k|2025-03-02T23:52:52.260894+00:00"

    def test_two_evaluations_on_different_dates_get_different_keys(self) -> None:
        first = {r.header.run_key for r in parse_doc(results_doc())}
        later = {r.header.run_key for r in parse_doc(results_doc(date=DATE + 86400))}
        assert len(first) == 4 and not first & later

    def test_files_without_a_date_are_keyed_by_their_content(self) -> None:
        doc = old_doc()
        same = json.loads(json.dumps(doc))
        other = old_doc()
        other["results"]["lambada_openai"]["acc"] = 0.40
        keys = [{r.header.run_key for r in parse_doc(d)} for d in (doc, same, other)]
        assert keys[0] == keys[1] and not keys[0] & keys[2]


class TestSamples:
    def results_with_samples(self, tmp_path: Path, lines: list[dict[str, Any]]) -> Path:
        results = tmp_path / f"results_{STAMP}.json"
        results.write_bytes(dump(results_doc()))
        write_sample_lines(tmp_path / f"samples_gsm8k_{STAMP}.jsonl", lines)
        return results

    def test_members_are_the_samples_logs_with_the_results_timestamp(self, tmp_path: Path) -> None:
        results = self.results_with_samples(tmp_path, [sample(0)])
        write_sample_lines(tmp_path / "samples_gsm8k_2025-01-01T00-00-00.000001.jsonl", [])
        (tmp_path / "results.json").write_bytes(dump(results_doc()))
        assert [p.name for p in lm_eval.members(results)] == [f"samples_gsm8k_{STAMP}.jsonl"]
        assert lm_eval.members(tmp_path / "results.json") == []

    def test_sample_lines_are_cells_keyed_by_doc_id_scored_by_the_headline(
        self, tmp_path: Path
    ) -> None:
        lines = [sample(i, filter="strict-match", exact_match=v) for i, v in enumerate([1.0, 0.0])]
        results = self.results_with_samples(tmp_path, lines)
        runs = by_task(parse_path(results))
        cells = runs["gsm8k"].cells
        assert [(c.key, c.outcome, c.score) for c in cells] == [
            ("0", "passed", 1.0),
            ("1", "failed", 0.0),
        ]
        assert cells[0].metrics == {"exact_match": 1.0, "filter": "strict-match", "doc_hash": "d0"}
        assert runs["gsm8k"].header.provenance["samples"] == f"samples_gsm8k_{STAMP}.jsonl"
        assert runs["suite_a"].cells == ()

    def test_a_groups_cells_are_its_subtasks_samples_clustered_on_the_subtask(
        self, tmp_path: Path
    ) -> None:
        results = self.results_with_samples(tmp_path, [sample(0, exact_match=1.0)])
        write_sample_lines(
            tmp_path / f"samples_suite_a_{STAMP}.jsonl", [sample(0, acc=1.0), sample(1, acc=0.0)]
        )
        write_sample_lines(tmp_path / f"samples_suite_b_{STAMP}.jsonl", [sample(0, acc=1.0)])
        runs = by_task(parse_path(results))
        group = runs["suite"].cells
        assert [(c.key, c.cluster, c.outcome) for c in group] == [
            ("suite_a/0", "suite_a", "passed"),
            ("suite_a/1", "suite_a", "failed"),
            ("suite_b/0", "suite_b", "passed"),
        ]
        assert [c.cluster for c in runs["suite_a"].cells] == [None, None]
        assert [c.cluster for c in runs["gsm8k"].cells] == [None]

    def test_several_filters_key_cells_by_doc_id_and_filter(self, tmp_path: Path) -> None:
        lines = [
            sample(0, filter="strict-match", exact_match=0.0),
            sample(0, filter="flexible-extract", exact_match=1.0),
            sample(0, filter="flexible-extract", exact_match=1.0),
        ]
        results = self.results_with_samples(tmp_path, lines)
        runs = by_task(parse_path(results))
        keys = [c.key for c in runs["gsm8k"].cells]
        assert keys == ["0/strict-match", "0/flexible-extract", "0/flexible-extract#2"]

    def test_the_task_hash_and_the_mean_are_checked_against_the_results(
        self, tmp_path: Path
    ) -> None:
        lines = [
            sample(i, filter="strict-match", exact_match=v) for i, v in enumerate([1, 0, 0, 0])
        ]
        results = self.results_with_samples(tmp_path, lines)
        doc = results_doc(task_hashes={"gsm8k": "0" * 64})
        results.write_bytes(dump(doc))
        header = by_task(parse_path(results))["gsm8k"].header
        assert header.provenance["samples_task_hash_matches"] is False
        assert header.provenance["samples_mean"] == 0.25
        assert "samples_task_hash_mismatch" in header.provenance["quirks"]
        assert "samples_mean_mismatch" not in header.provenance["quirks"]
        doc["results"]["gsm8k"]["exact_match,strict-match"] = 0.5
        results.write_bytes(dump(doc))
        header = by_task(parse_path(results))["gsm8k"].header
        assert "samples_mean_mismatch" in header.provenance["quirks"]

    def test_lower_is_better_non_finite_and_non_numeric_sample_values(self, tmp_path: Path) -> None:
        doc = results_doc()
        doc["results"]["gsm8k"] = {"mae,none": 3.0, "mae_stderr,none": 1.0}
        results = tmp_path / f"results_{STAMP}.json"
        results.write_bytes(dump(doc))
        lines = [sample(0, mae=0.0), sample(1, mae=4.5), sample(2, mae=float("inf")), sample(3)]
        write_sample_lines(tmp_path / f"samples_gsm8k_{STAMP}.jsonl", lines)
        runs = by_task(parse_path(results))
        assert [(c.outcome, c.score) for c in runs["gsm8k"].cells] == [
            ("passed", 0.0),
            ("failed", 4.5),
            ("failed", None),
            ("skipped", None),
        ]
        assert runs["gsm8k"].cells[2].metrics["mae"] == "Infinity"

    def test_samples_inside_the_results_file_are_cells_too(self) -> None:
        doc = results_doc(samples={"gsm8k": [sample(7, exact_match=1.0)]})
        run = by_task(parse_doc(doc))["gsm8k"]
        assert [(c.key, c.outcome) for c in run.cells] == [("7", "passed")]
        assert run.header.provenance["samples"] == "inline"


class TestMalformedInput:
    def test_truncated_json_names_the_file_and_line(self) -> None:
        with pytest.raises(InputFormatError) as e:
            list(lm_eval.parse(Path("results.json"), dump(results_doc())[:-40]))
        assert e.value.path == "results.json" and e.value.line is not None

    def test_a_missing_results_key_is_named(self) -> None:
        doc = results_doc()
        del doc["results"]
        with pytest.raises(InputFormatError) as e:
            parse_doc(doc)
        assert e.value.field == "results"

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"results": {"gsm8k": 0.5}}, "results.gsm8k"),
            ({"results": {}, "groups": {}}, "results"),
            ({"config": {"model": "hf", "model_args": 7}}, "config.model_args"),
            ({"date": "yesterday"}, "date"),
            ({"date": 1e300}, "date"),
            ({"total_evaluation_time_seconds": "slow"}, "total_evaluation_time_seconds"),
            ({"versions": {"gsm8k": [1]}}, "versions.gsm8k"),
            ({"n-shot": {"gsm8k": {"k": 5}}}, "n-shot.gsm8k"),
        ],
    )
    def test_a_wrong_type_names_the_field(self, change: dict[str, Any], field: str) -> None:
        with pytest.raises(InputFormatError) as e:
            parse_doc(results_doc(**change))
        assert e.value.field == field, e.value

    def test_a_document_that_is_not_an_object_or_not_utf8_is_refused(self) -> None:
        with pytest.raises(InputFormatError):
            list(lm_eval.parse(Path("r.json"), b"[1, 2]"))
        with pytest.raises(InputFormatError, match="UTF-8"):
            list(lm_eval.parse(Path("r.json"), b'{"results": "\xff"}'))

    def test_a_bad_samples_line_names_the_samples_file_line_and_field(self, tmp_path: Path) -> None:
        results = tmp_path / f"results_{STAMP}.json"
        results.write_bytes(dump(results_doc()))
        samples = tmp_path / f"samples_gsm8k_{STAMP}.jsonl"
        samples.write_text(json.dumps(sample(0)) + "\n" + json.dumps({"doc": {}}) + "\n")
        with pytest.raises(InputFormatError) as e:
            list(lm_eval.parse(results, results.read_bytes()))
        assert (e.value.path, e.value.line, e.value.field) == (str(samples), 2, "doc_id")
        samples.write_text(json.dumps(sample(0))[:-5] + "\n")
        with pytest.raises(InputFormatError) as e:
            list(lm_eval.parse(results, results.read_bytes()))
        assert e.value.line == 1 and "invalid JSON" in e.value.message

    def test_a_bad_inline_sample_names_its_place(self) -> None:
        with pytest.raises(InputFormatError) as e:
            parse_doc(results_doc(samples={"gsm8k": [{"doc_id": None}]}))
        assert e.value.field == "samples.gsm8k[0].doc_id"

    def test_an_unpaired_surrogate_escape_is_refused(self) -> None:
        text = dump(results_doc()).replace(b'"alias": "gsm8k"', b'"alias": "\\ud800"')
        with pytest.raises(InputFormatError, match="surrogate"):
            list(lm_eval.parse(Path("r.json"), text))


def check_records(records: list[RunRecord | SkipRecord]) -> None:
    """What the ledger will do with them must work: serialise, sign, key."""
    keys = [r.header.natural_key() for r in records if isinstance(r, RunRecord)]
    assert len(keys) == len(set(keys))
    for record in records:
        assert isinstance(record, RunRecord)
        record.json_bytes()
        assert record.header.signature
        assert len({c.key for c in record.cells}) == len(record.cells)


def parse_or_refuse(data: bytes, path: Path = Path("results.json")) -> None:
    try:
        records = list(lm_eval.parse(path, data))
    except InputFormatError:
        return
    check_records(records)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["N/A", "acc,none", "Yaml", "pretrained=x,dtype=float16", ""]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["acc,none", "acc_stderr,none", "alias", "doc_id", "x", ""])
            | st.text(max_size=6),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


metric_rows = st.dictionaries(
    st.sampled_from(["acc,none", "acc_stderr,none", "mae,none", "f1,x", "alias", "acc", "ppl"]),
    json_values,
    max_size=5,
)
random_documents = st.fixed_dictionaries(
    {"results": st.dictionaries(st.sampled_from(["arc", "gsm8k", "", "mmlu"]), metric_rows)},
    optional={
        key: json_values | st.dictionaries(st.sampled_from(["arc", "gsm8k"]), json_values)
        for key in results_doc()
        if key != "results"
    },
)


def paths_of(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += paths_of(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value[:3]):
            found += paths_of(child, (*prefix, i))
    return found


def mutate(doc: dict[str, Any], data: st.DataObject, rounds: int = 3) -> dict[str, Any]:
    """Drop or retype a few random keys anywhere in a real-shaped document."""
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, rounds))):
        paths = paths_of(doc)[1:]
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(json_values)
    return doc


class TestFuzz:
    @settings(max_examples=150, deadline=None)
    @given(st.binary(max_size=300))
    def test_random_bytes_parse_or_are_refused(self, data: bytes) -> None:
        parse_or_refuse(data)

    @settings(max_examples=200, deadline=None)
    @given(random_documents)
    def test_random_documents_with_harness_keys_parse_or_are_refused(
        self, doc: dict[str, Any]
    ) -> None:
        parse_or_refuse(dump(doc))

    @settings(max_examples=300, deadline=None)
    @given(st.sampled_from([results_doc(), old_doc()]), st.data())
    def test_mutated_documents_parse_or_are_refused(
        self, doc: dict[str, Any], data: st.DataObject
    ) -> None:
        parse_or_refuse(dump(mutate(doc, data)))

    @settings(
        max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(st.data())
    def test_mutated_samples_logs_parse_or_are_refused(
        self, tmp_path: Path, data: st.DataObject
    ) -> None:
        results = tmp_path / f"results_{STAMP}.json"
        results.write_bytes(dump(results_doc()))
        lines = {"lines": [sample(0, exact_match=1.0, filter="none"), sample(1, exact_match=0.0)]}
        mutated = mutate(lines, data).get("lines") if data.draw(st.booleans()) else lines["lines"]
        (tmp_path / f"samples_gsm8k_{STAMP}.jsonl").write_text(
            "\n".join(json.dumps(x) for x in mutated) if isinstance(mutated, list) else "7"
        )
        parse_or_refuse(results.read_bytes(), results)
