"""What a user sees on a terminal: tables fit its width (`--wide` shows everything), long
errors lead with what differs and wrap, a bad `--status` is a usage error, and `follow`
says what it waits for."""

from __future__ import annotations

import fcntl
import os
import pty
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from benchledger.commands.cli import cli
from benchledger.commands.messages import error_text
from benchledger.commands.output import ELLIPSIS, fit
from benchledger.commands.read import RUN_STATUSES
from benchledger.domain.records import RunStatus
from tests.conftest import CORPUS
from tests.helpers import run_json, write_json
from tests.ledgers import build_browsable, build_corpus

CLI = [sys.executable, "-c", "from benchledger.commands.cli import cli; cli()"]


def on_terminal(*args: str, columns: int = 100) -> tuple[int, str]:
    """`benchledger ARGS` on a pseudo-terminal `columns` wide (COLUMNS set too, as a shell
    does): its exit code and what the terminal showed, stdout and stderr as they came."""
    main, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {**os.environ, "COLUMNS": str(columns)}
    process = subprocess.Popen(
        [*CLI, *args], stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary, env=env
    )
    os.close(secondary)
    shown = bytearray()
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    return process.wait(60), shown.decode().replace("\r\n", "\n")


def runs(db: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """`benchledger runs` into a pipe (CliRunner's stdout is no terminal)."""
    result = CliRunner(env=env).invoke(cli, ["--db", str(db), "runs", *args])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_browsable(tmp_path_factory.mktemp("width") / "ledger.db")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"no corpus at {CORPUS}")
    return build_corpus(tmp_path_factory.mktemp("width-corpus") / "ledger.db", CORPUS)


class TestFittingTheTerminal:
    def test_runs_of_the_demo_fit_a_100_column_terminal(self, demo: Path) -> None:
        assert widest(runs(demo)) > 100, "the demo's table is no longer wide"
        code, shown = on_terminal("--db", str(demo), "runs")
        assert code == 0, shown
        assert widest(shown) <= 100
        assert ELLIPSIS in shown
        assert len(shown.splitlines()) == len(runs(demo).splitlines())

    def test_runs_of_the_whole_corpus_fit_a_100_column_terminal(self, corpus: Path) -> None:
        code, shown = on_terminal("--db", str(corpus), "runs")
        assert code == 0, shown[-2000:]
        assert len(shown.splitlines()) > 500
        assert widest(shown) <= 100

    def test_wide_shows_every_column_whole_on_a_terminal(self, demo: Path) -> None:
        code, wide = on_terminal("--db", str(demo), "runs", "--wide")
        assert code == 0, wide
        assert ELLIPSIS not in wide
        assert wide == runs(demo)

    def test_a_pipe_gets_the_whole_table_whatever_columns_says(self, demo: Path) -> None:
        """As `benchledger runs > file` or `| grep`: readline exports COLUMNS to the
        children of any process that loaded it, so COLUMNS alone is no terminal."""
        assert runs(demo, env={"COLUMNS": "40"}) == runs(demo)
        assert ELLIPSIS not in runs(demo)

    def test_json_and_csv_are_never_cut(self, demo: Path) -> None:
        for fmt in ("--json", "--csv", "--nl"):
            code, shown = on_terminal("--db", str(demo), "runs", fmt, columns=40)
            assert code == 0
            assert shown == runs(demo, fmt)


class TestFit:
    def test_a_table_that_fits_is_left_whole(self) -> None:
        headers, body = fit(["a", "b"], [["x", "y"]], 80)
        assert (headers, body) == (["a", "b"], [["x", "y"]])

    def test_the_widest_columns_are_cut_first_and_narrow_ones_kept(self) -> None:
        # "id" keeps its 4 characters (2 of header padding); the two gaps take 4; the
        # other two columns share the remaining 38.
        headers, body = fit(["id", "benchmark", "model"], [["1", "b" * 30, "m" * 50]], 46)
        assert headers == ["id", "benchmark", "model"]
        assert body == [["1", "b" * 18 + ELLIPSIS, "m" * 18 + ELLIPSIS]]

    def test_a_cell_of_several_lines_is_shown_on_one(self) -> None:
        _, body = fit(["error"], [["first\nsecond" + "x" * 40]], 20)
        assert body == [["first second" + "x" * 7 + ELLIPSIS]]


class TestStatusFilter:
    def test_an_unknown_status_is_a_usage_error_naming_the_valid_ones(self, demo: Path) -> None:
        result = CliRunner().invoke(cli, ["--db", str(demo), "runs", "--status", "bogus"])
        assert result.exit_code == 2
        assert "'bogus' is not one of" in result.stderr
        for status in ("succeeded", "timed_out", "invalidated", "superseded"):
            assert status in result.stderr
        assert result.stdout == ""

    def test_the_statuses_it_takes_are_the_domains(self) -> None:
        assert [status.value for status in RunStatus] == RUN_STATUSES

    def test_every_listed_status_is_accepted(self, demo: Path) -> None:
        for status in ("succeeded", "failed", "invalidated", "superseded", "recovered"):
            assert runs(demo, "--status", status, "--json").startswith("[")


def conflicting_files(tmp_path: Path) -> tuple[Path, Path]:
    """A ledger holding a run, and a file stating that run with another score and model:
    a conflict."""
    db = tmp_path / "ledger.db"
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    write_json(first, run_json(run_key="r1", score=0.5))
    write_json(second, run_json(run_key="r1", score=0.75, model="m" * 150))
    assert CliRunner().invoke(cli, ["--db", str(db), "import", str(first)]).exit_code == 0
    return db, second


class TestLongErrors:
    def test_a_conflict_on_a_terminal_names_its_fields_first_one_per_line_wrapped(
        self, tmp_path: Path
    ) -> None:
        db, second = conflicting_files(tmp_path)
        code, shown = on_terminal("--db", str(db), "import", str(second), columns=60)
        assert code == 1
        lines = shown.splitlines()
        lines = lines[next(i for i, line in enumerate(lines) if line.startswith("Error: ")) :]
        assert lines[0].startswith("Error: model, score of run 'r1'")
        assert all(len(line) <= 60 for line in lines), shown
        assert any(
            line.startswith("  score: recorded 0.5, this file states 0.75") for line in lines
        )
        assert any(line.startswith("  Nothing was appended") for line in lines)

    def test_into_a_pipe_a_conflict_stays_one_line(self, tmp_path: Path) -> None:
        db, second = conflicting_files(tmp_path)
        result = CliRunner(env={"COLUMNS": "60"}).invoke(
            cli, ["--db", str(db), "import", str(second)]
        )
        assert result.exit_code == 1
        (error,) = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
        assert "is already recorded with other facts: " in error
        assert len(error) > 300

    def test_any_long_error_wraps_to_the_terminal(self) -> None:
        text = error_text("field 'score': " + "word " * 60, 50)
        lines = text.splitlines()
        assert lines[0].startswith("field 'score': ")
        assert len(lines) > 3
        assert all(len(line) <= 50 - len("Error: ") for line in lines[:1])
        assert all(len(line) <= 50 for line in lines)
        assert error_text("short", 50) == "short"


class TestFollow:
    def test_on_a_sqlite_ledger_it_says_what_it_follows_and_that_it_is_current(
        self, demo: Path
    ) -> None:
        result = CliRunner().invoke(
            cli, ["--db", str(demo), "follow", "--polls", "1", "--interval", "0.5"]
        )
        assert result.exit_code == 0, result.stderr
        assert result.stderr.startswith(f"Following {demo}, polling every 0.5 s")
        assert "SQLite ledger: every command that writes to it brings its read models" in (
            result.stderr
        )
        assert result.stdout == ""


# Each command that writes a path the user names, with the arguments that name it.
WRITERS = {
    "publish": ["publish", "{path}"],
    "export-latest": ["export-latest", "{path}"],
    "export-viewer-data": ["export-viewer-data", "--out", "{path}"],
    "results-matrix": ["results-matrix", "--out", "{path}"],
    "head-to-head": [
        "head-to-head",
        "--target",
        "eliza",
        "--baseline",
        "opencode",
        "--out",
        "{path}",
    ],
    "head-to-head --publish-latest-dir": [
        "head-to-head",
        "--target",
        "eliza",
        "--baseline",
        "opencode",
        "--publish-latest-dir",
        "{path}",
    ],
    # The results root of an ad hoc run: its run folders go under it.
    "run --results-root": [
        "run",
        "--agent",
        "a",
        "--model",
        "m",
        "--benchmark",
        "adhoc",
        "--results-root",
        "{path}",
        "--",
        sys.executable,
        "-c",
        "import json, os; json.dump(dict(score=1), "
        "open(os.path.join(os.environ['BENCHLEDGER_OUTPUT_DIR'], 'r.json'), 'w'))",
    ],
}


class TestMissingParentFolders:
    @pytest.mark.parametrize("command", list(WRITERS))
    def test_a_missing_parent_folder_is_refused_naming_it(
        self, command: str, demo: Path, tmp_path: Path
    ) -> None:
        db = Path(shutil.copy(demo, tmp_path / "ledger.db"))
        target = tmp_path / "missing" / "deeper" / "out"
        args = [a.replace("{path}", str(target)) for a in WRITERS[command]]
        result = CliRunner().invoke(cli, ["--db", str(db), *args])
        assert result.exit_code == 1, result.output
        assert f"the folder {tmp_path / 'missing'} does not exist" in result.stderr
        assert "--parents" in result.stderr
        assert not (tmp_path / "missing").exists()

    @pytest.mark.parametrize("command", list(WRITERS))
    def test_parents_creates_them(self, command: str, demo: Path, tmp_path: Path) -> None:
        db = Path(shutil.copy(demo, tmp_path / "ledger.db"))
        target = tmp_path / "missing" / "deeper" / "out"
        args = [a.replace("{path}", str(target)) for a in WRITERS[command]]
        # The flag goes before a command's own arguments (`run ... -- COMMAND`).
        cut = args.index("--") if "--" in args else len(args)
        result = CliRunner().invoke(cli, ["--db", str(db), *args[:cut], "--parents", *args[cut:]])
        assert result.exit_code == 0, result.stderr
        assert target.exists()

    def test_a_parent_that_exists_needs_no_flag(self, demo: Path, tmp_path: Path) -> None:
        result = CliRunner().invoke(cli, ["--db", str(demo), "export-latest", str(tmp_path / "x")])
        assert result.exit_code == 0, result.stderr
        assert (tmp_path / "x" / "latest").is_dir()

    def test_every_command_with_an_output_path_takes_parents(self) -> None:
        for name in (
            "publish",
            "export-latest",
            "export-viewer-data",
            "results-matrix",
            "head-to-head",
            "view-head-to-head",
            "compare",
            "preflight",
            "review",
            "run",
        ):
            command = cli.get_command(click.Context(cli), name)
            assert command is not None
            assert "parents" in {p.name for p in command.params}, name
