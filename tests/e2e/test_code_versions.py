"""Every executed run records the code that ran: the commit (and dirty flag) of its working
directory's repository, benchledger's version and the versions the registry declares, shown
by `runs --json`, `show`, the Datasette runs table and `export-viewer-data`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchledger.adapters.publication.browse import datasette_for
from tests.conftest import Invoke
from tests.e2e.test_run import Workspace
from tests.unit.test_format_orchestrator import db_row, latest_row, make_db, write

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
# An agent's own version command: prints its version, or fails as told.
AGENT_SCRIPT = """
import sys
if len(sys.argv) > 2 and sys.argv[2] == "fail":
    print("agent: no such flag", file=sys.stderr)
    sys.exit(3)
print(f"  {sys.argv[1]} 4.5.6 \\n")
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    return done.stdout.strip()


def make_repo(path: Path, files: dict[str, str]) -> str:
    """A git repository at `path` with `files` committed; its commit."""
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).write_text(text)
    git(path, "init", "-q")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "init")
    return git(path, "rev-parse", "HEAD")


def registry(ws: Workspace, bench_dir: str, versions: str = "", top: str = "") -> None:
    command = json.dumps([sys.executable, "bench.py", "{output_dir}"])
    ws.registry.write_text(
        top
        + textwrap.dedent(
            f"""
            [benchmarks.quick]
            command = {command}
            cwd = "{bench_dir}"
            unit = "accuracy"
            """
        )
        + versions
    )


@pytest.fixture
def ws(tmp_path: Path, invoke: Invoke) -> Iterator[Workspace]:
    workspace = Workspace(tmp_path, invoke)
    yield workspace
    workspace.cleanup()


def shown(ws: Workspace, run_id: str) -> dict[str, str]:
    """`show RUN`'s fields as printed: name, then its value."""
    lines = ws.text("show", run_id).split("\n\n")[0].splitlines()
    pairs = (line.split(None, 1) for line in lines)
    return {pair[0]: pair[1] for pair in pairs if len(pair) == 2}


def suite(ws: Workspace) -> tuple[Path, str]:
    """The benchmark's directory, its own repository (the workspace is none), and its commit."""
    bench = ws.root / "suite"
    commit = make_repo(bench, {"bench.py": (ws.root / "bench.py").read_text()})
    return bench, commit


def datasette_runs(db: Path) -> list[dict[str, Any]]:
    ds = datasette_for(db)

    async def fetch() -> httpx.Response:
        await ds.invoke_startup()
        response: httpx.Response = await ds.client.get("/ledger/runs.json?_shape=array")
        return response

    response = asyncio.run(fetch())
    assert response.status_code == 200
    rows: list[dict[str, Any]] = response.json()
    return rows


class TestExecutedRunsRecordTheirCode:
    def test_the_commit_of_the_working_directory_shows_everywhere(
        self, ws: Workspace, tmp_path: Path
    ) -> None:
        _, commit = suite(ws)
        registry(ws, "suite", 'versions = { benchmark_version = "1.2" }\n')
        ran = ws.outcome()
        assert ran["state"] == "succeeded", ran

        started = ws.events("RunStarted")[0]["data"]
        assert started["code_versions"] == {
            "benchledger_version": metadata.version("benchledger"),
            "benchmarks_commit": commit,
            "benchmarks_dirty": "false",
            "benchmark_version": "1.2",
        }

        [row] = ws.runs()
        assert (row["benchmarks_commit"], row["benchmarks_dirty"]) == (commit, 0)
        assert row["benchmark_version"] == "1.2"
        assert row["code_versions"] == started["code_versions"]

        fields = shown(ws, ran["run_id"])
        assert fields["benchmarks_commit"] == commit
        assert (fields["benchmarks_dirty"], fields["benchmark_version"]) == ("0", "1.2")
        assert json.loads(fields["code_versions"]) == started["code_versions"]
        assert ws.run_row(ran["run_id"])["benchmarks_commit"] == commit

        [listed] = datasette_runs(ws.db)
        assert listed["benchmarks_commit"] == commit
        assert listed["benchmarks_dirty"] == 0
        assert listed["benchmark_version"] == "1.2"

        out = tmp_path / "export" / "viewer_data.json"
        ws.invoke("export-viewer-data", "--out", str(out), "--parents")
        [exported] = json.loads(out.read_text())["runs"]
        assert exported["benchmarks_commit"] == commit
        assert exported["benchmark_version"] == "1.2"
        assert (exported["eliza_commit"], exported["eliza_version"]) == (None, None)

    def test_a_changed_tracked_file_marks_the_commit_dirty(self, ws: Workspace) -> None:
        bench, commit = suite(ws)
        registry(ws, "suite")
        (bench / "untracked.txt").write_text("not part of the commit\n")
        clean = ws.outcome()
        (bench / "bench.py").write_text((bench / "bench.py").read_text() + "\n# edited\n")
        dirty = ws.outcome("--force")
        rows = {r["run_id"]: r for r in ws.runs()}
        assert rows[clean["run_id"]]["benchmarks_dirty"] == 0  # untracked files do not count
        assert rows[dirty["run_id"]]["benchmarks_dirty"] == 1
        assert rows[dirty["run_id"]]["code_versions"]["benchmarks_dirty"] == "true"
        assert {r["benchmarks_commit"] for r in rows.values()} == {commit}
        assert shown(ws, dirty["run_id"])["benchmarks_dirty"] == "1"

    def test_outside_a_repository_there_is_no_commit_and_the_run_goes_on(
        self, ws: Workspace
    ) -> None:
        registry(ws, ".")
        ran = ws.outcome(env={"GIT_CEILING_DIRECTORIES": str(ws.root.parent)})
        assert ran["state"] == "succeeded"
        [row] = ws.runs()
        assert row["benchmarks_commit"] is None and row["benchmarks_dirty"] is None
        assert row["code_versions"] == {"benchledger_version": metadata.version("benchledger")}
        assert "benchmarks_commit" not in shown(ws, ran["run_id"])

    def test_declared_versions_literal_command_git_and_package_json(self, ws: Workspace) -> None:
        suite(ws)
        agent = ws.root / "agents" / "eliza"
        agent_commit = make_repo(agent, {"package.json": '{"version": "2.0.0-beta.3"}'})
        (ws.root / "agent.py").write_text(textwrap.dedent(AGENT_SCRIPT))
        py = json.dumps(sys.executable)
        registry(
            ws,
            "suite",
            textwrap.dedent(
                f"""
                [benchmarks.quick.versions]
                benchmark_version = "1.2"
                agent_version = {{ command = [{py}, "../agent.py", "{{agent}}"] }}
                broken = {{ command = [{py}, "../agent.py", "{{agent}}", "fail"] }}
                missing = {{ command = ["no-such-version-command-here"] }}
                """
            ),
            top=textwrap.dedent(
                """\
                [versions]
                agent_commit = { git = "agents/{agent}" }
                agent_package = { package_json = "agents/{agent}/package.json" }
                benchmark_version = "overridden by the benchmark's own"
                """
            ),
        )
        ran = ws.outcome()
        assert ran["state"] == "succeeded"  # failing version commands never stop a run
        [row] = ws.runs()
        versions = row["code_versions"]
        assert versions["benchmark_version"] == "1.2"
        assert versions["agent_version"] == "eliza 4.5.6"
        assert versions["agent_commit"] == agent_commit
        assert versions["agent_package"] == "2.0.0-beta.3"
        assert "broken" not in versions and "missing" not in versions
        assert versions["broken.error"].endswith("exited with code 3: agent: no such flag")
        assert versions["missing.error"] == "no-such-version-command-here: command not found"
        assert (row["agent_version"], row["agent_commit"]) == ("eliza 4.5.6", agent_commit)
        fields = shown(ws, ran["run_id"])
        assert (fields["agent_version"], fields["agent_commit"]) == ("eliza 4.5.6", agent_commit)
        assert "broken.error" in json.loads(fields["code_versions"])

        out = ws.root / "viewer_data.json"
        ws.invoke("export-viewer-data", "--out", str(out), "--parents")
        [exported] = json.loads(out.read_text())["runs"]
        assert exported["eliza_version"] == "eliza 4.5.6"
        assert exported["eliza_commit"] == agent_commit
        assert exported["benchmark_version"] == "1.2"

    def test_a_version_command_holding_a_secret_is_masked(self, ws: Workspace) -> None:
        suite(ws)
        registry(
            ws,
            "suite",
            textwrap.dedent(
                """
                [benchmarks.quick.versions]
                agent_version = { command = ["sh", "-c", "echo v1 $BENCH_API_KEY"] }
                """
            ),
        )
        secret = "sk-versionsecret0123456789abcdef"
        ws.outcome(env={"BENCH_API_KEY": secret})
        [row] = ws.runs()
        assert row["agent_version"].startswith("v1 ") and secret not in row["agent_version"]
        assert secret not in json.dumps(ws.events())

    def test_a_registry_declaring_a_recorded_name_is_refused_naming_the_field(
        self, ws: Workspace
    ) -> None:
        registry(ws, ".", 'versions = { benchmarks_commit = "abc" }\n')
        process = subprocess.run(
            ws.argv(), cwd=ws.root, env=ws.environ(None), capture_output=True, text=True
        )
        assert process.returncode != 0
        assert "benchmarks.quick.versions.benchmarks_commit" in process.stderr
        assert "recorded on every run" in process.stderr
        assert not ws.db.exists() or ws.invoke("runs", "--json").stdout.strip() == "[]"


SOURCE_VERSIONS = {
    "benchmark_version": "0.4.1",
    "benchmarks_commit": "a1b2c3d",
    "agent_version": "2.0.0",
    "agent_commit": "d4e5f6a",
}


def versions_of(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in SOURCE_VERSIONS}


class TestImportedOrchestratorRunsShowTheSameFields:
    """An orchestrator row's benchmark_version, benchmarks_commit, eliza_version and
    eliza_commit are the run's benchmark_version, benchmarks_commit, agent_version and
    agent_commit, as an executed run's are; the recorded facts stay as stated."""

    def test_the_database_row_s_versions_are_the_run_s(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        row = db_row()
        invoke("import", str(make_db(tmp_path / "src" / "orchestrator.sqlite", [row])))
        [run] = json.loads(invoke("runs", "--json").stdout)
        assert versions_of(run) == SOURCE_VERSIONS
        assert run["benchmarks_dirty"] is None and run["code_versions"] is None
        # The source's own columns are kept as it stated them.
        columns = run["provenance"]["source_columns"]
        assert (columns["eliza_commit"], columns["eliza_version"]) == ("d4e5f6a", "2.0.0")
        [listed] = datasette_runs(db)
        assert versions_of(listed) == SOURCE_VERSIONS
        text = invoke("show", run["run_id"]).stdout
        assert "agent_commit" in text and "d4e5f6a" in text

        out = tmp_path / "viewer_data.json"
        invoke("export-viewer-data", "--out", str(out))
        [exported] = json.loads(out.read_text())["runs"]
        assert {k: exported[k] for k in VERSION_NAMES} == {
            "benchmark_version": "0.4.1",
            "benchmarks_commit": "a1b2c3d",
            "eliza_version": "2.0.0",
            "eliza_commit": "d4e5f6a",
        }

    def test_a_later_file_s_versions_fill_in_a_run_recorded_without_them(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        row = db_row()
        invoke("import", str(write(tmp_path / "latest" / "bfcl__eliza.json", latest_row(row))))
        [sparse] = json.loads(invoke("runs", "--json").stdout)
        assert versions_of(sparse) == dict.fromkeys(SOURCE_VERSIONS)
        invoke("import", str(make_db(tmp_path / "db" / "orchestrator.sqlite", [row])))
        [run] = json.loads(invoke("runs", "--json").stdout)
        assert run["run_id"] == sparse["run_id"]
        assert versions_of(run) == SOURCE_VERSIONS


VERSION_NAMES = ("benchmark_version", "benchmarks_commit", "eliza_version", "eliza_commit")


def test_the_recorded_version_is_the_installed_metadata_s(invoke: Invoke) -> None:
    """`benchledger_version`, `--version` and `benchledger.__version__` come from
    `domain.version` (no metadata lookup at start-up); pyproject.toml reads the installed
    version from there."""
    import benchledger
    from benchledger.adapters.execution.versions import benchledger_version

    assert benchledger_version() == benchledger.__version__ == metadata.version("benchledger")
    shown = invoke("--version").output
    assert shown.strip().endswith(f"version {metadata.version('benchledger')}")
