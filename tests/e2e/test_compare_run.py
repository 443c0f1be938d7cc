"""`compare --run` end to end: both sides of a comparison run as real benchmark processes.

Each test writes two benchmark scripts' registry (`x` and `y`, one script) into its own
directory and runs `benchledger compare --run` as a real subprocess. The script records
the environment and config it saw as a line of `seen.ndjson`, and scores its three
cells by model: m1 passes two, m2 all three. `BENCH_FAIL_MODEL` names a model whose
runs exit 1 without a result.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Invoke

BENCHLEDGER = Path(sys.executable).parent / "benchledger"
URL = "http://127.0.0.1:9/v1"
SIDES = ("--a", "openai:m1", "--b", f"vllm:m2@{URL}")

SCRIPT = """
import json, os, sys
from pathlib import Path

out, model, config, benchmark = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
names = ("OPENAI_BASE_URL", "VLLM_BASE_URL", "VLLM_API_KEY", "OPENAI_API_KEY")
seen = {"benchmark": benchmark, "model": model, "config": config,
        "env": {n: os.environ[n] for n in names if n in os.environ}}
with open("seen.ndjson", "a") as f:
    f.write(json.dumps(seen) + "\\n")
if os.environ.get("BENCH_FAIL_MODEL") == model:
    sys.exit(1)
values = [1.0, 0.0, 1.0] if model == "m1" else [1.0, 1.0, 1.0]
cells = [{"key": f"q{i}", "outcome": "passed" if v else "failed", "score": v}
         for i, v in enumerate(values)]
doc = {"schema": "benchledger/run@1", "score": sum(values) / len(values),
       "unit": "accuracy", "cells": cells}
(out / "result.json").write_text(json.dumps(doc))
"""


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.db = root / "ledger.db"
        (root / "bench.py").write_text(textwrap.dedent(SCRIPT))
        entries = []
        for name in ("x", "y"):
            command = json.dumps(
                [sys.executable, "bench.py", "{output_dir}", "{model}", "{config}", name]
            )
            entries.append(f'[benchmarks.{name}]\ncommand = {command}\nunit = "accuracy"\n')
        entries.append(f"[benchmarks.keyed]\ncommand = {command}\nrequired_env = ['BENCH_TOKEN']\n")
        (root / "benchledger.toml").write_text("\n".join(entries))

    def cli(
        self, *args: str, env: dict[str, str] | None = None, expect: int = 0
    ) -> subprocess.CompletedProcess[str]:
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("BENCH_", "BENCHLEDGER_"))
            and k not in ("OPENAI_BASE_URL", "VLLM_BASE_URL", "BENCHMARK_BASE_URL", "VLLM_API_KEY")
        }
        done = subprocess.run(
            [str(BENCHLEDGER), "--db", str(self.db), *args],
            cwd=self.root,
            env={**base, **(env or {})},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == expect, (
            f"exit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
        )
        return done

    def compare(
        self, *args: str, env: dict[str, str] | None = None, expect: int = 0
    ) -> subprocess.CompletedProcess[str]:
        return self.cli("compare", "--run", *args, env=env, expect=expect)

    def seen(self) -> list[dict[str, Any]]:
        path = self.root / "seen.ndjson"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(self.db)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()


def comparison_id(output: str) -> str:
    match = re.match(r"Comparison ID: (cmp_\w+)\n", output)
    assert match, output
    return match[1]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


class TestBothSidesRun:
    def test_the_orchestrator_compare_runs_both_sides_and_is_shown_again(
        self, ws: Workspace
    ) -> None:
        done = ws.compare(*SIDES, "--benchmarks", "x,y", "--max-examples", "3", "--out", "out")
        cid = comparison_id(done.stdout)

        # Both sides ran both benchmarks, each with what the orchestrator's compare sends.
        seen = {(s["model"], s["benchmark"]): s for s in ws.seen()}
        assert sorted(seen) == [("m1", "x"), ("m1", "y"), ("m2", "x"), ("m2", "y")]
        for (model, _), s in seen.items():
            for key in ("max_examples", "max_tasks", "max_questions", "sample", "limit"):
                assert s["config"][key] == 3, (model, key)
            assert "temperature" not in s["config"]
        for benchmark in ("x", "y"):
            a, b = seen["m1", benchmark], seen["m2", benchmark]
            assert "OPENAI_BASE_URL" not in a["env"] and "vllm_base_url" not in a["config"]
            assert b["env"]["OPENAI_BASE_URL"] == URL == b["env"]["VLLM_BASE_URL"]
            assert b["env"]["VLLM_API_KEY"] == "dummy" == b["env"]["OPENAI_API_KEY"]
            assert b["config"]["vllm_base_url"] == URL

        # The orchestrator's table, then the paired statistics of B against A.
        lines = done.stdout.splitlines()
        assert lines[1:5] == ["A: openai:m1", f"B: vllm:m2 @ {URL}", "Benchmarks: x, y", ""]
        header = [c.strip() for c in lines[5].split(" | ")]
        assert header[:5] == ["benchmark", "A: openai:m1", "B: vllm:m2", "delta (B-A)", "winner"]
        assert header[5:] == ["cells", "ci95", "p", "p_holm", "status"]
        assert set(lines[6]) <= {"-", "+"}
        for line in lines[7:9]:
            cells = [c.strip() for c in line.split(" | ")]
            assert cells[1:6] == ["0.6667", "1.0000", "+0.3333", "B", "3"]
            assert cells[9] == "inconclusive"

        # Both groups and all four runs carry the comparison id, one side each.
        groups = ws.query(
            "SELECT json_extract(request, '$.comparison_side'), json_extract(request, '$.agent'), "
            "label FROM run_groups WHERE json_extract(request, '$.comparison_id') = ? "
            "ORDER BY 1",
            cid,
        )
        assert [g[:2] for g in groups] == [("a", "compare"), ("b", "compare")]
        runs = ws.query(
            "SELECT json_extract(provenance, '$.comparison_side'), provider, model, benchmark, "
            "status FROM runs WHERE json_extract(provenance, '$.comparison_id') = ? ORDER BY 1, 4",
            cid,
        )
        assert runs == [
            ("a", "openai", "m1", "x", "succeeded"),
            ("a", "openai", "m1", "y", "succeeded"),
            ("b", "vllm", "m2", "x", "succeeded"),
            ("b", "vllm", "m2", "y", "succeeded"),
        ]

        # compare-<id>.json: the orchestrator's shape.
        doc = json.loads((ws.root / "out" / f"compare-{cid}.json").read_text())
        assert doc["comparison_id"] == cid and doc["created_at"]
        assert (doc["a"]["provider"], doc["a"]["model"], doc["a"]["base_url"]) == (
            "openai",
            "m1",
            None,
        )
        assert (doc["b"]["provider"], doc["b"]["model"], doc["b"]["base_url"]) == (
            "vllm",
            "m2",
            URL,
        )
        assert doc["a"]["run_group"] == next(g[2] for g in groups if g[0] == "a")
        orchestrator_run = {
            "benchmark_id",
            "run_id",
            "status",
            "provider",
            "model",
            "base_url",
            "score",
            "unit",
            "higher_is_better",
            "metrics",
            "duration_seconds",
            "error",
        }
        for side in ("a", "b"):
            assert [r["benchmark_id"] for r in doc[side]["runs"]] == ["x", "y"]
            assert all(orchestrator_run <= r.keys() for r in doc[side]["runs"])
        row = doc["rows"][0]
        assert row["benchmark_id"] == "x" and row["winner"] == "B"
        assert (row["a_status"], row["b_status"]) == ("succeeded", "succeeded")
        assert row["delta"] == pytest.approx(1 / 3)
        assert row["a_run_id"] == doc["a"]["runs"][0]["run_id"]

        # view-comparison prints the very same bytes.
        assert ws.cli("view-comparison", cid).stdout == done.stdout
        shown = json.loads(ws.cli("view-comparison", cid, "--json").stdout)
        assert shown["execution"]["sides"]["b"]["runs"][0]["base_url"] == URL
        assert shown["rows"] == doc["rows"]

    def test_the_vllm_side_gets_its_default_endpoint_or_the_operator_s(self, ws: Workspace) -> None:
        ws.compare("--a", "openai:m1", "--b", "vllm:m2", "--benchmarks", "x")
        ws.compare(
            "--a",
            "openai:m1",
            "--b",
            "vllm:m2",
            "--benchmarks",
            "x",
            "--force",
            env={"VLLM_BASE_URL": "http://10.0.0.7:8000/v1"},
        )
        b_sides = [s for s in ws.seen() if s["model"] == "m2"]
        assert [s["env"]["OPENAI_BASE_URL"] for s in b_sides] == [
            "http://127.0.0.1:8001/v1",
            "http://10.0.0.7:8000/v1",
        ]
        assert all("vllm_base_url" not in s["config"] for s in b_sides)

    def test_a_vllm_base_url_extra_wins_over_the_environment(self, ws: Workspace) -> None:
        ws.cli(
            "run",
            "--benchmarks",
            "x",
            "--agent",
            "eliza",
            "--provider",
            "vllm",
            "--model",
            "m2",
            "--extra",
            json.dumps({"vllm_base_url": URL}),
            env={"VLLM_BASE_URL": "http://10.0.0.7:8000/v1"},
        )
        [seen] = ws.seen()
        assert seen["env"]["OPENAI_BASE_URL"] == URL == seen["env"]["VLLM_BASE_URL"]

    def test_temperature_is_part_of_the_config(self, ws: Workspace) -> None:
        ws.compare(*SIDES, "--benchmarks", "x", "--temperature", "0.7")
        assert {s["config"]["temperature"] for s in ws.seen()} == {0.7}
        assert all("max_examples" not in s["config"] for s in ws.seen())


class TestAttempts:
    def test_succeeded_work_is_skipped_and_force_runs_it_again(self, ws: Workspace) -> None:
        first = ws.compare(*SIDES, "--benchmarks", "x,y", "--max-examples", "3")
        again = ws.compare(*SIDES, "--benchmarks", "x,y", "--max-examples", "3", "--json")
        assert len(ws.seen()) == 4  # nothing ran the second time
        data = json.loads(again.stdout)
        outcomes = [r["outcome"] for s in ("a", "b") for r in data["execution"]["sides"][s]["runs"]]
        assert outcomes == ["skipped"] * 4
        # The skipped work's runs are the comparison's: the same runs, the same scores.
        before = json.loads(ws.cli("view-comparison", comparison_id(first.stdout), "--json").stdout)
        assert [(r["a_run_id"], r["b_run_id"]) for r in data["rows"]] == [
            (r["a_run_id"], r["b_run_id"]) for r in before["rows"]
        ]
        assert [r["winner"] for r in data["rows"]] == ["B", "B"]

        forced = json.loads(
            ws.compare(
                *SIDES, "--benchmarks", "x,y", "--max-examples", "3", "--force", "--json"
            ).stdout
        )
        assert len(ws.seen()) == 8
        runs = [r for s in ("a", "b") for r in forced["execution"]["sides"][s]["runs"]]
        assert [(r["outcome"], r["attempt"]) for r in runs] == [("succeeded", 2)] * 4
        assert {r["a_run_id"] for r in forced["rows"]}.isdisjoint(
            r["a_run_id"] for r in before["rows"]
        )

    def test_a_different_sampling_is_other_work(self, ws: Workspace) -> None:
        ws.compare(*SIDES, "--benchmarks", "x", "--max-examples", "3")
        ws.compare(*SIDES, "--benchmarks", "x", "--max-examples", "2")
        assert [s["config"]["max_examples"] for s in ws.seen()] == [3, 3, 2, 2]

    def test_a_failing_side_is_shown_failed_and_the_exit_is_zero(self, ws: Workspace) -> None:
        done = ws.compare(*SIDES, "--benchmarks", "x,y", env={"BENCH_FAIL_MODEL": "m2"})
        cid = comparison_id(done.stdout)
        row = next(line for line in done.stdout.splitlines() if line.startswith("x "))
        cells = [c.strip() for c in row.split(" | ")]
        assert cells[1:5] == ["0.6667", "n/a (failed)", "n/a", "A"]
        assert cells[-1] == "failed"
        assert "x: failed: B failed" in done.stdout
        doc = json.loads((ws.root / "results" / "comparisons" / f"compare-{cid}.json").read_text())
        assert [r["status"] for r in doc["b"]["runs"]] == ["failed", "failed"]
        assert [r["b_status"] for r in doc["rows"]] == ["failed", "failed"]
        assert ws.cli("view-comparison", cid).stdout == done.stdout
        # The failed side runs again by default; the succeeded one is skipped.
        ws.compare(*SIDES, "--benchmarks", "x,y")
        assert [s["model"] for s in ws.seen()] == ["m1", "m1", "m2", "m2", "m2", "m2"]


class TestStoppedBeforeRecording:
    def test_its_tagged_runs_still_show_the_comparison(
        self, ws: Workspace, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from benchledger.domain.ledger import Ledger

        def fail(*_args: Any, **_kwargs: Any) -> None:
            raise OSError("disk full")

        monkeypatch.setattr(Ledger, "record_comparison", fail)
        registry = str(ws.root / "benchledger.toml")
        result = invoke(
            "compare", "--run", *SIDES, "--benchmarks", "x", "--registry", registry, expect=None
        )
        assert result.exit_code != 0
        cid = comparison_id(result.stderr)
        assert len(ws.seen()) == 2  # both sides ran; their runs are kept
        monkeypatch.undo()
        shown = json.loads(invoke("view-comparison", cid, "--json").stdout)
        assert (shown["a"]["spec"], shown["b"]["spec"]) == ("openai:m1", "vllm:m2")
        [row] = shown["rows"]
        assert (row["benchmark_id"], row["winner"]) == ("x", "B")


class TestUnrun:
    def test_a_benchmark_refused_for_its_environment_says_so(self, ws: Workspace) -> None:
        done = ws.compare(*SIDES, "--benchmarks", "x,keyed", "--json")
        data = json.loads(done.stdout)
        x, keyed = data["rows"]
        assert (x["a_status"], x["b_status"], x["winner"]) == ("succeeded", "succeeded", "B")
        assert (keyed["a_status"], keyed["b_status"], keyed["winner"]) == (
            "refused",
            "refused",
            "n/a",
        )
        assert keyed["status_rule"] == "A did not run; B did not run"
        [entry] = [r for r in data["execution"]["sides"]["a"]["runs"] if r["run_id"] is None]
        assert entry["status"] == "refused" and "BENCH_TOKEN" in entry["error"]
        table = ws.cli("view-comparison", data["comparison_id"]).stdout
        assert "| n/a (refused) | n/a (refused) |" in table


class TestRefusals:
    def test_run_options_need_run(self, invoke: Invoke) -> None:
        result = invoke("compare", "--a", "p:m1", "--b", "p:m2", "--max-examples", "3", expect=2)
        assert "--max-examples only apply with --run" in result.output
        result = invoke("compare", "--a", "p:m1", "--b", f"p:m2@{URL}", expect=2)
        assert "a base URL needs --run" in result.output

    def test_run_needs_benchmarks_and_two_sides(self, invoke: Invoke) -> None:
        assert "--run needs --benchmarks" in invoke("compare", "--run", *SIDES, expect=2).output
        same = invoke("compare", "--run", "--a", "p:m", "--b", "p:m", "--benchmarks", "x", expect=2)
        assert "name the same side" in same.output
        bad = invoke("compare", "--run", "--a", "eliza@p:m", "--b", "p:m", expect=2)
        assert "provider:model[@base_url]" in bad.output

    def test_an_unknown_benchmark_runs_and_records_nothing(self, ws: Workspace) -> None:
        done = ws.compare(*SIDES, "--benchmarks", "x,nope", expect=1)
        assert "nope" in done.stderr
        assert ws.seen() == []
        assert not ws.db.exists() or ws.query("SELECT count(*) FROM runs") == [(0,)]


class TestItsOwnExportsImportedBack:
    def test_the_comparison_file_and_latest_rows_are_the_runs_executed_here(
        self, ws: Workspace
    ) -> None:
        ws.compare(*SIDES, "--benchmarks", "x,y", "--out", "out")
        ws.cli("export-latest", "snapshot")
        before = ws.query("SELECT run_id, status, score, signature FROM runs ORDER BY 1")
        assert len(before) == 4

        done = ws.cli("import", "out", "snapshot", "--json")
        states = {f["path"]: f["state"] for f in json.loads(done.stdout)}
        # The index states no benchmark's required agents (none were stated): it declares
        # nothing; every row file adds what it states to the runs executed here.
        assert states.pop("snapshot/latest/index.json") == "unchanged", done.stdout
        assert set(states.values()) == {"imported"}, done.stdout
        # No run a second time: each row's run_id is the id of a run executed here.
        assert ws.query("SELECT run_id, status, score, signature FROM runs ORDER BY 1") == (before)
        again = json.loads(ws.cli("import", "out", "snapshot", "--json").stdout)
        assert {f["state"] for f in again} == {"unchanged"}, again

        # An exported row names the directory its signature hashed: the benchmark's.
        row = json.loads((ws.root / "snapshot" / "latest" / "x__compare.json").read_text())
        assert row["benchmark_directory"] == "x"
