"""The SWE-bench parser on every SWE-bench file of the shared corpus, checked against
the sources' own totals (resolved lists, report counts, published percentages)."""

from __future__ import annotations

import json
import math
import random
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.adapters.formats import swebench
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord
from tests.conftest import CORPUS, Invoke

ROOT = CORPUS / "swebench"
SUBMISSIONS = ROOT / "experiments_submissions" / "verified"
SUPERSEDED = ROOT / "experiments_submissions" / "verified_superseded"
SWEAGENT = SUBMISSIONS / "20240620_sweagent_claude3.5sonnet"
AMENDED = "vorflux__20250519_vorflux_opus46-code_gpt55h-review"
REPORTS = ROOT / "harness_run_reports"
LOGS = ROOT / "harness_run_logs" / "run_evaluation"
SB_CLI = ROOT / "sb_cli_reports"
BOARDS = ROOT / "leaderboards"
NOV, DEC = (
    "leaderboards_2025-11-18_newschema.json",
    "leaderboards_2025-12-10_with_per_instance_details.json",
)
SIZE = {"Verified": 500, "bash-only": 500, "Lite": 300, "Test": 2294, "Multimodal": 517}
# FORMAT.md: the three bash-only runs whose per-instance results miss the published %.
UNRECONCILED = {
    "20250726_mini-v1.0.0_claude-sonnet-4-20250514": (64.93, 324, 499),
    "20250720_mini-v0.0.0-Llama-4-Maverick-17B-Instruct": (21.04, 105, 499),
    "20250720_mini-v0.0.0-claude-3-7-sonnet-20250219": (52.8, 51, None),
}

pytestmark = pytest.mark.skipif(
    not ROOT.is_dir(), reason=f"the shared SWE-bench corpus is not at {ROOT}"
)


def load(path: Path) -> Any:
    return json.loads(path.read_bytes())


def parse(path: Path, **defaults: Any) -> list[RunRecord]:
    records = swebench.parse(path, path.read_bytes(), defaults)
    return [r for r in records if isinstance(r, RunRecord)]


def passed(record: RunRecord) -> set[str]:
    return {c.key for c in record.cells if c.outcome == "passed"}


@pytest.fixture(scope="module")
def claimed() -> dict[Path, list[RunRecord]]:
    """Every file of the whole corpus the parser claims, with its runs."""
    out = {}
    for path in sorted(p for p in CORPUS.rglob("*") if p.is_file()):
        if swebench.detect(path, path.read_bytes()[:4096]):
            out[path] = parse(path)
    return out


class TestWhatIsClaimed:
    def test_one_file_per_result_is_claimed_and_nothing_outside_the_swebench_corpus(
        self, claimed: dict[Path, list[RunRecord]]
    ) -> None:
        kinds = Counter(p.relative_to(ROOT).parts[0] for p in claimed)
        assert kinds == {
            "experiments_submissions": 8,
            "harness_run_logs": 3,
            "harness_run_reports": 4,
            "sb_cli_reports": 8,
            "leaderboards": 4,
        }

    def test_predictions_metadata_and_instance_reports_are_not_claimed_alone(
        self, claimed: dict[Path, list[RunRecord]]
    ) -> None:
        names = Counter(p.name for p in claimed if "experiments" in str(p))
        assert names == {"results.json": 8}
        assert not any(p.name == "preds.json" for p in claimed)
        assert sum(1 for p in claimed if p.name == "report.json") == 3  # one per log directory

    def test_a_submissions_members_are_its_metadata_results_and_485_instance_reports(
        self,
    ) -> None:
        members = swebench.members(SWEAGENT / "results" / "results.json")
        assert Counter(p.name for p in members) == {
            "report.json": 485,
            "metadata.yaml": 1,
            "resolved_by_repo.json": 1,
            "resolved_by_time.json": 1,
        }

    def test_every_member_of_a_claimed_result_names_that_result_as_its_owner(
        self, claimed: dict[Path, list[RunRecord]]
    ) -> None:
        owned = 0
        for primary in claimed:
            for member in swebench.members(primary):
                found = swebench.owner(member)
                assert found is not None and found.primary == primary, member
                owned += 1
        # The sweagent submission's 485 instance reports, metadata and 2 derived results,
        # 2 files of each of the 7 others, and the 127 reports of 3 log directories less
        # their first instances.
        assert owned == 488 + 7 * 2 + 127 - 3
        assert all(swebench.owner(p) is None for p in claimed)
        assert swebench.owner(SWEAGENT / "README.md") is None


class TestExperimentsSubmissions:
    def test_every_submission_scores_its_resolved_list_over_the_500_verified(self) -> None:
        for results in sorted(SUBMISSIONS.glob("*/results/results.json")):
            [run] = parse(results)
            resolved = set(load(results)["resolved"])
            assert passed(run) == resolved, results
            assert run.header.score == len(resolved) / 500
            assert run.header.benchmark == "swe_bench_verified"
            assert run.header.run_key == f"verified/{results.parent.parent.name}"

    def test_the_official_submission_agrees_with_its_485_instance_reports(self) -> None:
        [run] = parse(SWEAGENT / "results" / "results.json")
        assert (len(passed(run)), len(run.cells), run.header.score) == (168, 499, 0.336)
        assert "mismatch" not in run.header.provenance
        reported = sum(1 for c in run.cells if "pass_to_pass_success" in c.metrics)
        assert reported == 484  # 485 reports; one patch did not apply, so it has no tests
        assert run.header.metrics["no_generation"] == 11 and run.header.metrics["no_logs"] == 3
        assert "1 of 500 instances are in no list" in " ".join(run.header.provenance["quirks"])

    def test_a_published_resolve_rate_is_reconciled_and_not_resolved_ids_are_failures(
        self,
    ) -> None:
        [run] = parse(SUBMISSIONS / "vorflux__20250519_vorflux_opus46_gpt55h/results/results.json")
        assert run.header.metrics["resolve_rate"] == 82.6 and run.header.score == 0.826
        assert "mismatch" not in run.header.provenance
        assert Counter(c.outcome for c in run.cells) == {"passed": 413, "failed": 87}

    def test_a_partial_run_is_flagged_from_its_per_repo_totals(self) -> None:
        [run] = parse(SUBMISSIONS / "vorflux__20250424_vorflux_agent_v1/results/results.json")
        assert run.header.metrics["instances_evaluated"] == 20
        assert "partial run: 20 of 500 instances evaluated" in run.header.provenance["quirks"]

    def test_an_instance_listed_twice_is_flagged(self) -> None:
        [run] = parse(SUBMISSIONS / "vorflux__20250505_vorflux_agent_v3/results/results.json")
        assert (
            "listed twice (resolved wins): django__django-11555" in run.header.provenance["quirks"]
        )

    def test_the_superseded_copy_is_the_same_run_with_other_content(self) -> None:
        [old] = parse(next(SUPERSEDED.glob("*/results/results.json")))
        [new] = parse(SUBMISSIONS / AMENDED / "results" / "results.json")
        assert old.header.run_key == new.header.run_key == f"verified/{AMENDED}"
        assert (len(passed(old)), len(passed(new))) == (413, 442)
        assert old.content_sha256() != new.content_sha256()


class TestHarnessAndSbCliReports:
    def test_each_report_scores_resolved_over_total_and_has_a_cell_per_instance(self) -> None:
        for path in sorted([*REPORTS.glob("*.json"), *SB_CLI.glob("*.json")]):
            doc = load(path)
            [run] = parse(path)
            assert passed(run) == set(doc["resolved_ids"]), path
            assert len(passed(run)) == doc["resolved_instances"]
            assert run.header.score == doc["resolved_instances"] / doc["total_instances"]
            assert len(run.cells) == doc["total_instances"]
            assert "mismatch" not in run.header.provenance

    def test_the_rerun_with_the_same_8_of_23_resolved_two_other_instances(self) -> None:
        [dev] = parse(REPORTS / "deepseek__deepseek-chat.deepseek_chat_dev.json")
        [rerun] = parse(REPORTS / "deepseek__deepseek-chat.deepseek_chat_dev_rerun.json")
        assert dev.header.score == rerun.header.score == 8 / 23
        assert dev.header.run_key != rerun.header.run_key
        assert passed(dev) ^ passed(rerun) == {
            "pylint-dev__astroid-1333",
            "sqlfluff__sqlfluff-1733",
        }

    def test_log_directories_agree_with_the_report_of_the_same_run(self) -> None:
        by_dir = {}
        for model_dir in sorted(LOGS.glob("*/*")):
            first = min(model_dir.glob("*/report.json"))
            [run] = parse(first)
            assert len(run.cells) == len(list(model_dir.glob("*/report.json")))
            by_dir[model_dir.parent.name] = passed(run)
        reports = {p.name: set(load(p)["resolved_ids"]) for p in REPORTS.glob("*.json")}
        test_run = reports["deepseek__deepseek-chat.deepseek_chat_test_1-100.json"]
        assert by_dir["deepseek_bench1_eval"] == test_run and len(test_run) == 61
        assert by_dir["deepseek_bench_eval"] in reports.values()
        assert len(by_dir["deepseek_bench_eval"]) == 8

    def test_run_reports_whose_contents_name_no_model_keep_their_names_whole(self) -> None:
        for path in sorted(REPORTS.glob("*.json")):
            assert "model_name_or_path" not in load(path) and "model" not in load(path)
            [run] = parse(path)
            h = run.header
            assert (h.model, h.run_key) == ("unknown", f"harness/{path.stem}"), path
            assert h.provenance["report_name"] == path.stem
            assert any("not split" in q for q in h.provenance["quirks"])
            [given] = parse(path, model="deepseek/deepseek-chat")
            assert (given.header.model, given.header.run_key) == (
                "deepseek/deepseek-chat",
                h.run_key,
            )

    def test_sb_cli_reports_name_the_lite_dev_split_in_their_filename(self) -> None:
        for path in sorted(SB_CLI.glob("*.json")):
            [run] = parse(path)
            assert run.header.benchmark == "swe_bench_lite_dev"
            assert run.header.run_key == "sb-cli/swe-bench_lite/dev/" + path.stem.split("__")[2]


class TestLeaderboards:
    @pytest.mark.parametrize("name", sorted(p.name for p in BOARDS.glob("leaderboards_*.json")))
    def test_every_row_is_a_run_scoring_its_published_percentage(self, name: str) -> None:
        doc = load(BOARDS / name)
        rows = [(b["name"], r) for b in doc["leaderboards"] for r in b["results"]]
        runs = parse(BOARDS / name)
        assert len(runs) == len(rows) == len({r.header.run_key for r in runs})
        for (board, row), run in zip(rows, runs, strict=True):
            assert run.header.score == pytest.approx(row["resolved"] / 100)
            assert run.header.metrics["published_resolved_pct"] == row["resolved"]
            assert run.header.provenance["board"] == board
            assert len(run.cells) == len(row.get("per_instance_details") or {})

    def test_22_of_25_per_instance_runs_reconcile_and_the_three_others_are_flagged(self) -> None:
        runs = [r for r in parse(BOARDS / DEC) if r.cells]
        assert len(runs) == 50 and {len(r.cells) for r in runs} == {500}  # 25 on two boards
        flagged = {
            r.header.provenance["folder"]: r for r in runs if "mismatch" in r.header.provenance
        }
        assert set(flagged) == set(UNRECONCILED)
        for folder, (published, resolved, denominator) in UNRECONCILED.items():
            mismatch = flagged[folder].header.provenance["mismatch"]["per_instance_details"]
            assert (mismatch["published_pct"], mismatch["resolved_cells"]) == (published, resolved)
            assert mismatch.get("published_matches_denominator") == denominator
            assert flagged[folder].header.score == pytest.approx(published / 100)  # published kept
        assert sum(1 for r in runs if "mismatch" in r.header.provenance) == 6

    def test_the_sites_per_instance_file_counts_resolved_per_model(self) -> None:
        doc = load(BOARDS / "info_for_leaderboard.json")
        runs = {r.header.model: r for r in parse(BOARDS / "info_for_leaderboard.json")}
        for alias, details in doc.items():
            resolved = sum(1 for d in details.values() if d["resolved"])
            assert len(passed(runs[alias])) == resolved
            assert runs[alias].header.score == resolved / len(details)
        assert {a: len(passed(r)) for a, r in runs.items()} == {
            "gpt-5": 325,
            "gpt-5-mini": 299,
            "sonnet-4": 324,
            "sonnet-4-5": 353,
        }


def mutate(value: Any, rng: random.Random) -> Any:
    """Drop, retype or descend into one random key or item of a JSON value."""
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        copy = dict(value)
        action = rng.randrange(3)
        if action == 0:
            del copy[key]
        elif action == 1:
            copy[key] = rng.choice([None, "x", 7, -1, 1.5, [], {}, False])
        else:
            copy[key] = mutate(copy[key], rng)
        return copy
    if isinstance(value, list) and value:
        copy = list(value)
        i = rng.randrange(len(copy))
        copy[i] = mutate(copy[i], rng)
        return copy
    return rng.choice([None, "x", 0, -3, 101.5, [], {"k": "v"}, True])


def small_leaderboard() -> dict[str, Any]:
    """Two real rows of each board, per-instance details cut to 20 instances."""
    boards = []
    for board in load(BOARDS / DEC)["leaderboards"]:
        rows = [dict(r) for r in board["results"][:2]]
        for row in rows:
            if "per_instance_details" in row:
                row["per_instance_details"] = dict(list(row["per_instance_details"].items())[:20])
        boards.append({"name": board["name"], "results": rows})
    return {"leaderboards": boards}


def real_documents() -> dict[str, Any]:
    if not ROOT.is_dir():
        return {}
    return {
        "results/results.json": load(SWEAGENT / "results" / "results.json"),
        "deepseek__deepseek-chat.r.json": load(next(REPORTS.glob("*test_1-100.json"))),
        "swe-bench_lite__dev__r.json": load(next(SB_CLI.glob("*.json"))),
        "leaderboards.json": small_leaderboard(),
        "info_for_leaderboard.json": {
            k: dict(list(v.items())[:20])
            for k, v in load(BOARDS / "info_for_leaderboard.json").items()
        },
        "report.json": load(next(LOGS.glob("*/*/*/report.json"))),
    }


REAL = real_documents()


class TestFuzzingRealDocuments:
    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(seed=st.integers(0, 2**32), rounds=st.integers(1, 4))
    def test_mutated_real_documents_give_records_or_an_input_format_error(
        self, seed: int, rounds: int
    ) -> None:
        rng = random.Random(seed)
        name = rng.choice(sorted(REAL))
        doc = REAL[name]
        for _ in range(rounds):
            doc = mutate(doc, rng)
        with tempfile.TemporaryDirectory() as tmp:
            where = "run_evaluation/r/m/x__y-1" if name == "report.json" else "verified/20240101_x"
            path = Path(tmp) / where / name
            path.parent.mkdir(parents=True)
            path.write_text(json.dumps(doc))
            try:
                records = list(swebench.parse(path, path.read_bytes()))
            except InputFormatError as e:
                assert e.path.startswith(tmp)
                return
            assert all(isinstance(r, RunRecord) for r in records)


class TestThroughTheCli:
    def paths(self) -> list[str]:
        return [
            str(p)
            for p in (
                SUBMISSIONS,
                REPORTS,
                ROOT / "harness_run_logs",
                SB_CLI,
                ROOT / "mini_swe_agent_preds",
                BOARDS / DEC,
                BOARDS / "info_for_leaderboard.json",
            )
        ]

    def test_the_corpus_imports_once_and_again_unchanged(self, invoke: Invoke) -> None:
        reports = json.loads(invoke("import", *self.paths(), "--json").stdout)
        states = Counter(r["state"] for r in reports)
        assert states == {"imported": 24, "ignored": len(reports) - 24}
        assert {r["format"] for r in reports if r["state"] == "imported"} == {"swebench"}
        imported = Counter(Path(r["path"]).name for r in reports if r["state"] == "imported")
        assert (imported["results.json"], imported["report.json"]) == (7, 3)
        ignored = Counter(Path(r["path"]).name for r in reports if r["state"] == "ignored")
        assert ignored["preds.json"] == 4 and ignored["metadata.yaml"] == 7
        again = json.loads(invoke("import", *self.paths(), "--json").stdout)
        assert {r["state"] for r in again} == {"unchanged", "ignored"}
        runs = json.loads(invoke("runs", "--json").stdout)
        # 7 submissions, 3 log directories, 4 harness and 8 sb-cli reports, 322 board rows,
        # 4 per-instance aliases
        assert len(runs) == 7 + 3 + 4 + 8 + 322 + 4
        sweagent = next(r for r in runs if r["run_key"] == f"verified/{SWEAGENT.name}")
        assert (sweagent["cells"], sweagent["cells_passed"], sweagent["score"]) == (499, 168, 0.336)

    def test_the_superseded_submission_conflicts_and_amends_into_the_current_one(
        self, invoke: Invoke
    ) -> None:
        invoke("import", str(SUPERSEDED))
        current = str(SUBMISSIONS / AMENDED)
        conflict = invoke("import", current, expect=1)
        # Its agent and model were `unknown` (no metadata.yaml): placeholders, which the
        # current submission fills. Its score is another: that is the conflict.
        assert "already recorded with other facts: score: recorded 0.826" in conflict.stderr
        assert "'unknown'" not in conflict.stderr
        [report] = [
            r
            for r in json.loads(invoke("import", current, "--amend", "--json").stdout)
            if r["state"] != "ignored"
        ]
        assert report["state"] == "amended"
        runs = {r["score"]: r for r in json.loads(invoke("runs", "--json").stdout)}
        old, new = runs[0.826], runs[0.884]
        assert old["superseded_by"] == new["run_id"] and not old["invalidated"]
        assert old["run_key"] == new["run_key"] == f"verified/{AMENDED}"
        shown = json.loads(invoke("show", f"verified/{AMENDED}", "--json").stdout)["run"]
        assert shown["run_id"] == new["run_id"]

    def test_a_newer_leaderboard_amends_the_rows_that_changed(self, invoke: Invoke) -> None:
        invoke("import", str(BOARDS / NOV))
        invoke("import", str(BOARDS / DEC), expect=1)
        [report] = json.loads(invoke("import", str(BOARDS / DEC), "--amend", "--json").stdout)
        assert report["state"] == "amended"
        old = {
            (b["name"], r["folder"]): r
            for b in load(BOARDS / NOV)["leaderboards"]
            for r in b["results"]
        }
        new = {
            (b["name"], r["folder"]): r
            for b in load(BOARDS / DEC)["leaderboards"]
            for r in b["results"]
        }
        changed = sum(1 for k in old if k in new and differs(old[k], new[k]))
        runs = json.loads(invoke("runs", "--json").stdout)
        # Ten more rows restate a cost summed in another order (its last bits differ):
        # the same fact, no amendment.
        assert sum(1 for r in runs if r["superseded_by"]) == changed == 33
        assert len(runs) == len(old) + len(set(new) - set(old)) + changed

    def test_the_harness_rerun_is_another_run_with_other_cells(self, invoke: Invoke) -> None:
        invoke("import", str(REPORTS))
        cells = []
        for run_id in ("deepseek_chat_dev", "deepseek_chat_dev_rerun"):
            # The reports name no model and no log directory beside them pairs with their
            # names, so each is keyed by its whole name.
            key = f"harness/deepseek__deepseek-chat.{run_id}"
            shown = json.loads(invoke("show", key, "--cells", "23", "--json").stdout)
            cells.append({c["key"] for c in shown["cells"] if c["outcome"] == "passed"})
        assert len(cells[0]) == len(cells[1]) == 8 and cells[0] != cells[1]


def differs(a: Any, b: Any) -> bool:
    """Whether two parsed JSON values state different facts (floats equal to their
    twelfth digit are one number)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() != b.keys() or any(differs(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) != len(b) or any(differs(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return not math.isclose(a, b, rel_tol=1e-12)
    return bool(a != b)
