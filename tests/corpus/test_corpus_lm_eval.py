"""The lm_eval parser over the real results files in ../shared/corpus/lm_eval."""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.adapters.formats import lm_eval
from benchledger.domain.records import RunRecord
from tests.conftest import CORPUS, Invoke
from tests.unit.test_format_lm_eval import dump, mutate, parse_or_refuse

LM_EVAL = CORPUS / "lm_eval"

pytestmark = pytest.mark.skipif(
    not (LM_EVAL / "SOURCES.tsv").is_file(),
    reason=f"the lm_eval corpus is not checked out at {LM_EVAL}",
)


def results_files() -> list[Path]:
    if not LM_EVAL.is_dir():
        return []
    return [p for p in sorted(LM_EVAL.rglob("*.json")) if lm_eval.detect(p, p.read_bytes()[:4096])]


def source(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text())
    assert isinstance(doc, dict)
    return doc


def parse(path: Path) -> list[RunRecord]:
    records = list(lm_eval.parse(path, path.read_bytes()))
    assert all(isinstance(r, RunRecord) for r in records)
    return [r for r in records if isinstance(r, RunRecord)]


def runs_of(name: str) -> dict[str, RunRecord]:
    [path] = [p for p in results_files() if p.name.startswith(name)]
    return {r.header.benchmark: r for r in parse(path)}


def expected_tasks(doc: dict[str, Any]) -> list[str]:
    """The file's own task list: every results row, then groups stated only under `groups`."""
    return [*doc["results"], *(g for g in doc.get("groups", {}) if g not in doc["results"])]


def sources_rows() -> list[dict[str, str]]:
    with (LM_EVAL / "SOURCES.tsv").open(newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def stage_upstream_layout(tmp_path: Path) -> list[Path]:
    """Put each samples log beside its results file under their original upstream names
    (from SOURCES.tsv), the layout lm-eval writes and the parser pairs by name."""
    rows = sources_rows()
    upstream = {row["local_file"]: Path(row["path"]) for row in rows}
    staged = []
    for row in rows:
        paired = re.search(r"paired with \.\./(\S+\.json)", row["note"])
        if not row["local_file"].startswith("samples/") or not paired:
            continue
        folder = tmp_path / Path(row["path"]).parent.name
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(LM_EVAL / row["local_file"], folder / Path(row["path"]).name)
        results = folder / upstream[paired[1]].name
        shutil.copyfile(LM_EVAL / paired[1], results)
        staged.append(results)
    return staged


class TestEveryResultsFile:
    def test_all_29_results_files_are_claimed_and_nothing_else(self) -> None:
        claimed = {p.relative_to(LM_EVAL).as_posix() for p in results_files()}
        assert len(claimed) == 29
        assert not any(name.endswith("summary_openllm.json") for name in claimed)
        samples = sorted((LM_EVAL / "samples").iterdir())
        assert samples and not any(lm_eval.detect(p, p.read_bytes()[:4096]) for p in samples)

    @pytest.mark.parametrize("path", results_files(), ids=lambda p: p.name[:40])
    def test_one_run_per_task_scored_as_the_file_states(self, path: Path) -> None:
        doc, records = source(path), parse(path)
        assert [r.header.benchmark for r in records] == expected_tasks(doc)
        for record in records:
            header = record.header
            row = doc["results"].get(header.benchmark) or doc["groups"][header.benchmark]
            published = row[header.provenance["headline"]]
            assert header.score == (published if math.isfinite(published) else None)
            assert header.agent == "lm-evaluation-harness" and header.status == "succeeded"
            stated = {k: v for k, v in row.items() if k not in ("alias", "name")}
            assert set(header.metrics) >= set(stated)  # every metric/filter pair and stderr

    @pytest.mark.parametrize("path", results_files(), ids=lambda p: p.name[:40])
    def test_times_are_the_wall_clock_date_never_the_monotonic_clock(self, path: Path) -> None:
        doc = source(path)
        header = parse(path)[0].header
        if "date" not in doc:
            assert header.started_at is None and header.ended_at is None
            return
        assert header.started_at == datetime.fromtimestamp(doc["date"], tz=UTC)
        assert header.started_at.year >= 2024
        if "total_evaluation_time_seconds" in doc:
            assert header.ended_at is not None
            seconds = (header.ended_at - header.started_at).total_seconds()
            assert seconds == pytest.approx(float(doc["total_evaluation_time_seconds"]), abs=1e-5)

    def test_run_keys_are_stable_and_never_shared_across_the_corpus(self) -> None:
        first = [r.header.run_key for p in results_files() for r in parse(p)]
        again = [r.header.run_key for p in results_files() for r in parse(p)]
        assert first == again
        assert len(first) == len(set(first)) == 397


class TestStatedValues:
    def test_the_78_task_qwen_file_scores_mmlu_and_its_subtasks(self) -> None:
        runs = runs_of("2025-03-03_v0.4.7+98__Qwen2.5-1.5B_78tasks")
        assert len(runs) == 78
        assert (runs["mmlu"].header.score, runs["mmlu"].header.unit) == (0.5961401509756445, "acc")
        assert len(runs["mmlu"].header.provenance["group_subtasks"]) == 4
        assert runs["hellaswag"].header.score == 0.5020912168890659  # acc, not acc_norm
        assert runs["lambada_openai"].header.metrics["perplexity,none"] > 1

    def test_gsm8k_is_scored_by_strict_match(self) -> None:
        header = runs_of("meta-llama~Meta-Llama-3-8B~openllm~gsm8k")["gsm8k"].header
        assert (header.unit, header.score) == ("exact_match,strict-match", 0.5087187263078089)
        assert header.metrics["exact_match,flexible-extract"] > header.score

    def test_old_mmlu_has_57_separate_subjects_and_no_aggregate(self) -> None:
        runs = runs_of("2023_v0.3__llama-7B_mmlu_5-shot")
        assert len(runs) == 57 and all(t.startswith("hendrycksTest-") for t in runs)
        assert {r.header.config["num_fewshot"] for r in runs.values()} == {5}

    def test_bare_infinity_and_nan_give_no_score_and_stay_as_strings(self) -> None:
        header = runs_of("2025-06-30_lmv0.4.8__gpt-4o-mini")["polymer_tg_prediction"].header
        assert (header.score, header.unit, header.higher_is_better) == (None, "mae", False)
        assert header.metrics["mae,none"] == "Infinity"
        assert header.metrics["mae_stderr,none"] == "NaN"
        assert "headline_not_finite" in header.provenance["quirks"]

    def test_na_stderrs_stay_strings(self) -> None:
        header = runs_of("2025-12-17_lmv0.4.9.2__vllm")["nl2foam_perplexity_original"].header
        assert header.metrics["word_perplexity_stderr,none"] == "N/A"
        assert (header.unit, header.higher_is_better) == ("word_perplexity", False)
        assert header.model.startswith("/scratch/") and header.provider == "vllm"
        assert "model_name_empty" in header.provenance["quirks"]

    def test_dict_model_args_read_like_string_ones(self) -> None:
        header = runs_of("2026-07-08_v0.4.12+14")["negotiationtom"].header
        assert header.provenance["model_args_form"] == "dict"
        assert header.config["model_args"]["pretrained"] == "Qwen/Qwen3-8B"
        string_form = runs_of("2025-03-03_v0.4.7+98")["arc_easy"].header
        assert string_form.config["model_args"] == {
            "pretrained": "Qwen/Qwen2.5-1.5B",
            "trust_remote_code": True,
        }

    def test_a_version_contradicting_its_git_hash_is_kept_as_stated(self) -> None:
        prov = runs_of("2025-07-21_v0.4.9+34_lmv0.4.8__FLOR")["eqbench_ca"].header.provenance
        assert (prov["lm_eval_version"], prov["git_hash"]) == ("0.4.8", "8c05cfe0")
        pinned = runs_of("2025-03-05_v0.4.3-pinned")["piqa"].header.provenance
        assert "git_hash" not in pinned and "lm_eval_version" not in pinned

    def test_inline_samples_are_cells_matching_the_stated_score(self) -> None:
        run = runs_of("2025-03-03_v0.4.7+54__nugen")["aibe"]
        outcomes = Counter(c.outcome for c in run.cells)
        assert (len(run.cells), outcomes["passed"], run.header.score) == (5, 4, 0.8)


class TestPairedSamples:
    def test_each_samples_log_is_a_member_and_its_lines_are_cells(self, tmp_path: Path) -> None:
        staged = stage_upstream_layout(tmp_path)
        assert len(staged) == 4
        for results in staged:
            [member] = lm_eval.members(results)
            doc = source(results)
            lines = member.read_text().splitlines()
            [run] = [r for r in parse(results) if r.cells and r.cells[0].cluster is None]
            task = run.header.benchmark
            assert member.name.startswith(f"samples_{task}_")
            assert len(run.cells) == len(lines) == doc["n-samples"][task]["effective"]
            assert [c.key for c in run.cells] == [str(json.loads(x)["doc_id"]) for x in lines]
            assert run.header.provenance["samples_task_hash_matches"] is True
            if run.header.score is not None:  # mean-aggregated: the samples give the score
                assert run.header.provenance["samples_mean"] == pytest.approx(run.header.score)

    def test_pass_counts_match_an_exact_match_score(self, tmp_path: Path) -> None:
        [results] = [p for p in stage_upstream_layout(tmp_path) if "Qwen3" in str(p)]
        [run] = [r for r in parse(results) if r.cells and r.cells[0].cluster is None]
        passed = sum(c.outcome == "passed" for c in run.cells)
        assert (run.header.unit, passed / len(run.cells)) == ("exact_match", run.header.score)

    def test_a_groups_cells_are_its_subtasks_samples_clustered_on_the_subtask(
        self, tmp_path: Path
    ) -> None:
        for results in stage_upstream_layout(tmp_path):
            runs = {r.header.benchmark: r for r in parse(results)}
            if "negotiationtom" not in runs:
                continue
            group, subtask = runs["negotiationtom"], runs["negotiationtom_intention"]
            assert [c.key for c in group.cells] == [
                f"negotiationtom_intention/{c.key}" for c in subtask.cells
            ]
            assert {c.cluster for c in group.cells} == {"negotiationtom_intention"}
            assert [c.outcome for c in group.cells] == [c.outcome for c in subtask.cells]
            return
        pytest.fail("no staged results file holds the negotiationtom group")


class TestImportingTheCorpus:
    def test_the_directory_imports_then_reimports_unchanged(self, invoke: Invoke) -> None:
        reports = json.loads(invoke("import", str(LM_EVAL), "--json").stdout)
        states = Counter(r["state"] for r in reports)
        # Not results: FORMAT.md, SOURCES.tsv, the 4 samples logs, summary_openllm.json.
        assert states == {"imported": 29, "ignored": 7}
        stated = {p.name: len(expected_tasks(source(p))) for p in results_files()}
        assert {Path(r["path"]).name: r["runs"] for r in reports if r["runs"]} == stated
        again = json.loads(invoke("import", str(LM_EVAL), "--json").stdout)
        assert Counter(r["state"] for r in again) == {"unchanged": 29, "ignored": 7}
        assert len(json.loads(invoke("runs", "--json").stdout)) == sum(stated.values()) == 397

    def test_results_with_their_samples_import_with_cells(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        staged = stage_upstream_layout(tmp_path / "results")
        reports = json.loads(invoke("import", str(tmp_path / "results"), "--json").stdout)
        assert Counter(r["state"] for r in reports) == {"imported": 4, "ignored": 4}
        runs = json.loads(invoke("runs", "--json").stdout)
        cells = {r["benchmark"]: r["cells"] for r in runs if r["cells"]}
        assert cells == {
            "en_it_public": 4,
            "polymer_tg_prediction": 24,
            "eqbench_ca": 10,
            "negotiationtom_intention": 20,
            # The group holds its subtask's samples, clustered on the subtask.
            "negotiationtom": 20,
        }
        assert len(staged) == 4


class TestFuzzOnRealFiles:
    @settings(max_examples=150, deadline=None)
    @given(st.sampled_from(results_files()), st.data())
    def test_real_files_with_dropped_or_retyped_keys_parse_or_are_refused(
        self, path: Path, data: st.DataObject
    ) -> None:
        parse_or_refuse(dump(mutate(source(path), data, rounds=4)), path)

    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(st.data())
    def test_real_samples_logs_mutated_parse_or_are_refused(
        self, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
    ) -> None:
        [results] = [
            p for p in stage_upstream_layout(tmp_path_factory.mktemp("s")) if "FLOR" in str(p)
        ]
        [member] = lm_eval.members(results)
        lines = {"lines": [json.loads(x) for x in member.read_text().splitlines()]}
        mutated = mutate(lines, data, rounds=4).get("lines")
        member.write_text("\n".join(map(json.dumps, mutated)) if isinstance(mutated, list) else "")
        parse_or_refuse(results.read_bytes(), results)


def truncated(text: str) -> str:
    return text[: len(text) // 2]


def without_results(text: str) -> str:
    return text.replace('"results": {', '"resultz": {', 1)


def date_as_text(text: str) -> str:
    return text.replace('"date": 1740959572.2608943', '"date": "yesterday"', 1)


def n_shot_as_list(text: str) -> str:
    return text.replace('"n-shot": {', '"n-shot": {"mmlu": [5], ', 1)


class TestBrokenCopiesOfRealFiles:
    @pytest.mark.parametrize(
        ("break_it", "said"),
        [
            (truncated, "invalid JSON"),
            (without_results, "field 'results'"),
            (date_as_text, "field 'date'"),
            (n_shot_as_list, "field 'n-shot.mmlu'"),
        ],
    )
    def test_a_broken_copy_is_refused_by_name_and_appends_nothing(
        self, invoke: Invoke, tmp_path: Path, break_it: Callable[[str], str], said: str
    ) -> None:
        text = (LM_EVAL / "2025-03-03_v0.4.7+98__Qwen2.5-1.5B_78tasks.json").read_text()
        broken = tmp_path / "results_2025-03-03T00-05-12.300060.json"
        broken.write_text(break_it(text))
        assert broken.read_text() != text
        result = invoke("import", "--format", "lm_eval", str(broken), expect=1)
        assert "Error:" in result.stderr and broken.name in result.stderr
        assert said in result.stderr
        assert json.loads(invoke("runs", "--json").stdout) == []
