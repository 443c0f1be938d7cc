"""The Python API: runs and cells recorded from Python code through the `run` path, seen
by `runs`, `show`, `follow` and Datasette (while open, too), and read back as records."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import benchledger
from benchledger.adapters.api import recording
from benchledger.adapters.publication.browse import datasette_for
from benchledger.commands.cli import cli
from benchledger.domain.errors import InputFormatError, RunAlreadyFinishedError
from tests.conftest import Invoke
from tests.e2e.test_datasette import get_json
from tests.e2e.test_run import PROCESS_TIMEOUT, eventually
from tests.integration.test_postgres import URL as POSTGRES_URL
from tests.integration.test_postgres import store_url  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "python_api.py"
SECRET = "sk-proj-Zq8XvT2mN4bK7wR9pL3sY6dF1hJ5gA0c"
WORK: dict[str, Any] = {"benchmark": "toy_qa", "agent": "my-agent", "provider": "local"}

# Records 5 cells, then holds the run open until the file `go` exists, then adds the
# rest: what another process sees meanwhile is what was flushed, not what was finished.
HOLDING = """
import sys, time
from pathlib import Path
import benchledger
target, db = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
with benchledger.open(target, db=db) as ledger:
    with ledger.run(benchmark="held", agent="a", model="m", run_key="held-1") as run:
        for i in range(5):
            run.cell(f"c{i}", "passed", score=1.0)
        while not Path("go").exists():
            time.sleep(0.05)
        for i in range(5, 1000):
            run.cell(f"c{i}", "passed" if i % 2 else "failed")
print(run.ending.status, run.ending.score)
"""


@pytest.fixture
def ledger(db: Path) -> Iterator[benchledger.Ledger]:
    with benchledger.open(db) as opened:
        yield opened


def cli_json(invoke: Invoke, *args: str) -> Any:
    return json.loads(invoke(*args, "--json").stdout)


def python(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


class TestTheExampleScript:
    def test_uses_at_most_ten_lines_of_the_api(self) -> None:
        code = [
            line
            for line in EXAMPLE.read_text().split('"""', 2)[2].splitlines()
            if line.strip() and not line.lstrip().startswith(("#", "import", "from"))
        ]
        assert len(code) <= 10, code

    def test_records_a_thousand_cells_that_runs_show_and_datasette_show(
        self, tmp_path: Path, invoke: Invoke, db: Path
    ) -> None:
        out = python(str(EXAMPLE), str(db), cwd=tmp_path)
        run_key = out.split()[0]
        assert "status='succeeded', score=0.75" in out

        (row,) = cli_json(invoke, "runs")
        assert (row["run_key"], row["status"], row["score"], row["unit"]) == (
            run_key,
            "succeeded",
            0.75,
            "pass_rate",
        )
        assert (row["cells"], row["cells_passed"], row["cells_failed"]) == (1000, 750, 250)
        assert (row["attempt"], row["source"], row["config"]) == (1, "executed", {"temperature": 0})
        shown = cli_json(invoke, "show", run_key, "--cells", "1000")
        assert len(shown["cells"]) == 1000
        assert shown["cells"][0] == {
            "key": "question-0",
            "outcome": "failed",
            "score": 0.0,
            "metrics": {},
        }
        ds = datasette_for(db)
        (browsed,) = get_json(ds, "/ledger/runs.json?_shape=array")
        assert (browsed["run_key"], browsed["cells"], browsed["score"]) == (run_key, 1000, 0.75)
        cells = get_json(ds, f"/ledger/cells.json?run_id={row['run_id']}&_shape=array&_size=max")
        assert len(cells) == 1000


class TestCellsWhileTheRunIsOpen:
    def test_another_process_sees_them_before_the_run_ends(
        self, tmp_path: Path, invoke: Invoke, db: Path
    ) -> None:
        script = tmp_path / "holding.py"
        script.write_text(HOLDING)
        process = subprocess.Popen(
            [sys.executable, str(script), str(db)],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:

            def open_with_five() -> bool:
                listed = invoke("runs", "--json", expect=None)  # none yet while it starts
                if listed.exit_code != 0:
                    return False
                rows = json.loads(listed.stdout)
                return [(r["status"], r["cells"]) for r in rows] == [("running", 5)]

            eventually(open_with_five, "5 cells of a running run", seconds=30)
            assert process.poll() is None
            assert cli_json(invoke, "show", "held-1")["run"]["status"] == "running"
            (tmp_path / "go").touch()
            stdout, stderr = process.communicate(timeout=PROCESS_TIMEOUT)
        finally:
            process.kill()
        assert process.returncode == 0, stderr
        assert stdout.split() == ["succeeded", str(503 / 1000)]
        (row,) = cli_json(invoke, "runs")
        assert (row["status"], row["cells"], row["cells_passed"]) == ("succeeded", 1000, 503)

    def test_they_are_flushed_within_about_a_second_without_more_cells(
        self, ledger: benchledger.Ledger, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        with ledger.run(**WORK, model="m") as run:
            run.cell("only", "passed")
            with benchledger.open(ledger.path) as reader:
                eventually(lambda: reader.show(run.run_id).cells == 1, "the flushed cell")
                assert reader.show(run.run_id).status == "running"

    def test_the_lease_is_renewed_while_the_run_is_open(
        self, ledger: benchledger.Ledger, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(recording, "RENEW_SECONDS", 0.1)

        def renewals() -> int:
            events = cli_json(invoke, "history", run.run_id)
            return sum(e["type"] == "LeaseRenewed" for e in events)

        with ledger.run(**WORK, model="m") as run:
            eventually(renewals, "a lease renewal")
            run.cell("a", "passed")
        assert ledger.show(run.run_id).status == "succeeded"

    def test_a_full_buffer_is_appended_at_once(self, ledger: benchledger.Ledger) -> None:
        with ledger.run(**WORK, model="m") as run:
            for i in range(recording.FLUSH_CELLS):
                run.cell(f"c{i}", "passed")
            # Read through the events: the background flush may not have come yet.
            assert ledger.show(run.run_id).cells == recording.FLUSH_CELLS


@pytest.mark.postgres
@pytest.mark.skipif(
    not POSTGRES_URL, reason="set BENCHLEDGER_TEST_POSTGRES_URL to run the PostgreSQL tests"
)
class TestOnPostgres:
    def follow(self, url: str, reader: Path) -> list[tuple[str, int]]:
        """(status, cells) of every run in the reader's own read model, after one poll."""
        result = CliRunner().invoke(
            cli, ["--db", str(reader), "--event-store", url, "follow", "--polls", "1"]
        )
        assert result.exit_code == 0, result.stderr + repr(result.exception)
        with closing(sqlite3.connect(reader)) as conn:
            return [tuple(row) for row in conn.execute("SELECT status, cells FROM runs")]

    def test_follow_sees_the_cells_while_the_run_is_open(
        self,
        store_url: str,  # noqa: F811
        tmp_path: Path,
    ) -> None:
        script = tmp_path / "holding.py"
        script.write_text(HOLDING)
        process = subprocess.Popen(
            [sys.executable, str(script), store_url, str(tmp_path / "writer.db")],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        reader = tmp_path / "reader.db"
        try:
            eventually(
                lambda: self.follow(store_url, reader) == [("running", 5)], "5 cells", seconds=30
            )
            assert process.poll() is None
            (tmp_path / "go").touch()
            stdout, stderr = process.communicate(timeout=PROCESS_TIMEOUT)
        finally:
            process.kill()
        assert process.returncode == 0, stderr
        assert stdout.split() == ["succeeded", str(503 / 1000)]
        assert self.follow(store_url, reader) == [("succeeded", 1000)]

    def test_the_example_records_into_postgresql_for_runs_show_and_datasette(
        self,
        store_url: str,  # noqa: F811
        tmp_path: Path,
    ) -> None:
        # The example takes a SQLite path; the same ten lines with a URL and `db`.
        script = tmp_path / "example.py"
        script.write_text(
            EXAMPLE.read_text().replace(
                'benchledger.open(sys.argv[1] if len(sys.argv) > 1 else "ledger.db")',
                'benchledger.open(sys.argv[1], db="writer.db")',
            )
        )
        assert 'db="writer.db"' in script.read_text()
        python(str(script), store_url, cwd=tmp_path)
        reader = tmp_path / "ledger.db"

        def cli_pg(*args: str) -> Any:
            result = CliRunner().invoke(
                cli, ["--db", str(reader), "--event-store", store_url, *args, "--json"]
            )
            assert result.exit_code == 0, result.stderr
            return json.loads(result.stdout)

        (row,) = cli_pg("runs")
        assert (row["status"], row["score"], row["cells"]) == ("succeeded", 0.75, 1000)
        assert len(cli_pg("show", row["run_id"], "--cells", "1000")["cells"]) == 1000
        (browsed,) = get_json(datasette_for(reader), "/ledger/runs.json?_shape=array")
        assert (browsed["run_id"], browsed["cells"]) == (row["run_id"], 1000)
        with benchledger.open(store_url, db=str(tmp_path / "api-reader.db")) as ledger:
            (summary,) = ledger.runs()
            assert (summary.run_id, summary.cells, summary.attempt) == (row["run_id"], 1000, 1)
            with pytest.raises(benchledger.RunSkipped):
                ledger.run(**WORK, model="m1", config={"temperature": 0.0})


class TestHowARunEnds:
    def test_an_exception_fails_it_with_the_error_and_is_raised_again(
        self, ledger: benchledger.Ledger
    ) -> None:
        with pytest.raises(ValueError, match="broken"), ledger.run(**WORK, model="m") as run:
            run.cell("a", "passed")
            raise ValueError("broken")
        shown = ledger.show(run.run_id)
        assert (shown.status, shown.error, shown.cells) == ("failed", "ValueError: broken", 1)

    def test_an_interrupt_cancels_it(self, ledger: benchledger.Ledger) -> None:
        with pytest.raises(KeyboardInterrupt), ledger.run(**WORK, model="m") as run:
            raise KeyboardInterrupt
        assert ledger.show(run.run_id).status == "cancelled"

    def test_without_finish_it_ends_as_its_cells_say(self, ledger: benchledger.Ledger) -> None:
        with ledger.run(**WORK, model="m") as run:
            for key, outcome in [("a", "passed"), ("b", "failed"), ("c", "error")]:
                run.cell(key, outcome)
            run.cell("d", "skipped")
            run.cell("a", "passed")  # a repeat
        shown = ledger.show(run.run_id)
        assert (shown.status, shown.score, shown.unit, shown.cells) == (
            "succeeded",
            pytest.approx(1 / 3),
            "pass_rate",
            4,
        )

    def test_without_a_cell_to_score_it_fails(self, ledger: benchledger.Ledger) -> None:
        with ledger.run(**WORK, model="m") as run:
            run.cell("only", "skipped")
        shown = ledger.show(run.run_id)
        assert (shown.status, shown.score) == ("failed", None)
        assert shown.error == "the run states no score and has no cell to score"

    def test_finish_records_what_it_states(self, ledger: benchledger.Ledger) -> None:
        with ledger.run(**WORK, model="m") as run:
            run.cell("a", "failed")
            ending = run.finish(score=0.9, metrics={"f1": 0.8}, unit="f1", tokens={"total": 7})
            with pytest.raises(RunAlreadyFinishedError):
                run.cell("b", "passed")
        assert (ending.status, ending.score) == ("succeeded", 0.9)
        shown = ledger.show(run.run_id)
        assert (shown.score, shown.unit, dict(shown.metrics)) == (0.9, "f1", {"f1": 0.8})
        assert shown.row["tokens"] == {"total": 7}
        with pytest.raises(RunAlreadyFinishedError):
            run.finish()

    def test_a_stated_failure_keeps_its_status(self, ledger: benchledger.Ledger) -> None:
        with ledger.run(**WORK, model="m") as run:
            run.cell("a", "passed")
            run.finish(status="failed", error="judge unreachable")
        shown = ledger.show(run.run_id)
        assert (shown.status, shown.error, shown.score) == ("failed", "judge unreachable", None)

    def test_a_cell_stated_differently_ends_it_as_an_error_naming_the_key(
        self, ledger: benchledger.Ledger
    ) -> None:
        with ledger.run(**WORK, model="m") as run:
            run.cell("a", "passed")
            run.flush()
            run.cell("a", "failed")
        shown = ledger.show(run.run_id)
        assert shown.status == "error"
        assert "a" in (shown.error or "") and shown.cells == 1
        assert [c.outcome for c in ledger.cells(run.run_id)] == ["passed"]

    def test_closing_the_ledger_ends_its_open_runs(self, db: Path) -> None:
        with benchledger.open(db) as ledger:
            run = ledger.run(**WORK, model="m")
            run.cell("a", "passed")
        assert run.ending is not None and run.ending.status == "succeeded"
        with benchledger.open(db) as reader:
            assert reader.show(run.run_id).status == "succeeded"


class TestBadInput:
    def test_a_bad_cell_is_refused_naming_the_field_and_nothing_is_written(
        self, ledger: benchledger.Ledger
    ) -> None:
        with ledger.run(**WORK, model="m") as run:
            with pytest.raises(InputFormatError, match="outcome") as bad:
                run.cell("a", "great")
            assert bad.value.field == "outcome" and "cell 'a'" in str(bad.value)
            with pytest.raises(InputFormatError, match="score"):
                run.cell("b", "passed", score=float("nan"))
            with pytest.raises(InputFormatError):
                run.cell("", "passed")
            run.cell("c", "passed")
        assert [c.key for c in ledger.cells(run.run_id)] == ["c"]

    def test_an_oversized_metric_is_refused_at_once(self, ledger: benchledger.Ledger) -> None:
        with ledger.run(**WORK, model="m") as run, pytest.raises(InputFormatError, match="metrics"):
            run.cell("a", "passed", metrics={"answer": "x" * 10_000_000})
        assert ledger.show(run.run_id).cells == 0

    def test_a_status_that_is_no_end_is_refused(self, ledger: benchledger.Ledger) -> None:
        with (
            ledger.run(**WORK, model="m") as run,
            pytest.raises(benchledger.LedgerError, match="finished one"),
        ):
            run.finish(status="running")
        assert ledger.show(run.run_id).status == "failed"  # no cell to score

    def test_a_run_key_already_recorded_is_refused(self, ledger: benchledger.Ledger) -> None:
        with ledger.run(**WORK, model="m", run_key="mine-1") as run:
            run.cell("a", "passed")
        with pytest.raises(benchledger.LedgerError, match="mine-1"):
            ledger.run(**WORK, model="other", run_key="mine-1")
        assert len(ledger.runs()) == 1

    def test_a_file_that_is_no_ledger_is_refused_and_left_as_it_was(self, tmp_path: Path) -> None:
        notes = tmp_path / "notes.txt"
        notes.write_text("not a ledger\n")
        with pytest.raises(benchledger.LedgerError, match="not a SQLite database"):
            benchledger.open(notes)
        assert notes.read_text() == "not a ledger\n"
        with pytest.raises(benchledger.LedgerError, match="does not exist"):
            benchledger.open(tmp_path / "missing" / "ledger.db")

    def test_a_closed_ledger_is_refused(self, db: Path) -> None:
        ledger = benchledger.open(db)
        ledger.close()
        with pytest.raises(benchledger.LedgerError, match="closed"):
            ledger.runs()


class TestSecrets:
    def test_config_metrics_cells_and_errors_are_masked(
        self, ledger: benchledger.Ledger, monkeypatch: pytest.MonkeyPatch, db: Path
    ) -> None:
        monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-9f8e7d6c5b4a39281706")
        config = {"api_key": SECRET, "temperature": 0}
        with pytest.raises(RuntimeError), ledger.run(**WORK, model="m", config=config) as run:
            run.cell("a", "passed", metrics={"echo": f"key={SECRET}"})
            run.flush()
            run.cell("b", "failed", metrics={"header": "Bearer tok-9f8e7d6c5b4a39281706"})
            raise RuntimeError(f"refused key {SECRET} and tok-9f8e7d6c5b4a39281706")
        shown = ledger.show(run.run_id)
        assert shown.config["api_key"] != SECRET and shown.config["temperature"] == 0
        assert SECRET not in (shown.error or "") and shown.error
        data = db.read_bytes()
        assert SECRET.encode() not in data
        assert b"tok-9f8e7d6c5b4a39281706" not in data
        assert len(ledger.cells(run.run_id)) == 2


class TestAttempts:
    def test_the_same_work_again_is_skipped_and_the_skip_recorded(
        self, ledger: benchledger.Ledger, invoke: Invoke
    ) -> None:
        with ledger.run(**WORK, model="m", config={"limit": 3}) as first:
            first.cell("a", "passed")
        with pytest.raises(benchledger.RunSkipped) as skipped:
            ledger.run(**WORK, model="m", config={"limit": 3})
        assert skipped.value.reason == "already_succeeded"
        assert skipped.value.defer_to == first.run_id
        assert len(ledger.runs()) == 1
        (skip,) = cli_json(invoke, "skips")
        assert skip["reason"] == "already_succeeded"

    def test_other_config_is_other_work(self, ledger: benchledger.Ledger) -> None:
        for limit in (3, 4):
            with ledger.run(**WORK, model="m", config={"limit": limit}) as run:
                run.cell("a", "passed")
            assert run.attempt == 1

    def test_force_runs_the_next_attempt(self, ledger: benchledger.Ledger) -> None:
        for _ in range(2):
            with ledger.run(**WORK, model="m", mode="force") as run:
                run.cell("a", "passed")
        assert [r.attempt for r in ledger.runs()] == [1, 2]

    def test_a_failed_attempt_runs_again_and_a_running_one_is_not_doubled(
        self, ledger: benchledger.Ledger
    ) -> None:
        with pytest.raises(RuntimeError), ledger.run(**WORK, model="m"):
            raise RuntimeError("down")
        with ledger.run(**WORK, model="m") as second:
            with pytest.raises(benchledger.RunSkipped, match="attempt_in_progress"):
                ledger.run(**WORK, model="m", mode="rerun_failed")
            second.cell("a", "passed")
        assert second.attempt == 2
        with pytest.raises(benchledger.RunSkipped, match="latest_attempt_succeeded"):
            ledger.run(**WORK, model="m", mode="rerun_failed")

    def test_an_unknown_mode_is_refused(self, ledger: benchledger.Ledger) -> None:
        with pytest.raises(benchledger.LedgerError, match="mode"):
            ledger.run(**WORK, model="m", mode="again")  # type: ignore[arg-type]
        assert ledger.runs() == []


class TestReading:
    def test_records_filter_as_runs_does_and_reads_catch_up(
        self, ledger: benchledger.Ledger, db: Path, invoke: Invoke
    ) -> None:
        for model in ("m1", "m2"):
            with ledger.run(**WORK, model=model) as run:
                run.cell("a", "passed", score=1.0, metrics={"n": 1})
        assert [r.model for r in ledger.runs(model="m2")] == ["m2"]
        assert ledger.runs(status="failed") == []
        assert [(c.key, c.score, dict(c.metrics)) for c in ledger.cells(run.run_key)] == [
            ("a", 1.0, {"n": 1})
        ]
        assert ledger.show(run.run_id[:8]).run_key == run.run_key
        latest = ledger.latest()
        assert {(r.model, r.status) for r in latest} <= {("m1", "succeeded"), ("m2", "succeeded")}
        # What another writer appends is read on the next read, without asking.
        with benchledger.open(db) as other, other.run(**WORK, model="m3") as third:
            third.cell("a", "passed")
        assert [r.model for r in ledger.runs()] == ["m1", "m2", "m3"]
        assert ledger.show(run.run_id).row["run_id"] == run.run_id

    def test_an_unknown_run_is_not_found(self, ledger: benchledger.Ledger) -> None:
        with pytest.raises(benchledger.LedgerError, match="no run matches"):
            ledger.show("nothing-like-it")


class TestTheTopLevel:
    def test_importing_it_loads_nothing_heavy(self, tmp_path: Path) -> None:
        probe = (
            "import json, sys, benchledger\n"
            "heavy = ('pydantic', 'eventsourcing', 'sqlite_utils', 'datasette')\n"
            "before = sorted({m.split('.')[0] for m in sys.modules} & set(heavy))\n"
            "benchledger.open\n"
            "after = sorted({m.split('.')[0] for m in sys.modules} & set(heavy))\n"
            "print(json.dumps([before, after]))\n"
        )
        before, after = json.loads(python("-c", probe, cwd=tmp_path))
        assert before == []
        assert "eventsourcing" in after

    def test_every_name_it_exports_resolves(self) -> None:
        assert sorted(benchledger.__all__) == sorted(set(benchledger.__all__))
        for name in benchledger.__all__:
            assert getattr(benchledger, name) is not None
        assert set(benchledger.__all__) <= set(dir(benchledger))
        with pytest.raises(AttributeError):
            _ = benchledger.no_such_name  # type: ignore[attr-defined]


class TestTheDocsPage:
    def test_its_python_blocks_run_and_print_what_they_say(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        text = (ROOT / "docs" / "python-api.md").read_text()
        blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
        assert len(blocks) >= 4
        code = "\n".join(textwrap.dedent(b) for b in blocks)
        script = tmp_path / "page.py"
        script.write_text(code)
        monkeypatch.delenv("BENCHLEDGER_DB", raising=False)
        out = python(str(script), cwd=tmp_path).splitlines()
        said = [
            line.split("#", 1)[1].strip()
            for line in code.splitlines()
            if line.lstrip().startswith("print(") and "#" in line
        ]
        assert len(out) == len(said)
        for printed, expected in zip(out, said, strict=True):
            if expected.startswith("... "):
                assert printed.endswith(expected.removeprefix("... ")), (printed, expected)
            else:
                assert printed == expected
