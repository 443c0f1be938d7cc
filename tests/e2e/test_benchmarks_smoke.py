"""The benchmark scripts run end to end at their smallest settings (figures not checked)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def load_benchmark(name: str) -> Any:
    """A benchmark script as a module (its own imports of the other scripts found)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
        sys.modules.pop(name, None)
    return module


class TestBenchmarkScripts:
    def test_comparison_stats_prints_its_throughput_against_numpy(self) -> None:
        out = run_script("comparison_stats.py", "--cells", "2000", "--repeat", "1")
        assert re.search(r"paired_stats, clustered +[0-9.]+ s +[0-9,]+ cells/s", out)
        assert "RATIO benchledger/plain" in out and "bootstrap mean" in out

    def test_startup_prints_help_reads_and_gates_against_their_goals(self) -> None:
        out = run_script("startup.py", "--repeat", "1", "--demo", "--commands", "runs,gate")
        for case in ("runs --help", "gate --help", "latest (reads ledger)", "matrix (reads"):
            assert re.search(rf"^  {re.escape(case)}.*goal <= ", out, re.M), case
        assert re.search(r"^  gate readiness \(reads ledger\).*goal <= 0.3s CPU", out, re.M)
        assert re.search(r"^[0-9]+ of [0-9]+ goals met$", out, re.M)
        # The floor the goals stand on, measured in the same run.
        assert re.search(r"^  context: the stack alone .* ms CPU +[0-9.]+x", out, re.M)

    def test_ingest_prints_its_ratio_against_the_plain_importer(self) -> None:
        out = run_script("ingest.py", "--cells", "600", "--run-size", "200", "--repeat", "1")
        assert "RATIO benchledger/plain" in out
        # Where the CPU went: the import's share and the catch-up's, beside the wall split.
        assert re.search(
            r"catch_up \(projections\): [0-9]+% \(wall\); [0-9]+% and [0-9]+% \(CPU\)", out
        )

    def test_rebuild_prints_its_ratio_against_the_plain_rebuild(self) -> None:
        out = run_script("rebuild.py", "--cells", "600", "--run-size", "200", "--repeat", "1")
        assert "RATIO benchledger/plain" in out

    def test_datasette_pages_times_every_default_page_at_each_size(self) -> None:
        out = run_script(
            "datasette_pages.py", "--sizes", "200,400", "--run-size", "100", "--repeat", "1"
        )
        # Name, then wall ms per size and its ratio, CPU ms per size and its ratio.
        rows = {
            m[1]: m[2]
            for m in re.finditer(r"^(\S+(?: \S+)*?) +(?:[0-9.]+ +){6} (yes|NO)$", out, re.M)
        }
        pages = ("index", "runs", "cells", "runs?status=", "runs/<run_id>", "query search")
        dashboard = ("dashboards", "dashboard ledger", "dashboard ledger?model=")
        charts = ("chart score-over-time", "chart score-over-time?unit=", "chart page matrix")
        for page in (*pages, "models page", "cells next page", *dashboard, *charts):
            assert page in rows, page
        assert "query run_history" in rows and "events" in rows
        assert re.search(r"^[0-9]+ of [0-9]+ pages met the goal", out, re.M)
        # Too few cells for 500 runs a benchmark at 100 cells a run: one cell a run.
        assert "ledger of 200 cells: 200 runs of <= 1 cells" in out
        assert "ledger of 400 cells: 400 runs of <= 1 cells" in out

    def test_datasette_pages_small_ledger_draws_as_many_chart_points_as_the_large(
        self,
    ) -> None:
        """The score chart draws a benchmark's newest 500 runs: at 10k cells the ledger has
        runs of 4 cells, 500 of each benchmark; at 1M cells runs of 40."""
        pages = load_benchmark("datasette_pages")
        small, large = pages.run_size_for(10_000, 40), pages.run_size_for(1_000_000, 40)
        assert (small, large) == (4, 40)
        assert 10_000 // small // pages.BENCHMARKS == pages.CHART_POINTS

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
        # The database a few days later: its new rows, and only those, are appended.
        grown = re.findall(
            r"grown: the database with ([0-9,]+) more rows, imported into a copy of the "
            r"ledger: [0-9.]+ s = [0-9.]+ of the first import, ([0-9,]+) new runs",
            out,
        )
        assert len(grown) == 2, out
        assert all(0 < int(new) <= int(more) for more, new in grown), grown
        for rows, (_, new) in zip(("200", "400"), grown, strict=True):
            folder = work / f"size-{rows}"
            counts = []
            for name in ("ledger.db", "ledger-grown.db"):
                listed = subprocess.run(
                    [BENCHLEDGER, "--db", str(folder / name), "runs", "--json"],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                counts.append(len(json.loads(listed.stdout)))
            assert counts[1] == counts[0] + int(new)
        for rows, (before, _) in zip(("200", "400"), reimports, strict=True):
            ledger = work / f"size-{rows}" / "ledger.db"
            events = subprocess.run(
                [BENCHLEDGER, "--db", str(ledger), "events", "--json"],
                capture_output=True,
                text=True,
                check=True,
            )
            assert len(json.loads(events.stdout)) == int(before.replace(",", ""))

    def test_orchestrator_import_compares_medians_of_interleaved_runs(self, tmp_path: Path) -> None:
        module = load_benchmark("orchestrator_import")

        def took(*walls: float, cpu: float = 1.5) -> list[object]:
            return [module.Usage(w, 10.0, w * cpu, "") for w in walls]

        # Compared pair by pair: one slow import of three does not decide, nor one fast
        # export; the CPU ratio is the import's CPU (all its processes) to the export's.
        line = module.peer_line(50_000, took(9.0, 30.0, 10.0), took(20.0, 20.0, 25.0, cpu=2.0))
        assert "wall 20.00 s, CPU 40.00 s; benchledger import wall 10.00 s, CPU 15.00 s" in line
        assert "import/export: wall 0.45x, CPU 0.34x" in line
        assert "medians of 3 interleaved pairs; wall s: import 9.00, 30.00, 10.00" in line
        assert "ratios by pair: wall 0.45, 1.50, 0.40, CPU 0.34, 1.12, 0.30" in line
        assert line.endswith("(goals: wall <= 0.50x: met, CPU <= 1.00x: met)")
        # A database past the default file-size limit (200,000 rows) is imported with
        # the limit raised to its size; a smaller one as it is.
        small, big = tmp_path / "small.sqlite", tmp_path / "big.sqlite"
        small.write_bytes(b"x")
        with big.open("wb") as f:
            f.truncate(600 * 2**20)  # sparse: nothing written
        assert module.import_args(tmp_path / "l.db", small)[3:] == [str(small), "--json"]
        assert module.import_args(tmp_path / "l.db", big)[3:] == [
            str(big),
            "--limit",
            f"file-size={600 * 2**20}",
            "--json",
        ]
        assert module.peer_line(10, took(2.0), took(1.0)).endswith(
            "import/export: wall 2.00x, CPU 2.00x "
            "(goals: wall <= 0.50x: NOT met, CPU <= 1.00x: NOT met)"
        )

    @pytest.mark.skipif(
        not os.environ.get("BENCHLEDGER_ORCHESTRATOR_CHECKOUT"),
        reason="set BENCHLEDGER_ORCHESTRATOR_CHECKOUT to a checkout of elizaOS/benchmarks",
    )
    def test_orchestrator_import_repeats_against_the_orchestrators_export(self) -> None:
        checkout = os.environ["BENCHLEDGER_ORCHESTRATOR_CHECKOUT"]
        out = run_script(
            "orchestrator_import.py", "--sizes", "200", "--orchestrator", checkout, "--repeat", "2"
        )
        assert "PEER orchestrator export-viewer-data at 200 rows" in out
        assert "medians of 2 interleaved pairs" in out and "CPU" in out

    @pytest.mark.slow
    @pytest.mark.skipif(importlib.util.find_spec("mlflow") is None, reason="MLflow absent")
    def test_mlflow_peer_prints_both_ratios(self) -> None:
        out = run_script("mlflow_peer.py", "--workload", "2x10", "--latest-repeat", "1")
        assert out.count("RATIO MLflow/benchledger CPU") == 6
        for line in ("import, MLflow cells as metrics", "import, MLflow cells as table"):
            assert line in out
        # The import both ways, the goal judged on the like-for-like one only.
        assert out.count("benchledger import DIR in process, like MLflow") == 2
        assert out.count("benchledger import DIR as a CLI process") == 2
        assert out.count("(goal >= ") == 2 and out.count("(context)") == 2
        for way in ("in one process", "whole process"):
            assert f"latest per (benchmark, agent), {way}:" in out

    def test_import_costs_prints_each_unit_cost_against_the_plain_importer(self) -> None:
        out = run_script("import_costs.py", "--files", "2", "--repeat", "1")
        for name in ("base", "files", "runs", "cells"):
            assert re.search(rf"^  {name} +[0-9,]+ +[0-9,]+ +[0-9,]+ +[0-9.]+ s", out, re.M)
        for unit in ("per file", "per run", "per cell", "fixed"):
            assert re.search(rf"^  {unit} +benchledger +-?[0-9.]+ (ms|µs) +plain", out, re.M)
        # A busy machine can put a unit cost of 2 files and 1 repeat below 0: said, not divided.
        assert re.search(
            r"predict it: ([0-9.]+ s of CPU: files [0-9]+%, runs|nothing: the [a-z, ]+ cost is)",
            out,
        )

    def test_import_costs_recovers_the_unit_costs_its_workloads_are_made_of(self) -> None:
        """Timings made of known unit costs, by each workload's counts in `SHAPES`, give
        those costs back (a shape changed without its arithmetic fails here)."""
        module = load_benchmark("import_costs")
        files, costs = 50, {"file": 1e-3, "run": 5e-4, "cell": 5e-6, "fixed": 0.05}
        medians = {}
        for name, (many, per_file, cells) in module.SHAPES.items():
            n_files = files * many
            n_runs = n_files * per_file
            medians[name] = (
                n_files * costs["file"]
                + n_runs * costs["run"]
                + n_runs * cells * costs["cell"]
                + costs["fixed"]
            )
        found = module.unit_costs(medians, files)
        assert found == pytest.approx(costs)

    def test_import_costs_predicts_shares_only_from_costs_above_0(self) -> None:
        module = load_benchmark("import_costs")
        # 100 files, 1,000 runs, 100,000 cells: 0.1 + 0.5 + 0.5 + 0.05 = 1.15 s.
        costs = {"file": 1e-3, "run": 5e-4, "cell": 5e-6, "fixed": 0.05}
        assert module.prediction(costs).endswith(
            "predict it: 1.15 s of CPU: files 9%, runs 43%, cells 43%, fixed 4%"
        )
        # One unit cost below 0 (noise): no sum and no shares of it.
        line = module.prediction({**costs, "run": -1.3e-4})
        assert line.endswith(
            "nothing: the runs cost is below 0, a difference within the noise "
            "(more --files or --repeat)"
        )
        assert "%" not in line

    def test_mlflow_peer_without_mlflow_says_how_to_install_it_and_exits_0(self) -> None:
        code = (
            "import runpy, sys; sys.modules['mlflow'] = None; "
            f"sys.argv = ['mlflow_peer.py']; runpy.run_path({str(BENCHMARKS / 'mlflow_peer.py')!r},"
            " run_name='__main__')"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "pip install" in done.stdout
