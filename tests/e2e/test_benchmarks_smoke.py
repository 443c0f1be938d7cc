"""The benchmark scripts run end to end at their smallest settings (figures not checked)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
BENCHLEDGER = str(Path(sys.executable).parent / "benchledger")


def run_script(name: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / name), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


class TestBenchmarkScripts:
    def test_ingest_prints_its_ratio_against_the_plain_importer(self) -> None:
        out = run_script("ingest.py", "--cells", "600", "--run-size", "200", "--repeat", "1")
        assert "RATIO benchledger/plain" in out

    def test_rebuild_prints_its_ratio_against_the_plain_rebuild(self) -> None:
        out = run_script("rebuild.py", "--cells", "600", "--run-size", "200", "--repeat", "1")
        assert "RATIO benchledger/plain" in out

    def test_scale_prints_import_and_rebuild_rows_per_size(self) -> None:
        out = run_script("scale.py", "--sizes", "300", "--run-size", "100")
        assert "import" in out and "rebuild" in out and "peak RSS" in out

    def test_orchestrator_import_prints_rates_rss_ratio_and_an_empty_reimport(
        self, tmp_path: Path
    ) -> None:
        work = tmp_path / "work"
        out = run_script("orchestrator_import.py", "--sizes", "200,400", "--keep", str(work))
        assert "rows/s" in out and "peak RSS MiB" in out
        assert out.count("RATIO benchledger/plain at ") == 2
        assert "growth 200 -> 400 rows" in out and "not run: " in out
        for rows in ("200", "400"):
            assert re.search(rf"^ +{rows} import +[0-9.]+ +[0-9,]+ +[0-9.]+ ", out, re.M)
        reimports = re.findall(
            r"re-import \(unchanged\): .* appended nothing \(([0-9,]+) events before, "
            r"([0-9,]+) after\)",
            out,
        )
        assert len(reimports) == 2
        assert all(before == after and before != "0" for before, after in reimports)
        for rows, (before, _) in zip(("200", "400"), reimports, strict=True):
            ledger = work / f"size-{rows}" / "ledger.db"
            events = subprocess.run(
                [BENCHLEDGER, "--db", str(ledger), "events", "--json"],
                capture_output=True,
                text=True,
                check=True,
            )
            assert len(json.loads(events.stdout)) == int(before.replace(",", ""))

    @pytest.mark.slow
    @pytest.mark.skipif(importlib.util.find_spec("mlflow") is None, reason="MLflow absent")
    def test_mlflow_peer_prints_both_ratios(self) -> None:
        out = run_script("mlflow_peer.py", "--workload", "2x10")
        assert out.count("RATIO MLflow/benchledger") == 2

    def test_mlflow_peer_without_mlflow_says_how_to_install_it_and_exits_0(self) -> None:
        code = (
            "import runpy, sys; sys.modules['mlflow'] = None; "
            f"sys.argv = ['mlflow_peer.py']; runpy.run_path({str(BENCHMARKS / 'mlflow_peer.py')!r},"
            " run_name='__main__')"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "pip install" in done.stdout
