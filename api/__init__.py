"""benchledger: an event-sourced ledger of AI benchmark results.

This folder is the package's top level (`import benchledger`), the Python API:

    import benchledger

    with benchledger.open("ledger.db") as ledger:
        with ledger.run(benchmark="qa", agent="mine", model="gpt-oss-120b") as run:
            run.cell("q1", "passed", score=1.0)

Its names load on first use, so `import benchledger` (and the CLI's start-up, which
imports it too) stays cheap. The implementation is `benchledger.adapters.api`.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchledger.adapters.api import (
        CellResult,
        Ending,
        Ledger,
        Mode,
        Run,
        RunSkipped,
        RunSummary,
    )
    from benchledger.adapters.api import open_ledger as open
    from benchledger.domain.errors import LedgerError

__all__ = [
    "CellResult",
    "Ending",
    "Ledger",
    "LedgerError",
    "Mode",
    "Run",
    "RunSkipped",
    "RunSummary",
    "open",
]

# An editable install finds `benchledger.datasette` (package data, a folder without
# __init__.py) through a path hook on a placeholder entry of sys.path (setuptools'
# editable finder); a regular package looks only along its __path__, so it lists them.
__path__ += [entry for entry in sys.path if entry.endswith(".__path_hook__")]

# Each public name, and the module and attribute it is loaded from.
_LAZY: dict[str, tuple[str, str]] = {
    **{
        name: ("benchledger.adapters.api", name)
        for name in ("CellResult", "Ending", "Ledger", "Mode", "Run", "RunSkipped", "RunSummary")
    },
    "open": ("benchledger.adapters.api", "open_ledger"),
    "LedgerError": ("benchledger.domain.errors", "LedgerError"),
    "__version__": ("benchledger.domain.version", "VERSION"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'benchledger' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # loaded once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
