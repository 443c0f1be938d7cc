"""Review packages: signing off a scope, blocking on findings, and checking a package later."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Invoke
from tests.helpers import create_empty_ledger, import_demo_runs, run_json, write_json


@pytest.fixture
def demo(invoke: Invoke, tmp_path: Path) -> Invoke:
    """The demo's runs imported as one's own results: a demo ledger never passes review."""
    import_demo_runs(invoke, tmp_path / "demo_runs")
    return invoke


def chain_at(db: Path, position: int) -> str:
    with closing(sqlite3.connect(db)) as conn:
        return str(
            conn.execute(
                "SELECT chain_sha256 FROM chain WHERE position = ?", (position,)
            ).fetchone()[0]
        )


def package(out: Path) -> tuple[dict[str, Any], str]:
    return json.loads((out / "manifest.json").read_text()), (out / "scorecard.md").read_text()


def review(invoke: Invoke, out: Path, *args: str, expect: int = 0, note: str = "ok") -> Any:
    return invoke(
        "review",
        "--no-run",
        "--reviewer",
        "ana",
        "--note",
        note,
        "--out",
        str(out),
        *args,
        expect=expect,
    )


def recorded_reviews(invoke: Invoke) -> list[dict[str, Any]]:
    events = json.loads(invoke("events", "--json").stdout)
    return [e["data"] for e in events if e["type"] == "ReviewRecorded"]


def import_runs(invoke: Invoke, tmp_path: Path, *docs: dict[str, Any]) -> None:
    paths = [str(write_json(tmp_path / f"{d['run_key']}.json", d)) for d in docs]
    invoke("import", *paths)


class TestACompleteReview:
    def test_writes_the_package_and_records_the_review_at_the_position_it_saw(
        self, demo: Invoke, tmp_path: Path, db: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)  # no registry, no git repository: neither is checked
        out = tmp_path / "review"
        receipt = review(demo, out, "--tolerance", "0.5", note="May runs, checked by hand")
        assert receipt.stdout.startswith("Review ") and " complete at position " in receipt.stdout
        manifest, card = package(out)
        assert manifest["summary"] == {
            "ok": True,
            "latest_rows": 15,
            "inventory_gaps": {"not checked": "no registry"},
            "readiness_findings": 0,
            "artifact_offenders": {"not checked": "not a git repository"},
            "blocking_findings": 0,
        }
        assert manifest["checks"]["preflight"] == {"not checked": "review --no-run"}
        assert (manifest["schema_version"], manifest["reviewed_by"], manifest["latest_dir"]) == (
            1,
            "ana",
            None,
        )
        assert manifest["reviewer_note"] == "May runs, checked by hand"
        assert manifest["filters"] == {
            "include_benchmarks": [],
            "exclude_benchmarks": [],
            "runtime_gates_checked": False,
            "tolerance": 0.5,
            "scoped_partial_matrix": False,
        }
        assert manifest["generated_at"].endswith("Z") and len(manifest["generated_at"]) == 20
        position = manifest["ledger_position"]
        assert manifest["ledger_head_sha256"] == chain_at(db, position)
        assert manifest["ledger_checkpoint"] is None  # none was made, and none is invented
        row = next(r for r in manifest["latest_rows"] if r["benchmark_id"] == "bfcl")
        assert row["file"] == "bfcl__eliza.json" and row["total_tokens"] == 524865
        assert row["input_tokens"] is None and row["status"] == "succeeded"
        assert manifest["gates"]["calibration"]["ok"] is None

        [event] = recorded_reviews(demo)
        data = (out / "manifest.json").read_bytes()
        assert data.endswith(b"}\n") and json.loads(data) == manifest
        assert event["manifest_sha256"] == hashlib.sha256(data).hexdigest()
        assert (event["reviewer"], event["ok"], event["blocking_findings"]) == ("ana", True, 0)
        assert (event["position"], event["head_sha256"]) == (
            position,
            manifest["ledger_head_sha256"],
        )
        verdict_ids = [
            manifest["gates"][g]["verdict_id"]
            for g in ("latest_readiness", "publishability", "comparability")
        ]
        assert event["gate_verdict_ids"] == verdict_ids
        listed = json.loads(demo("gates", "--json").stdout)
        assert {v["verdict_id"] for v in listed} == set(verdict_ids)
        assert {v["position"] for v in listed} == {position}

        assert card.startswith("# Benchmark Review Scorecard\n")
        assert "- Status: `ok`" in card and f"- Ledger position: `{position}`" in card
        assert "## Reviewer Note\n\nMay runs, checked by hand\n" in card
        assert "| latest_readiness | ok | 0 findings |" in card
        assert "## Blocking Findings" not in card
        assert card.count("| succeeded |") == 15

    def test_the_receipt_as_json(self, demo: Invoke, tmp_path: Path) -> None:
        result = review(demo, tmp_path / "r", "--tolerance", "0.5", "--json")
        receipt = json.loads(result.stdout)
        assert receipt["ok"] is True and receipt["blocking_findings"] == []
        assert receipt["manifest_sha256"] == recorded_reviews(demo)[0]["manifest_sha256"]
        assert "complete" in result.stderr

    def test_pipes_in_the_rows_do_not_break_the_scorecard_table(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        import_runs(invoke, tmp_path, run_json(run_key="a", model="left|right", score=0.5))
        review(invoke, tmp_path / "r")
        _, card = package(tmp_path / "r")
        assert "| bfcl | eliza | succeeded | 0.5 | cerebras | left\\|right |" in card


class TestABlockedReview:
    def test_a_blank_note_blocks_but_the_package_is_still_written(
        self, demo: Invoke, tmp_path: Path
    ) -> None:
        out = tmp_path / "r"
        result = review(demo, out, "--tolerance", "0.5", note="   ", expect=1)
        assert "blocked by 1 findings" in result.stdout
        assert "missing_reviewer_note" in result.stderr
        manifest, card = package(out)
        assert manifest["blocking_findings"] == [
            {
                "gate": "review",
                "scope": "reviewer_note",
                "reason": "missing_reviewer_note",
                "value": "",
            }
        ]
        assert manifest["summary"]["ok"] is False and "- Status: `blocked`" in card
        assert "## Blocking Findings" in card
        [event] = recorded_reviews(demo)
        assert (event["ok"], event["blocking_findings"]) == (False, 1)

    def test_gate_findings_block_with_the_readiness_findings(
        self, demo: Invoke, tmp_path: Path
    ) -> None:
        out = tmp_path / "r"
        review(demo, out, "--include-benchmarks", "bfcl,gaia", expect=1)
        manifest, card = package(out)
        assert [(f["gate"], f["scope"], f["reason"]) for f in manifest["blocking_findings"]] == [
            ("latest_readiness", "comparability:bfcl", "score_spread_exceeds_tolerance"),
            ("latest_readiness", "comparability:gaia", "score_spread_exceeds_tolerance"),
        ]
        assert manifest["gates"]["comparability"]["ok"] is False
        assert manifest["summary"]["readiness_findings"] == 2
        assert {r["benchmark_id"] for r in manifest["latest_rows"]} == {"bfcl", "gaia"}
        assert "| latest_readiness | blocked | 2 findings |" in card
        assert recorded_reviews(demo)[0]["scope"]["include"] == ["bfcl", "gaia"]

    def test_no_latest_rows_blocks(self, invoke: Invoke, tmp_path: Path, db: Path) -> None:
        create_empty_ledger(db)
        review(invoke, tmp_path / "r", expect=1)
        manifest, _ = package(tmp_path / "r")
        assert ("review", "no_latest_rows") in {
            (f["gate"], f["reason"]) for f in manifest["blocking_findings"]
        }
        assert manifest["summary"]["latest_rows"] == 0

    def test_calibration_counts_once_there_are_baselines(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        import_runs(
            invoke,
            tmp_path,
            run_json(run_key="e", agent="eliza", score=0.4),
            run_json(run_key="h", agent="hermes", score=0.45),
        )
        review(invoke, tmp_path / "before")
        import_runs(invoke, tmp_path, run_json(run_key="p", agent="perfect_v1", score=0.9))
        review(invoke, tmp_path / "after", expect=1)
        manifest, _ = package(tmp_path / "after")
        assert [(f["gate"], f["scope"], f["reason"]) for f in manifest["blocking_findings"]] == [
            ("calibration", "bfcl::half_v1", "calibration_missing"),
            ("calibration", "bfcl::perfect_v1", "calibration_mismatch"),
            ("calibration", "bfcl::wrong_v1", "calibration_missing"),
        ]
        assert len(recorded_reviews(invoke)[1]["gate_verdict_ids"]) == 4


class TestVerifyReview:
    @pytest.fixture
    def reviewed(self, demo: Invoke, tmp_path: Path) -> Path:
        out = tmp_path / "r"
        review(demo, out, "--include-benchmarks", "bfcl", "--tolerance", "0.5")
        return out

    def test_an_untouched_scope_verifies(self, demo: Invoke, reviewed: Path) -> None:
        out = demo("verify-review", str(reviewed)).stdout
        assert out.startswith("OK: review ") and "nothing in its scope (bfcl) changed" in out

    def test_a_change_outside_the_scope_is_not_listed(self, demo: Invoke, reviewed: Path) -> None:
        gaia = json.loads(demo("latest", "--include-benchmarks", "gaia", "--json").stdout)[0]
        demo("invalidate", gaia["run_id"], "--reason", "outside the review")
        demo("high-score", "set", "gaia", "--label", "sota", "--value", "0.7")
        demo("gate", "readiness", expect=1)
        assert demo("verify-review", str(reviewed)).stdout.startswith("OK: ")

    def test_a_later_change_inside_the_scope_is_listed(
        self, demo: Invoke, reviewed: Path, tmp_path: Path
    ) -> None:
        bfcl = json.loads(demo("latest", "--include-benchmarks", "bfcl", "--json").stdout)[0]
        demo("invalidate", bfcl["run_id"], "--reason", "leaked test set")
        result = demo("verify-review", str(reviewed), "--json", expect=1)
        report = json.loads(result.stdout)
        manifest, _ = package(reviewed)
        assert report["position"] == manifest["ledger_position"] and report["ok"] is False
        [change] = report["changes"]
        assert (change["type"], change["benchmark"], change["run_id"]) == (
            "RunInvalidated",
            "bfcl",
            bfcl["run_id"],
        )
        assert change["position"] > report["position"]
        assert "Error: 1 event touching the reviewed scope (bfcl)" in result.stderr

    def test_a_new_run_in_the_scope_is_listed_event_by_event(
        self, demo: Invoke, reviewed: Path, tmp_path: Path
    ) -> None:
        import_runs(demo, tmp_path, run_json(run_key="late", benchmark="bfcl", score=0.5))
        result = demo("verify-review", str(reviewed), expect=1)
        lines = result.stdout.splitlines()
        assert lines[0].split() == ["position", "type", "benchmark", "run"]
        assert [line.split()[1:3] for line in lines[2:]][:1] == [["RunImported", "bfcl"]]
        assert all(line.split()[2] == "bfcl" for line in lines[2:])

    def test_a_new_high_score_reference_for_the_scope_is_listed(
        self, demo: Invoke, reviewed: Path
    ) -> None:
        demo("high-score", "set", "bfcl", "--label", "sota", "--value", "0.97")
        report = json.loads(demo("verify-review", str(reviewed), "--json", expect=1).stdout)
        assert [(c["type"], c["benchmark"], c["run_id"]) for c in report["changes"]] == [
            ("HighScoreReferenced", "bfcl", None)
        ]

    def test_an_edited_manifest_matches_no_review(self, demo: Invoke, reviewed: Path) -> None:
        path = reviewed / "manifest.json"
        path.write_text(path.read_text().replace('"reviewed_by": "ana"', '"reviewed_by": "bo"'))
        result = demo("verify-review", str(reviewed), expect=1)
        assert "manifest does not match any recorded review (edited?)" in result.stderr

    def test_an_edited_scorecard_is_caught(self, demo: Invoke, reviewed: Path) -> None:
        card = reviewed / "scorecard.md"
        card.write_text(card.read_text().replace("`ok`", "`fine`"))
        result = demo("verify-review", str(reviewed), expect=1)
        assert "scorecard does not match its manifest" in result.stderr

    def test_a_directory_without_a_package_is_an_error(self, demo: Invoke, tmp_path: Path) -> None:
        assert "no review manifest" in demo("verify-review", str(tmp_path), expect=1).stderr
        demo("verify-review", str(tmp_path / "absent"), expect=2)


def registry_with_gaps(folder: Path, *names: str) -> None:
    """A registry whose benchmarks' commands are not installed: one inventory gap each."""
    tables = [f'[benchmarks.{n}]\ncommand = ["no-such-tool-{n}"]\n' for n in names]
    (folder / "benchledger.toml").write_text("\n".join(tables))


class TestInventoryGapsBlockAPackage:
    """Zero inventory gaps in the whole registry, unless the package is a declared scoped
    partial matrix (--include-benchmarks / --exclude-benchmarks): then only those in it."""

    def test_a_gap_outside_the_reviewed_benchmarks_blocks_an_unscoped_package(
        self, demo: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        registry_with_gaps(tmp_path, "b0", "b1")
        out = tmp_path / "r"
        result = review(demo, out, "--tolerance", "0.5", expect=1)
        assert "blocked by 1 findings" in result.stdout
        manifest, card = package(out)
        assert manifest["blocking_findings"] == [
            {
                "gate": "inventory",
                "scope": "registry_entries_without_adapters",
                "reason": "registry entries benchledger cannot run as declared",
                "value": "b0, b1",
            }
        ]
        assert manifest["filters"]["scoped_partial_matrix"] is False
        assert manifest["summary"]["ok"] is False
        assert "| inventory | registry_entries_without_adapters |" in card
        [event] = recorded_reviews(demo)
        assert (event["ok"], event["scope"]["scoped_partial_matrix"]) == (False, False)

    def test_a_scoped_partial_matrix_is_packaged_with_the_gaps_outside_it_recorded(
        self, demo: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        registry_with_gaps(tmp_path, "b0", "b1")
        out = tmp_path / "r"
        review(demo, out, "--tolerance", "0.5", "--include-benchmarks", "bfcl")
        manifest, _ = package(out)
        assert manifest["filters"]["scoped_partial_matrix"] is True
        assert manifest["filters"]["include_benchmarks"] == ["bfcl"]
        assert (manifest["summary"]["ok"], manifest["summary"]["inventory_gaps"]) == (True, 2)
        assert manifest["blocking_findings"] == []
        [event] = recorded_reviews(demo)
        assert (event["ok"], event["scope"]["scoped_partial_matrix"]) == (True, True)

    def test_excluding_the_benchmark_with_the_gap_is_a_scoped_partial_matrix(
        self, demo: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        registry_with_gaps(tmp_path, "b0")
        review(demo, tmp_path / "r", "--tolerance", "0.5", "--exclude-benchmarks", "b0")
        manifest, _ = package(tmp_path / "r")
        assert manifest["filters"]["scoped_partial_matrix"] is True
        assert manifest["summary"]["ok"] is True

    def test_a_gap_inside_the_declared_scope_still_blocks(
        self, demo: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        registry_with_gaps(tmp_path, "b0", "b1")
        out = tmp_path / "r"
        review(demo, out, "--tolerance", "0.5", "--include-benchmarks", "bfcl,b1", expect=1)
        manifest, _ = package(out)
        [finding] = manifest["blocking_findings"]
        assert (finding["gate"], finding["value"]) == ("inventory", "b1")


class TestTheManifestReportsOnlyChecksItRan:
    """A package's figures are what its checks saw; a check it could not run says so."""

    def test_inventory_gaps_of_the_registry_are_counted_not_zeroed(
        self, demo: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        missing = [f'[benchmarks.b{i}]\ncommand = ["no-such-tool-{i}"]\n' for i in range(5)]
        (tmp_path / "benchledger.toml").write_text("\n".join(missing))
        out = tmp_path / "r"
        review(demo, out, "--tolerance", "0.5", expect=1)
        manifest, card = package(out)
        assert manifest["summary"]["inventory_gaps"] == 5
        gaps = manifest["checks"]["inventory"]["gap_list"]
        assert [g["benchmark"] for g in gaps] == [f"b{i}" for i in range(5)]
        assert "- Inventory gaps: `5`" in card
        assert manifest["blocking_findings"][0]["scope"] == "registry_entries_without_adapters"
        assert "- Artifact offenders: `not checked: not a git repository`" in card
        assert "- Preflight: `not checked: review --no-run`" in card

    @pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
    def test_artifact_offenders_are_the_files_git_tracks(
        self, demo: Invoke, tmp_path: Path, db: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
        subprocess.run(["git", "add", "ledger.db"], cwd=tmp_path, check=True)
        out = tmp_path / "r"
        result = review(demo, out, "--tolerance", "0.5")
        manifest, _ = package(out)
        assert manifest["summary"]["artifact_offenders"] == 1
        assert manifest["checks"]["verify_artifacts"]["offenders"] == ["ledger.db"]
        assert "warning: generated outputs tracked or staged" in result.stderr
