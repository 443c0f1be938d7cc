"""The dependency rule of the design, enforced by parsing every import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OURS = {"domain", "projections", "adapters", "commands"}

# What each layer may import from outside the standard library and itself.
ALLOWED: dict[str, set[str]] = {
    "domain": {
        "domain",
        "pydantic",
        "eventsourcing.domain",
        "eventsourcing.application",
        "eventsourcing.persistence",
    },
    "projections": {"projections", "domain", "pydantic", "pydantic_core", "sqlite_utils"},
    "adapters": {
        "adapters",
        "projections",
        "domain",
        "pydantic",
        "eventsourcing",
        "pydantic_core",
        "sqlite_utils",
        "datasette",
        "uvicorn",
        "yaml",
        "zstandard",
        "defusedxml",
    },
}
FORBIDDEN_EVERYWHERE_BUT_COMMANDS = {"click", "commands"}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def allowed(name: str, prefixes: set[str]) -> bool:
    import sys

    top = name.split(".")[0]
    if top in sys.stdlib_module_names or top == "__future__":
        return True
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_each_layer_imports_only_what_the_design_allows(package: str) -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in modules(package)
        for name in sorted(imports_of(path))
        if not allowed(name, ALLOWED[package])
    ]
    assert offenders == []


def test_only_commands_imports_click_and_nothing_imports_commands() -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for package in ("domain", "projections", "adapters")
        for path in modules(package)
        for name in imports_of(path)
        if name.split(".")[0] in FORBIDDEN_EVERYWHERE_BUT_COMMANDS
    ]
    assert offenders == []


def test_the_datasette_config_folder_is_not_a_package() -> None:
    assert not (ROOT / "datasette" / "__init__.py").exists()


def test_the_layering_check_would_catch_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from adapters.bootstrap import build\nimport click\n")
    assert not allowed("adapters.bootstrap", ALLOWED["domain"])
    assert imports_of(bad) == {"adapters.bootstrap", "click"}
