from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from benchledger.commands.cli import cli
from tests.conftest import Invoke
from tests.helpers import run_json, write_json


@pytest.fixture
def demo(invoke: Invoke) -> Invoke:
    invoke("demo")
    return invoke


class TestDemo:
    def test_builds_benchmarks_agents_models_attempts_and_corrections(self, demo: Invoke) -> None:
        runs = json.loads(demo("runs", "--json").stdout)
        assert len({r["benchmark"] for r in runs}) == 5
        assert {r["agent"] for r in runs} == {"eliza", "hermes", "opencode"}
        assert len({(r["provider"], r["model"]) for r in runs}) == 3
        assert {"succeeded", "failed", "timed_out"} <= {r["status"] for r in runs}
        assert sum(r["invalidated"] for r in runs) == 1
        assert sum(r["corrections"] for r in runs) == 1
        benchmarks = {
            e["data"]["benchmark"]
            for e in json.loads(demo("events", "--json").stdout)
            if e["type"] == "HighScoreReferenced"
        }
        assert benchmarks == {"swe_bench_verified", "bfcl", "tau_bench"}

    def test_running_it_again_appends_nothing(self, demo: Invoke) -> None:
        before = json.loads(demo("events", "--json").stdout)
        assert "0 of 15 files newly imported" in demo("demo").stdout
        assert json.loads(demo("events", "--json").stdout) == before


class TestReading:
    def test_runs_filters_combine(self, demo: Invoke) -> None:
        rows = json.loads(
            demo(
                "runs", "--benchmark", "bfcl", "--agent", "eliza", "--status", "succeeded", "--json"
            ).stdout
        )
        assert rows and all(
            (r["benchmark"], r["agent"], r["status"]) == ("bfcl", "eliza", "succeeded")
            for r in rows
        )

    def test_runs_as_csv_and_table(self, demo: Invoke) -> None:
        rows = list(csv.DictReader(io.StringIO(demo("runs", "--csv").stdout)))
        assert len(rows) == len(json.loads(demo("runs", "--json").stdout))
        table = demo("runs", "--status", "invalidated").stdout.splitlines()
        assert table[0].split()[:3] == ["run", "attempt", "benchmark"]
        assert len(table) == 3 and "(invalidated)" in table[2]

    def test_the_runs_table_reads_only_what_it_shows(
        self, demo: Invoke, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The table is what the runs' whole rows make of it (`--json`), read through a
        query of its own columns: no run's JSON facts are read to list it."""
        from benchledger.adapters.publication.queries import Queries
        from benchledger.commands.output import emit
        from benchledger.commands.read import RUN_COLUMNS, _listing

        for status in ("succeeded", "invalidated"):
            whole = json.loads(demo("runs", "--status", status, "--json").stdout)
            printed = demo("runs", "--status", status, "--wide").stdout

            @click.command()
            def expected() -> None:
                emit([_listing(r) for r in whole], None, columns=RUN_COLUMNS)  # noqa: B023

            assert printed == CliRunner().invoke(expected, []).stdout
        asked: list[object] = []
        iter_runs = Queries.iter_runs

        def recorded(self: Queries, **kwargs: object) -> object:
            asked.append(kwargs.get("columns"))
            return iter_runs(self, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(Queries, "iter_runs", recorded)
        demo("runs")
        demo("runs", "--json")
        assert asked[0] is not None and "config" not in asked[0]  # type: ignore[operator]
        assert asked[1] is None

    def test_show_prints_the_run_and_its_cell_outcomes(self, demo: Invoke) -> None:
        run = json.loads(demo("runs", "--status", "invalidated", "--json").stdout)[0]
        out = demo("show", run["run_id"][:8]).stdout
        assert run["run_id"] in out and "invalidated_reason" in out
        assert "passed" in out and "outcome" in out
        data = json.loads(demo("show", run["run_key"], "--json", "--cells", "3").stdout)
        assert data["run"]["run_id"] == run["run_id"] and len(data["cells"]) == 3
        assert sum(o["cells"] for o in data["cell_outcomes"]) == run["cells"]

    def test_history_shows_how_a_corrected_run_got_its_score(self, demo: Invoke) -> None:
        run = next(r for r in json.loads(demo("runs", "--json").stdout) if r["corrections"])
        events = json.loads(demo("history", run["run_id"], "--json").stdout)
        # Imported whole, with the score its source stated; then corrected.
        assert events[0]["type"] == "RunImported"
        assert events[0]["data"]["score"] == run["original_score"]
        assert events[-1]["type"] == "ScoreCorrected"
        correction = events[-1]["data"]
        assert correction["new_score"] == run["score"]
        assert correction["old_score"] == run["original_score"]
        assert [e["version"] for e in events] == list(range(1, len(events) + 1))

    def test_events_since_a_position(self, demo: Invoke) -> None:
        events = json.loads(demo("events", "--since", "10", "--limit", "5", "--json").stdout)
        assert [e["position"] for e in events] == [11, 12, 13, 14, 15]
        assert isinstance(events[0]["data"], dict)

    def test_the_audit_log_is_read_as_it_is_written(
        self, demo: Invoke, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`events` reads the log a batch at a time in every format, never whole."""
        from benchledger.adapters.publication import queries

        whole = json.loads(demo("events", "--json").stdout)
        monkeypatch.setattr(queries, "BATCH_ROWS", 7)
        read: list[int] = []
        events = queries.Queries.events

        def whole_log(self: queries.Queries, *args: object) -> object:
            read.append(1)
            return events(self, *args)  # type: ignore[arg-type]

        monkeypatch.setattr(queries.Queries, "events", whole_log)
        assert json.loads(demo("events", "--json").stdout) == whole
        lines = demo("events", "--nl").stdout.splitlines()
        assert [json.loads(line) for line in lines] == whole
        assert len(demo("events").stdout.splitlines()) == len(whole) + 2  # header, rule
        assert len(list(csv.reader(io.StringIO(demo("events", "--csv").stdout)))) == len(whole) + 1
        assert read == []

    def test_an_unknown_run_is_an_error_not_a_traceback(self, demo: Invoke) -> None:
        result = demo("show", "nope-nope", expect=1)
        assert result.stderr.startswith("Error: no run matches 'nope-nope'")


class TestCorrections:
    def test_invalidate_reinstate_and_correct_score(self, demo: Invoke) -> None:
        run = json.loads(demo("runs", "--status", "succeeded", "--json").stdout)[0]
        rid = run["run_id"][:10]
        demo("invalidate", rid, "--reason", "leak", "--by", "ana")
        assert json.loads(demo("show", rid, "--json").stdout)["run"]["invalidated"] is True
        assert "already invalidated" in demo("invalidate", rid, "--reason", "x", expect=1).stderr
        demo("reinstate", rid, "--reason", "no leak")
        receipt = json.loads(
            demo("correct-score", rid, "--score", "0.1", "--reason", "bug", "--json").stdout
        )
        assert receipt["old_score"] == run["score"]
        shown = json.loads(demo("show", rid, "--json").stdout)["run"]
        assert (shown["score"], shown["original_score"], shown["invalidated"]) == (
            0.1,
            run["score"],
            False,
        )
        types = [e["type"] for e in json.loads(demo("history", rid, "--json").stdout)]
        assert types[-3:] == ["RunInvalidated", "RunReinstated", "ScoreCorrected"]
        actors = [e["data"].get("actor") for e in json.loads(demo("history", rid, "--json").stdout)]
        assert "ana" in actors


class TestOperating:
    def test_rebuild_gives_the_same_answers(self, demo: Invoke) -> None:
        before = demo("runs", "--json").stdout
        assert "Rebuilt events, chain" in demo("rebuild").stdout
        assert demo("runs", "--json").stdout == before

    def test_rebuild_of_an_unknown_projection_is_a_usage_error(self, demo: Invoke) -> None:
        assert "unknown projection" in demo("rebuild", "--projection", "nope", expect=2).stderr

    def test_schema_prints_the_native_format(self, invoke: Invoke) -> None:
        assert json.loads(invoke("schema").stdout)["$id"] == "benchledger/run@1"

    def test_a_usage_error_exits_2(self, invoke: Invoke) -> None:
        invoke("runs", "--no-such-flag", expect=2)
        invoke("invalidate", "abc", expect=2)  # --reason is required


def all_commands() -> list[tuple[str, click.Command]]:
    assert isinstance(cli, click.Group)
    ctx = click.Context(cli)
    commands = [(name, cli.get_command(ctx, name)) for name in cli.list_commands(ctx)]
    return [(name, command) for name, command in commands if command is not None]


@pytest.mark.parametrize(("name", "command"), all_commands())
def test_every_command_has_help_with_an_example(name: str, command: click.Command) -> None:
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0
    assert command.help and "Example:" in command.help
    assert f"benchledger {name}" in result.stdout or "benchledger" in result.stdout


def test_the_db_option_and_environment_variable_choose_the_file(tmp_path: Path) -> None:
    target = tmp_path / "team.db"
    result = CliRunner().invoke(cli, ["schema"], env={"BENCHLEDGER_DB": str(target)})
    assert result.exit_code == 0
    result = CliRunner().invoke(cli, ["runs", "--json"], env={"BENCHLEDGER_DB": str(target)})
    assert result.exit_code == 1 and f"no ledger at {target}" in result.stderr
    assert not target.exists()
    path = write_json(tmp_path / "run.json", run_json())
    env = {"BENCHLEDGER_DB": str(target)}
    assert CliRunner().invoke(cli, ["import", str(path)], env=env).exit_code == 0
    result = CliRunner().invoke(cli, ["runs", "--json"], env=env)
    assert result.exit_code == 0 and len(json.loads(result.stdout)) == 1


def test_an_unreachable_event_store_is_an_error_not_a_traceback(invoke: Invoke) -> None:
    url = "postgresql://postgres:hunter2secret@127.0.0.1:1/test"
    result = invoke("--event-store", url, "runs", expect=1)
    assert result.stderr.startswith(
        "Error: cannot open the event store at postgresql://postgres:***@127.0.0.1:1/test: "
    )
    assert "Traceback" not in result.stderr and "hunter2secret" not in result.stderr
