"""Import at the edges: pipes, devices, link loops, undecodable text, nothing to import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchledger.adapters.formats.limits import GiB, Limits, MiB, option_name
from benchledger.commands.cli import cli
from tests.conftest import Invoke
from tests.helpers import run_json, write_json

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
        assert "Error: zero: skipped: a character device, not a regular file" in result.stderr
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
        named = benchledger(db, "import", str(results / "b.json"))
        assert named.returncode == 1 and "a named pipe, not a regular file" in named.stderr

    def test_a_symlink_loop_is_skipped_with_its_reason(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        results = a_result_dir(tmp_path)
        (results / "loop.json").symlink_to("loop.json")
        result = invoke("import", str(results), "--json")
        [loop] = [r for r in json.loads(result.stdout) if r["path"].endswith("loop.json")]
        assert loop["state"] == "ignored" and "symbolic link loop" in loop["message"]
        named = invoke("import", str(results / "loop.json"), expect=1)
        assert "loop.json: skipped: a symbolic link loop" in named.stderr


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
            f"Error: no result files found under {docs} (3 ignored: not a known result format: 2, "
            "a broken symbolic link: 1)"
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
