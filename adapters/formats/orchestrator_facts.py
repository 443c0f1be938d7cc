"""Small pure facts of orchestrator rows: canonical metrics, host paths cut to
relative ones, token counts under canonical names, run_id attempts, signatures."""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

from benchledger.domain.config_memo import Memo, config_key

CALIBRATION_AGENTS = frozenset({"perfect_v1", "wrong_v1", "half_v1"})
RUN_ID = re.compile(r"_\d{8}T\d{6}Z_(?P<attempt>\d+)_[0-9a-f]{8}$")
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
    return _canonical(value)


def _text(value: str) -> str:
    if not value.isascii():  # ASCII always encodes: only other text can hold a surrogate
        value.encode("utf-8")
    return value


# Values of these exact types are kept as they are (a subclass takes the general walk).
_ATOMS = frozenset({int, float, bool, type(None)})


def _canonical(value: Any) -> Any:
    """`canonical` of any value: dicts and lists copied with their keys sorted (by their
    text) and their strings checked, other objects as they are."""
    if isinstance(value, dict):
        return _canonical_dict(value)
    if isinstance(value, list):
        return _canonical_list(value)
    if isinstance(value, str):
        return _text(value)
    return value


# `_canonical_dict` and `_canonical_list` are `_canonical` unrolled one level: a row holds
# millions of values, most of them plain strings and numbers, so these handle each child of
# an exact str, int, float, bool, None, dict or list type in place instead of through a call
# per value (anything else, subclasses included, goes through `_canonical`). A test checks
# them against the plain recursive definition.


def _canonical_dict(value: dict[Any, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in sorted(value, key=str):
        item = value[key]
        kind = type(item)
        if kind is str:
            if not item.isascii():
                item.encode("utf-8")
        elif kind is dict:
            item = _canonical_dict(item)
        elif kind is list:
            item = _canonical_list(item)
        elif kind not in _ATOMS:
            item = _canonical(item)
        out[key if type(key) is str and key.isascii() else _text(str(key))] = item
    return out


def _canonical_list(value: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in value:
        kind = type(item)
        if kind is str:
            if not item.isascii():
                item.encode("utf-8")
        elif kind is dict:
            item = _canonical_dict(item)
        elif kind is list:
            item = _canonical_list(item)
        elif kind not in _ATOMS:
            item = _canonical(item)
        out.append(item)
    return out


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
    """The orchestrator's signature (ORCHESTRATOR.md §2), calibration key included;
    worked out once per distinct config (`config_memo`)."""

    def derived() -> str:
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
        return hashlib.sha256(_SIGNATURE_JSON.encode(payload).encode("utf-8")).hexdigest()

    key = config_key(extra_config, benchmark_id, benchmark_directory, agent, provider, model)
    return _SIGNATURES.get(key, derived)


_SIGNATURES = Memo()


# json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True), built once.
_SIGNATURE_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)
