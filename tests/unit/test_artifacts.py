"""Which files count as generated outputs that must never be committed."""

from __future__ import annotations

from pathlib import Path

from benchledger.adapters.publication.artifacts import Generated


def generated(root: Path) -> Generated:
    return Generated.of(
        results_root=root / "results",
        ledger=root / "ledger.db",
        review_dir=root / "review",
        exports=[root / "latest", root / "viewer_data.json"],
    )


class TestGeneratedOutputs:
    def test_the_ledger_and_its_sidecar_files(self, tmp_path: Path) -> None:
        outputs = generated(tmp_path)
        for name in ("ledger.db", "ledger.db-wal", "ledger.db-shm", "ledger.db-journal"):
            assert outputs.covers(tmp_path / name), name
        assert not outputs.covers(tmp_path / "ledger.db.bak")

    def test_everything_under_results_and_exports(self, tmp_path: Path) -> None:
        outputs = generated(tmp_path)
        assert outputs.covers(tmp_path / "results" / "rg_1" / "stdout.log")
        assert outputs.covers(tmp_path / "latest" / "index.json")
        assert outputs.covers(tmp_path / "viewer_data.json")
        assert not outputs.covers(tmp_path / "results.md")

    def test_trajectories_anywhere(self, tmp_path: Path) -> None:
        assert generated(tmp_path).covers(tmp_path / "suite" / "trajectories" / "t1.json")

    def test_a_review_package_may_commit_only_its_scorecard_and_manifest(
        self, tmp_path: Path
    ) -> None:
        outputs = generated(tmp_path)
        assert not outputs.covers(tmp_path / "review" / "scorecard.md")
        assert not outputs.covers(tmp_path / "review" / "manifest.json")
        assert outputs.covers(tmp_path / "review" / "preflight.json")
