from __future__ import annotations

import copy
import json
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.adapters.formats import alwm
from benchledger.domain.errors import InputFormatError
from benchledger.domain.publication import non_real_marker
from benchledger.domain.records import RunRecord, RunStatus

EPOCH = "1970-01-01T00:00:00Z"
# (variant, prompt, score, agent_stack, backend_kind, backend_model)
CELLS = [
    ("v-cli", "p1", 0.8, "alwm-cli", "mock", "mock-model"),
    ("v-cli", "p2", 0.4, "alwm-cli", "mock", "mock-model"),
    ("v-repo", "p1", 0.6, "repo-governed", "mock", "mock-model"),
    ("v-repo", "p2", 0.2, "repo-governed", "mock", "mock-model"),
]


def write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True))
    return path


def write_run(
    run_dir: Path,
    run_id: str = "r1",
    cells: list[tuple[str, str, float, str, str, str]] = CELLS,
    **manifest: Any,
) -> Path:
    """A small alwm benchmark run tree, shaped like `alwm benchmark run` writes it."""
    entries = []
    for variant, prompt, score, stack, kind, model in cells:
        cell_id = f"{variant}__{prompt}"
        rel = f"cells/{cell_id}"
        common = {"benchmark_id": "bench.t", "variant_id": variant, "prompt_id": prompt}
        write(
            run_dir / rel / "request.json",
            {**common, "run_id": run_id, "cell_id": cell_id, "model": model, "created_at": EPOCH},
        )
        write(
            run_dir / rel / "benchmark_response.json",
            {
                **common,
                "agent_stack": stack,
                "backend_kind": kind,
                "backend_model": model,
                "execution_mode": "cli",
                "duration_ms": 3,
            },
        )
        write(
            run_dir / rel / "evaluation.json",
            {
                "scores": {"clarity": score, "grounding": score},
                "weights": {"clarity": 0.5, "grounding": 0.5},
                "total_weighted_score": score,
                "evaluated_at": EPOCH,
                "scoring_backend": "deterministic",
            },
        )
        entries.append(
            {
                "cell_id": cell_id,
                "request_relpath": f"{rel}/request.json",
                "aggregate_response_relpath": f"{rel}/benchmark_response.json",
                "evaluation_relpath": f"{rel}/evaluation.json",
                "raw_response_relpath": f"{rel}/response.raw.txt",
            }
        )
    doc = {
        "schema_version": 1,
        "run_id": run_id,
        "benchmark_id": "bench.t",
        "title": "t",
        "created_at": EPOCH,
        "rubric_ref": "rubrics/r.json",
        "variant_ids": sorted({c[0] for c in cells}),
        "prompt_ids": sorted({c[1] for c in cells}),
        "cells": entries,
        **manifest,
    }
    return write(run_dir / "manifest.json", doc)


def write_campaign(root: Path, runs: list[dict[str, Any]] | None = None, **extra: Any) -> Path:
    """A campaign with two member runs under runs/runNNNN/."""
    if runs is None:
        runs = []
        for i in range(2):
            run_id = f"camp__{i:04d}"
            write_run(
                root / f"runs/run{i:04d}",
                run_id,
                comparison_fingerprints={"suite_definition": f"sha256:{i}"},
                runtime_summary={
                    "started_at_utc": "2026-04-18T01:58:47Z",
                    "finished_at_utc": "2026-04-18T01:58:48Z",
                    "duration_seconds": 0.5,
                },
            )
            runs.append(
                {
                    "run_id": run_id,
                    "run_index": i,
                    "status": "succeeded",
                    "benchmark_id": "bench.t",
                    "cell_count": 4,
                    "mean_total_weighted_score": 0.5,
                    "manifest_relpath": f"runs/run{i:04d}/manifest.json",
                    "comparison_fingerprints": {"suite_definition": f"sha256:{i}"},
                    "duration_seconds": 0.6,
                }
            )
    doc = {
        "schema_version": 1,
        "campaign_id": "camp",
        "campaign_definition_fingerprint": "sha256:c",
        "started_at_utc": "2026-04-18T01:58:47Z",
        "finished_at_utc": "2026-04-18T01:58:49Z",
        "git_commit_sha": "78ab7d2e",
        "git_describe": "v0.2.4-dirty",
        "fixture_mode_force_mock": True,
        "dry_run": False,
        "run_count": len(runs),
        "run_status_summary": {
            "succeeded": sum(r["status"] == "succeeded" for r in runs),
            "failed": sum(r["status"] == "failed" for r in runs),
        },
        "runs": runs,
        **extra,
    }
    return write(root / "manifest.json", doc)


def parse(path: Path) -> list[RunRecord]:
    records = list(alwm.parse(path, path.read_bytes()))
    assert all(isinstance(r, RunRecord) for r in records)
    return records  # type: ignore[return-value]


def detects(path: Path) -> bool:
    return alwm.detect(path, path.read_bytes()[:4096])


class TestDetection:
    def test_claims_a_run_through_its_manifest_only(self, tmp_path: Path) -> None:
        manifest = write_run(tmp_path / "run")
        assert detects(manifest)
        cell_files = [p for p in (tmp_path / "run" / "cells").rglob("*.json")]
        assert cell_files and not any(detects(p) for p in cell_files)

    def test_a_manifest_without_its_cells_directory_is_a_sample_not_a_result(
        self, tmp_path: Path
    ) -> None:
        manifest = write_run(tmp_path / "run")
        sample = tmp_path / "v1" / "manifest.json"
        sample.parent.mkdir()
        sample.write_bytes(manifest.read_bytes())
        assert not detects(sample)

    def test_claims_a_campaign_but_not_its_member_runs(self, tmp_path: Path) -> None:
        campaign = write_campaign(tmp_path / "camp")
        assert detects(campaign)
        assert not detects(tmp_path / "camp/runs/run0000/manifest.json")

    def test_other_json_files_are_not_claimed(self, tmp_path: Path) -> None:
        write_campaign(tmp_path / "camp")
        summary = write(tmp_path / "camp/campaign-summary.json", {"campaign_id": "camp"})
        assert not detects(summary)


class TestRuns:
    def test_variants_times_prompts_become_scored_cells(self, tmp_path: Path) -> None:
        [record] = parse(write_run(tmp_path / "run"))
        assert [c.key for c in record.cells] == [
            "v-cli__p1",
            "v-cli__p2",
            "v-repo__p1",
            "v-repo__p2",
        ]
        assert [c.score for c in record.cells] == [0.8, 0.4, 0.6, 0.2]
        # A rubric score has no pass mark: alwm's own low-score line (0.55) decides.
        assert [c.outcome for c in record.cells] == ["passed", "failed", "passed", "failed"]
        assert record.cells[0].metrics["criteria"] == {"clarity": 0.8, "grounding": 0.8}

    def test_the_run_score_is_the_mean_of_its_cells(self, tmp_path: Path) -> None:
        [record] = parse(write_run(tmp_path / "run"))
        h = record.header
        assert h.score == pytest.approx(0.5)
        assert (h.unit, h.higher_is_better, h.status) == (
            "mean_total_weighted_score",
            True,
            RunStatus.SUCCEEDED,
        )
        assert h.metrics["variant_mean_scores"] == pytest.approx({"v-cli": 0.6, "v-repo": 0.4})
        assert h.metrics["cells_below_low_score"] == 2

    def test_agent_provider_and_model_name_every_variant(self, tmp_path: Path) -> None:
        cells = [*CELLS[:2], ("v-live", "p1", 0.9, "alwm-cli", "ollama", "llama3")]
        [record] = parse(write_run(tmp_path / "run", cells=cells))
        h = record.header
        assert (h.run_key, h.benchmark, h.agent, h.provider, h.model) == (
            "r1",
            "bench.t",
            "alwm-cli",
            "mock+ollama",
            "llama3+mock-model",
        )
        assert h.config["variants"]["v-live"]["backend_kind"] == "ollama"

    def test_a_mock_backend_marks_the_run_as_not_real(self, tmp_path: Path) -> None:
        [record] = parse(write_run(tmp_path / "run"))
        assert record.header.config["mock"] is True
        assert non_real_marker(record.header.config) == "truthy_non_real_flag"

    def test_a_real_backend_is_not_marked(self, tmp_path: Path) -> None:
        cells = [("v", "p", 0.7, "alwm-cli", "ollama", "llama3")]
        [record] = parse(write_run(tmp_path / "run", cells=cells))
        assert "mock" not in record.header.config
        assert non_real_marker(record.header.config) is None

    def test_the_epoch_created_at_is_not_a_start_time(self, tmp_path: Path) -> None:
        [record] = parse(write_run(tmp_path / "run"))
        assert record.header.started_at is None and record.header.ended_at is None
        assert "epoch" in record.header.provenance["quirks"][0]

    def test_a_real_created_at_is_the_start_time(self, tmp_path: Path) -> None:
        [record] = parse(write_run(tmp_path / "run", created_at="2026-04-17T12:00:00Z"))
        assert record.header.started_at is not None
        assert record.header.started_at.isoformat() == "2026-04-17T12:00:00+00:00"

    def test_runtime_summary_gives_start_and_end(self, tmp_path: Path) -> None:
        summary = {
            "started_at_utc": "2026-04-18T01:58:47Z",
            "finished_at_utc": "2026-04-18T01:59:07Z",
        }
        [record] = parse(write_run(tmp_path / "run", runtime_summary=summary))
        h = record.header
        assert h.started_at is not None and h.ended_at is not None
        assert (h.ended_at - h.started_at).total_seconds() == 20

    def test_comparison_fingerprints_are_kept_in_the_config(self, tmp_path: Path) -> None:
        fingerprints = {"suite_definition": "sha256:a", "provider_config": "sha256:b"}
        [record] = parse(write_run(tmp_path / "run", comparison_fingerprints=fingerprints))
        assert record.header.config["comparison_fingerprints"] == fingerprints

    def test_the_same_files_give_identical_records(self, tmp_path: Path) -> None:
        manifest = write_run(tmp_path / "run")
        assert [r.json_bytes() for r in parse(manifest)] == [
            r.json_bytes() for r in parse(manifest)
        ]

    def test_the_cell_files_are_the_runs_members(self, tmp_path: Path) -> None:
        manifest = write_run(tmp_path / "run")
        members = alwm.members(manifest)
        assert len(members) == 12 and all(p.is_file() for p in members)
        assert {p.name for p in members} == {
            "request.json",
            "benchmark_response.json",
            "evaluation.json",
        }


class TestCampaigns:
    def test_the_campaign_yields_each_member_run_with_campaign_provenance(
        self, tmp_path: Path
    ) -> None:
        records = parse(write_campaign(tmp_path / "camp"))
        assert [r.header.run_key for r in records] == ["camp__0000", "camp__0001"]
        h = records[0].header
        assert h.provenance["campaign"]["git_commit_sha"] == "78ab7d2e"
        assert h.provenance["campaign"]["run_index"] == 0
        assert h.config["fixture_mode_force_mock"] is True and h.config["mock"] is True
        assert h.started_at is not None and h.metrics["duration_seconds"] == 0.6
        assert "quirks" not in h.provenance or all("epoch" in q for q in h.provenance["quirks"])

    def test_members_are_the_member_manifests_and_their_cells(self, tmp_path: Path) -> None:
        members = alwm.members(write_campaign(tmp_path / "camp"))
        assert sum(p.name == "manifest.json" for p in members) == 2
        assert len(members) == 2 + 2 * 12

    def test_a_member_named_directly_is_the_same_run_as_through_its_campaign(
        self, tmp_path: Path
    ) -> None:
        campaign = parse(write_campaign(tmp_path / "camp"))
        [direct] = parse(tmp_path / "camp/runs/run0001/manifest.json")
        assert direct.json_bytes() == campaign[1].json_bytes()

    def test_a_failed_member_is_a_failed_run_with_the_campaigns_message(
        self, tmp_path: Path
    ) -> None:
        failed = {"run_id": "camp__0000", "run_index": 0, "status": "failed", "benchmark_id": "b"}
        failure = {"run_index": 0, "run_id": "camp__0000", "message": "FileNotFoundError: x"}
        [record] = parse(write_campaign(tmp_path / "camp", [failed], failures=[failure]))
        h = record.header
        assert (h.status, h.error, h.score, record.cells) == (
            RunStatus.FAILED,
            "FileNotFoundError: x",
            None,
            (),
        )

    def test_published_totals_that_disagree_with_the_cells_are_recorded(
        self, tmp_path: Path
    ) -> None:
        path = write_campaign(tmp_path / "camp")
        doc = json.loads(path.read_text())
        doc["runs"][0]["mean_total_weighted_score"] = 0.9
        doc["runs"][0]["cell_count"] = 5
        doc["run_status_summary"] = {"succeeded": 1, "failed": 1}
        write(path, doc)
        quirks = parse(path)[0].header.provenance["quirks"]
        assert any("mean_total_weighted_score 0.9" in q for q in quirks)
        assert any("cell_count 5" in q for q in quirks)
        assert any("run_status_summary" in q for q in quirks)
        assert parse(path)[0].header.score == pytest.approx(0.5)

    def test_a_dry_run_campaign_states_no_runs(self, tmp_path: Path) -> None:
        path = write_campaign(tmp_path / "camp", [], dry_run=True, run_count=3)
        assert parse(path) == []

    def test_a_member_with_another_run_id_is_refused(self, tmp_path: Path) -> None:
        path = write_campaign(tmp_path / "camp")
        doc = json.loads(path.read_text())
        doc["runs"][1]["run_id"] = "camp__0007"
        write(path, doc)
        with pytest.raises(InputFormatError) as e:
            parse(path)
        assert e.value.field == "runs[1].run_id" and e.value.path == str(path)


class TestBrokenInput:
    def test_truncated_json_names_the_file_and_line(self, tmp_path: Path) -> None:
        manifest = write_run(tmp_path / "run")
        data = manifest.read_bytes()[:-40]
        with pytest.raises(InputFormatError) as e:
            list(alwm.parse(manifest, data))
        assert e.value.path == str(manifest) and e.value.line is not None

    def test_a_missing_required_key_is_named(self, tmp_path: Path) -> None:
        manifest = write_run(tmp_path / "run")
        doc = json.loads(manifest.read_text())
        del doc["cells"][2]["evaluation_relpath"]
        with pytest.raises(InputFormatError) as e:
            list(alwm.parse(manifest, json.dumps(doc).encode()))
        assert e.value.field == "cells[2].evaluation_relpath"

    def test_a_wrong_type_in_a_cell_file_names_that_file_and_field(self, tmp_path: Path) -> None:
        manifest = write_run(tmp_path / "run")
        evaluation = tmp_path / "run/cells/v-repo__p1/evaluation.json"
        write(evaluation, {**json.loads(evaluation.read_text()), "total_weighted_score": "0.6"})
        with pytest.raises(InputFormatError) as e:
            parse(manifest)
        assert (e.value.path, e.value.field) == (str(evaluation), "total_weighted_score")

    def test_a_non_finite_score_is_refused(self, tmp_path: Path) -> None:
        manifest = write_run(tmp_path / "run")
        evaluation = tmp_path / "run/cells/v-cli__p1/evaluation.json"
        text = evaluation.read_text().replace(
            '"total_weighted_score": 0.8', '"total_weighted_score": NaN'
        )
        evaluation.write_text(text)
        with pytest.raises(InputFormatError, match="total_weighted_score"):
            parse(manifest)

    def test_a_missing_cell_file_is_named(self, tmp_path: Path) -> None:
        manifest = write_run(tmp_path / "run")
        request = tmp_path / "run/cells/v-cli__p2/request.json"
        request.unlink()
        with pytest.raises(InputFormatError) as e:
            parse(manifest)
        assert e.value.path == str(request)

    def test_a_path_out_of_the_run_is_refused(self, tmp_path: Path) -> None:
        manifest = write_run(tmp_path / "run")
        doc = json.loads(manifest.read_text())
        doc["cells"][0]["request_relpath"] = "../../etc/passwd"
        with pytest.raises(InputFormatError) as e:
            list(alwm.parse(manifest, json.dumps(doc).encode()))
        assert e.value.field == "cells[0].request_relpath"

    def test_a_cell_file_of_another_cell_is_refused(self, tmp_path: Path) -> None:
        manifest = write_run(tmp_path / "run")
        doc = json.loads(manifest.read_text())
        doc["cells"][0]["request_relpath"] = "cells/v-cli__p2/request.json"
        with pytest.raises(InputFormatError) as e:
            list(alwm.parse(manifest, json.dumps(doc).encode()))
        assert e.value.field == "cell_id"

    def test_a_cell_listed_twice_is_refused(self, tmp_path: Path) -> None:
        manifest = write_run(tmp_path / "run")
        doc = json.loads(manifest.read_text())
        doc["cells"].append(doc["cells"][0])
        with pytest.raises(InputFormatError, match="listed twice"):
            list(alwm.parse(manifest, json.dumps(doc).encode()))


def mutate(doc: Any, rng: random.Random, replacements: list[Any]) -> Any:
    """Drop or retype one random key somewhere in a JSON document."""
    containers: list[Any] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict | list) and node:
            containers.append(node)
            for child in node.values() if isinstance(node, dict) else node:
                walk(child)

    walk(doc)
    if not containers:
        return doc
    node = rng.choice(containers)
    key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
    if isinstance(node, dict) and rng.random() < 0.4:
        del node[key]
    else:
        node[key] = copy.deepcopy(rng.choice(replacements))
    return doc


JUNK = [None, True, 0, -1, 1e308, "", "x", "../x", [], {}, [1], {"a": 1}, "1970-01-01T00:00:00Z"]
TARGETS = ["manifest.json", "cells/v-cli__p1/evaluation.json", "cells/v-repo__p2/request.json"]


def parses_or_refuses(path: Path, data: bytes) -> None:
    try:
        records = list(alwm.parse(path, data))
    except InputFormatError:
        return
    for record in records:
        record.json_bytes()  # every record is valid and serialisable


class TestFuzzing:
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(seed=st.integers(0, 2**32), target=st.sampled_from(TARGETS), rounds=st.integers(1, 3))
    def test_mutated_files_give_records_or_an_input_format_error(
        self, seed: int, target: str, rounds: int
    ) -> None:
        rng = random.Random(seed)
        with tempfile.TemporaryDirectory() as tmp:
            manifest = write_run(Path(tmp) / "run")
            victim = Path(tmp) / "run" / target
            doc = json.loads(victim.read_text())
            for _ in range(rounds):
                doc = mutate(doc, rng, JUNK)
            victim.write_text(json.dumps(doc))
            parses_or_refuses(manifest, manifest.read_bytes())
            alwm.members(manifest)  # never raises either

    @settings(max_examples=100, deadline=None)
    @given(data=st.binary(max_size=300))
    def test_arbitrary_bytes_give_an_input_format_error(self, data: bytes) -> None:
        with pytest.raises(InputFormatError):
            list(alwm.parse(Path("manifest.json"), data))

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(seed=st.integers(0, 2**32))
    def test_mutated_campaigns_give_records_or_an_input_format_error(self, seed: int) -> None:
        rng = random.Random(seed)
        with tempfile.TemporaryDirectory() as tmp:
            campaign = write_campaign(Path(tmp) / "camp")
            doc = mutate(json.loads(campaign.read_text()), rng, JUNK)
            parses_or_refuses(campaign, json.dumps(doc).encode())
