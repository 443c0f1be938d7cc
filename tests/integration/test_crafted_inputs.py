"""Crafted inputs, each made here: every one is refused with ONE line naming the file and
the field (or imported), in bounded memory, and a refused file leaves no event behind.

Memory is measured in a child process (its peak resident size, not wall time): the
inputs are sized so that reading them whole would go far past the bound.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import CORPUS
from tests.helpers import run_json, write_json
from tests.unit.test_format_orchestrator import db_row, make_db

MiB = 1 << 20
# Far below what these inputs cost before they were bounded (1 to 3 GiB).
MEMORY_BOUND_KIB = 600 * 1024
CLI = "from benchledger.commands.cli import cli; cli()"
# The child's peak resident size, read by a parent process whose only child it is.
MEASURED = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:])\n"
    "print('maxrss', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(done.returncode)\n"
)
needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"the shared corpus is not at {CORPUS} (it lives beside the repo)"
)


def benchledger(db: Path, *args: str | Path) -> tuple[subprocess.CompletedProcess[str], int]:
    """The CLI in a child process, and its peak resident size in KiB."""
    argv = [sys.executable, "-c", MEASURED, sys.executable, "-c", CLI, "--db", str(db)]
    done = subprocess.run(
        [*argv, *map(str, args)], capture_output=True, text=True, timeout=120, check=False
    )
    peak = [line for line in done.stderr.splitlines() if line.startswith("maxrss ")]
    assert peak, done.stderr
    return done, int(peak[-1].split()[1])


def errors(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("Error: ")]


def stored_events(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM stored_events").fetchone()[0])


def refused(db: Path, path: Path, *needles: str) -> str:
    """Import `path` into a ledger holding one run already: it fails with one error line
    holding every needle, in bounded memory, and appends nothing."""
    if not db.exists():
        seed = path.parent.parent / "seed.json" if path.is_dir() else path.parent / "seed.json"
        write_json(seed, run_json("seed"))
        assert benchledger(db, "import", seed)[0].returncode == 0
    before = stored_events(db)
    done, peak = benchledger(db, "import", path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = errors(done)
    assert len(lines) == 1, done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert peak < MEMORY_BOUND_KIB, f"{peak} KiB"
    assert stored_events(db) == before
    return lines[0]


def database(path: Path, **columns: str) -> Path:
    """An orchestrator.sqlite of one finished run, with `columns` (name: SQL of its value)
    added or replaced."""
    made = make_db(path, [db_row()])
    with sqlite3.connect(made) as conn:
        existing = {row[1] for row in conn.execute("PRAGMA table_info(benchmark_runs)")}
        for name, sql in columns.items():
            if name not in existing:
                conn.execute(f"ALTER TABLE benchmark_runs ADD COLUMN {name}")
            conn.execute(f"UPDATE benchmark_runs SET {name} = {sql}")
    return made


class TestSourceDatabaseValues:
    def test_a_huge_blob_is_refused_by_table_run_and_column_without_being_read(
        self, db: Path, tmp_path: Path
    ) -> None:
        path = database(tmp_path / "r" / "orchestrator.sqlite", payload=f"zeroblob({100 * MiB})")
        line = refused(db, path, "field 'benchmark_runs.payload'", "a blob of 104857600 bytes")
        assert "--limit value-size=N" in line and "run 'run_bfcl_" in line

    def test_a_huge_text_in_a_mapped_column_is_refused_the_same_way(
        self, db: Path, tmp_path: Path
    ) -> None:
        path = database(tmp_path / "r" / "orchestrator.sqlite", error=f"hex(zeroblob({20 * MiB}))")
        refused(db, path, "field 'benchmark_runs.error'", "a text value", "value-size")

    def test_a_blob_kept_as_it_is_counts_its_bytes_against_the_string_length(
        self, db: Path, tmp_path: Path
    ) -> None:
        path = database(tmp_path / "r" / "orchestrator.sqlite", payload=f"zeroblob({5 * MiB})")
        line = refused(db, path, "field 'benchmark_runs.payload'", "a blob of 5242880 bytes")
        assert "--limit string-length=N" in line

    def test_a_small_blob_of_text_is_imported_and_one_of_other_bytes_refused(
        self, db: Path, tmp_path: Path
    ) -> None:
        text = database(tmp_path / "t" / "orchestrator.sqlite", payload="CAST('ok' AS BLOB)")
        done, _ = benchledger(db, "import", text)
        assert done.returncode == 0, done.stderr
        path = database(tmp_path / "r" / "orchestrator.sqlite", payload="x'00ff'")
        refused(db, path, "field 'benchmark_runs.payload'", "a blob that is not UTF-8 text")

    def test_a_value_within_a_raised_value_size_reaches_the_kept_check(
        self, db: Path, tmp_path: Path
    ) -> None:
        path = database(tmp_path / "r" / "orchestrator.sqlite", payload=f"zeroblob({2 * MiB})")
        done, _ = benchledger(db, "import", path, "--limit", "value-size=1MiB")
        assert "value-size" in errors(done)[0]
        done, _ = benchledger(db, "import", path, "--limit", "string-length=4MiB")
        assert done.returncode == 0, done.stderr

    def test_a_key_stated_twice_in_a_json_column_is_refused_by_name(
        self, db: Path, tmp_path: Path
    ) -> None:
        path = database(tmp_path / "r" / "orchestrator.sqlite", metrics_json="""'{"n":1,"n":2}'""")
        refused(db, path, "field 'benchmark_runs.metrics_json'", 'duplicate key "n"')


class TestBombs:
    def test_a_huge_metrics_array_is_refused_by_field(self, db: Path, tmp_path: Path) -> None:
        doc = run_json("b", metrics={"big": [0] * 5_000_000})
        path = tmp_path / "big" / "run.json"
        path.parent.mkdir()
        path.write_text(json.dumps(doc, separators=(",", ":")))
        refused(db, path, "field 'metrics.big'", "an array of 5000000 elements", "array-length")

    def test_a_sparse_file_is_refused_at_its_first_nul_byte(self, db: Path, tmp_path: Path) -> None:
        path = tmp_path / "sparse" / "run.json"
        path.parent.mkdir()
        with path.open("wb") as f:
            f.write(json.dumps(run_json("b"))[:-1].encode() + b', "x": "')
            f.truncate(300 * MiB)
        refused(db, path, "run.json:1: invalid JSON: a NUL byte")

    def test_deep_nesting_is_refused(self, db: Path, tmp_path: Path) -> None:
        path = tmp_path / "deep" / "run.json"
        path.parent.mkdir()
        text = json.dumps(run_json("b"))
        path.write_text(text[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
        refused(db, path, "run.json", "the nesting exceeds the limit of 128 levels")

    def test_a_zip_bomb_eval_is_refused(self, db: Path, tmp_path: Path) -> None:
        path = tmp_path / "bomb" / "log.eval"
        path.parent.mkdir()
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("header.json", b" " * (50 * MiB))
        refused(db, path, "log.eval", "exceeds the limit of 200 times the compressed size")


class TestNames:
    def test_a_file_name_that_is_not_utf8_fails_alone_and_the_import_goes_on(
        self, db: Path, tmp_path: Path
    ) -> None:
        results = tmp_path / "results"
        results.mkdir()
        write_json(results / "a.json", run_json("first"))
        write_json(Path(os.fsdecode(bytes(results) + b"/b\xff\xfe.json")), run_json("bad"))
        write_json(results / "c.json", run_json("last"))
        done, _ = benchledger(db, "import", results, "--json")
        assert done.returncode == 1
        assert "Traceback" not in done.stderr
        assert errors(done) == [
            "Error: results/b\\xff\\xfe.json: the file name is not valid UTF-8 (shown with "
            "its bytes escaped); not read"
        ]
        states = {r["path"]: r["state"] for r in json.loads(done.stdout)}
        assert states == {
            "results/a.json": "imported",
            "results/b\\xff\\xfe.json": "failed",
            "results/c.json": "imported",
        }
        with sqlite3.connect(db) as conn:
            groups = conn.execute("SELECT closed_at, runs FROM run_groups").fetchall()
        assert len(groups) == 1 and groups[0][0] is not None and groups[0][1] == 2


class TestControlCharacters:
    @pytest.mark.parametrize(
        ("field", "value", "shown"),
        [
            ("agent", "a\x1b]0;pwned\x07", "\\x1b"),
            ("benchmark", "b\nc", "\\x0a"),
            ("model", "m\x00", "\\x00"),
            ("provider", "p\x9b31m", "\\x9b"),
            ("run_key", "k\x7f", "\\x7f"),
        ],
    )
    def test_a_control_character_in_a_name_is_refused_naming_the_field(
        self, db: Path, tmp_path: Path, field: str, value: str, shown: str
    ) -> None:
        path = tmp_path / "in" / "run.json"
        path.parent.mkdir()
        write_json(path, {**run_json("b"), field: value})
        refused(db, path, f"field 'record 1: header.{field}'", f"control character ({shown})")

    def test_control_characters_in_free_text_are_kept_and_shown_escaped(
        self, db: Path, tmp_path: Path
    ) -> None:
        error = "boom\x1b]0;pwned\x07 \x9b31m\ttab\nnext"
        path = write_json(tmp_path / "run.json", run_json("b", status="failed", error=error))
        assert benchledger(db, "import", path)[0].returncode == 0
        listed, _ = benchledger(db, "runs", "--json")
        run = json.loads(listed.stdout)[0]
        assert run["error"] == error  # kept as stated
        shown, _ = benchledger(db, "show", run["run_id"])
        assert "boom\\x1b]0;pwned\\x07 \\x9b31m\ttab\nnext" in shown.stdout
        for out in (shown.stdout, listed.stdout):
            assert not any(c in out for c in "\x1b\x07\x9b")


@needs_corpus
class TestDuplicateKeys:
    """A key stated twice is refused in every format's JSON (and YAML), naming key and
    line: a real file of each, copied, with a repeat added before its last brace."""

    CASES = [
        ("eliza_alwm/alwm/examples/benchmark_runs/registry-mixed", None),
        (
            "bfcl/eval_claude_small/claude-sonnet-4-5-20250929-FC/live",
            "BFCL_v4_live_parallel_multiple_score.json",
        ),
        ("inspect_ai/json", "2025-05-12T20-28-13-04-00_no-samples.json"),
        ("lm_eval", "2023_v0.3__bloom-1b1_gsm8k_8-shot.json"),
        ("eliza_alwm/eliza/benchmark_results/latest", "action-calling__openclaw.json"),
        ("swebench/experiments_submissions/verified/vorflux__20250424_vorflux_agent_v1", None),
        ("terminal_bench/vorflux/20250503_vorflux_agent_v1_remaining39", None),
    ]
    FILES = {
        "registry-mixed": "manifest.json",
        "vorflux__20250424_vorflux_agent_v1": "results/results.json",
        "20250503_vorflux_agent_v1_remaining39": "results/detailed_results.json",
    }

    @staticmethod
    def copied(tmp_path: Path, root: str, name: str | None) -> tuple[Path, Path]:
        source = CORPUS / root
        target = tmp_path / "in" / source.name
        if name is None:
            shutil.copytree(source, target)
            name = TestDuplicateKeys.FILES[source.name]
        else:
            target.mkdir(parents=True)
            shutil.copy(source / name, target / name)
        return target, target / name

    @pytest.mark.parametrize(("root", "name"), CASES)
    def test_a_repeated_key_fails_the_file_naming_it(
        self, db: Path, tmp_path: Path, root: str, name: str | None
    ) -> None:
        target, path = self.copied(tmp_path, root, name)
        assert benchledger(tmp_path / "fine.db", "import", target)[0].returncode == 0
        text = path.read_bytes()
        end = text.rindex(b"}")
        path.write_bytes(text[:end] + b', "dupkey": 1, "dupkey": 2' + text[end:])
        line = refused(db, target, 'duplicate key "dupkey" in one object')
        last = text[:end].count(b"\n") + 1
        assert f"{path.name}:{last}:" in line

    def test_a_repeated_key_in_an_eval_entry_fails_the_file(self, db: Path, tmp_path: Path) -> None:
        source = CORPUS / "inspect_ai" / "eval" / "log_read_sample.eval"
        path = tmp_path / "in" / source.name
        path.parent.mkdir()
        with zipfile.ZipFile(source) as z, zipfile.ZipFile(path, "w") as out:
            for info in z.infolist():
                body = z.read(info)
                if info.filename == "header.json":
                    end = body.rindex(b"}")
                    body = body[:end] + b', "dupkey": 1, "dupkey": 2' + body[end:]
                out.writestr(info, body)
        refused(db, path, "field 'header.json'", 'duplicate key "dupkey"')

    def test_a_repeated_key_in_a_metadata_yaml_fails_the_run(
        self, db: Path, tmp_path: Path
    ) -> None:
        root = "swebench/experiments_submissions/verified/vorflux__20250424_vorflux_agent_v1"
        target, _ = self.copied(tmp_path, root, None)
        metadata = target / "metadata.yaml"
        lines = metadata.read_text().count("\n")
        metadata.write_text(metadata.read_text() + "info:\n  name: again\n")
        refused(db, target, f"metadata.yaml:{lines + 1}:", "duplicate key 'info' in one mapping")
