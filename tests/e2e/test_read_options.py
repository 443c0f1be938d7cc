"""One set of read options: every read takes --as-of, every listing --json, --csv and --nl,
and the machine formats agree on columns and booleans."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import click
import pytest

from benchledger.commands.cli import COMMANDS, cli
from tests.conftest import Invoke
from tests.helpers import run_json, write_json

# Commands that do not read the ledger as it was at a position, and why. Every other
# command must take --as-of: a new read without it fails this file.
NOT_READS = {
    "import": "appends result files",
    "invalidate": "appends a correction",
    "reinstate": "appends a correction",
    "correct-score": "appends a correction",
    "alias-model": "appends a model alias",
    "demo": "builds a new ledger",
    "run": "executes benchmarks and appends their runs",
    "recover-stale": "appends recoveries of runs as they are now",
    "review": "runs, gates and signs off now",
    "high-score set": "appends a reference (its --as-of is the reference's date)",
    "inventory": "checks the registry, not the ledger",
    "validate-matrix": "builds commands from the registry, not the ledger",
    "preflight": "checks the registry and this machine",
    "validate-runtime-gates": "probes this machine's runtime gates as they are now",
    "verify-artifacts": "checks a git repository",
    "verify-review": "checks a review package against the ledger as it is now",
    "verify": "checks the whole event log",
    "checkpoint": "signs the ledger's head as it is now, and records that it did",
    "checkpoint-key": "writes a signing key, not reading the ledger",
    "upgrade-chain": "chains the whole event log once, and records that it did",
    "rebuild": "rebuilds the read models",
    "follow": "keeps the read models current",
    "schema": "prints the native format's JSON Schema",
}

# Commands whose output is not a listing of rows, and what they print instead. Every
# other command must take --json, --csv and --nl.
NOT_LISTINGS = {
    "invalidate": "a receipt",
    "reinstate": "a receipt",
    "correct-score": "a receipt",
    "alias-model": "a receipt",
    "demo": "a summary",
    "run": "a receipt of the runs",
    "recover-stale": "a receipt",
    "review": "a review package",
    "high-score set": "a receipt",
    "preflight": "a check's report",
    "validate-matrix": "a check's report (--format markdown|json)",
    "verify-artifacts": "a check's report",
    "verify-review": "a check's report",
    "verify": "a check's report",
    "checkpoint": "a signed statement",
    "checkpoint-key": "a receipt",
    "upgrade-chain": "a receipt",
    "rebuild": "a receipt",
    "follow": "progress",
    "schema": "a JSON Schema",
    "results-matrix": "a Markdown file",
    "export-latest": "files, and their receipt",
    "export-eee": "files, and their receipt",
    "export-viewer-data": "a file, and its receipt",
    "publish": "a snapshot file, and its stamp",
    "serve": "a web server",
}


def commands() -> dict[str, click.Command]:
    ctx = click.Context(cli)
    found: dict[str, click.Command] = {}
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            found.update({f"{name} {sub}": c for sub, c in command.commands.items()})
        else:
            found[name] = command
    return found


def options(command: click.Command) -> set[str]:
    return {opt for p in command.params for opt in getattr(p, "opts", [])}


def test_every_exemption_names_a_command() -> None:
    assert set(NOT_READS) <= set(commands())
    assert set(NOT_LISTINGS) <= set(commands())


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_read_takes_as_of(name: str) -> None:
    assert "--as-of" in options(commands()[name]) or name in NOT_READS, (
        f"`{name}` reads the ledger but takes no --as-of (or add it to NOT_READS, saying why)"
    )


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_listing_takes_json_csv_and_nl(name: str) -> None:
    missing = {"--json", "--csv", "--nl"} - options(commands()[name])
    assert not missing or name in NOT_LISTINGS, (
        f"`{name}` lists rows but takes no {', '.join(sorted(missing))} "
        "(or add it to NOT_LISTINGS, saying what it prints)"
    )


RUN = "demo-bfcl-eliza-cerebras-gpt-oss-120b-1"


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def nl_rows(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def later(invoke: Invoke, tmp_path: Path) -> int:
    """A demo ledger with a gate verdict, then corrections and an import after position `head`."""
    invoke("demo")
    invoke("gate", "comparability", expect=None)
    head: int = json.loads(invoke("verify", "--json").stdout)["head_position"]
    invoke("correct-score", RUN, "--score", "0.1", "--reason", "regrade")
    invoke("import", str(write_json(tmp_path / "new.json", run_json("bfcl", score=0.99))))
    invoke("gate", "publishability", expect=None)
    return head


class TestAsOf:
    def test_events_stop_at_the_position(self, invoke: Invoke, later: int) -> None:
        events = json.loads(invoke("events", "--as-of", str(later), "--json").stdout)
        assert events[-1]["position"] == later
        assert len(json.loads(invoke("events", "--json").stdout)) > len(events)

    def test_history_is_the_runs_history_then(self, invoke: Invoke, later: int) -> None:
        types = [e["type"] for e in json.loads(invoke("history", RUN, "--json").stdout)]
        then = json.loads(invoke("history", RUN, "--as-of", str(later), "--json").stdout)
        assert "ScoreCorrected" in types
        assert [e["type"] for e in then] == [t for t in types if t != "ScoreCorrected"]

    def test_gates_lists_the_verdicts_recorded_by_then(self, invoke: Invoke, later: int) -> None:
        now = [v["gate"] for v in json.loads(invoke("gates", "--json").stdout)]
        then = [
            v["gate"] for v in json.loads(invoke("gates", "--as-of", str(later), "--json").stdout)
        ]
        assert (now, then) == (["comparability", "publishability"], ["comparability"])

    def test_skips_reads_the_ledger_then(self, invoke: Invoke, later: int) -> None:
        assert json.loads(invoke("skips", "--as-of", str(later), "--json").stdout) == []
        assert invoke("skips", "--as-of", "999999", expect=2).exit_code == 2

    def test_benchmarks_lists_what_the_ledger_had_recorded(
        self, invoke: Invoke, later: int
    ) -> None:
        assert json.loads(invoke("benchmarks", "--as-of", "0", "--json").stdout) == []
        then = json.loads(invoke("benchmarks", "--as-of", str(later), "--json").stdout)
        assert {b["benchmark"] for b in then} >= {"bfcl"}
        assert all(isinstance(b["higher_is_better"], bool) for b in then)

    def test_show_and_matrix_read_the_ledger_then(self, invoke: Invoke, later: int) -> None:
        [now] = csv_rows(invoke("show", RUN, "--csv").stdout)
        [then] = csv_rows(invoke("show", RUN, "--as-of", str(later), "--csv").stdout)
        assert now["score"] == "0.1" and then["score"] not in ("0.1", "")
        cells = csv_rows(invoke("matrix", "--as-of", str(later), "--csv").stdout)
        assert {(c["benchmark"], c["agent"]) for c in cells} >= {("bfcl", "eliza")}

    def test_a_comparison_recorded_later_is_not_found_then(
        self, invoke: Invoke, later: int
    ) -> None:
        out = invoke(
            "compare",
            "--a",
            "eliza@cerebras:gpt-oss-120b",
            "--b",
            "hermes@cerebras:gpt-oss-120b",
            "--json",
        )
        comparison_id = json.loads(out.stdout)["comparison_id"]
        assert invoke("view-comparison", comparison_id, "--json").stdout == out.stdout
        missing = invoke("view-comparison", comparison_id, "--as-of", str(later), expect=1)
        assert comparison_id in missing.stderr


class TestColumns:
    @pytest.mark.parametrize("args", [("events",), ("history", RUN)], ids=["events", "history"])
    def test_csv_and_nl_carry_the_json_columns(self, invoke: Invoke, args: tuple[str, ...]) -> None:
        invoke("demo")
        as_json = json.loads(invoke(*args, "--json").stdout)
        as_csv = csv_rows(invoke(*args, "--csv").stdout)
        assert nl_rows(invoke(*args, "--nl").stdout) == as_json
        assert len(as_csv) == len(as_json) > 0
        for row, event in zip(as_csv, as_json, strict=True):
            assert (
                list(row)
                == list(event)
                == ["position", "stream", "version", "type", "time", "data"]
            )
            assert row["stream"] == event["stream"] and len(row["stream"]) == 36
            assert json.loads(row["data"]) == event["data"]
            assert (int(row["position"]), int(row["version"])) == (
                event["position"],
                event["version"],
            )

    def test_events_csv_joins_runs_csv_on_the_stream(self, invoke: Invoke) -> None:
        invoke("demo")
        runs = {r["run_id"] for r in csv_rows(invoke("runs", "--csv").stdout)}
        imported = [
            e for e in csv_rows(invoke("events", "--csv").stdout) if e["type"] == "RunImported"
        ]
        assert imported and {e["stream"] for e in imported} <= runs

    @pytest.mark.parametrize(
        "args",
        [("runs",), ("latest",), ("show", RUN), ("gates",), ("matrix",)],
        ids=lambda a: " ".join(a),
    )
    def test_booleans_are_true_or_false_in_json_and_csv(
        self, invoke: Invoke, args: tuple[str, ...]
    ) -> None:
        invoke("demo")
        invoke("gate", "comparability", expect=None)
        as_nl = nl_rows(invoke(*args, "--nl").stdout)
        as_csv = csv_rows(invoke(*args, "--csv").stdout)
        assert len(as_nl) == len(as_csv) > 0
        seen = 0
        for row, record in zip(as_csv, as_nl, strict=True):
            for key, value in record.items():
                if isinstance(value, bool):
                    assert row[key] == ("true" if value else "false"), key
                    seen += 1
        assert seen > 0

    def test_compare_lists_one_row_per_benchmark(self, invoke: Invoke) -> None:
        invoke("demo")
        sides = ("--a", "eliza@cerebras:gpt-oss-120b", "--b", "hermes@cerebras:gpt-oss-120b")
        document = json.loads(invoke("compare", *sides, "--json").stdout)
        rows = csv_rows(invoke("view-comparison", document["comparison_id"], "--csv").stdout)
        lines = nl_rows(invoke("view-comparison", document["comparison_id"], "--nl").stdout)
        assert [r["benchmark_id"] for r in rows] == [r["benchmark_id"] for r in document["rows"]]
        assert lines == [
            {"comparison_id": document["comparison_id"], **r} for r in document["rows"]
        ]

    def test_gate_lists_one_row_per_verdict(self, invoke: Invoke) -> None:
        invoke("demo")
        rows = nl_rows(invoke("gate", "comparability", "calibration", "--nl", expect=None).stdout)
        assert [r["gate"] for r in rows] == ["comparability", "calibration"]
        [row] = csv_rows(invoke("gate", "comparability", "--csv", expect=None).stdout)
        verdict = json.loads(invoke("gate", "comparability", "--json", expect=None).stdout)
        assert json.loads(row["findings"]) == verdict["findings"]
