"""pydantic's plugins, not looked up by the CLI's own process.

The first time pydantic builds a validator it asks its plugin loader
(`pydantic.plugin._loader.get_plugins`), which imports `importlib.metadata` (with `email`,
`zipfile`, `csv`: 25-35 ms of CPU here) and reads the entry points of every distribution
installed beside it (12-18 ms with 190 of them): 40-50 ms in every command that validates
a model, an import, a run, a gate recording its verdict. A pydantic plugin observes the
validation of an application's own models (tracing, metrics); the CLI's models are its
own, and it loads none.

So in the `benchledger` process, started through `cli.main`, that module is one whose
`get_plugins()` answers "none", what pydantic's does when `PYDANTIC_DISABLE_PLUGINS` is
`__all__`: pydantic builds the validators it builds when no plugin is installed. The
variable itself is not set: the process's environment is what the benchmarks it runs
inherit. Code that imports benchledger as a library (`import benchledger`, the inspect_ai
hooks) keeps its plugins: only the CLI's entry installs this.
"""

from __future__ import annotations

import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

LOADER = "pydantic.plugin._loader"


class _NoPlugins:
    """Makes `pydantic.plugin._loader` a module that finds no plugins. pydantic uses one
    name of it, `get_plugins` (a test checks that pydantic's own module has every name
    this one gives, so that a pydantic that moves them fails there, not here).

    A finder and loader by their methods alone (the import system asks for no more):
    `importlib.abc`'s base classes would import `importlib.resources`, with `tempfile`
    and `shutil`, at every command's start (`--version`: 2-3 ms of its ~60 ms of CPU)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != LOADER:
            return None
        return importlib.machinery.ModuleSpec(fullname, cast("Loader", self), origin=__name__)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # the default module

    def exec_module(self, module: ModuleType) -> None:
        module.PYDANTIC_ENTRY_POINT_GROUP = "pydantic"  # type: ignore[attr-defined]
        module._plugins = {}  # type: ignore[attr-defined]
        module._loading_plugins = False  # type: ignore[attr-defined]
        module.get_plugins = get_plugins  # type: ignore[attr-defined]


def get_plugins() -> tuple[()]:
    """No plugins (pydantic's `get_plugins` with `PYDANTIC_DISABLE_PLUGINS=__all__`)."""
    return ()


_FINDER = _NoPlugins()


def install() -> None:
    """Skip pydantic's plugin lookup in this process, unless its loader is loaded already."""
    if LOADER not in sys.modules and _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
