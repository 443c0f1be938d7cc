"""The alwm parser on every alwm file of the shared corpus, checked against alwm's own totals."""

from __future__ import annotations

import copy
import json
import random
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.adapters.formats import alwm
from benchledger.domain.errors import InputFormatError
from benchledger.domain.publication import non_real_marker
from benchledger.domain.records import RunRecord
from tests.conftest import CORPUS, Invoke

ROOT = CORPUS / "eliza_alwm" / "alwm"
EXAMPLES = ROOT / "examples"
RUN = EXAMPLES / "benchmark_runs" / "registry-strict-duo"
CAMPAIGN = EXAMPLES / "campaign_runs" / "multi_suite"
STANDALONE_RUNS = 14
CAMPAIGN_RUNS = 5  # browser_evidence_compare 2, minimal_offline 1, multi_suite 2
CELLS = 67  # 57 in the standalone runs, 10 in the campaign members

pytestmark = pytest.mark.skipif(
    not ROOT.is_dir(), reason=f"the shared alwm corpus is not at {ROOT}"
)


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def parse(path: Path) -> list[RunRecord]:
    return [r for r in alwm.parse(path, path.read_bytes()) if isinstance(r, RunRecord)]


@pytest.fixture(scope="module")
def claimed() -> dict[Path, list[RunRecord]]:
    """Every file the parser claims, with its runs."""
    out = {}
    for path in sorted(p for p in ROOT.rglob("*") if p.is_file()):
        if alwm.detect(path, path.read_bytes()[:4096]):
            out[path] = parse(path)
    return out


class TestWhatIsClaimed:
    def test_run_and_campaign_manifests_are_claimed_and_nothing_else(
        self, claimed: dict[Path, list[RunRecord]]
    ) -> None:
        names = Counter(p.relative_to(EXAMPLES).parts[0] for p in claimed)
        assert names == {"benchmark_runs": STANDALONE_RUNS, "campaign_runs": 3}
        assert all(p.name == "manifest.json" for p in claimed)
        assert not any("cells" in p.parts for p in claimed)

    def test_campaign_members_and_the_schema_sample_are_not_claimed(
        self, claimed: dict[Path, list[RunRecord]]
    ) -> None:
        members = sorted(EXAMPLES.glob("campaign_runs/*/runs/*/manifest.json"))
        assert len(members) == CAMPAIGN_RUNS and not set(members) & set(claimed)
        # examples/v1/manifest.json repeats registry-mixed's manifest without its cells.
        assert EXAMPLES / "v1" / "manifest.json" not in claimed

    def test_no_run_is_counted_twice(self, claimed: dict[Path, list[RunRecord]]) -> None:
        keys = [r.header.run_key for runs in claimed.values() for r in runs]
        assert len(keys) == len(set(keys)) == STANDALONE_RUNS + CAMPAIGN_RUNS


class TestAgainstAlwmsOwnTotals:
    def test_campaign_runs_match_the_published_means_counts_and_statuses(
        self, claimed: dict[Path, list[RunRecord]]
    ) -> None:
        for path in sorted(EXAMPLES.glob("campaign_runs/*/manifest.json")):
            doc = load(path)
            records = {r.header.run_key: r for r in claimed[path]}
            assert len(records) == doc["run_count"] == len(doc["runs"])
            statuses = Counter(str(r.header.status) for r in records.values())
            assert statuses == {k: v for k, v in doc["run_status_summary"].items() if v}
            for entry in doc["runs"]:
                record = records[entry["run_id"]]
                assert record.header.benchmark == entry["benchmark_id"]
                assert len(record.cells) == entry["cell_count"]
                assert record.header.score == entry["mean_total_weighted_score"]
                assert (
                    record.header.config["comparison_fingerprints"]
                    == (entry["comparison_fingerprints"])
                )
                assert (
                    record.header.provenance["campaign"]["git_commit_sha"]
                    == (doc["git_commit_sha"])
                )

    def test_low_scoring_cells_match_the_campaign_analysis_ft_abs_low_counts(
        self, claimed: dict[Path, list[RunRecord]]
    ) -> None:
        for path in sorted(EXAMPLES.glob("campaign_runs/*/manifest.json")):
            analysis = load(path.parent / "reports" / "campaign-analysis.json")
            tagged = {t["code"]: t["signal_count"] for t in analysis["failure_tag_counts"]}
            failed = sum(c.outcome == "failed" for r in claimed[path] for c in r.cells)
            assert failed == tagged.get("FT-ABS-LOW", 0), path

    def test_every_cell_score_matches_the_runs_grid_matrix(
        self, claimed: dict[Path, list[RunRecord]]
    ) -> None:
        checked = 0
        for path, runs in claimed.items():
            for record in runs:
                member = record.header.provenance.get("campaign", {}).get("manifest_relpath")
                run_dir = (path.parent / member).parent if member else path.parent
                grid = load(run_dir / "matrices" / "grid.json")
                expected = {
                    f"{v}__{p}": grid["scores"][i][j]
                    for i, v in enumerate(grid["row_labels"])
                    for j, p in enumerate(grid["col_labels"])
                }
                assert {c.key: c.score for c in record.cells} == expected
                checked += len(expected)
        assert checked == CELLS

    def test_the_fixture_mode_is_recorded_so_publication_quarantines_every_run(
        self, claimed: dict[Path, list[RunRecord]]
    ) -> None:
        for runs in claimed.values():
            for record in runs:
                h = record.header
                assert (h.provider, h.model) == ("mock", "mock-model")
                assert non_real_marker(h.config) == "truthy_non_real_flag"
                assert any("epoch" in q for q in h.provenance["quirks"])
                assert h.started_at is None or h.started_at.year == 2026

    def test_no_published_total_disagrees_with_the_cells(
        self, claimed: dict[Path, list[RunRecord]]
    ) -> None:
        quirks = [
            q for runs in claimed.values() for r in runs for q in r.header.provenance["quirks"]
        ]
        assert all("epoch" in q for q in quirks)


def copy_run(tmp_path: Path) -> Path:
    target = tmp_path / RUN.name
    shutil.copytree(RUN, target)
    return target / "manifest.json"


class TestBrokenCopiesOfRealFiles:
    def test_a_truncated_manifest_names_the_file_and_line(self, tmp_path: Path) -> None:
        manifest = copy_run(tmp_path)
        data = manifest.read_bytes()
        with pytest.raises(InputFormatError) as e:
            list(alwm.parse(manifest, data[: len(data) // 2]))
        assert e.value.path == str(manifest) and e.value.line is not None

    def test_a_missing_run_id_is_named(self, tmp_path: Path) -> None:
        manifest = copy_run(tmp_path)
        doc = load(manifest)
        del doc["run_id"]
        with pytest.raises(InputFormatError) as e:
            list(alwm.parse(manifest, json.dumps(doc).encode()))
        assert e.value.field == "run_id"

    def test_a_retyped_criterion_score_names_the_evaluation_file(self, tmp_path: Path) -> None:
        manifest = copy_run(tmp_path)
        evaluation = manifest.parent / "cells" / "v-repo__p-matrix" / "evaluation.json"
        doc = load(evaluation)
        doc["scores"]["clarity"] = "high"
        evaluation.write_text(json.dumps(doc))
        with pytest.raises(InputFormatError) as e:
            parse(manifest)
        assert (e.value.path, e.value.field) == (str(evaluation), "scores.clarity")

    def test_a_deleted_cell_file_is_named(self, tmp_path: Path) -> None:
        manifest = copy_run(tmp_path)
        response = manifest.parent / "cells" / "v-cli__p-repo" / "benchmark_response.json"
        response.unlink()
        with pytest.raises(InputFormatError, match=r"benchmark_response\.json"):
            parse(manifest)

    def test_a_campaign_whose_member_is_missing_names_the_member(self, tmp_path: Path) -> None:
        shutil.copytree(CAMPAIGN, tmp_path / "c")
        shutil.rmtree(tmp_path / "c" / "runs" / "run0001")
        with pytest.raises(InputFormatError, match="run0001"):
            parse(tmp_path / "c" / "manifest.json")


JUNK = [None, False, 7, -0.5, "", "x", [], {}, ["a"], {"k": "v"}]


def mutate(doc: Any, rng: random.Random) -> Any:
    """Drop or retype one random key of a real document."""
    containers: list[Any] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict | list) and node:
            containers.append(node)
            for child in node.values() if isinstance(node, dict) else node:
                walk(child)

    walk(doc)
    node = rng.choice(containers)
    key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
    if isinstance(node, dict) and rng.random() < 0.5:
        del node[key]
    else:
        node[key] = copy.deepcopy(rng.choice(JUNK))
    return doc


class TestFuzzingRealDocuments:
    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(seed=st.integers(0, 2**32), which=st.sampled_from(["run", "campaign"]))
    def test_mutated_real_manifests_give_records_or_an_input_format_error(
        self, seed: int, which: str
    ) -> None:
        path = (RUN if which == "run" else CAMPAIGN) / "manifest.json"
        doc = mutate(load(path), random.Random(seed))
        try:
            records = list(alwm.parse(path, json.dumps(doc).encode()))
        except InputFormatError:
            return
        for record in records:
            record.json_bytes()


class TestImportingTheCorpus:
    def test_the_cli_imports_every_alwm_run_once(self, invoke: Invoke) -> None:
        reports = json.loads(invoke("import", str(ROOT), "--json").stdout)
        states = Counter(r["state"] for r in reports)
        assert set(states) <= {"imported", "ignored"}
        imported = [r for r in reports if r["state"] == "imported"]
        assert {r["format"] for r in imported} == {"alwm"}
        assert len(imported) == STANDALONE_RUNS + 3
        assert sum(r["runs"] for r in imported) == STANDALONE_RUNS + CAMPAIGN_RUNS

        again = json.loads(invoke("import", str(ROOT), "--json").stdout)
        assert {r["state"] for r in again if r["state"] != "ignored"} == {"unchanged"}

        runs = json.loads(invoke("runs", "--json").stdout)
        assert len(runs) == STANDALONE_RUNS + CAMPAIGN_RUNS
        assert sum(run["cells"] for run in runs) == CELLS
