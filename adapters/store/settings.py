"""Where the ledger lives, from options and the environment (no heavy imports)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_DB = "ledger.db"
TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Settings:
    db_path: Path = Path(DEFAULT_DB)
    event_store_url: str | None = None
    lock_timeout_seconds: int = 60
    read_only: bool = False

    @classmethod
    def from_env(cls, **overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "db_path": Path(os.environ.get("BENCHLEDGER_DB", DEFAULT_DB)),
            "event_store_url": os.environ.get("BENCHLEDGER_EVENT_STORE") or None,
            "read_only": os.environ.get("BENCHLEDGER_READ_ONLY", "").lower() in TRUE,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)
