"""What every gate's finding is: a plain dict, named as the orchestrator names it or
labelled as benchledger's own.

A finding is `{scope, reason, value, extra, ...}`. `extra` is False for a finding the
ElizaOS orchestrator's validators make on the same rows (same reason, same value text,
same count), and True for a check benchledger makes besides them (a score spread, a key
with only a quarantined row, a stand-in's label, demo data). The orchestrator's own keys
of each gate (`file` and `path`, `benchmark_id`, `metadata`) are added where it has them.
"""

from __future__ import annotations

import json
import math
from typing import Any

Finding = dict[str, Any]
VALUE_LIMIT = 180


def clip(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= VALUE_LIMIT else text[: VALUE_LIMIT - 1] + "…"


def short_value(value: Any) -> str:
    """A value as the orchestrator's publishability findings quote it: JSON, cut to 180."""
    rendered = json.dumps(value, ensure_ascii=True, sort_keys=True, default=str)
    return rendered if len(rendered) <= VALUE_LIMIT else f"{rendered[: VALUE_LIMIT - 3]}..."


def finding(scope: str, reason: str, value: Any, **detail: Any) -> Finding:
    """A finding of benchledger's own (`extra`), its value clipped to 180 characters."""
    return {"scope": scope, "reason": reason, "value": clip(value), "extra": True, **detail}


def named(scope: str, reason: str, value: str, **detail: Any) -> Finding:
    """A finding the orchestrator makes, its value text exactly as the orchestrator's."""
    return {"scope": scope, "reason": reason, "value": value, "extra": False, **detail}


def finite(score: Any) -> bool:
    return isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score)


def counts(findings: list[Finding]) -> tuple[int, int]:
    """(the orchestrator's findings, benchledger's extra ones)."""
    extra = sum(1 for f in findings if f.get("extra"))
    return len(findings) - extra, extra
