"""The dependency rule of the design, enforced by parsing every import."""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "benchledger"
FOLDERS = ("domain", "projections", "adapters", "commands")

# Of our own code, what each room may import besides itself (a prefix allows its subtree).
OURS_ALLOWED: dict[str, set[str]] = {
    "domain": set(),
    "projections": {"domain"},
    "adapters.formats": {"domain"},
    "adapters.store": {"domain", "projections", "adapters"},
    "adapters.execution": {"domain", "projections", "adapters"},
    "adapters.publication": {"domain", "projections", "adapters"},
    "adapters.integrations": {"domain", "projections", "adapters"},
    "adapters": {"domain", "projections", "adapters"},
    "commands": {"domain", "projections", "adapters", "commands"},
}

# What each layer may import from outside the standard library and our own code.
THIRD_PARTY: dict[str, set[str]] = {
    "domain": {
        "pydantic",
        "eventsourcing.domain",
        "eventsourcing.application",
        "eventsourcing.persistence",
    },
    "projections": {"pydantic", "pydantic_core", "sqlite_utils"},
    "adapters.formats": {"pydantic", "pydantic_core", "yaml", "zstandard", "defusedxml"},
    "adapters": {
        "pydantic",
        "eventsourcing",
        "pydantic_core",
        "psycopg",
        "cryptography",
        "sqlite_utils",
        "datasette",
        # Its hooks unregistered by `publication.browse` (the ledger's plugin calls its renderer).
        "datasette_render_markdown",
        "uvicorn",
        "yaml",
        "zstandard",
        "defusedxml",
    },
}
# Integrations run inside another tool, whose own API they implement (its extra installs it).
THIRD_PARTY["adapters.integrations"] = THIRD_PARTY["adapters"] | {"inspect_ai"}


# The one module allowed numeric libraries, so the rest of the domain stays plain.
MODULE_THIRD_PARTY: dict[str, set[str]] = {
    "domain/comparison_stats.py": {"numpy", "scipy"},
}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            if node.module == PACKAGE or node.module.startswith(PACKAGE + "."):
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def room_of(path: Path) -> str:
    """The most specific room of OURS_ALLOWED that a module belongs to."""
    dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return max((r for r in OURS_ALLOWED if under(dotted, r)), key=len)


def violations(path: Path, names: set[str]) -> list[str]:
    """Imports of `path` that break the rules: of ours, never outside the namespace."""
    room = room_of(path)
    layer = max((r for r in THIRD_PARTY if under(room, r)), key=len, default=None)
    module_allowed = MODULE_THIRD_PARTY.get(path.relative_to(ROOT).as_posix(), set())
    found = []
    for name in sorted(names):
        top = name.split(".")[0]
        if top in FOLDERS:
            found.append(f"{name} (outside the {PACKAGE} namespace)")
        elif top == PACKAGE:
            ours = name.removeprefix(PACKAGE + ".")
            if ours == PACKAGE or ours.split(".")[0] not in FOLDERS:
                continue  # `from benchledger import domain` adds `benchledger.domain` too
            if not any(under(ours, r) for r in OURS_ALLOWED[room] | {room}):
                found.append(name)
        elif top in sys.stdlib_module_names or top == "__future__":
            continue
        elif layer is not None and not any(
            under(name, p) for p in THIRD_PARTY[layer] | module_allowed
        ):
            found.append(name)
    return [f"{path.relative_to(ROOT)} imports {name}" for name in found]


def modules(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_room_imports_only_what_the_design_allows(folder: str) -> None:
    assert [v for path in modules(folder) for v in violations(path, imports_of(path))] == []


def test_tests_and_benchmarks_import_the_installed_namespace_only() -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in modules("tests", "benchmarks")
        for name in imports_of(path)
        if name.split(".")[0] in FOLDERS
    ]
    assert offenders == []


def test_the_datasette_config_folder_is_not_a_package() -> None:
    assert not (ROOT / "datasette" / "__init__.py").exists()


def test_every_room_has_a_one_line_docstring_saying_what_it_is_for() -> None:
    rooms = (
        "adapters",
        "adapters/store",
        "adapters/execution",
        "adapters/publication",
        "adapters/integrations",
    )
    for init in (ROOT / room / "__init__.py" for room in rooms):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and "\n" not in doc, init
        assert init.read_text().count("\n") == 1, f"{init} holds more than its docstring"


def test_every_package_folder_is_installed_under_the_namespace() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {
        PACKAGE + "." + ".".join(init.parent.relative_to(ROOT).parts)
        for folder in FOLDERS
        for init in (ROOT / folder).rglob("__init__.py")
    }
    assert on_disk - set(config["packages"]) == set()
    assert all(name.startswith(PACKAGE + ".") for name in config["packages"] if name != PACKAGE)
    # The top level itself is the Python API's folder.
    assert config["package-dir"][PACKAGE] == "api"


def test_the_top_level_imports_nothing_heavy_until_a_name_is_used() -> None:
    """`import benchledger` (the CLI's start-up too) loads only the standard library:
    the API's names are imported on first use, or for type checking only."""
    tree = ast.parse((ROOT / "api" / "__init__.py").read_text())
    eager = set()
    for node in tree.body:
        if isinstance(node, ast.If):  # `if TYPE_CHECKING:`
            continue
        eager |= imports_of_node(node)
    assert {name.split(".")[0] for name in eager} <= {"__future__", "importlib", "sys", "typing"}


def imports_of_node(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if isinstance(node, ast.ImportFrom) and node.module:
        return {node.module}
    return set()


PLANTED = {
    "domain/planted.py": "from benchledger.adapters.store.bootstrap import build\n",
    "domain/planted_click.py": "import click\n",
    "domain/planted_numpy.py": "import numpy\n",
    "projections/planted.py": "from benchledger.adapters.publication import queries\n",
    "adapters/formats/planted.py": "from benchledger.projections.store import ReadModelStore\n",
    "adapters/formats/planted_store.py": "from benchledger.adapters.store import hotpath\n",
    "adapters/publication/planted.py": "from benchledger.commands.output import emit\n",
    "adapters/execution/planted.py": "from benchledger.commands import context\n",
    "adapters/store/planted.py": "import benchledger.commands.cli\n",
    "adapters/planted.py": "from benchledger import commands\n",
    "projections/planted_bare.py": "from domain.errors import LedgerError\n",
}


@pytest.mark.parametrize("where", sorted(PLANTED))
def test_a_planted_import_that_breaks_a_rule_is_caught(where: str) -> None:
    path = ROOT / where
    assert not path.exists()
    path.write_text(PLANTED[where])
    try:
        assert violations(path, imports_of(path)) != []
    finally:
        path.unlink()


def test_commands_may_import_every_other_room() -> None:
    path = ROOT / "commands" / "planted_ok.py"
    path.write_text("import click\nfrom benchledger.adapters.store.bootstrap import build\n")
    try:
        assert violations(path, imports_of(path)) == []
    finally:
        path.unlink()
