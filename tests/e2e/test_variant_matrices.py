"""`matrix --grid` / `matrix --pairwise` and the campaign read models, end to end on small
alwm-shaped runs written here (and one native run with '<variant>__<prompt>' keys)."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

from benchledger.domain import comparison_stats as cs
from tests import helpers
from tests.conftest import Invoke

EPOCH = "1970-01-01T00:00:00Z"
WEIGHTS = {"clarity": 0.25, "grounding": 0.75}
# variant -> prompt -> (clarity, grounding); total = 0.25 clarity + 0.75 grounding.
SCORES = {
    "v-cli": {"p2": (0.8, 0.4), "p1": (0.2, 0.6), "p3": (1.0, 1.0)},
    "v-repo": {"p2": (0.4, 0.2), "p1": (0.6, 0.2), "p3": (0.2, 1.0)},
}
FINGERPRINTS = {
    "suite_definition": "sha256:s",
    "prompt_set": "sha256:p",
    "prompt_registry_state": "sha256:r",
    "provider_config": "sha256:c",
    "scoring_config": "sha256:x",
    "browser_config": "sha256:b",
}


def write_json(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return helpers.write_json(path, doc)


def total(clarity: float, grounding: float) -> float:
    return WEIGHTS["clarity"] * clarity + WEIGHTS["grounding"] * grounding


def write_run(
    run_dir: Path,
    run_id: str,
    scores: dict[str, dict[str, tuple[float, float]]] = SCORES,
    prompt_ids: list[str] | None = None,
    **manifest: Any,
) -> Path:
    """An alwm benchmark run tree (`manifest.json` + `cells/<variant>__<prompt>/`)."""
    entries = []
    for variant, by_prompt in scores.items():
        for prompt, (clarity, grounding) in by_prompt.items():
            cell_id = f"{variant}__{prompt}"
            rel = f"cells/{cell_id}"
            ids = {"benchmark_id": "bench.vm", "variant_id": variant, "prompt_id": prompt}
            write_json(
                run_dir / rel / "request.json",
                {**ids, "run_id": run_id, "cell_id": cell_id, "model": "m", "created_at": EPOCH},
            )
            write_json(
                run_dir / rel / "benchmark_response.json",
                {
                    **ids,
                    "agent_stack": f"stack-{variant}",
                    "backend_kind": "ollama",
                    "backend_model": "m",
                    "execution_mode": "cli",
                },
            )
            write_json(
                run_dir / rel / "evaluation.json",
                {
                    "scores": {"clarity": clarity, "grounding": grounding},
                    "weights": WEIGHTS,
                    "total_weighted_score": total(clarity, grounding),
                    "evaluated_at": EPOCH,
                },
            )
            entries.append(
                {
                    "cell_id": cell_id,
                    "request_relpath": f"{rel}/request.json",
                    "aggregate_response_relpath": f"{rel}/benchmark_response.json",
                    "evaluation_relpath": f"{rel}/evaluation.json",
                }
            )
    doc = {
        "schema_version": 1,
        "run_id": run_id,
        "benchmark_id": "bench.vm",
        "title": "t",
        "created_at": "2026-04-18T01:00:00Z",
        "rubric_ref": "rubrics/r.json",
        "variant_ids": sorted(scores),
        "prompt_ids": prompt_ids or ["p2", "p1", "p3"],
        "cells": entries,
        **manifest,
    }
    return write_json(run_dir / "manifest.json", doc)


def write_campaign(root: Path) -> Path:
    """A campaign of two members differing in their provider_config fingerprint, and a
    failed third member (no cells)."""
    runs = []
    for i in range(2):
        fingerprints = {**FINGERPRINTS, "provider_config": f"sha256:c{i}"}
        write_run(root / f"runs/run{i:04d}", f"camp__{i:04d}", comparison_fingerprints=fingerprints)
        runs.append(
            {
                "run_id": f"camp__{i:04d}",
                "run_index": i,
                "status": "succeeded",
                "benchmark_id": "bench.vm",
                "manifest_relpath": f"runs/run{i:04d}/manifest.json",
                "comparison_fingerprints": fingerprints,
            }
        )
    runs.append(
        {
            "run_id": "camp__0002",
            "run_index": 2,
            "status": "failed",
            "benchmark_id": "bench.vm",
            "error": "provider unreachable",
        }
    )
    return write_json(
        root / "manifest.json",
        {
            "schema_version": 1,
            "campaign_id": "camp",
            "title": "A campaign",
            "campaign_definition_fingerprint": "sha256:def",
            "campaign_experiment_fingerprints": {"suite_definitions": "sha256:e"},
            "git_commit_sha": "78ab7d2e",
            "git_describe": "v0.2.4",
            "fixture_mode_force_mock": False,
            "dry_run": False,
            "run_count": 3,
            "runs": runs,
        },
    )


def out_json(invoke: Invoke, *args: str) -> Any:
    return json.loads(invoke("matrix", *args, "--json").stdout)


class TestGrid:
    def test_grid_holds_each_cells_weighted_rubric_score(
        self, tmp_path: Path, invoke: Invoke
    ) -> None:
        write_run(tmp_path / "r1", "r1")
        invoke("import", str(tmp_path / "r1"))
        (doc,) = out_json(invoke, "--grid")
        assert doc["run_key"] == "r1" and doc["metric"] == "total_weighted_rubric_score"
        assert doc["row_labels"] == ["v-cli", "v-repo"]
        assert doc["col_labels"] == ["p2", "p1", "p3"]  # the run's own prompt order
        for r, variant in enumerate(doc["row_labels"]):
            for c, prompt in enumerate(doc["col_labels"]):
                assert doc["scores"][r][c] == total(*SCORES[variant][prompt])

    def test_weights_rescore_each_cell_from_its_criteria(
        self, tmp_path: Path, invoke: Invoke
    ) -> None:
        write_run(tmp_path / "r1", "r1")
        invoke("import", str(tmp_path / "r1"))
        (doc,) = out_json(invoke, "--grid", "--weights", "clarity=3,grounding=1")
        assert doc["metric"] == "reweighted_rubric_score"
        clarity, grounding = SCORES["v-repo"]["p1"]
        expected = (3 * clarity + 1 * grounding) / 4
        assert doc["scores"][1][1] == expected != total(clarity, grounding)

    def test_csv_has_one_row_per_cell(self, tmp_path: Path, invoke: Invoke) -> None:
        write_run(tmp_path / "r1", "r1")
        invoke("import", str(tmp_path / "r1"))
        rows = list(csv.DictReader(io.StringIO(invoke("matrix", "--grid", "--csv").stdout)))
        assert len(rows) == 6
        row = next(r for r in rows if (r["variant"], r["prompt"]) == ("v-cli", "p3"))
        assert float(row["score"]) == total(*SCORES["v-cli"]["p3"])

    def test_table_names_the_run_and_shows_the_scores(self, tmp_path: Path, invoke: Invoke) -> None:
        write_run(tmp_path / "r1", "r1")
        invoke("import", str(tmp_path / "r1"))
        out = invoke("matrix", "--grid").stdout
        assert out.splitlines()[0] == "r1 (bench.vm)"
        assert f"{total(*SCORES['v-cli']['p2']):.4g}" in out

    def test_a_native_run_with_variant_prompt_keys_has_a_grid_and_others_none(
        self, tmp_path: Path, invoke: Invoke
    ) -> None:
        lines = [
            {"type": "run", "run_key": "n1", "benchmark": "b", "agent": "a", "model": "m",
             "status": "succeeded", "score": 0.5},
            {"type": "cell", "key": "va__p1", "outcome": "passed", "score": 0.75},
            {"type": "cell", "key": "vb__p1", "outcome": "failed", "score": 0.25},
            {"type": "run", "run_key": "n2", "benchmark": "b", "agent": "a", "model": "m",
             "status": "succeeded", "score": 0.5},
            {"type": "cell", "key": "simple_0", "outcome": "passed", "score": 1.0},
        ]  # fmt: skip
        path = tmp_path / "runs.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        invoke("import", str(path), "--format", "native")
        (doc,) = out_json(invoke, "--grid")
        assert doc["run_key"] == "n1" and doc["scores"] == [[0.75], [0.25]]
        err = invoke("matrix", "--grid", "--run", "n2", expect=2).stderr
        assert "no variant x prompt cells" in err

    def test_selection_by_benchmark_and_run(self, tmp_path: Path, invoke: Invoke) -> None:
        write_run(tmp_path / "r1", "r1")
        write_run(tmp_path / "r2", "r2")
        invoke("import", str(tmp_path))
        assert [d["run_key"] for d in out_json(invoke, "--grid")] == ["r1", "r2"]
        assert [d["run_key"] for d in out_json(invoke, "--grid", "--run", "r2")] == ["r2"]
        assert out_json(invoke, "--grid", "--exclude-benchmarks", "bench.vm") == []

    def test_the_plain_matrix_refuses_grid_only_options(self, invoke: Invoke) -> None:
        assert "need --grid or --pairwise" in invoke("matrix", "--weights", "a=1", expect=2).stderr
        assert "need --grid or --pairwise" in invoke("matrix", "--campaign", "c", expect=2).stderr


class TestPairwise:
    def test_counts_wins_losses_ties_per_prompt_with_paired_statistics(
        self, tmp_path: Path, invoke: Invoke
    ) -> None:
        write_run(tmp_path / "r1", "r1")
        invoke("import", str(tmp_path / "r1"))
        rows = out_json(invoke, "--pairwise")
        assert [(r["variant_a"], r["variant_b"]) for r in rows] == [
            ("v-cli", "v-repo"),
            ("v-repo", "v-cli"),
        ]
        cli, repo = rows
        # p2: 0.5 vs 0.25 win; p1: 0.5 vs 0.3 win; p3: 1.0 vs 0.8 win.
        assert (cli["wins"], cli["losses"], cli["ties"], cli["prompts"]) == (3, 0, 0, 3)
        assert (repo["wins"], repo["losses"]) == (0, 3)
        assert cli["sign_test_p"] == 0.25  # 2 * (1/2)^3, the exact two-sided sign test
        deltas = [
            total(*SCORES["v-cli"][p]) - total(*SCORES["v-repo"][p]) for p in ("p1", "p2", "p3")
        ]
        assert cli["mean_delta"] == sum(deltas) / 3
        expected = cs.paired_stats(
            {p: total(*SCORES["v-cli"][p]) for p in SCORES["v-cli"]},
            {p: total(*SCORES["v-repo"][p]) for p in SCORES["v-repo"]},
        )
        assert cli["p_value"] == expected.p_value and cli["se"] == expected.se
        assert cli["p_holm"] == cli["p_value"]  # one test in a run of two variants

    def test_holm_adjusts_across_a_runs_pairs(self, tmp_path: Path, invoke: Invoke) -> None:
        three = {**SCORES, "v-web": {"p2": (0.0, 0.0), "p1": (0.1, 0.0), "p3": (0.0, 0.2)}}
        write_run(tmp_path / "r1", "r1", three)
        invoke("import", str(tmp_path / "r1"))
        rows = out_json(invoke, "--pairwise")
        assert len(rows) == 6
        raw = {tuple(sorted((r["variant_a"], r["variant_b"]))): r["p_value"] for r in rows}
        tests = sorted(raw)
        adjusted = dict(zip(tests, cs.holm([raw[t] for t in tests]), strict=True))
        for r in rows:
            assert r["p_holm"] == adjusted[tuple(sorted((r["variant_a"], r["variant_b"])))]
        assert any(r["p_holm"] > r["p_value"] for r in rows)

    def test_a_prompt_only_one_variant_answered_is_not_a_win(
        self, tmp_path: Path, invoke: Invoke
    ) -> None:
        uneven = {"v-cli": SCORES["v-cli"], "v-repo": {"p1": SCORES["v-repo"]["p1"]}}
        write_run(tmp_path / "r1", "r1", uneven)
        invoke("import", str(tmp_path / "r1"))
        cli = out_json(invoke, "--pairwise")[0]
        assert (cli["wins"], cli["losses"], cli["ties"], cli["only_a"]) == (1, 0, 0, 2)

    def test_tie_tolerance(self, tmp_path: Path, invoke: Invoke) -> None:
        write_run(tmp_path / "r1", "r1")
        invoke("import", str(tmp_path / "r1"))
        cli = out_json(invoke, "--pairwise", "--tie-tolerance", "0.21")[0]
        assert (cli["wins"], cli["ties"]) == (1, 2)  # only p2 (0.25 apart) stays a win

    def test_csv_and_table(self, tmp_path: Path, invoke: Invoke) -> None:
        write_run(tmp_path / "r1", "r1")
        invoke("import", str(tmp_path / "r1"))
        rows = list(csv.DictReader(io.StringIO(invoke("matrix", "--pairwise", "--csv").stdout)))
        assert [(r["variant_a"], r["wins"], r["losses"]) for r in rows] == [
            ("v-cli", "3", "0"),
            ("v-repo", "0", "3"),
        ]
        table = invoke("matrix", "--pairwise").stdout
        assert "sign_test_p" in table and "v-repo" in table


class TestCampaigns:
    def tables(self, db: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        conn = sqlite3.connect(db)
        conn.row_factory = sqlite3.Row
        campaigns = [dict(r) for r in conn.execute("SELECT * FROM campaigns")]
        members = [dict(r) for r in conn.execute("SELECT * FROM run_fingerprints ORDER BY run_key")]
        conn.close()
        return campaigns, members

    def test_campaign_members_and_their_six_fingerprints(
        self, tmp_path: Path, invoke: Invoke, db: Path
    ) -> None:
        write_campaign(tmp_path / "camp")
        write_run(tmp_path / "solo", "solo", comparison_fingerprints=FINGERPRINTS)
        write_run(tmp_path / "plain", "plain")
        invoke("import", str(tmp_path))
        invoke("runs")  # brings the read models up to date
        campaigns, members = self.tables(db)
        (campaign,) = campaigns
        assert campaign["campaign_id"] == "camp" and campaign["title"] == "A campaign"
        assert campaign["member_runs"] == 3 and campaign["distinct_fingerprint_sets"] == 3
        assert campaign["git_commit_sha"] == "78ab7d2e" and campaign["dry_run"] == 0
        assert json.loads(campaign["experiment_fingerprints"]) == {"suite_definitions": "sha256:e"}
        by_key = {m["run_key"]: m for m in members}
        assert set(by_key) == {"camp__0000", "camp__0001", "camp__0002", "solo"}
        first = by_key["camp__0000"]
        assert (first["campaign_id"], first["run_index"], first["status"]) == (
            "camp",
            0,
            "succeeded",
        )
        assert {axis: first[axis] for axis in FINGERPRINTS} == {
            **FINGERPRINTS,
            "provider_config": "sha256:c0",
        }
        assert by_key["camp__0001"]["provider_config"] == "sha256:c1"
        failed = by_key["camp__0002"]
        assert failed["status"] == "failed" and failed["suite_definition"] is None
        assert by_key["solo"]["campaign_id"] is None
        assert by_key["solo"]["scoring_config"] == "sha256:x"

    def test_rebuild_gives_the_same_tables(self, tmp_path: Path, invoke: Invoke, db: Path) -> None:
        write_campaign(tmp_path / "camp")
        invoke("import", str(tmp_path))
        invoke("runs")
        before = self.tables(db)
        invoke("rebuild")
        assert self.tables(db) == before and before[1]

    def test_grid_of_one_campaign(self, tmp_path: Path, invoke: Invoke) -> None:
        write_campaign(tmp_path / "camp")
        write_run(tmp_path / "solo", "solo")
        invoke("import", str(tmp_path))
        docs = out_json(invoke, "--grid", "--campaign", "camp")
        assert [(d["run_key"], d["campaign_id"]) for d in docs] == [
            ("camp__0000", "camp"),
            ("camp__0001", "camp"),
        ]
        assert out_json(invoke, "--grid", "--campaign", "nope") == []


class TestSelection:
    def test_as_of_shows_the_runs_the_ledger_held_then(
        self, tmp_path: Path, invoke: Invoke
    ) -> None:
        write_run(tmp_path / "a" / "r1", "r1")
        write_run(tmp_path / "b" / "r2", "r2")
        invoke("import", str(tmp_path / "a"))
        head = str(json.loads(invoke("verify", "--json").stdout)["head_position"])
        invoke("import", str(tmp_path / "b"))
        assert [d["run_key"] for d in out_json(invoke, "--grid")] == ["r1", "r2"]
        assert [d["run_key"] for d in out_json(invoke, "--grid", "--as-of", head)] == ["r1"]

    def test_run_group_picks_one_imports_runs(
        self, tmp_path: Path, invoke: Invoke, db: Path
    ) -> None:
        write_run(tmp_path / "a" / "r1", "r1")
        write_run(tmp_path / "b" / "r2", "r2")
        invoke("import", str(tmp_path / "a"))
        invoke("import", str(tmp_path / "b"))
        conn = sqlite3.connect(db)
        (group,) = conn.execute("SELECT run_group_id FROM runs WHERE run_key = 'r2'").fetchone()
        conn.close()
        docs = out_json(invoke, "--pairwise", "--run-group", group[:8])
        assert {d["run_key"] for d in docs} == {"r2"}
