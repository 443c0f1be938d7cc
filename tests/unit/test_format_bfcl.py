"""The BFCL format: per-category score files and the leaderboard tables of a score directory.

The fixtures reconstruct the shapes `bfcl evaluate` writes, with made-up values, as read
in ShishirPatil/gorilla, `berkeley-function-call-leaderboard/`:
- 6ea57973c7a6097fd7c5915698c54c17c5b1b6c8 (2026-03, BFCL v4): `bfcl_eval/eval_checker/
  eval_runner.py` (entries of each runner, format-sensitivity summary fields),
  `eval_runner_helper.py` (`save_eval_results`: `<score>/<model>/<group>/`,
  `write_score_csv_file`: values joined by commas, no trailing newline, `N/A`),
  `constants/column_headers.py`, `utils.py` (`get_directory_structure_by_category`);
- 70b6a4a2144597b1f99d1f4d3185d35d7ee532a4 (2024-09, v3 release: `BFCL_v3_` names,
  `<score>/<model>/` without groups, `data_overall.csv` with Exec columns);
- 30124c4399a82356d00b2114111dea889d99151a (2024-08, v2: `BFCL_v2_`, `data_combined.csv`);
- 01f3692976fca43c3a06188e8e25ceed579e68eb (2025-01, #893: ids were positions from 1);
and the real files in ../shared/corpus/bfcl/ (their commits are in its SOURCES.tsv).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchledger.adapters import formats
from benchledger.adapters.formats import bfcl
from benchledger.commands.cli import cli
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord
from tests.conftest import CORPUS

MODEL = "acme-fc-1-FC"


def entry(ident: str | int, category: str, **extra: Any) -> dict[str, Any]:
    """A failed entry as the AST runner writes it (prompt and answers abbreviated)."""
    body: dict[str, Any] = {
        "id": ident,
        "model_name": MODEL,
        "test_category": category,
        "valid": False,
        "error": [f"Invalid value for parameter 'x' in {ident}."],
        "error_type": "value_error:string",
        "prompt": {"id": ident, "question": [[{"role": "user", "content": "..."}]]},
        "model_result_raw": [{"f": '{"x": 1}'}],
        "model_result_decoded": [{"f": {"x": 1}}],
        "possible_answer": [{"f": {"x": [2]}}],
    }
    return {**body, **extra}


def score_file(path: Path, summary: dict[str, Any], entries: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in [summary, *entries]))
    return path


def table(path: Path, rows: list[list[str]]) -> Path:
    """A table as BFCL writes it: joined by commas, no trailing newline."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(",".join(row) for row in rows))
    return path


OVERALL = [
    *("Rank", "Overall Acc", "Model", "Model Link", "Total Cost ($)", "Latency Mean (s)"),
    *("Non-Live AST Acc", "Live Acc", "Relevance Detection"),
    *("Format Sensitivity Max Delta", "Organization", "License"),
]


def score_dir(root: Path) -> Path:
    """A v4 score directory: one model's category files and the tables for two models."""
    base = root / "score"
    model = base / MODEL
    simple = [entry(f"simple_python_{i}", "simple_python") for i in (3, 17)]
    score_file(
        model / "non_live" / "BFCL_v4_simple_python_score.json",
        {"accuracy": 0.995, "correct_count": 398, "total_count": 400},
        simple,
    )
    relevance = entry("live_relevance_2-2-0", "live_relevance", model_result="I cannot.")
    relevance.update(decoded_result=None, error_type="relevance_error:decoder_failed")
    for key in ("model_result_raw", "model_result_decoded", "possible_answer"):
        del relevance[key]
    score_file(
        model / "live" / "BFCL_v4_live_relevance_score.json",
        {"accuracy": 0.9375, "correct_count": 15, "total_count": 16},
        [relevance],
    )
    agentic = entry("web_search_base_5", "web_search_base", inference_log="")
    del agentic["error_type"]
    agentic["error"] = {
        "error_message": "None of the expected answers were found in the model response.",
        "error_type": "agentic:answer_not_found",
        "details": {"possible_answers": ["70"]},
    }
    agentic["last_non_fc_message"] = "**92**"
    score_file(
        model / "agentic" / "BFCL_v4_web_search_base_score.json",
        {"accuracy": 0.99, "correct_count": 99, "total_count": 100},
        [agentic],
    )
    score_file(
        model / "agentic" / "memory" / "kv" / "BFCL_v4_memory_kv_score.json",
        {"accuracy": 1.0, "correct_count": 155, "total_count": 155},
        [],
    )
    config = (
        "ret_fmt=python&tool_call_tag=True&func_doc_fmt=json&prompt_fmt=plaintext&style=classic"
    )
    sensitivity = {
        "accuracy": 0.5,
        "correct_count": 1,
        "total_count": 2,
        "accuracy_max_delta": 0.0,
        "accuracy_variance": 0.0,
        "accuracy_std": 0.0,
        config: {"accuracy": 0.5, "correct_count": 1, "total_count": 2},
    }
    score_file(
        model / "format_sensitivity" / "BFCL_v4_format_sensitivity_score.json",
        sensitivity,
        [entry(f"format_sensitivity_0:{config}:simple_python_3", "format_sensitivity")],
    )
    acme = ["1", "61.20%", "Acme FC 1 (FC)", "https://acme.example", "1.36", "2.99"]
    other = ["2", "40.00%", "Other Model (Prompt)", "https://other.example", "N/A", "N/A"]
    table(
        base / "data_overall.csv",
        [
            OVERALL,
            [*acme, "99.50%", "93.75%", "N/A", "N/A", "Acme", "Apache 2.0"],
            [*other, "80.00%", "N/A", "50.00%", "3.5", "Other", "MIT"],
        ],
    )
    live = ["Rank", "Model", "Live Overall Acc", "AST Summary", "Relevance Detection"]
    table(base / "data_live.csv", [live, ["1", "Acme FC 1 (FC)", "93.75%", "N/A", "93.75%"]])
    sens = [
        "Rank",
        "Model",
        "Format Sensitivity Max Delta",
        "Format Sensitivity Standard Deviation",
    ]
    table(
        base / "data_format_sensitivity.csv",
        [[*sens, f"Config {config}"], ["1", "Acme FC 1 (FC)", "0.0", "0.0", "50.00%"]],
    )
    return base


def parse(path: Path, **defaults: Any) -> list[RunRecord]:
    records = list(bfcl.parse(path, path.read_bytes(), defaults or None))
    assert all(isinstance(r, RunRecord) for r in records)
    return [r for r in records if isinstance(r, RunRecord)]


def one(path: Path, **defaults: Any) -> RunRecord:
    [record] = parse(path, **defaults)
    return record


def refused(path: Path) -> InputFormatError:
    with pytest.raises(InputFormatError) as e:
        parse(path)
    return e.value


def claimed(path: Path) -> bool:
    return bfcl.detect(path, path.read_bytes()[:4096])


class TestDetecting:
    def test_claims_the_score_files_and_the_tables_of_a_score_directory(
        self, tmp_path: Path
    ) -> None:
        base = score_dir(tmp_path)
        result = base.parent / "result" / MODEL / "BFCL_v4_simple_python_result.json"
        result.parent.mkdir(parents=True)
        result.write_text(json.dumps({"id": "simple_python_0", "result": "[f(x=1)]"}) + "\n")
        (base / "data_train.csv").write_text("id,text\n1,hello\n")
        (base / "notes.json").write_text('{"accuracy": 1.0}')
        names = sorted(p.name for p in tmp_path.rglob("*") if p.is_file() and claimed(p))
        assert names == [
            "BFCL_v4_format_sensitivity_score.json",
            "BFCL_v4_live_relevance_score.json",
            "BFCL_v4_memory_kv_score.json",
            "BFCL_v4_simple_python_score.json",
            "BFCL_v4_web_search_base_score.json",
            "data_format_sensitivity.csv",
            "data_live.csv",
            "data_overall.csv",
        ]

    def test_detection_picks_bfcl_for_its_files(self, tmp_path: Path) -> None:
        base = score_dir(tmp_path)
        for path in (base / "data_overall.csv", *base.rglob("*_score.json")):
            assert formats.detect(path, path.read_bytes()).NAME == "bfcl"

    def test_a_damaged_score_file_is_claimed_and_refused_rather_than_passed_over(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "m" / "BFCL_v3_simple_score.json"
        path.parent.mkdir()
        path.write_text("not json\n")
        assert claimed(path)
        assert refused(path).line == 1


class TestScoreFiles:
    def test_a_score_file_is_one_run_of_its_category_scored_by_its_accuracy(
        self, tmp_path: Path
    ) -> None:
        run = one(score_dir(tmp_path) / MODEL / "non_live" / "BFCL_v4_simple_python_score.json")
        head = run.header
        assert head.run_key == f"score/{MODEL}/BFCL_v4_simple_python"
        assert (head.benchmark, head.agent, head.model, head.provider) == (
            "bfcl_simple_python",
            MODEL,
            MODEL,
            "",
        )
        assert head.config == {"version": "v4"}
        assert (head.status, head.score, head.unit) == ("succeeded", 0.995, "accuracy")
        assert head.metrics == {
            "accuracy": 0.995,
            "correct_count": 398,
            "total_count": 400,
            "category": "simple_python",
            "failed_listed": 2,
        }
        assert head.provenance["group"] == "non_live"
        assert head.provenance["score_dir"] == "score"
        assert "quirks" not in head.provenance

    def test_each_listed_entry_is_a_failed_cell_and_no_passing_cell_is_made_up(
        self, tmp_path: Path
    ) -> None:
        run = one(score_dir(tmp_path) / MODEL / "non_live" / "BFCL_v4_simple_python_score.json")
        assert [(c.key, c.outcome, c.score) for c in run.cells] == [
            ("simple_python_3", "failed", 0.0),
            ("simple_python_17", "failed", 0.0),
        ]
        assert run.header.provenance["passed_not_listed"] == 398
        assert run.header.provenance["failed_listed"] == 2
        assert "failed entries only" in run.header.provenance["cells"]

    def test_cells_keep_the_verdict_and_leave_the_transcript_in_the_file(
        self, tmp_path: Path
    ) -> None:
        run = one(score_dir(tmp_path) / MODEL / "non_live" / "BFCL_v4_simple_python_score.json")
        metrics = run.cells[0].metrics
        assert metrics["error_type"] == "value_error:string"
        assert metrics["error"] == ["Invalid value for parameter 'x' in simple_python_3."]
        # The transcript is kept too: a ledger keeps every fact the entry states.
        assert {"model_result_decoded", "model_result_raw", "possible_answer", "prompt"} <= set(
            metrics
        )
        assert "entry_fields_not_kept" not in run.header.provenance

    def test_an_error_type_nested_in_the_error_is_lifted_and_the_error_kept_whole(
        self, tmp_path: Path
    ) -> None:
        run = one(score_dir(tmp_path) / MODEL / "agentic" / "BFCL_v4_web_search_base_score.json")
        [cell] = run.cells
        assert cell.metrics["error_type"] == "agentic:answer_not_found"
        assert cell.metrics["error"]["details"] == {"possible_answers": ["70"]}
        assert {"inference_log", "last_non_fc_message"} <= set(cell.metrics)

    def test_relevance_entries_keep_their_verdict_and_their_output(self, tmp_path: Path) -> None:
        run = one(score_dir(tmp_path) / MODEL / "live" / "BFCL_v4_live_relevance_score.json")
        [cell] = run.cells
        assert cell.metrics["error_type"] == "relevance_error:decoder_failed"
        assert {"model_result", "decoded_result"} <= set(cell.metrics)

    def test_memory_files_two_levels_down_name_the_same_model(self, tmp_path: Path) -> None:
        path = score_dir(tmp_path) / MODEL / "agentic" / "memory" / "kv"
        run = one(path / "BFCL_v4_memory_kv_score.json")
        assert (run.header.benchmark, run.header.model) == ("bfcl_memory_kv", MODEL)
        assert run.header.provenance["group"] == "agentic/memory/kv"
        assert run.cells == ()
        assert run.header.score == 1.0

    def test_format_sensitivity_keeps_its_spread_and_each_configuration(
        self, tmp_path: Path
    ) -> None:
        base = score_dir(tmp_path) / MODEL / "format_sensitivity"
        run = one(base / "BFCL_v4_format_sensitivity_score.json")
        metrics = run.header.metrics
        assert metrics["accuracy_max_delta"] == metrics["accuracy_std"] == 0.0
        configs = [v for k, v in metrics.items() if k.startswith("ret_fmt=")]
        assert configs == [{"accuracy": 0.5, "correct_count": 1, "total_count": 2}]
        assert run.cells[0].key.startswith("format_sensitivity_0:ret_fmt=python")

    def test_a_v3_file_in_the_flat_layout_with_positional_ids(self, tmp_path: Path) -> None:
        path = score_file(
            tmp_path / "score" / "gpt-4o-2024-08-06" / "BFCL_v3_simple_score.json",
            {"accuracy": 0.5, "correct_count": 1, "total_count": 2},
            [entry(2, "simple", model_name="gpt-4o-2024-08-06")],
        )
        run = one(path)
        assert run.header.run_key == "score/gpt-4o-2024-08-06/BFCL_v3_simple"
        assert (run.header.benchmark, run.header.config) == ("bfcl_simple", {"version": "v3"})
        assert run.header.provenance["group"] is None
        assert [c.key for c in run.cells] == ["2"]
        assert "counted from 1" in run.header.provenance["ids"]

    def test_what_does_not_add_up_is_flagged_not_fixed(self, tmp_path: Path) -> None:
        path = score_file(
            tmp_path / "score" / MODEL / "live" / "BFCL_v4_multi_turn_base_score.json",
            {"accuracy": 0.75, "correct_count": 1, "total_count": 3},
            [
                entry("multi_turn_base_1", "multi_turn_base", error_type="multi_turn:inference"),
                entry("multi_turn_base_1", "multi_turn_base", model_name="someone-else"),
                entry("live_simple_0-0-0", "live_simple"),
                entry("multi_turn_base_2", "multi_turn_base", valid=True),
            ],
        )
        run = one(path)
        assert run.header.score == 0.75
        assert [c.key for c in run.cells] == [
            "multi_turn_base_1",
            "multi_turn_base_1#2",
            "live_simple_0-0-0",
            "multi_turn_base_2",
        ]
        assert [c.outcome for c in run.cells] == ["failed", "failed", "failed", "passed"]
        assert run.cells[1].metrics["model_name"] == "someone-else"
        assert run.cells[2].metrics["test_category"] == "live_simple"
        assert "test_category" not in run.cells[0].metrics
        assert run.header.provenance["quirks"] == [
            "accuracy 0.75 is not correct_count / total_count",
            "3 failed entries listed, but total_count - correct_count is 2",
            "1 listed entries say valid: true",
            "1 entry ids listed more than once (kept as id#2, ...)",
            "entries name test_category live_simple, the file name multi_turn_base",
            f"entries name model_name someone-else, the directory {MODEL}",
        ]

    def test_the_caller_names_the_agent_and_provider(self, tmp_path: Path) -> None:
        path = score_dir(tmp_path) / MODEL / "non_live" / "BFCL_v4_simple_python_score.json"
        run = one(path, agent="eliza", provider="acme", model="ignored", config={"limit": 2})
        head = run.header
        assert (head.agent, head.provider, head.model) == ("eliza", "acme", MODEL)
        assert head.config == {"limit": 2, "version": "v4"}


class TestRefusingBadScoreFiles:
    def write(self, tmp_path: Path, text: str) -> Path:
        path = tmp_path / "score" / MODEL / "non_live" / "BFCL_v4_simple_python_score.json"
        path.parent.mkdir(parents=True)
        path.write_text(text)
        return path

    def test_a_first_line_without_accuracy(self, tmp_path: Path) -> None:
        path = self.write(tmp_path, '{"correct_count": 1, "total_count": 2}\n')
        e = refused(path)
        assert (e.path, e.line, e.field) == (str(path), 1, "accuracy")
        assert str(e).startswith(f"{path}:1: field 'accuracy'")

    def test_a_line_that_is_not_json(self, tmp_path: Path) -> None:
        summary = '{"accuracy": 0.5, "correct_count": 1, "total_count": 2}\n'
        path = self.write(tmp_path, summary + json.dumps(entry("a", "x")) + "\n{oops\n")
        e = refused(path)
        assert (e.path, e.line) == (str(path), 3)
        assert "invalid JSON" in e.message

    @pytest.mark.parametrize(
        ("summary", "field"),
        [
            ({"accuracy": "98%", "correct_count": 1, "total_count": 2}, "accuracy"),
            ({"accuracy": True, "correct_count": 1, "total_count": 2}, "accuracy"),
            ({"accuracy": 0.5, "total_count": 2}, "correct_count"),
            ({"accuracy": 0.5, "correct_count": 1.0, "total_count": 2}, "correct_count"),
            ({"accuracy": 0.5, "correct_count": 1, "total_count": -2}, "total_count"),
        ],
    )
    def test_a_summary_field_that_is_missing_or_of_the_wrong_kind(
        self, tmp_path: Path, summary: dict[str, Any], field: str
    ) -> None:
        e = refused(self.write(tmp_path, json.dumps(summary) + "\n"))
        assert (e.line, e.field) == (1, field)

    @pytest.mark.parametrize(
        ("line", "field"),
        [
            ({"model_name": MODEL, "valid": False}, "id"),
            ({"id": True}, "id"),
            ({"id": ""}, "id"),
            ({"id": "x_1", "valid": "no"}, "valid"),
            (["x_1"], None),
        ],
    )
    def test_an_entry_without_an_id_or_of_the_wrong_shape(
        self, tmp_path: Path, line: Any, field: str | None
    ) -> None:
        summary = '{"accuracy": 0.5, "correct_count": 1, "total_count": 2}\n'
        e = refused(self.write(tmp_path, summary + json.dumps(line) + "\n"))
        assert (e.line, e.field) == (2, field)

    def test_an_empty_file_or_a_summary_not_on_the_first_line(self, tmp_path: Path) -> None:
        assert refused(self.write(tmp_path, "")).line == 1
        path = tmp_path / "score" / MODEL / "non_live" / "BFCL_v4_simple_python_score.json"
        path.write_text('\n{"accuracy": 1.0, "correct_count": 1, "total_count": 1}\n')
        assert refused(path).line == 1


class TestLeaderboardTables:
    def test_each_row_is_a_run_that_keeps_every_column(self, tmp_path: Path) -> None:
        acme, other = parse(score_dir(tmp_path) / "data_overall.csv")
        head = acme.header
        assert head.run_key == "score/data_overall.csv#Acme FC 1 (FC)"
        # The model as the table states it; the agent is its registry entry, named as the
        # score files name it.
        assert (head.benchmark, head.agent, head.model) == (
            "bfcl",
            "Acme FC 1-FC",
            "Acme FC 1 (FC)",
        )
        assert (head.score, head.unit, head.status) == (0.612, "accuracy", "succeeded")
        assert head.metrics == {
            "Overall Acc": 0.612,
            "Total Cost ($)": 1.36,
            "Latency Mean (s)": 2.99,
            "Non-Live AST Acc": 0.995,
            "Live Acc": 0.9375,
            "Relevance Detection": None,
            "Format Sensitivity Max Delta": None,
        }
        assert head.provenance["not_evaluated"] == [
            "Relevance Detection",
            "Format Sensitivity Max Delta",
        ]
        assert head.provenance["model_link"] == "https://acme.example"
        assert (head.provenance["organization"], head.provenance["license"]) == (
            "Acme",
            "Apache 2.0",
        )
        assert acme.supplement == {"rank": 1}
        assert other.header.metrics["Format Sensitivity Max Delta"] == 3.5
        assert other.header.metrics["Total Cost ($)"] is None
        assert other.supplement == {"rank": 2}

    def test_an_overall_accuracy_that_counts_unevaluated_categories_as_zero_is_flagged(
        self, tmp_path: Path
    ) -> None:
        acme, other = parse(score_dir(tmp_path) / "data_overall.csv")
        assert acme.header.provenance["quirks"] == [
            "Overall Acc counts what was not evaluated as 0 (1 column N/A)"
        ]
        assert other.header.provenance["quirks"] == [
            "Overall Acc counts what was not evaluated as 0 (1 column N/A)"
        ]

    def test_a_section_table_is_its_own_benchmark_scored_by_its_overall_accuracy(
        self, tmp_path: Path
    ) -> None:
        [live] = parse(score_dir(tmp_path) / "data_live.csv")
        assert (live.header.benchmark, live.header.score) == ("bfcl_live", 0.9375)
        assert live.header.metrics["AST Summary"] is None

    def test_the_format_sensitivity_table_has_no_score(self, tmp_path: Path) -> None:
        [run] = parse(score_dir(tmp_path) / "data_format_sensitivity.csv")
        # The same unit as the category's score file, whichever is imported first.
        assert (run.header.benchmark, run.header.score, run.header.unit) == (
            "bfcl_format_sensitivity",
            None,
            "accuracy",
        )
        assert run.header.metrics["Format Sensitivity Max Delta"] == 0.0
        [config] = [k for k in run.header.metrics if k.startswith("Config ")]
        assert run.header.metrics[config] == 0.5

    def test_a_table_that_only_reranks_its_rows_states_the_same_runs(self, tmp_path: Path) -> None:
        path = score_dir(tmp_path) / "data_overall.csv"
        before = {r.header.run_key: r.content_sha256() for r in parse(path)}
        lines = path.read_text().split("\n")
        lines[1], lines[2] = "2" + lines[1][1:], "1" + lines[2][1:]
        path.write_text("\n".join([lines[0], lines[2], lines[1]]))
        assert {r.header.run_key: r.content_sha256() for r in parse(path)} == before

    def test_a_table_resaved_with_quotes_reads_the_same(self, tmp_path: Path) -> None:
        path = score_dir(tmp_path) / "data_live.csv"
        before = [r.content_sha256() for r in parse(path)]
        rows = [line.split(",") for line in path.read_text().split("\n")]
        path.write_text("\r\n".join(",".join(f'"{v}"' for v in row) for row in rows) + "\r\n")
        assert [r.content_sha256() for r in parse(path)] == before

    def test_text_in_a_number_column_is_kept_and_flagged(self, tmp_path: Path) -> None:
        path = table(
            tmp_path / "score" / "data_live.csv",
            [["Rank", "Model", "Live Overall Acc", "Notes"], ["1", "M", "50.00%", "rerun"]],
        )
        [run] = parse(path)
        assert run.header.metrics["Notes"] == "rerun"
        assert run.header.provenance["quirks"] == ["columns holding text, not numbers: Notes"]

    @pytest.mark.parametrize(
        ("rows", "line", "field"),
        [
            ([["Rank", "Model", "Live Overall Acc"], ["1", "M", "50%", "x"]], 2, None),
            ([["Rank", "Model", "Live Overall Acc"], ["1", "M", "0.5"]], 2, "Live Overall Acc"),
            ([["Rank", "Model", "Live Overall Acc"], ["1", "M", "high"]], 2, "Live Overall Acc"),
            ([["Rank", "Model", "Live Overall Acc"], ["1", " ", "50%"]], 2, "Model"),
            ([["Rank", "Model", "Acc"], ["1", "M", "5%"], ["2", "M", "6%"]], 3, "Model"),
            ([["Rank", "Model", "Acc", "Acc"], ["1", "M", "5%", "6%"]], 1, "Acc"),
        ],
    )
    def test_a_row_or_header_that_cannot_be_read_is_refused_by_line_and_field(
        self, tmp_path: Path, rows: list[list[str]], line: int, field: str | None
    ) -> None:
        e = refused(table(tmp_path / "score" / "data_live.csv", rows))
        assert (e.line, e.field) == (line, field)

    def test_a_table_without_a_model_column_is_not_claimed(self, tmp_path: Path) -> None:
        path = table(tmp_path / "data_live.csv", [["Rank", "Name", "Acc"], ["1", "M", "5%"]])
        assert not claimed(path)
        assert refused(path).field == "Model"


def import_json(db: Path, directory: Path) -> list[dict[str, Any]]:
    result = CliRunner().invoke(cli, ["--db", str(db), "import", str(directory), "--json"])
    assert result.exit_code == 0, result.stderr
    reports: list[dict[str, Any]] = json.loads(result.stdout)
    return reports


def head_position(db: Path) -> int:
    result = CliRunner().invoke(cli, ["--db", str(db), "verify", "--json"])
    assert result.exit_code == 0, result.stderr
    position: int = json.loads(result.stdout)["head_position"]
    return position


class TestImportingAScoreDirectory:
    def test_the_tables_and_the_score_files_import_side_by_side_and_once(
        self, tmp_path: Path
    ) -> None:
        base = score_dir(tmp_path)
        db = tmp_path / "ledger.db"
        first = import_json(db, base)
        assert Counter((r["state"], r["format"]) for r in first) == {("imported", "bfcl"): 8}
        assert sum(r["new_runs"] for r in first) == 5 + 2 + 1 + 1
        position = head_position(db)
        again = import_json(db, base)
        assert {r["state"] for r in again} == {"unchanged"}
        assert sum(r["new_runs"] for r in again) == 0
        assert head_position(db) == position

    def test_a_bad_score_file_appends_nothing_and_is_named_with_its_line(
        self, tmp_path: Path
    ) -> None:
        base = score_dir(tmp_path)
        bad = base / MODEL / "live" / "BFCL_v4_live_simple_score.json"
        bad.write_text('{"accuracy": 1.0, "correct_count": 1, "total_count": 1}\n{"id": \n')
        db = tmp_path / "ledger.db"
        result = CliRunner().invoke(cli, ["--db", str(db), "import", str(bad), "--json"])
        assert result.exit_code == 1
        [report] = json.loads(result.stdout)
        assert report["state"] == "failed"
        assert "BFCL_v4_live_simple_score.json:2:" in report["message"]


BFCL = CORPUS / "bfcl"
GLYPHH = BFCL / "score" / "glyphh-ada-1.1"


@pytest.mark.skipif(not BFCL.is_dir(), reason=f"the shared BFCL corpus is not at {BFCL}")
class TestTheCorpus:
    def test_a_real_score_file_states_its_accuracy_counts_and_failures(self) -> None:
        run = one(GLYPHH / "non_live" / "BFCL_v4_simple_python_score.json")
        head = run.header
        assert (head.benchmark, head.model, head.score) == (
            "bfcl_simple_python",
            "glyphh-ada-1.1",
            0.945,
        )
        assert (head.metrics["correct_count"], head.metrics["total_count"]) == (378, 400)
        assert len(run.cells) == 22 == 400 - 378
        assert run.cells[0].key == "simple_python_13"
        assert {c.outcome for c in run.cells} == {"failed"}
        assert "quirks" not in head.provenance

    def test_every_score_file_gives_its_summary_and_one_cell_per_listed_entry(self) -> None:
        files = sorted(BFCL.rglob("BFCL_v4_*_score.json"))
        assert len(files) == 22
        for path in files:
            lines = [json.loads(line) for line in path.read_text().splitlines() if line]
            run = one(path)
            for key in ("accuracy", "correct_count", "total_count"):
                assert run.header.metrics[key] == lines[0][key], path
            assert [c.key for c in run.cells] == [e["id"] for e in lines[1:]], path
            assert run.header.model == path.parents[1].name
            assert "quirks" not in run.header.provenance, path

    def test_a_real_overall_table_row(self) -> None:
        [run] = parse(BFCL / "score" / "data_overall.csv")
        head = run.header
        assert (head.benchmark, head.model, head.score) == (
            "bfcl",
            "Glyphh Ada 1.1 (HDC+FC)",
            0.745,
        )
        assert head.metrics["Total Cost ($)"] == 2.08
        assert head.metrics["Latency 95th Percentile (s)"] == 23.1
        assert head.metrics["Irrelevance Detection"] == 0.8756
        assert head.metrics["Relevance Detection"] is None
        assert head.provenance["organization"] == "Glyphh"
        assert len(head.metrics) == 36 - 5  # Rank, Model, Model Link, Organization, License

    def test_a_partial_run_flags_an_overall_accuracy_that_counts_what_did_not_run(self) -> None:
        [run] = parse(BFCL / "eval_claude_fix" / "data_overall.csv")
        assert run.header.score == 0.0082
        assert run.header.provenance["quirks"] == [
            "Overall Acc counts what was not evaluated as 0 (22 columns N/A)"
        ]

    def test_importing_the_corpus_twice_appends_nothing_the_second_time(
        self, tmp_path: Path
    ) -> None:
        db = tmp_path / "ledger.db"
        first = import_json(db, BFCL)
        states = Counter((r["state"], r["format"]) for r in first)
        assert states == {("imported", "bfcl"): 48, ("ignored", None): 2}
        assert sum(r["new_runs"] for r in first) == 22 + 26
        position = head_position(db)
        again = import_json(db, BFCL)
        assert Counter(r["state"] for r in again) == {"unchanged": 48, "ignored": 2}
        assert sum(r["new_runs"] for r in again) == 0
        assert head_position(db) == position
