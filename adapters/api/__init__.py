"""The Python API: record runs and their cells from Python code, and read them back.

`benchledger.open` (the package's top level) opens a `Ledger`; `Ledger.run` starts a
`Run`. See docs/python-api.md.
"""

from __future__ import annotations

from benchledger.adapters.api.ledger import MODES, Ledger, Mode, RunSkipped, open_ledger
from benchledger.adapters.api.recording import Ending, Run
from benchledger.adapters.api.records import CellResult, RunSummary

__all__ = [
    "MODES",
    "CellResult",
    "Ending",
    "Ledger",
    "Mode",
    "Run",
    "RunSkipped",
    "RunSummary",
    "open_ledger",
]
