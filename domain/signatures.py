"""Canonical JSON, work signatures and natural-key ids.

Canonical JSON is `json.dumps(value, sort_keys=True, separators=(",", ":"),
ensure_ascii=False, allow_nan=False)` encoded as UTF-8: keys sorted at every
depth, no insignificant white space, non-ASCII kept as UTF-8, and NaN or
Infinity refused (they have no JSON spelling).

signature            = sha256(canonical({benchmark, agent, provider, model, config}))
comparison signature = sha256(canonical({benchmark, provider, model, config}))
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any
from uuid import UUID, uuid5

NAMESPACE = UUID("6f0c4b5e-7d0b-5a59-9d55-b3c8e1f4a210")


def canonical_json(value: Any) -> str:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def signature(benchmark: str, agent: str, provider: str, model: str, config: dict[str, Any]) -> str:
    return sha256_hex(
        canonical_json(
            {
                "agent": agent,
                "benchmark": benchmark,
                "config": config,
                "model": model,
                "provider": provider,
            }
        )
    )


def comparison_signature(benchmark: str, provider: str, model: str, config: dict[str, Any]) -> str:
    return sha256_hex(
        canonical_json(
            {"benchmark": benchmark, "config": config, "model": model, "provider": provider}
        )
    )


@functools.lru_cache(maxsize=4096)  # an import asks twice per run: looking ahead, appending
def natural_id(kind: str, *parts: str) -> UUID:
    """A stable aggregate id for a natural key, so repeated work is idempotent."""
    return uuid5(NAMESPACE, "\x1f".join((kind, *parts)))


def run_id_for(source: str, run_key: str) -> UUID:
    return natural_id("run", source, run_key)


def benchmark_id_for(benchmark: str) -> UUID:
    return natural_id("benchmark", benchmark)


def import_id_for(file_sha256: str) -> UUID:
    return natural_id("import", file_sha256)


def run_group_id_for(label: str) -> UUID:
    return natural_id("run-group", label)


def signature_id_for(signature: str) -> UUID:
    return natural_id("signature", signature)
