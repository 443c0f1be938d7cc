"""Fast start: commands load lazily, and a current ledger is read without the event store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from benchledger.commands import cli as cli_module
from benchledger.commands.cli import COMMANDS, cli
from benchledger.projections.registry import CLASSES, all_projections
from benchledger.projections.versions import READ_MODELS, TOPICS
from tests.helpers import fake_distribution
from tests.ledgers import append_unprojected_runs, build_demo

HEAVY = ("pydantic", "eventsourcing", "sqlite_utils", "datasette", "yaml")
# What only computing a statistic needs (scipy.stats alone costs most of a second).
STATISTICS = ("numpy", "scipy")
# tabulate too: --help prints no table.
NEVER_FOR_HELP = (*HEAVY, *STATISTICS, "tabulate")

# Loads the CLI once, then runs each command's --help in a forked child (which starts
# with only what the CLI itself loaded) and prints which heavy packages each one loaded.
HELP_PROBE = """
import json, os, sys
from benchledger.commands.cli import COMMANDS, cli
heavy = set({heavy!r})
loaded = {{}}
for name in sorted(COMMANDS):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        sys.stdout = open(os.devnull, "w")
        try:
            cli([name, "--help"], prog_name="benchledger")
        except SystemExit:
            pass
        found = sorted({{m.split(".")[0] for m in sys.modules}} & heavy)
        os.write(write, json.dumps(found).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as child:
        loaded[name] = json.loads(child.read())
    os.waitpid(pid, 0)
print(json.dumps(loaded))
"""

# Runs the CLI in a fresh interpreter, then prints which heavy packages it loaded.
PROBE = """
import json, sys
from benchledger.commands.cli import cli
try:
    cli(sys.argv[1:], prog_name="benchledger")
except SystemExit:
    pass
heavy = {heavy!r}
print(json.dumps(sorted({{m.split(".")[0] for m in sys.modules}} & set(heavy))), file=sys.stderr)
"""


# What only the other publication commands use (comparisons, rankings): a gate, checking
# or recording its verdict, never loads it.
NOT_FOR_GATES = (
    "benchledger.commands.publish",
    "benchledger.adapters.publication.compare",
    "benchledger.domain.ranking",
    "statistics",
)

# What appending a verdict, a review or a comparison needs none of: the run, import and
# execution code of the domain, and the read models of runs (`domain.publishing`,
# `projections.registry`).
NOT_FOR_VERDICTS = (
    "benchledger.domain.run",
    "benchledger.domain.run_group",
    "benchledger.domain.signature",
    "benchledger.domain.benchmark",
    "benchledger.domain.records",
    "benchledger.domain.cells",
    "benchledger.domain.importing",
    "benchledger.domain.executing",
    "benchledger.domain.ledger",
    "benchledger.domain.model_identity",
    "benchledger.projections.runs",
    "benchledger.projections.latest",
    "benchledger.projections.cells",
    "benchledger.projections.run_groups",
)

# Runs the CLI in a fresh interpreter, then prints which of the given modules it loaded.
MODULES_PROBE = """
import json, sys
from benchledger.commands.cli import cli
try:
    cli(sys.argv[1:], prog_name="benchledger")
except SystemExit:
    pass
print(json.dumps(sorted(set({names!r}) & set(sys.modules))), file=sys.stderr)
"""


# Runs the CLI in a fresh interpreter, then prints which of the domain's module-level
# type adapters have built their schema.
ADAPTERS_PROBE = """
import json, sys
from benchledger.commands.cli import cli
try:
    cli(sys.argv[1:], prog_name="benchledger")
except SystemExit:
    pass
from benchledger.domain import cells, facts
built = {"cells": cells._CELLS.pydantic_complete, "rows": cells._ROWS.pydantic_complete,
         "facts": facts._JSON.pydantic_complete}
print(json.dumps(built), file=sys.stderr)
"""


def probe_lines(script: str, *args: str, cwd: Path) -> list[str]:
    """What a probe script, run as the CLI with `args` in a fresh interpreter, printed
    to standard error, line by line."""
    result = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )
    return result.stderr.strip().splitlines()


def loaded_modules(*args: str, cwd: Path, names: tuple[str, ...]) -> list[str]:
    loaded: list[str] = json.loads(
        probe_lines(MODULES_PROBE.format(names=names), *args, cwd=cwd)[-1]
    )
    return loaded


# Runs the CLI in a fresh interpreter, then prints whether the native cell-line validators
# were built.
LINE_VALIDATORS_PROBE = """
import json, sys
from benchledger.commands.cli import cli
try:
    cli(sys.argv[1:], prog_name="benchledger")
except SystemExit:
    pass
from benchledger.adapters.formats import native_cells
print(json.dumps(native_cells.validators.cache_info().currsize), file=sys.stderr)
"""


# Runs the CLI in a fresh interpreter and prints the state of the cyclic collector as the
# command closes (how many objects are frozen, whether the ledger application's class is
# among them: `Publishing`, which every application the CLI opens is), after it (on,
# nothing left frozen) and at exit (how many are frozen).
COLLECTOR_PROBE = """
import atexit, gc, json, sys
# Registered first, so it runs last at exit: after what the command registered.
atexit.register(lambda: print(json.dumps(gc.get_freeze_count()), file=sys.stderr))
from benchledger.commands import context
from benchledger.commands.cli import cli
state = {}
close = context.LedgerContext.close
def closing(self):
    ledger = sys.modules.get("benchledger.domain.publishing")
    walked = [o for o in gc.get_objects() if ledger is not None and o is ledger.Publishing]
    state.update(frozen=gc.get_freeze_count(), ledger=ledger is not None)
    state["ledger_frozen"] = ledger is not None and not walked
    close(self)
context.LedgerContext.close = closing
try:
    cli(sys.argv[1:], prog_name="benchledger")
except SystemExit:
    pass
state.update(enabled=gc.isenabled(), frozen_after=gc.get_freeze_count())
print(json.dumps(state), file=sys.stderr)
"""


def collector_after(*args: str, cwd: Path) -> dict[str, object]:
    *_, during, at_exit = probe_lines(COLLECTOR_PROBE, *args, cwd=cwd)
    state: dict[str, object] = json.loads(during)
    state["frozen_at_exit"] = json.loads(at_exit)
    return state


def loaded_heavy_modules(*args: str, cwd: Path, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    loaded: list[str] = json.loads(probe_lines(PROBE.format(heavy=heavy), *args, cwd=cwd)[-1])
    return loaded


@pytest.fixture(scope="module")
def demo_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo(tmp_path_factory.mktemp("demo") / "ledger.db")


def ledger_copy(demo_ledger: Path, folder: Path) -> Path:
    """A copy of the demo ledger in `folder`, for a command that writes to it."""
    db = folder / "ledger.db"
    db.write_bytes(demo_ledger.read_bytes())
    return db


FORMAT_PROBE = """
import sys
from benchledger.commands.cli import cli
try:
    cli(sys.argv[1:], prog_name="benchledger")
except SystemExit:
    pass
prefix = "benchledger.adapters.formats."
parsers = {m.removeprefix(prefix).split("_")[0] for m in sys.modules if m.startswith(prefix)}
print(" ".join(sorted(parsers)), file=sys.stderr)
"""


class TestWhatAnImportLoads:
    def test_a_native_file_loads_no_harness_parser(self, tmp_path: Path) -> None:
        from tests.helpers import run_json, write_json

        path = write_json(tmp_path / "run.json", run_json())
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                FORMAT_PROBE,
                "--db",
                str(tmp_path / "l.db"),
                "import",
                str(path),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        loaded = set(result.stderr.strip().splitlines()[-1].split())
        assert "native" in loaded
        assert loaded.isdisjoint({"alwm", "swebench", "lm", "inspect", "orchestrator", "junit"})


class TestWhatACommandLoads:
    def test_version_loads_neither_pydantic_nor_the_event_store(self, tmp_path: Path) -> None:
        assert loaded_heavy_modules("--version", cwd=tmp_path) == []

    def test_help_loads_no_heavy_module(self, tmp_path: Path) -> None:
        assert loaded_heavy_modules("--help", cwd=tmp_path) == []

    def test_runs_on_a_current_ledger_loads_no_heavy_module(
        self, demo_ledger: Path, tmp_path: Path
    ) -> None:
        assert loaded_heavy_modules("--db", str(demo_ledger), "runs", cwd=tmp_path) == []

    def test_no_command_help_loads_a_statistics_event_store_or_table_package(
        self, tmp_path: Path
    ) -> None:
        result = subprocess.run(
            [sys.executable, "-c", HELP_PROBE.format(heavy=NEVER_FOR_HELP)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        loaded = json.loads(result.stdout)
        assert sorted(loaded) == sorted(COMMANDS)
        assert {name: found for name, found in loaded.items() if found} == {}

    @pytest.mark.parametrize(
        "args",
        [
            ["latest"],
            ["latest", "--json"],
            ["matrix"],
            ["gates"],
            ["gate", "readiness", "--dry-run"],
            ["gate", "comparability", "--dry-run"],
        ],
    )
    def test_a_read_or_a_dry_gate_on_a_current_ledger_loads_no_heavy_module(
        self, demo_ledger: Path, tmp_path: Path, args: list[str]
    ) -> None:
        heavy = (*HEAVY, *STATISTICS)
        loaded = loaded_heavy_modules("--db", str(demo_ledger), *args, cwd=tmp_path, heavy=heavy)
        assert loaded == []

    @pytest.mark.parametrize("args", [["latest"], ["runs", "--json"]])
    def test_a_read_loads_no_module_only_csv_output_as_of_or_an_error_uses(
        self, demo_ledger: Path, tmp_path: Path, args: list[str]
    ) -> None:
        """csv for --csv, tempfile for --as-of, textwrap for an error wrapped on a
        terminal."""
        names = ("csv", "tempfile", "textwrap")
        assert loaded_modules("--db", str(demo_ledger), *args, cwd=tmp_path, names=names) == []

    def test_readiness_probing_no_docker_loads_no_process_runner(
        self, demo_ledger: Path, tmp_path: Path
    ) -> None:
        """The bounded runner and its output redaction run `docker info`, git and version
        commands; probing a command on PATH or a variable runs none (nor imports
        `subprocess`, which only they use)."""
        (tmp_path / "benchledger.toml").write_text(
            '[benchmarks.bfcl]\ncommand = ["sh", "-c", "true"]\n'
            'requires = ["command:sh", "env:HOME"]\n'
        )
        db = ledger_copy(demo_ledger, tmp_path)
        names = (
            "benchledger.adapters.execution.process",
            "benchledger.adapters.execution.secrets",
            "benchledger.adapters.execution.registry",
            "subprocess",
        )
        loaded = loaded_modules("--db", str(db), "gate", "readiness", cwd=tmp_path, names=names)
        assert loaded == ["benchledger.adapters.execution.registry"]  # the registry was read
        recorded = CliRunner().invoke(cli, ["--db", str(db), "gates", "--json"])
        [verdict] = json.loads(recorded.stdout)
        assert verdict["gate"] == "readiness"
        assert verdict["params"]["runtime_gates"]["requires"] == {
            "bfcl": ["command:sh", "env:HOME"]
        }

    def test_a_run_of_one_benchmark_loads_no_thread_pool(self, tmp_path: Path) -> None:
        """The pool (and logging, which concurrent.futures imports) runs --jobs only."""
        bench = tmp_path / "bench.py"
        bench.write_text(
            "import json, pathlib, sys; pathlib.Path(sys.argv[1], 'result.json').write_text("
            "json.dumps({'schema': 'benchledger/run@1', 'score': 1.0, 'unit': 'accuracy'}))"
        )
        args = (
            *("--db", str(tmp_path / "l.db"), "run", "--benchmark", "b", "--agent", "a"),
            *("--model", "m", "--results-root", str(tmp_path / "results")),
            *("--", sys.executable, str(bench), "{output_dir}"),
        )
        names = ("concurrent.futures", "logging")
        assert loaded_modules(*args, cwd=tmp_path, names=names) == []
        runs = CliRunner().invoke(cli, ["--db", str(tmp_path / "l.db"), "runs", "--json"])
        assert [r["status"] for r in json.loads(runs.stdout)] == ["succeeded"]

    @pytest.mark.parametrize(
        "gate", ["publishability", "comparability", "readiness", "calibration"]
    )
    def test_a_dry_gate_loads_none_of_the_comparison_and_ranking_code(
        self, demo_ledger: Path, tmp_path: Path, gate: str
    ) -> None:
        args = ("--db", str(demo_ledger), "gate", gate, "--dry-run")
        assert loaded_modules(*args, cwd=tmp_path, names=NOT_FOR_GATES) == []

    def test_recording_a_verdict_loads_none_of_the_comparison_and_ranking_code(
        self, demo_ledger: Path, tmp_path: Path
    ) -> None:
        db = ledger_copy(demo_ledger, tmp_path)
        names = (*NOT_FOR_GATES, *STATISTICS)
        assert (
            loaded_modules("--db", str(db), "gate", "comparability", cwd=tmp_path, names=names)
            == []
        )
        recorded = CliRunner().invoke(cli, ["--db", str(db), "gates", "--json"])
        assert [v["gate"] for v in json.loads(recorded.stdout)] == ["comparability"]

    @pytest.mark.parametrize("gate", ["comparability", "readiness"])
    def test_recording_a_verdict_loads_no_run_import_or_execution_code(
        self, demo_ledger: Path, tmp_path: Path, gate: str
    ) -> None:
        """The verdict is appended by `Publishing` and folded by the read models of its
        topics alone: the verdicts', the audit log's, the chain's and search's."""
        db = ledger_copy(demo_ledger, tmp_path)
        args = ("--db", str(db), "gate", gate)
        assert loaded_modules(*args, cwd=tmp_path, names=NOT_FOR_VERDICTS) == []
        recorded = CliRunner().invoke(cli, ["--db", str(db), "gates", "--json"])
        [verdict] = json.loads(recorded.stdout)
        assert verdict["gate"] == gate
        found = CliRunner().invoke(cli, ["--db", str(db), "events", "--json"])
        assert json.loads(found.stdout)[-1]["type"] == "GateEvaluated"
        verified = CliRunner().invoke(cli, ["--db", str(db), "verify"])
        assert verified.exit_code == 0, verified.output

    def test_recording_a_verdict_loads_no_machinery_of_large_catch_ups(
        self, demo_ledger: Path, tmp_path: Path
    ) -> None:
        """Folding in a forked child and checkpointing from a thread serve catch-ups of
        thousands of events; a verdict's catch-up folds one."""
        db = ledger_copy(demo_ledger, tmp_path)
        names = (
            "benchledger.adapters.store.fold_ahead",
            "benchledger.adapters.store.forked",
            "benchledger.projections.checkpointer",
        )
        args = ("--db", str(db), "gate", "comparability")
        assert loaded_modules(*args, cwd=tmp_path, names=names) == []
        recorded = CliRunner().invoke(cli, ["--db", str(db), "gates", "--json"])
        assert [v["gate"] for v in json.loads(recorded.stdout)] == ["comparability"]

    def test_recording_a_verdict_builds_no_cell_or_fact_serializer(
        self, demo_ledger: Path, tmp_path: Path
    ) -> None:
        """The type adapters of cells and facts are built where they are first used,
        not where their modules are imported: a verdict uses neither."""
        db = ledger_copy(demo_ledger, tmp_path)
        built = json.loads(
            probe_lines(ADAPTERS_PROBE, "--db", str(db), "gate", "calibration", cwd=tmp_path)[-1]
        )
        assert built == {"cells": False, "rows": False, "facts": False}
        recorded = CliRunner().invoke(cli, ["--db", str(db), "gates", "--json"])
        assert [v["gate"] for v in json.loads(recorded.stdout)] == ["calibration"]

    def test_runs_on_a_ledger_behind_its_events_catches_up_first(
        self, demo_ledger: Path, tmp_path: Path
    ) -> None:
        db = ledger_copy(demo_ledger, tmp_path)
        append_unprojected_runs(db)
        result = CliRunner().invoke(cli, ["--db", str(db), "runs", "--agent", "late-agent"])
        assert result.exit_code == 0 and "late-agent" in result.stdout


class TestWhatACommandLeavesToTheCollector:
    """What a command loads lives as long as it runs: it is frozen, so that the cyclic
    collector stops walking it; the collector keeps running for everything else, and
    gets it all back when the command is done."""

    def test_a_read_freezes_its_command_module_and_keeps_collecting(
        self, demo_ledger: Path, tmp_path: Path
    ) -> None:
        state = collector_after("--db", str(demo_ledger), "latest", cwd=tmp_path)
        assert isinstance(state["frozen"], int) and state["frozen"] > 0
        assert state["ledger"] is False
        assert state["enabled"] is True and state["frozen_after"] == 0

    def test_recording_a_verdict_freezes_the_event_store_and_exits_frozen(
        self, demo_ledger: Path, tmp_path: Path
    ) -> None:
        db = ledger_copy(demo_ledger, tmp_path)
        state = collector_after("--db", str(db), "gate", "comparability", cwd=tmp_path)
        assert state["ledger"] is True and state["ledger_frozen"] is True
        assert state["enabled"] is True and state["frozen_after"] == 0
        assert isinstance(state["frozen_at_exit"], int) and state["frozen_at_exit"] > 0
        assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.db"]


def every_command() -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    for module in sorted({m for m, _ in COMMANDS.values()}):
        imported = __import__(f"benchledger.commands.{module}", fromlist=["COMMANDS"])
        found.update({c.name or "": c for c in imported.COMMANDS})
    return found


class TestTheLazyCommandTable:
    def test_names_every_command_of_every_command_module_once(self) -> None:
        assert sorted(every_command()) == sorted(COMMANDS)

    def test_its_help_lines_are_the_commands_own(self) -> None:
        for name, command in every_command().items():
            assert COMMANDS[name][1] == command.get_short_help_str(1000), name

    def test_help_lists_every_command_with_its_help_line(self) -> None:
        result = CliRunner().invoke(cli, ["--help"])
        assert result.exit_code == 0
        listed = result.stdout.split("Commands:")[1]
        for name, (_, line) in COMMANDS.items():
            assert f"  {name}  " in listed or f"  {name}\n" in listed, name
            first_words = " ".join(line.split()[:2])
            assert first_words in listed, name

    def test_every_command_has_help_text_with_an_example(self) -> None:
        for name, command in every_command().items():
            assert command.help and "Example:" in command.help, name
            result = CliRunner().invoke(cli, [name, "--help"])
            assert result.exit_code == 0 and "Example:" in result.stdout, name

    def test_an_unknown_command_is_a_usage_error(self) -> None:
        result = CliRunner().invoke(cli, ["no-such-command"])
        assert result.exit_code == 2 and "No such command" in result.stderr

    def test_commands_that_start_a_ledger_exist(self) -> None:
        assert set(COMMANDS) >= cli_module.CREATES


class TestReadModelVersions:
    def test_the_cheap_table_agrees_with_the_projections(self) -> None:
        projections = all_projections()
        assert [p.name for p in projections] == list(READ_MODELS)
        for p in projections:
            version, tables = READ_MODELS[p.name]
            assert p.version == version, p.name
            assert tuple(t.name for t in p.tables) == tables, p.name
            assert p.table_names() == tables, p.name

    def test_the_cheap_topics_agree_with_the_projections(self) -> None:
        """A stand-in folds for the topics `versions` states; its projection states the
        same ones (from its event classes), and is the one made once."""
        for p in all_projections():
            real = p.resolved()
            assert real is not p and p.resolved() is real, p.name
            assert TOPICS[p.name] == real.topics == p.topics, p.name
            assert type(real).__name__ == CLASSES[p.name][1]

    def test_the_publishing_application_is_the_ledgers_store(self) -> None:
        """eventsourcing names an application's PostgreSQL tables and environment
        variables after it: `Publishing` must be named as `Ledger` is."""
        from benchledger.domain.ledger import Ledger
        from benchledger.domain.publishing import Publishing

        assert Publishing.name == Ledger.name == "Ledger"

    def test_the_topics_named_apart_are_their_classes(self) -> None:
        from benchledger.domain import run, topics, verdicts

        named = {k: v for k, v in vars(topics).items() if k.isupper()}
        classes = {**vars(run), **vars(verdicts)}
        for constant, topic in named.items():
            cls = classes["".join(w.title() for w in constant.split("_"))]
            assert topic == cls.TOPIC, constant


def demo_with_site(tmp_path: Path, site: Path, check: str) -> None:
    """`benchledger demo` into tmp_path/ledger.db in a fresh interpreter with `site` first
    on its path, after `check` (Python statements) holds there. Its tables are written by
    sqlite-utils (the kept statements of `projections/create_sql.py` are set aside), as
    they are for a table changed since those were written: the child checks it did."""
    code = (
        f"import sys\nsys.path.insert(0, {str(site)!r})\n{check}"
        "from benchledger.projections import create_sql\n"
        "create_sql.CREATE_SQL.clear()\n"
        "from benchledger.commands.cli import cli\n"
        "try:\n    cli(sys.argv[1:], prog_name='benchledger')\nexcept SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "assert 'sqlite_utils' in sys.modules, 'the tables were not written by sqlite-utils'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "--db", str(tmp_path / "ledger.db"), "demo"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ledger.db").stat().st_size > 0


class TestOptionalHeavyPackages:
    """sqlite-utils imports pandas and numpy whenever they are installed (0.3-0.4 s,
    more than a whole command); the read models use neither, so they stay unloaded."""

    def test_writing_a_ledger_loads_neither_pandas_nor_numpy_when_installed(
        self, tmp_path: Path
    ) -> None:
        fake = tmp_path / "site"
        for name in ("pandas", "numpy"):
            (fake / name).mkdir(parents=True)
            marker = tmp_path / f"{name}-imported"
            (fake / name / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
        check = "import importlib.util\nassert importlib.util.find_spec('pandas') is not None\n"
        demo_with_site(tmp_path, fake, check)
        assert not (tmp_path / "pandas-imported").exists()
        assert not (tmp_path / "numpy-imported").exists()


class TestSqliteUtilsPlugins:
    """sqlite-utils writes the read models' CREATE statements over the ledger's own
    connection: its plugins (found by scanning every installed distribution) are not
    loaded for that, nor run on the connection, and it sets none of its pragmas."""

    def test_an_installed_plugin_is_neither_loaded_nor_run_on_the_ledger(
        self, tmp_path: Path
    ) -> None:
        site = tmp_path / "site"
        loaded, ran = tmp_path / "plugin-loaded", tmp_path / "plugin-ran"
        fake_distribution(
            site,
            "fake-sqlite-utils-plugin",
            "[sqlite_utils]\nfake = fake_sqlite_utils_plugin\n",
            "import sqlite_utils\n"
            f"open({str(loaded)!r}, 'w').close()\n"
            "@sqlite_utils.hookimpl\n"
            "def prepare_connection(conn):\n"
            f"    open({str(ran)!r}, 'w').close()\n",
        )
        check = (
            "from importlib.metadata import entry_points\n"
            "assert [e.name for e in entry_points(group='sqlite_utils')] == ['fake']\n"
        )
        demo_with_site(tmp_path, site, check)
        assert not loaded.exists()
        assert not ran.exists()

    def test_creating_tables_sets_no_pragma_on_the_connection(self, tmp_path: Path) -> None:
        from benchledger.projections.store import ReadModelStore

        store = ReadModelStore(tmp_path / "ledger.db")
        try:
            before = store.conn.execute("PRAGMA recursive_triggers").fetchone()
            for projection in all_projections():
                store.create_tables(projection)
            assert store.has_tables(all_projections()[0])
            assert store.conn.execute("PRAGMA recursive_triggers").fetchone() == before == (0,)
        finally:
            store.close()


class TestNativeCellLineValidators:
    """The validators of native JSONL cell lines (a type adapter per field of Cell) are
    built by the first import that reads such lines, not by every import."""

    RUN = dict(benchmark="b", agent="a", provider="p", model="m", status="succeeded", score=1)

    def built(self, tmp_path: Path, source: Path) -> int:
        db = tmp_path / "ledger.db"
        lines = probe_lines(
            LINE_VALIDATORS_PROBE, "--db", str(db), "import", str(source), cwd=tmp_path
        )
        imported = CliRunner().invoke(cli, ["--db", str(db), "runs", "--json"])
        assert len(json.loads(imported.stdout)) == 1, lines
        return int(json.loads(lines[-1]))

    def test_a_native_json_document_builds_none(self, tmp_path: Path) -> None:
        source = tmp_path / "result.json"
        cells = [{"key": "q1", "outcome": "passed", "score": 1.0}]
        source.write_text(json.dumps({"schema": "benchledger/run@1", **self.RUN, "cells": cells}))
        assert self.built(tmp_path, source) == 0

    def test_a_native_jsonl_file_with_cells_builds_them(self, tmp_path: Path) -> None:
        source = tmp_path / "runs.jsonl"
        cell = {"type": "cell", "key": "q1", "outcome": "passed", "score": 1.0}
        source.write_text(json.dumps({"type": "run", **self.RUN}) + "\n" + json.dumps(cell) + "\n")
        assert self.built(tmp_path, source) == 1
