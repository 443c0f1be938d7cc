"""Small pure facts of orchestrator rows: canonical metrics, host paths cut to
relative ones, token counts under canonical names, run_id attempts, signatures."""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

CALIBRATION_AGENTS = frozenset({"perfect_v1", "wrong_v1", "half_v1"})
RUN_ID = re.compile(r"_\d{8}T\d{6}Z_(?P<attempt>\d+)_[0-9a-f]{8}$")
RESULT_ROOTS = ("/benchmark_results/", "/test-results/benchmark-orchestrator/")
HOST_PATH = re.compile(r"(?<![\w.:/~-])(?:~/|/(?=[^/\s]+/)|[A-Za-z]:\\)[^\s'\"<>|,;)\]}]+")
TOKEN_ALIASES = {
    "prompt_tokens": ("prompt_tokens", "input_tokens"),
    "completion_tokens": ("completion_tokens", "output_tokens"),
    "total_tokens": ("total_tokens",),
    "llm_call_count": ("llm_call_count", "call_count"),
}
CACHE_TOKENS = ("cache_read_input_tokens", "cache_creation_input_tokens")


def token_counts(group: dict[str, Any], cache: dict[str, Any] | None) -> dict[str, int]:
    if group.get("token_estimate_source"):
        group = {}  # estimated from prompt characters, not measured: not token counts
    counts: dict[str, int] = {}
    for name, aliases in TOKEN_ALIASES.items():
        for alias in aliases:
            value = _count(group.get(alias))
            if value is not None:
                counts[name] = value
                break
    if "total_tokens" not in counts and {"prompt_tokens", "completion_tokens"} <= counts.keys():
        counts["total_tokens"] = counts["prompt_tokens"] + counts["completion_tokens"]
    for name in CACHE_TOKENS:
        value = _count((cache or {}).get(name))
        if value is not None:
            counts[name] = value
    return {k: v for k, v in sorted(counts.items()) if v > 0}


def number(value: Any) -> float | None:
    """A finite int or float (never a bool), as float; else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _count(value: Any) -> int | None:
    found = number(value)
    return int(found) if found is not None and found >= 0 else None


def canonical(value: Any) -> Any:
    """Keys sorted at every depth, so sources that order keys differently agree; a string
    that cannot be UTF-8 (a lone surrogate escape) raises UnicodeEncodeError."""
    if isinstance(value, dict):
        return {_text(str(k)): canonical(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    if isinstance(value, str):
        return _text(value)
    return value


def _text(value: str) -> str:
    if not value.isascii():  # ASCII always encodes: only other text can hold a surrogate
        value.encode("utf-8")
    return value


def canonical_stripped(value: Any) -> Any:
    """`canonical(strip_host_paths(value))` in one walk: most of what a row keeps goes
    through both."""
    if isinstance(value, dict):
        return {_text(str(k)): canonical_stripped(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [canonical_stripped(v) for v in value]
    if isinstance(value, str):
        if "/" in value or "\\" in value:
            value = HOST_PATH.sub(_relative, value)
        return _text(value)
    return value


def strip_host_paths(value: Any) -> Any:
    """Absolute host paths cut to their part below the results root, else their base name."""
    if isinstance(value, str):
        return HOST_PATH.sub(_relative, value) if ("/" in value or "\\" in value) else value
    if isinstance(value, dict):
        return {k: strip_host_paths(v) for k, v in value.items()}
    if isinstance(value, list):
        return [strip_host_paths(v) for v in value]
    return value


def _relative(match: re.Match[str]) -> str:
    path = match.group(0).replace("\\", "/")
    for root in RESULT_ROOTS:
        if root in path:
            return path.split(root, 1)[1] or "."
    return path.rstrip("/").rsplit("/", 1)[-1] or "."


def run_id_attempt(run_id: str) -> int | None:
    """The attempt number the orchestrator writes into a run_id."""
    found = RUN_ID.search(run_id)
    return int(found["attempt"]) if found is not None else None


def derive_signature(
    benchmark_id: str,
    benchmark_directory: str,
    agent: str,
    provider: str,
    model: str,
    extra_config: dict[str, Any],
) -> str:
    """The orchestrator's signature (ORCHESTRATOR.md §2), calibration key included."""
    config = dict(extra_config)
    if agent.strip().lower() in CALIBRATION_AGENTS:
        config["calibration_spec_version"] = "calibration_v1"
    payload = {
        "benchmark_id": benchmark_id,
        "benchmark_directory": benchmark_directory,
        "agent": agent,
        "provider": provider,
        "model": model,
        "extra_config": config,
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
