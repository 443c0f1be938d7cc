"""The `benchledger` process does not look pydantic's plugins up (`commands.plugins_skipped`):
a pydantic plugin installed beside it is never imported, the validators still validate,
and code importing benchledger as a library keeps its plugins."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pydantic.plugin._loader as pydantic_loader
import pytest

from benchledger.commands import plugins_skipped
from tests.helpers import fake_distribution, run_json, write_json

# A pydantic plugin as a distribution declares one: an entry point in the group "pydantic".
# Importing it leaves a mark; its `new_schema_validator` leaves another when pydantic uses it.
PLUGIN = """
import os
from pathlib import Path
Path(os.environ["PLUGIN_MARKS"], "imported").touch()

class _Plugin:
    def new_schema_validator(self, *args, **kwargs):
        Path(os.environ["PLUGIN_MARKS"], "asked").touch()
        return None, None, None

plugin = _Plugin()
"""


@pytest.fixture
def plugged(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose path holds a distribution with a pydantic plugin, and the
    folder its marks go to."""
    site = tmp_path / "site"
    fake_distribution(
        site, "fake-pydantic-plugin", "[pydantic]\nfake = fake_pydantic_plugin:plugin\n", PLUGIN
    )
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PLUGIN_MARKS"] = str(marks)
    write_json(tmp_path / "result.json", run_json(cells=[{"key": "q1", "outcome": "passed"}]))
    return env, marks


def _import(entry: str, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = f"from benchledger.commands.cli import {entry}; {entry}()"
    argv = [sys.executable, "-c", code, "--db", str(tmp_path / "l.db"), "import", "result.json"]
    return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_the_command_never_imports_a_pydantic_plugin(
    tmp_path: Path, plugged: tuple[dict[str, str], Path]
) -> None:
    env, marks = plugged
    done = _import("main", tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert "1 imported (1 new runs)" in done.stderr
    assert sorted(p.name for p in marks.iterdir()) == []


def test_the_plugin_is_found_without_the_entry(
    tmp_path: Path, plugged: tuple[dict[str, str], Path]
) -> None:
    """The same process through the click group alone (as the library and the tests'
    runner call it): pydantic finds the plugin and asks it, so the test above can fail."""
    env, marks = plugged
    done = _import("cli", tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in marks.iterdir()) == ["asked", "imported"]


def test_a_library_user_keeps_plugins(tmp_path: Path, plugged: tuple[dict[str, str], Path]) -> None:
    """Importing benchledger's API and validating its models looks plugins up as usual."""
    env, marks = plugged
    code = (
        "import benchledger\n"
        "from benchledger.domain.cells import Cell\n"
        "Cell.model_validate({'key': 'q1', 'outcome': 'passed', 'score': 1.0})\n"
    )
    _python(code, env=env)
    assert sorted(p.name for p in marks.iterdir()) == ["asked", "imported"]


def test_the_stand_in_gives_what_pydantic_s_loader_gives() -> None:
    """Every name the stand-in module sets is one pydantic's own loader has, and its
    `get_plugins` answers what pydantic's does with every plugin disabled."""
    module = type(sys)("stand_in")
    plugins_skipped._FINDER.exec_module(module)
    given = {name for name in vars(module) if not name.startswith("__")}
    assert given <= set(vars(pydantic_loader)), given - set(vars(pydantic_loader))
    assert list(module.get_plugins()) == []
    os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
    try:
        assert list(pydantic_loader.get_plugins()) == list(module.get_plugins())
    finally:
        del os.environ["PYDANTIC_DISABLE_PLUGINS"]


def test_the_stand_in_imports_no_importlib_machinery_beyond_the_interpreter_s(
    tmp_path: Path,
) -> None:
    """Installing the stand-in imports neither `importlib.abc` nor `importlib.resources`
    (with `tempfile`): the finder is one by its methods alone. Judged right after the
    install, so that what pydantic itself imports does not count; a model validated after
    it is served by the stand-in."""
    code = (
        "import sys\n"
        "from benchledger.commands import plugins_skipped\n"
        "plugins_skipped.install()\n"
        "loaded = sorted(m for m in ('importlib.abc', 'importlib.resources', 'tempfile') "
        "if m in sys.modules)\n"
        "from pydantic import BaseModel\n"
        "class M(BaseModel):\n    x: int\n"
        "assert M(x=1).x == 1\n"
        "assert type(sys.modules['pydantic.plugin._loader'].__spec__.loader).__name__ == "
        "'_NoPlugins'\n"
        "print(loaded)\n"
    )
    assert _python(code, cwd=tmp_path).strip() == "[]"


def _python(code: str, *, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    """What `code` prints, run in a fresh interpreter (which must succeed)."""
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
