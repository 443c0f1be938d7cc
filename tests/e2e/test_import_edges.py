"""Import at the edges: pipes, devices, link loops, undecodable text, nothing to import,
files that are not results, and files that are parts of a result read through another.

SWE-bench per-instance reports are shaped as the harness writes them (SWE-bench/SWE-bench
@ 7a21e05772954cc81471ae19d56f436cecf43c54, `swebench/harness/run_evaluation.py`: one
`logs/run_evaluation/<run_id>/<model>/<instance_id>/report.json` per instance, and
`swebench/harness/reporting.py`: the run report `<model>.<run_id>.json`), with made-up ids.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from benchledger.adapters import formats
from benchledger.adapters.formats.limits import GiB, Limits, MiB, option_name
from benchledger.commands.cli import cli
from tests.conftest import Invoke
from tests.helpers import run_json, write_json
from tests.unit.test_format_swebench import IDS, instance_report, run_report, submission

CLI = [sys.executable, "-c", "from benchledger.commands.cli import cli; cli()"]


def benchledger(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A real process, so a read that blocks or eats memory fails the test, not the suite."""
    return subprocess.run(
        [*CLI, "--db", str(db), *args], capture_output=True, text=True, timeout=60, check=False
    )


def a_result_dir(tmp_path: Path) -> Path:
    results = tmp_path / "results"
    results.mkdir()
    write_json(results / "a.json", run_json("bfcl"))
    write_json(results / "c.json", run_json("gaia"))
    return results


class TestFilesThatAreNotRegular:
    def test_import_of_dev_zero_is_skipped_unread(self, db: Path) -> None:
        result = benchledger(db, "import", "/dev/zero")
        assert result.returncode == 1
        assert (
            "Error: zero: not a result file: a character device, not a regular file; not read"
        ) in result.stderr
        assert "Traceback" not in result.stderr

    def test_a_named_pipe_is_skipped_without_waiting_for_a_writer(
        self, db: Path, tmp_path: Path
    ) -> None:
        results = a_result_dir(tmp_path)
        os.mkfifo(results / "b.json")
        result = benchledger(db, "import", str(results), "--json")
        assert result.returncode == 0, result.stderr
        states = {Path(r["path"]).name: r["state"] for r in json.loads(result.stdout)}
        assert states == {"a.json": "imported", "b.json": "ignored", "c.json": "imported"}
        named = benchledger(db, "import", str(results / "b.json"), "--json")
        assert named.returncode == 1 and "a named pipe, not a regular file" in named.stderr
        assert [r["state"] for r in json.loads(named.stdout)] == ["ignored"]

    def test_a_symlink_loop_is_skipped_with_its_reason(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        results = a_result_dir(tmp_path)
        (results / "loop.json").symlink_to("loop.json")
        result = invoke("import", str(results), "--json")
        [loop] = [r for r in json.loads(result.stdout) if r["path"].endswith("loop.json")]
        assert loop["state"] == "ignored" and "symbolic link loop" in loop["message"]
        named = invoke("import", str(results / "loop.json"), expect=1)
        assert "loop.json: not a result file: a symbolic link loop" in named.stderr


class TestUndecodableFiles:
    def test_a_lone_surrogate_fails_that_file_by_name_and_the_others_import(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        results = a_result_dir(tmp_path)
        text = json.dumps({**run_json("swe"), "metrics": {"note": "@"}})
        (results / "b.json").write_text(text.replace('"@"', '"\\ud800"'))
        result = invoke("import", str(results), "--json", expect=1)
        states = {Path(r["path"]).name: r["state"] for r in json.loads(result.stdout)}
        assert states == {"a.json": "imported", "b.json": "failed", "c.json": "imported"}
        assert "results/b.json:1: field 'metrics.note': text holds an unpaired surrogate" in (
            result.stderr
        )
        assert len(json.loads(invoke("runs", "--json").stdout)) == 2

    def test_invalid_utf8_fails_that_file_by_name(self, invoke: Invoke, tmp_path: Path) -> None:
        results = a_result_dir(tmp_path)
        (results / "b.json").write_bytes(json.dumps(run_json("swe")).encode() + b"\xff")
        result = invoke("import", str(results), expect=1)
        assert "results/b.json: not UTF-8 text" in result.stderr


class TestLimits:
    def test_a_file_over_the_size_limit_is_refused_naming_the_option(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        path = write_json(tmp_path / "run.json", run_json("bfcl"))
        result = invoke("import", str(path), "--limit", "file-size=100", expect=1)
        assert "exceeds the limit of 100 bytes (raise it with --limit file-size=N" in (
            result.stderr
        )

    def test_the_environment_sets_a_limit_and_the_option_overrides_it(
        self, db: Path, tmp_path: Path
    ) -> None:
        path = write_json(tmp_path / "run.json", run_json("bfcl"))
        env = {"BENCHLEDGER_LIMIT_FILE_SIZE": "100"}
        refused = CliRunner().invoke(cli, ["--db", str(db), "import", str(path)], env=env)
        assert refused.exit_code == 1 and "BENCHLEDGER_LIMIT_FILE_SIZE" in refused.stderr
        args = ["--db", str(db), "import", str(path), "--limit", "file-size=1MiB"]
        assert CliRunner().invoke(cli, args, env=env).exit_code == 0

    def test_a_malformed_limit_option_is_an_error_naming_it(self, invoke: Invoke) -> None:
        result = invoke("import", ".", "--limit", "file-size", expect=1)
        assert "Error: --limit: 'file-size' is not NAME=N" in result.stderr

    def test_the_help_states_every_limit_with_its_default(self, invoke: Invoke) -> None:
        text = "".join(invoke("import", "--help").stdout.split())  # wrapped at any hyphen
        defaults = Limits()
        for field in fields(Limits):
            value = getattr(defaults, field.name)
            units = [
                (n, u) for n, u in (("GiB", GiB), ("MiB", MiB)) if value >= u and not value % u
            ]
            shown = f"{value // units[0][1]}{units[0][0]}" if units else str(value)
            assert f"{option_name(field.name)}{shown}" in text
        assert "BENCHLEDGER_LIMIT_<NAME>" in text


class TestNothingToImport:
    def test_an_empty_directory_exits_1(self, invoke: Invoke, tmp_path: Path) -> None:
        (tmp_path / "empty").mkdir()
        result = invoke("import", str(tmp_path / "empty"), expect=1)
        assert f"Error: no result files found under {tmp_path / 'empty'} (0 ignored)" in (
            result.stderr
        )

    def test_a_directory_of_nothing_importable_exits_1_counting_the_reasons(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        docs = tmp_path / "docs"
        docs.mkdir()
        (docs / "README.md").write_text("# notes")
        (docs / "notes.txt").write_text("none")
        (docs / "gone.json").symlink_to("missing.json")
        result = invoke("import", str(docs), expect=1)
        assert (
            f"Error: no result files found under {docs} (3 ignored: not a result file: 3)"
        ) in result.stderr

    def test_a_re_import_of_unchanged_files_is_not_nothing_found(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        results = a_result_dir(tmp_path)
        invoke("import", str(results))
        again = invoke("import", str(results), expect=0)
        assert "2 unchanged" in again.stderr and "no result files" not in again.stderr

    @pytest.mark.parametrize("fmt", ["--json", "--nl"])
    def test_the_reason_is_not_a_column_of_the_report(
        self, invoke: Invoke, tmp_path: Path, fmt: str
    ) -> None:
        results = a_result_dir(tmp_path)
        (results / "README.md").write_text("# notes")
        out = invoke("import", str(results), fmt).stdout
        rows = json.loads(out) if fmt == "--json" else [json.loads(x) for x in out.splitlines()]
        assert all("reason" not in row for row in rows)


KNOWN = ", ".join(sorted(formats.NAMES))


def harness_logs(root: Path, instances: int = 2, run_id: str = "run-1") -> list[Path]:
    """A run_evaluation log folder of per-instance reports (the first one resolved)."""
    model = root / "logs" / "run_evaluation" / run_id / "org__model"
    paths = []
    for i, iid in enumerate(IDS[:instances]):
        path = model / iid / "report.json"
        path.parent.mkdir(parents=True)
        write_json(path, {iid: instance_report(i == 0, f2p_failed=i)})
        paths.append(path)
    return paths


def rows(result: Result) -> dict[str, dict[str, Any]]:
    return {r["path"]: r for r in json.loads(result.stdout)}


class TestFilesThatAreNotResults:
    """A file no format reads is ignored, with one message, named or found in a directory."""

    def test_a_named_file_gets_the_state_and_message_it_gets_in_a_directory(
        self, invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        results = a_result_dir(tmp_path)
        (results / "README.md").write_text("# notes")
        alone = invoke("import", "results/README.md", "--json", expect=1)
        found = invoke("import", "results", "--json")
        named, in_dir = rows(alone)["results/README.md"], rows(found)["results/README.md"]
        message = (
            f"results/README.md: not a result file: not a known result format (known: {KNOWN})"
        )
        assert (named["state"], named["message"]) == (in_dir["state"], in_dir["message"])
        assert (named["state"], named["message"]) == ("ignored", message)
        assert f"Error: {message}" in alone.stderr
        assert "Error:" not in found.stderr

    def test_a_named_file_that_is_not_a_result_exits_1_beside_results_that_import(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        results = a_result_dir(tmp_path)
        (results / "notes.txt").write_text("none")
        result = invoke("import", str(results / "a.json"), str(results / "notes.txt"), expect=1)
        assert "1 imported (1 new runs)" in result.stderr
        assert "1 ignored (not a result file: 1)" in result.stderr
        assert "notes.txt: not a result file: not a known result format" in result.stderr
        assert len(json.loads(invoke("runs", "--json").stdout)) == 1

    def test_the_summary_counts_ignored_files_by_reason(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        results = a_result_dir(tmp_path)
        (results / "README.md").write_text("# notes")
        harness_logs(results)
        result = invoke("import", str(results))
        assert result.stderr.splitlines()[-1] == (
            "3 imported (3 new runs), 0 amended, 0 unchanged, 0 conflicting, 0 failed, "
            "2 ignored (not a result file: 1, member of an imported run: 1)"
        )

    def test_every_ignored_file_says_why_in_the_json_report(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        results = a_result_dir(tmp_path)
        (results / "README.md").write_text("# notes")
        (results / "gone.json").symlink_to("missing.json")
        harness_logs(results)
        report = rows(invoke("import", str(results), "--json"))
        ignored = {
            Path(k).name if k.endswith(".md") or k.endswith("gone.json") else k: r
            for k, r in report.items()
            if r["state"] == "ignored"
        }
        assert len(ignored) == 3
        assert ignored["README.md"]["message"].endswith(
            f"README.md: not a result file: not a known result format (known: {KNOWN})"
        )
        assert ignored["gone.json"]["message"].endswith(
            "gone.json: not a result file: a broken symbolic link; not read"
        )
        [(member_path, member)] = [(k, r) for k, r in ignored.items() if k.endswith("report.json")]
        [(primary_path, primary)] = [
            (k, r) for k, r in report.items() if k.endswith("report.json") and k != member_path
        ]
        assert primary["state"] == "imported" and len(primary["run_ids"]) == 1
        assert (member["member_of"], member["run_ids"]) == (primary_path, primary["run_ids"])
        assert member["message"] == (
            f"{member_path}: member of imported run {primary['run_ids'][0][:8]} "
            f"(read through {primary_path})"
        )

    def test_the_help_says_when_an_ignored_file_makes_the_exit_code_1(self, invoke: Invoke) -> None:
        text = " ".join(invoke("import", "--help").stdout.split())
        assert "ignored, named or found in a directory alike" in text
        assert "if a file named on the command line was ignored (unless it is a member" in text
        assert "ignored files found in a directory do not change the exit code" in text

    def test_a_malformed_result_file_still_fails_named_or_in_a_directory(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        results = a_result_dir(tmp_path)
        write_json(results / "b.json", {**run_json("gaia"), "status": "weird"})
        named = invoke("import", str(results / "b.json"), "--json", expect=1)
        found = invoke("import", str(results), "--json", expect=1)
        assert [r["state"] for r in json.loads(named.stdout)] == ["failed"]
        assert {Path(r["path"]).name: r["state"] for r in json.loads(found.stdout)}["b.json"] == (
            "failed"
        )


class TestPartsOfAResult:
    """A SWE-bench per-instance report belongs to the run its folder (or run report) makes:
    imported alone it is ignored and says what to import, and never makes a second run."""

    def test_a_per_instance_report_alone_is_ignored_as_part_of_its_harness_run(
        self, invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        first, second = (p.relative_to(tmp_path) for p in harness_logs(tmp_path))
        result = invoke("import", str(second), "--json", expect=1)
        [row] = json.loads(result.stdout)
        assert (row["state"], row["member_of"], row["runs"]) == ("ignored", str(first), 0)
        assert row["message"] == (
            f"{second}: part of a harness run: import its folder {second.parents[1]} "
            f"(read through {first})"
        )
        assert f"Error: {row['message']}" in result.stderr
        assert "1 ignored (part of a result: 1)" in result.stderr
        assert json.loads(invoke("runs", "--json").stdout) == []

    def test_the_run_folder_records_each_instance_once_however_it_is_imported_after(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        first, second = harness_logs(tmp_path)
        folder = invoke("import", str(first.parents[1]), "--json")
        [run] = json.loads(invoke("runs", "--json").stdout)
        member = next(
            r
            for r in json.loads(folder.stdout)
            if r["path"].endswith(f"{second.parent.name}/report.json")
        )
        assert (member["state"], member["run_ids"]) == ("ignored", [run["run_id"]])
        invoke("import", str(second), expect=1)
        again = invoke("import", str(first), "--json")
        assert [r["state"] for r in json.loads(again.stdout)] == ["unchanged"]
        [same] = json.loads(invoke("runs", "--json").stdout)
        assert (same["run_id"], same["cells"]) == (run["run_id"], 2)

    def test_the_only_report_of_a_run_folder_is_a_run_with_one_cell(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        [only] = harness_logs(tmp_path, instances=1)
        result = invoke("import", str(only), "--json")
        assert [r["state"] for r in json.loads(result.stdout)] == ["imported"]
        [run] = json.loads(invoke("runs", "--json").stdout)
        shown = json.loads(invoke("show", run["run_id"], "--cells", "5", "--json").stdout)
        [cell] = shown["cells"]
        assert (cell["key"], cell["outcome"]) == (IDS[0], "passed")
        assert cell["metrics"]["fail_to_pass_success"] == 1
        assert cell["metrics"]["pass_to_pass_success"] == 2

    def test_a_per_instance_report_beside_its_run_report_is_part_of_that_report(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        first, _ = harness_logs(tmp_path)
        write_json(tmp_path / "org__model.run-1.json", run_report())
        result = invoke("import", str(first), "--json", expect=1)
        [row] = json.loads(result.stdout)
        assert row["state"] == "ignored"
        assert "part of a harness run" in row["message"]
        assert row["member_of"].endswith("org__model.run-1.json")

    def test_an_experiments_instance_report_is_part_of_its_submission(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        results = submission(tmp_path, reports={IDS[0]: True})
        folder = results.parent.parent
        for part in (folder / "logs" / IDS[0] / "report.json", folder / "metadata.yaml"):
            [row] = json.loads(invoke("import", str(part), "--json", expect=1).stdout)
            assert row["state"] == "ignored"
            assert "part of a SWE-bench submission: import its folder" in row["message"]
            assert row["member_of"].endswith("results/results.json")
