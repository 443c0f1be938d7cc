"""The benchmark scripts run end to end at their smallest settings (figures not checked)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


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
