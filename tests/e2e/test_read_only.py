"""Read-only ledgers: `--read-only`, and a ledger on a real read-only mount."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner, Result

from benchledger.adapters.publication.browse import datasette_for
from benchledger.commands.cli import cli
from tests.ledgers import append_unprojected_runs, build_demo, copy_ledger, digest, listing

BENCHLEDGER = Path(sys.executable).parent / "benchledger"

# Read commands and exports (DIR: a writable scratch directory for their output).
READS = [
    ["runs", "--json"],
    ["runs", "--as-of", "100", "--json"],
    ["show", "RUN", "--cells", "3"],
    ["history", "RUN"],
    ["events", "--limit", "5"],
    ["skips"],
    ["latest"],
    ["matrix"],
    ["gates"],
    ["verify"],
    ["export-latest", "DIR/export"],
    ["export-viewer-data", "--out", "DIR/viewer.json"],
]


@pytest.fixture(scope="module")
def demo_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo(tmp_path_factory.mktemp("demo") / "ledger.db")


@pytest.fixture(scope="module")
def run_id(demo_ledger: Path) -> str:
    result = CliRunner().invoke(cli, ["--db", str(demo_ledger), "runs", "--json"])
    return str(json.loads(result.stdout)[0]["run_id"])


def invoke(
    db: Path, scratch: Path, *args: str, run: str = "", env: dict[str, str] | None = None
) -> Result:
    argv = [a.replace("DIR", str(scratch)).replace("RUN", run) for a in args]
    return CliRunner().invoke(cli, ["--db", str(db), *argv], env=env)


def ledger_copy(demo_ledger: Path, tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    home.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return copy_ledger(demo_ledger, home / "ledger.db"), scratch


class TestTheReadOnlyOption:
    @pytest.mark.parametrize("args", READS, ids=lambda a: " ".join(a))
    def test_every_read_and_export_works_and_changes_no_byte(
        self, demo_ledger: Path, run_id: str, tmp_path: Path, args: list[str]
    ) -> None:
        db, scratch = ledger_copy(demo_ledger, tmp_path)
        before = digest(db)
        result = invoke(db, scratch, "--read-only", *args, run=run_id)
        assert result.exit_code == 0, result.output
        assert digest(db) == before and listing(db.parent) == ["ledger.db"]

    def test_the_environment_variable_means_the_same(
        self, demo_ledger: Path, tmp_path: Path
    ) -> None:
        db, scratch = ledger_copy(demo_ledger, tmp_path)
        append_unprojected_runs(db)
        result = invoke(db, scratch, "runs", env={"BENCHLEDGER_READ_ONLY": "1"})
        assert result.exit_code == 1 and "events behind" in result.stderr

    def test_a_command_that_appends_is_refused_naming_it(
        self, demo_ledger: Path, run_id: str, tmp_path: Path
    ) -> None:
        db, scratch = ledger_copy(demo_ledger, tmp_path)
        before = digest(db)
        result = invoke(db, scratch, "--read-only", "invalidate", run_id, "--reason", "leak")
        assert result.exit_code == 1
        assert result.stderr.startswith(f"Error: {db} is open read-only (--read-only)")
        assert "`invalidate` appends to it" in result.stderr
        assert digest(db) == before

    def test_read_models_behind_the_log_say_how_far_and_how_to_catch_up(
        self, demo_ledger: Path, tmp_path: Path
    ) -> None:
        db, scratch = ledger_copy(demo_ledger, tmp_path)
        appended = append_unprojected_runs(db, count=2)
        before = digest(db)
        result = invoke(db, scratch, "--read-only", "runs")
        assert result.exit_code == 1 and "Traceback" not in result.output
        assert f"are {appended} events behind its event log" in result.stderr
        assert "benchledger --db COPY rebuild" in result.stderr
        assert digest(db) == before
        # The same ledger, writable: the read brings them current.
        assert len(json.loads(invoke(db, scratch, "runs", "--json").stdout)) == 81

    def test_verify_reads_events_never_projected_without_writing(
        self, demo_ledger: Path, tmp_path: Path
    ) -> None:
        db, scratch = ledger_copy(demo_ledger, tmp_path)
        appended = append_unprojected_runs(db)
        before = digest(db)
        result = invoke(db, scratch, "--read-only", "verify", "--json")
        report = json.loads(result.stdout)
        assert result.exit_code == 0 and report["ok"]
        assert report["checked"] == report["head_position"] > appended
        assert digest(db) == before


def _mount(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, check=False)


@pytest.fixture
def read_only_mount(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(source dir, the same dir mounted read-only); skipped where mounting is not allowed."""
    if shutil.which("mount") is None:
        pytest.skip("no mount command here; the read-only option tests cover the logic")
    source, target = tmp_path / "source", tmp_path / "readonly"
    source.mkdir()
    target.mkdir()
    bound = _mount(["--bind", str(source), str(target)])
    if bound.returncode != 0:
        pytest.skip(f"cannot bind-mount here (needs root or CAP_SYS_ADMIN): {bound.stderr.strip()}")
    remounted = _mount(["-o", "remount,bind,ro", str(target)])
    try:
        if remounted.returncode != 0:
            pytest.skip(f"cannot remount read-only here: {remounted.stderr.strip()}")
        yield source, target
    finally:
        if subprocess.run(["umount", str(target)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(target)], check=False)


def cli_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BENCHLEDGER), *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


class TestARealReadOnlyMount:
    @pytest.mark.parametrize("args", READS, ids=lambda a: " ".join(a))
    def test_every_read_and_export_works_without_the_option(
        self,
        demo_ledger: Path,
        run_id: str,
        read_only_mount: tuple[Path, Path],
        tmp_path: Path,
        args: list[str],
    ) -> None:
        source, mounted = read_only_mount
        copy_ledger(demo_ledger, source / "ledger.db")
        scratch = tmp_path / "scratch"
        scratch.mkdir()
        argv = [a.replace("DIR", str(scratch)).replace("RUN", run_id) for a in args]
        result = cli_process("--db", str(mounted / "ledger.db"), *argv, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        assert listing(source) == ["ledger.db"]

    def test_behind_read_models_and_appends_are_errors_not_tracebacks(
        self, demo_ledger: Path, read_only_mount: tuple[Path, Path], tmp_path: Path
    ) -> None:
        source, mounted = read_only_mount
        copy_ledger(demo_ledger, source / "ledger.db")
        append_unprojected_runs(source / "ledger.db")
        db = str(mounted / "ledger.db")
        behind = cli_process("--db", db, "latest", cwd=tmp_path)
        assert behind.returncode == 1 and "Traceback" not in behind.stderr
        assert behind.stderr.startswith("Error: the read models in") and "behind" in behind.stderr
        refused = cli_process("--db", db, "demo", cwd=tmp_path)
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert "its location is not writable" in refused.stderr

    def test_datasette_serves_it(
        self, demo_ledger: Path, read_only_mount: tuple[Path, Path]
    ) -> None:
        source, mounted = read_only_mount
        copy_ledger(demo_ledger, source / "ledger.db")

        async def fetch() -> httpx.Response:
            datasette = datasette_for(mounted / "ledger.db", immutable=True)
            transport = httpx.ASGITransport(app=datasette.app())
            try:
                async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
                    return await client.get("/ledger/runs.json?_shape=array&_size=5")
            finally:
                for database in datasette.databases.values():
                    database.close()

        response = asyncio.run(fetch())
        assert response.status_code == 200 and len(response.json()) == 5
