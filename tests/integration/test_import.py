from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Invoke
from tests.helpers import run_json, write_json, write_jsonl


def stored_events(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM stored_events").fetchone()[0])


CELLS = [
    {"key": "t1", "outcome": "passed", "score": 1.0},
    {"key": "t2", "outcome": "failed", "score": 0.0},
]


class TestImportingNativeFiles:
    def test_a_run_and_its_cells_become_events_and_rows(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        path = write_json(tmp_path / "run.json", run_json(cells=CELLS))
        result = invoke("import", str(path), "--json")
        [report] = json.loads(result.stdout)
        assert report["state"] == "imported" and report["new_runs"] == 1
        [run] = json.loads(invoke("runs", "--json").stdout)
        assert (run["benchmark"], run["status"], run["score"], run["cells"]) == (
            "bfcl",
            "succeeded",
            0.5,
            2,
        )
        assert run["cells_passed"] == 1 and run["source_sha256"]
        types = [e["type"] for e in json.loads(invoke("events", "--json").stdout)]
        # A finished run is stated whole in one event, its cells in batches after it.
        assert types == [
            "RunGroupOpened",
            "RunImported",
            "CellsRecorded",
            "BenchmarkRegistered",
            "ResultFileImported",
            "RunGroupClosed",
        ]

    def test_reimporting_the_same_bytes_appends_nothing_and_says_so(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        path = write_json(tmp_path / "run.json", run_json(cells=CELLS))
        invoke("import", str(path))
        before = stored_events(db)
        result = invoke("import", str(path))
        assert "unchanged" in result.stdout
        assert "0 imported" in result.stderr and "1 unchanged" in result.stderr
        assert stored_events(db) == before

    def test_the_same_runs_in_a_reformatted_file_are_unchanged(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        doc = run_json(cells=CELLS)
        invoke("import", str(write_json(tmp_path / "a.json", doc)))
        before = stored_events(db)
        (tmp_path / "b.json").write_text(json.dumps(doc))  # same content, other bytes
        result = invoke("import", str(tmp_path / "b.json"))
        assert "unchanged" in result.stdout
        assert stored_events(db) == before

    def test_a_changed_file_for_the_same_run_conflicts_and_appends_nothing(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        path = write_json(tmp_path / "run.json", run_json(cells=CELLS))
        invoke("import", str(path))
        before = stored_events(db)
        write_json(path, run_json(score=0.9, cells=CELLS))
        result = invoke("import", str(path), expect=1)
        assert "conflict" in result.stdout
        assert "already recorded" in result.stderr and "Error:" in result.stderr
        assert stored_events(db) == before
        [run] = json.loads(invoke("runs", "--json").stdout)
        assert run["score"] == 0.5

    def test_a_malformed_file_names_file_line_and_field_and_appends_nothing(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        invoke("demo")
        before = stored_events(db)
        path = write_jsonl(
            tmp_path / "bad.jsonl",
            [
                {
                    "type": "run",
                    "benchmark": "b",
                    "agent": "a",
                    "model": "m",
                    "status": "succeeded",
                },
                {"type": "cell", "key": "k1", "outcome": "passed"},
                {"type": "cell", "key": "k2", "outcome": "passed", "score": "very"},
            ],
        )
        result = invoke("import", str(path), expect=1)
        assert "bad.jsonl:3: field 'score'" in result.stderr
        assert result.stderr.count("Error:") == 1
        assert stored_events(db) == before

    def test_a_bad_file_in_a_directory_does_not_stop_or_taint_the_others(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        results = tmp_path / "results"
        results.mkdir()
        write_json(results / "a.json", run_json("bfcl"))
        write_json(results / "b.json", {**run_json("gaia"), "status": "weird"})
        (results / "README.txt").write_text("not a result file")
        result = invoke("import", str(results), "--json", expect=1)
        states = {Path(r["path"]).name: r["state"] for r in json.loads(result.stdout)}
        assert states == {"a.json": "imported", "b.json": "failed", "README.txt": "ignored"}
        assert [r["benchmark"] for r in json.loads(invoke("runs", "--json").stdout)] == ["bfcl"]

    def test_a_named_file_of_unknown_format_is_an_error(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        path = tmp_path / "notes.txt"
        path.write_text("hello")
        result = invoke("import", str(path), expect=1)
        assert "not a known result format" in result.stderr

    def test_a_missing_path_is_an_error(self, invoke: Invoke, tmp_path: Path) -> None:
        result = invoke("import", str(tmp_path / "nope.json"), expect=1)
        assert "Error:" in result.stderr and "no such file" in result.stderr

    def test_two_payloads_for_one_cell_key_conflict(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        cells = [*CELLS, {"key": "t1", "outcome": "failed", "score": 0.0}]
        path = write_json(tmp_path / "run.json", run_json(cells=cells))
        result = invoke("import", str(path), expect=1)
        assert "cell 't1' appears twice" in result.stderr
        assert not db.exists() or stored_events(db) == 0

    def test_an_exact_repeat_of_a_cell_is_recorded_once(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        path = write_json(tmp_path / "run.json", run_json(cells=[*CELLS, CELLS[0]]))
        invoke("import", str(path))
        [run] = json.loads(invoke("runs", "--json").stdout)
        assert run["cells"] == 2

    def test_jsonl_files_hold_several_runs(self, invoke: Invoke, tmp_path: Path) -> None:
        header = {
            "type": "run",
            "benchmark": "b",
            "agent": "a",
            "model": "m",
            "status": "succeeded",
            "score": 1.0,
        }
        path = write_jsonl(
            tmp_path / "runs.jsonl",
            [
                {**header, "run_key": "one"},
                {"type": "cell", "key": "k", "outcome": "passed"},
                {**header, "run_key": "two", "status": "failed", "score": None},
            ],
        )
        invoke("import", str(path))
        rows = json.loads(invoke("runs", "--json").stdout)
        assert sorted((r["run_key"], r["status"]) for r in rows) == [
            ("one", "succeeded"),
            ("two", "failed"),
        ]


class TestAmending:
    def test_amend_records_a_new_version_that_supersedes_the_old(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        path = write_json(tmp_path / "run.json", run_json(cells=CELLS, run_key="sub-1"))
        invoke("import", str(path))
        write_json(path, run_json(score=0.9, cells=CELLS, run_key="sub-1"))
        invoke("import", str(path), expect=1)
        [report] = json.loads(invoke("import", str(path), "--amend", "--json").stdout)
        assert report["state"] == "amended"
        runs = {r["score"]: r for r in json.loads(invoke("runs", "--json").stdout)}
        old, new = runs[0.5], runs[0.9]
        assert old["superseded_by"] == new["run_id"] and old["superseded_reason"]
        assert not old["invalidated"] and not new["invalidated"] and not new["superseded_by"]
        [latest] = json.loads(invoke("latest", "--json").stdout)
        assert latest["run_id"] == new["run_id"]
        history = [e["type"] for e in json.loads(invoke("history", old["run_id"], "--json").stdout)]
        assert "RunSuperseded" in history and history[-1] != "RunSuperseded"

    def test_a_superseded_version_is_superseded_never_invalidated(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        path = write_json(tmp_path / "run.json", run_json(cells=CELLS, run_key="sub-1"))
        invoke("import", str(path))
        write_json(path, run_json(score=0.9, cells=CELLS, run_key="sub-1"))
        invoke("import", str(path), "--amend")
        listing = invoke("runs").stdout
        assert "succeeded (superseded)" in listing and "invalidated" not in listing
        [old] = json.loads(invoke("runs", "--status", "superseded", "--json").stdout)
        assert old["score"] == 0.5
        assert json.loads(invoke("runs", "--status", "invalidated", "--json").stdout) == []
        assert "superseded_by" in invoke("show", old["run_id"]).stdout

    def test_the_current_version_competes_and_its_superseded_one_is_not_quarantined(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        path = write_json(tmp_path / "run.json", run_json(score=0.9, cells=CELLS, run_key="k"))
        invoke("import", str(path))
        write_json(path, run_json(score=0.4, cells=CELLS, run_key="k", status="failed"))
        invoke("import", str(path), "--amend")
        quarantined = json.loads(invoke("latest", "--quarantine", "--json").stdout)
        assert [r["quarantine_reason"] for r in quarantined] == ["unsucceeded_run"]
        assert json.loads(invoke("latest", "--json").stdout) == []

    def test_a_run_key_resolves_to_its_current_version_in_show_and_history(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        path = write_json(tmp_path / "run.json", run_json(cells=CELLS, run_key="sub-1"))
        invoke("import", str(path))
        write_json(path, run_json(score=0.9, cells=CELLS, run_key="sub-1"))
        invoke("import", str(path), "--amend")
        write_json(path, run_json(score=0.7, cells=CELLS, run_key="sub-1"))
        invoke("import", str(path), "--amend")
        shown = json.loads(invoke("show", "sub-1", "--json").stdout)["run"]
        assert shown["score"] == 0.7 and shown["superseded_by"] is None
        ids = {r["score"]: r["run_id"] for r in json.loads(invoke("runs", "--json").stdout)}
        events = json.loads(invoke("history", "sub-1", "--json").stdout)
        superseded = [
            (e["stream"], e["data"]["by_run_id"]) for e in events if e["type"] == "RunSuperseded"
        ]
        assert superseded == [(ids[0.5], ids[0.9]), (ids[0.9], ids[0.7])]
        text = invoke("history", "sub-1").stdout
        chain = [line.split()[:2] for line in text.splitlines()[2:5]]
        assert chain == [["1", ids[0.5][:8]], ["2", ids[0.9][:8]], ["3", ids[0.7][:8]]]
        assert f"superseded by {ids[0.9][:8]}" in text

    def test_the_amended_file_imported_again_is_unchanged(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        path = write_json(tmp_path / "run.json", run_json(run_key="sub-1"))
        invoke("import", str(path))
        write_json(path, run_json(score=0.9, run_key="sub-1"))
        invoke("import", str(path), "--amend")
        before = stored_events(db)
        copy = write_json(tmp_path / "copy.json", run_json(score=0.9, run_key="sub-1"))
        assert "unchanged" in invoke("import", str(copy)).stdout
        assert stored_events(db) == before

    def test_a_superseded_run_cannot_be_reinstated(self, invoke: Invoke, tmp_path: Path) -> None:
        path = write_json(tmp_path / "run.json", run_json(run_key="sub-1"))
        invoke("import", str(path))
        write_json(path, run_json(score=0.9, run_key="sub-1"))
        invoke("import", str(path), "--amend")
        old = next(r for r in json.loads(invoke("runs", "--json").stdout) if r["score"] == 0.5)
        result = invoke("reinstate", old["run_id"], "--reason", "x", expect=1)
        assert "superseded" in result.stderr


def junit_report(tmp_path: Path) -> Path:
    report = tmp_path / "junit.xml"
    report.write_text(
        '<testsuite name="pytest" tests="2" failures="1" errors="0" skipped="0">'
        '<testcase classname="t" name="a"/>'
        '<testcase classname="t" name="b"><failure message="boom"/></testcase>'
        "</testsuite>"
    )
    return report


def test_import_options_name_who_ran_files_that_do_not_say(invoke: Invoke, tmp_path: Path) -> None:
    report = junit_report(tmp_path)
    invoke("import", str(report), "--benchmark", "tbench", "--agent", "eliza", "--model", "m1")
    [run] = json.loads(invoke("runs", "--json").stdout)
    assert (run["benchmark"], run["agent"], run["model"], run["score"]) == (
        "tbench",
        "eliza",
        "m1",
        0.5,
    )


class TestImportOptionsOnAFileImportedAlready:
    def states(self, invoke: Invoke, *args: str, expect: int = 0) -> list[str]:
        reports = json.loads(invoke("import", *args, "--json", expect=expect).stdout)
        return [r["state"] for r in reports]

    def test_new_options_are_read_not_ignored(self, invoke: Invoke, tmp_path: Path) -> None:
        # A JUnit run is keyed by who ran it: named, it is another run (a run keyed by its
        # source, e.g. a tb run's, conflicts instead: test_format_terminal_bench_harness_alone).
        report = junit_report(tmp_path)
        assert self.states(invoke, str(report)) == ["imported"]
        assert self.states(invoke, str(report), "--model", "m1") == ["imported"]
        models = sorted(r["model"] for r in json.loads(invoke("runs", "--json").stdout))
        assert models == ["m1", "unknown"]

    def test_the_same_options_again_or_none_append_nothing(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        report = junit_report(tmp_path)
        assert self.states(invoke, str(report), "--model", "m1") == ["imported"]
        events = stored_events(tmp_path / "ledger.db")
        assert self.states(invoke, str(report), "--model", "m1") == ["unchanged"]
        assert self.states(invoke, str(report)) == ["unchanged"]
        assert stored_events(tmp_path / "ledger.db") == events


class TestStreamedFilesAreAppendedWhole:
    def header(self, key: str) -> dict[str, object]:
        return {"type": "run", "run_key": key, "benchmark": "b", "agent": "a", "model": "m"} | {
            "status": "succeeded"
        }

    def test_a_bad_line_after_runs_were_appended_leaves_none_of_the_file(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        invoke("demo")
        before = stored_events(db)
        cells = [{"type": "cell", "key": f"k{i}", "outcome": "passed"} for i in range(1200)]
        bad = {"type": "cell", "key": "bad", "outcome": "passed", "score": "very"}
        path = write_jsonl(
            tmp_path / "late.jsonl",
            [self.header("first"), *cells, self.header("second"), *cells, bad],
        )
        result = invoke("import", str(path), expect=1)
        assert "late.jsonl:2403: field 'score'" in result.stderr
        assert stored_events(db) == before
        assert "first" not in invoke("runs", "--json").stdout

    def test_a_conflict_in_a_later_run_leaves_none_of_the_file(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        one = {"type": "cell", "key": "k", "outcome": "passed"}
        invoke("import", str(write_jsonl(tmp_path / "b.jsonl", [self.header("b"), one])))
        before = stored_events(db)
        changed = {**one, "outcome": "failed"}
        path = write_jsonl(
            tmp_path / "ab.jsonl", [self.header("a"), one, self.header("b"), changed]
        )
        result = invoke("import", str(path), expect=1)
        assert "already recorded with other facts: cells: recorded '1 cells'" in result.stderr
        assert stored_events(db) == before
        assert [r["run_key"] for r in json.loads(invoke("runs", "--json").stdout)] == ["b"]

    def test_a_file_rewritten_between_its_hash_and_its_parse_records_nothing(
        self, invoke: Invoke, db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from benchledger.adapters import formats

        path = write_jsonl(
            tmp_path / "moving.jsonl",
            [self.header("x"), {"type": "cell", "key": "k", "outcome": "passed"}],
        )
        streamed = formats.stream

        def stream_while_someone_appends(*args: Any, **kwargs: Any) -> Iterator[Any]:
            for i, record in enumerate(streamed(*args, **kwargs)):
                if i == 0:
                    with path.open("a") as f:
                        f.write(
                            json.dumps({"type": "cell", "key": "k2", "outcome": "failed"}) + "\n"
                        )
                yield record

        monkeypatch.setattr(formats, "stream", stream_while_someone_appends)
        invoke("demo")
        before = stored_events(db)
        result = invoke("import", str(path), expect=1)
        assert "moving.jsonl: changed while it was being imported" in result.stderr
        assert stored_events(db) == before
