"""`matrix --grid` / `--pairwise` and the campaign tables on the shared alwm corpus,
checked against the run files' own scores and alwm's own matrices."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchledger.commands.cli import cli
from tests.conftest import CORPUS

EXAMPLES = CORPUS / "eliza_alwm" / "alwm" / "examples"
RUN = EXAMPLES / "benchmark_runs" / "registry-strict-duo"

pytestmark = pytest.mark.skipif(
    not EXAMPLES.is_dir(), reason=f"the shared alwm corpus is not at {EXAMPLES}"
)


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def run_dirs() -> list[Path]:
    """Every run tree with alwm's own matrices: standalone runs and campaign members."""
    return sorted(p.parent.parent for p in EXAMPLES.glob("**/matrices/grid.json"))


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("alwm-matrices") / "ledger.db"
    result = CliRunner().invoke(cli, ["--db", str(db), "import", str(EXAMPLES.parent)])
    assert result.exit_code == 0, result.output
    return db


def matrix(db: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--db", str(db), "matrix", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def grids(db: Path, *args: str) -> dict[str, dict[str, Any]]:
    return {d["run_key"]: d for d in matrix(db, "--grid", *args)}


def score(doc: dict[str, Any], variant: str, prompt: str) -> float:
    return doc["scores"][doc["row_labels"].index(variant)][doc["col_labels"].index(prompt)]


class TestGrid:
    def test_one_cell_is_the_evaluation_files_total_weighted_score(self, ledger: Path) -> None:
        run_id = load(RUN / "manifest.json")["run_id"]
        evaluation = load(RUN / "cells" / "v-repo__p-matrix" / "evaluation.json")
        (doc,) = matrix(ledger, "--grid", "--run", run_id)
        assert score(doc, "v-repo", "p-matrix") == evaluation["total_weighted_score"]

    def test_every_runs_grid_is_alwms_own_grid(self, ledger: Path) -> None:
        ours = grids(ledger)
        dirs = run_dirs()
        assert len(dirs) == 19 and len(ours) == 19  # 14 standalone runs, 5 campaign members
        for run_dir in dirs:
            theirs = load(run_dir / "matrices" / "grid.json")
            doc = ours[load(run_dir / "manifest.json")["run_id"]]
            assert doc["row_labels"] == sorted(theirs["row_labels"]), run_dir
            assert doc["col_labels"] == theirs["col_labels"], run_dir  # alwm's prompt order
            for r, variant in enumerate(theirs["row_labels"]):
                for c, prompt in enumerate(theirs["col_labels"]):
                    assert score(doc, variant, prompt) == theirs["scores"][r][c], run_dir

    def test_the_rubrics_own_weights_give_back_the_recorded_scores(self, ledger: Path) -> None:
        weights = load(RUN / "cells" / "v-cli__p-repo" / "evaluation.json")["weights"]
        text = ",".join(f"{k}={v}" for k, v in weights.items())
        run_id = load(RUN / "manifest.json")["run_id"]
        (doc,) = matrix(ledger, "--grid", "--run", run_id, "--weights", text)
        for cell in sorted((RUN / "cells").iterdir()):
            variant, prompt = cell.name.split("__")
            recorded = load(cell / "evaluation.json")["total_weighted_score"]
            assert score(doc, variant, prompt) == pytest.approx(recorded, abs=1e-6)


class TestPairwise:
    def test_mean_abs_delta_is_alwms_pairwise_matrix(self, ledger: Path) -> None:
        rows = matrix(ledger, "--pairwise")
        by = {(r["run_key"], r["variant_a"], r["variant_b"]): r for r in rows}
        checked = 0
        for run_dir in run_dirs():
            theirs = load(run_dir / "matrices" / "pairwise.json")
            assert theirs["metric"] == "mean_abs_total_score_delta"
            run_id = load(run_dir / "manifest.json")["run_id"]
            labels = theirs["row_labels"]
            for i, a in enumerate(labels):
                for j, b in enumerate(labels):
                    if a == b:
                        continue
                    row = by[(run_id, a, b)]
                    assert row["mean_abs_delta"] == pytest.approx(theirs["scores"][i][j], abs=1e-6)
                    assert row["wins"] + row["losses"] + row["ties"] == row["prompts"]
                    checked += 1
        assert checked == len(rows) > 0


class TestCampaigns:
    def test_each_campaigns_members_and_fingerprints(self, ledger: Path) -> None:
        CliRunner().invoke(cli, ["--db", str(ledger), "runs"])
        conn = sqlite3.connect(ledger)
        conn.row_factory = sqlite3.Row
        campaigns = {r["campaign_id"]: dict(r) for r in conn.execute("SELECT * FROM campaigns")}
        members = [dict(r) for r in conn.execute("SELECT * FROM run_fingerprints")]
        conn.close()
        manifests = sorted(EXAMPLES.glob("campaign_runs/*/manifest.json"))
        assert len(campaigns) == len(manifests) == 3
        for path in manifests:
            manifest = load(path)
            row = campaigns[manifest["campaign_id"]]
            assert row["member_runs"] == len(manifest["runs"])
            assert (
                row["campaign_definition_fingerprint"]
                == (manifest["campaign_definition_fingerprint"])
            )
            for entry in manifest["runs"]:
                (member,) = [m for m in members if m["run_key"] == entry["run_id"]]
                assert member["campaign_id"] == manifest["campaign_id"]
                assert member["run_index"] == entry["run_index"]
                for axis, value in entry["comparison_fingerprints"].items():
                    assert member[axis] == value
