"""`tb run` results.json files, real ones, and the rest of the corpus they must not claim.

The shared corpus holds no `tb run` output, so the real files are read from a checkout of
laude-institute/terminal-bench-leaderboard (checked at 8e1925a397d7ed859c027cc19b3a3d90c16ef8df)
named by BENCHLEDGER_TERMINAL_BENCH_LEADERBOARD; without it those tests skip. Its
`results/terminal-bench-core@0.1.1/` holds 39 run folders with run_metadata.json, 5
results.json without it (cursor-cli) and 10 published alone renamed by their run
(goose: `<run_id>_results.json`, `<run_id>__results.json`).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters import formats
from benchledger.adapters.formats import terminal_bench_harness
from benchledger.domain.errors import PartOfResultError, UnknownFormatError
from benchledger.domain.records import RunRecord
from tests.conftest import CORPUS, Invoke

LEADERBOARD = os.environ.get("BENCHLEDGER_TERMINAL_BENCH_LEADERBOARD", "")
needs_leaderboard = pytest.mark.skipif(
    not LEADERBOARD,
    reason="set BENCHLEDGER_TERMINAL_BENCH_LEADERBOARD to a checkout of "
    "laude-institute/terminal-bench-leaderboard",
)
needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"the shared corpus is not at {CORPUS}"
)


def head(path: Path) -> bytes:
    with path.open("rb") as f:
        return f.read(4096)


def claimed_runs() -> list[Path]:
    """Every file of the checkout the harness format claims."""
    root = Path(LEADERBOARD)
    return sorted(
        p for p in root.rglob("*.json") if p.is_file() and terminal_bench_harness.detect(p, head(p))
    )


def alone(paths: list[Path]) -> list[Path]:
    return [p for p in paths if not (p.parent / "run_metadata.json").is_file()]


def stated(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


@needs_corpus
class TestTheRestOfTheCorpusIsNotClaimed:
    def test_no_corpus_file_is_taken_for_a_tb_run(self) -> None:
        # The corpus holds no tb run output: a claim would change another format's file.
        files = sorted(p for p in CORPUS.rglob("*") if p.is_file())
        assert len(files) > 1000
        claimed = [p for p in files if terminal_bench_harness.detect(p, head(p))]
        assert claimed == []

    def test_results_files_of_other_harnesses_keep_their_formats(self) -> None:
        named = sorted(p for p in CORPUS.rglob("*results*.json") if p.is_file())
        found = {p.relative_to(CORPUS).as_posix(): detected(p) for p in named}
        swebench = {k: v for k, v in found.items() if k.startswith("swebench/")}
        assert len(swebench) == 8 and set(swebench.values()) == {"swebench"}
        # The vendor submissions' results.json and tallies are members of their runs.
        assert Counter(found.values()) == Counter(
            {"swebench": 8, "lm_eval": 1, "terminal_bench": 4, None: 12}
        )


def detected(path: Path) -> str | None:
    """The format that reads the file, None for one no format reads alone."""
    try:
        return formats.detect(path, head(path)).NAME
    except (UnknownFormatError, PartOfResultError):
        return None


@needs_leaderboard
class TestRealRunsPublishedAlone:
    def test_the_checkout_holds_the_runs_published_alone(self) -> None:
        runs = claimed_runs()
        lone = alone(runs)
        assert len(runs) == 54
        assert len(lone) == 15
        assert sum(1 for p in lone if p.name != "results.json") == 10

    def test_each_imports_alone_as_one_run_with_the_accuracy_and_trials_it_states(
        self, invoke: Invoke
    ) -> None:
        for path in alone(claimed_runs()):
            doc = stated(path)
            [report] = json.loads(invoke("import", str(path), "--json").stdout)
            assert (report["state"], report["format"], report["new_runs"]) == (
                "imported",
                "terminal_bench_harness",
                1,
            ), path
            [run_id] = report["run_ids"]
            [run] = [
                r for r in json.loads(invoke("runs", "--json").stdout) if r["run_id"] == run_id
            ]
            assert run["score"] == doc["accuracy"], path
            assert run["cells"] == len(doc["results"]), path
            assert (run["model"], run["agent"]) == ("unknown", "unknown"), path
            [again] = json.loads(invoke("import", str(path), "--json").stdout)
            assert (again["state"], again["new_runs"]) == ("unchanged", 0), path
        assert len(json.loads(invoke("runs", "--json").stdout)) == 15

    def test_model_names_the_model_of_a_run_published_alone(self, invoke: Invoke) -> None:
        lone = [p for p in alone(claimed_runs()) if "goose_claude-4-opus" in str(p)]
        assert len(lone) == 5
        invoke("import", str(lone[0].parent), "--model", "claude-opus-4", "--agent", "goose")
        runs = json.loads(invoke("runs", "--json").stdout)
        assert sorted(r["score"] for r in runs) == sorted(stated(p)["accuracy"] for p in lone)
        assert {(r["agent"], r["model"]) for r in runs} == {("goose", "claude-opus-4")}

    def test_runs_with_run_metadata_are_read_as_before(self) -> None:
        for path in claimed_runs():
            metadata = path.parent / "run_metadata.json"
            if not metadata.is_file():
                continue
            assert terminal_bench_harness.members(path) == [metadata]
            [record] = terminal_bench_harness.parse(path, path.read_bytes())
            assert isinstance(record, RunRecord)
            assert record.header.run_key == stated(metadata)["run_id"], path
            assert record.header.score == stated(path)["accuracy"], path
            assert len(record.cells) == len(stated(path)["results"]), path
