"""Canonical JSON, work signatures and natural-key ids.

Canonical JSON is `json.dumps(value, sort_keys=True, separators=(",", ":"),
ensure_ascii=False, allow_nan=False)` encoded as UTF-8: keys sorted at every
depth, no insignificant white space, non-ASCII kept as UTF-8, and NaN or
Infinity refused (they have no JSON spelling). Content hashes use it.

Signatures are the orchestrator's (ORCHESTRATOR.md section 2), so a run
recorded here and the same work recorded by the orchestrator are one piece of
work. They hash the orchestrator's JSON: canonical, but ASCII-escaped
(`ensure_ascii=True`) and with non-finite numbers spelled `NaN` / `Infinity`,
as Python's `json.dumps` writes them:

    signature            = sha256(json({benchmark_id, benchmark_directory, agent,
                                        provider, model, extra_config}))
    comparison signature = sha256(json({benchmark_id, benchmark_directory,
                                        provider, model, extra_config'}))

`extra_config` is the work's effective config (`effective_config`); for a
calibration agent (perfect_v1, wrong_v1, half_v1) a copy gets
`calibration_spec_version: "calibration_v1"` before hashing. `extra_config'`
drops what does not change the comparison: `agent` and `harness` when they
name a known agent (the orchestrator's: its real harnesses, synthetic baselines,
`compare` and `smithers`; and ours: the code-agent adapters `elizaos` and
`opencode`), the runtime timeouts, `reasoning_effort` when "low",
`dataset` when it equals `suite`; the calibration key is added as above.
Agent, provider and model are hashed as given. The benchmark directory is
the registry entry's `directory`, by default the benchmark id.

Signatures recorded before benchledger adopted the orchestrator's are kept
readable as `legacy_signature` / `legacy_comparison_signature`:
sha256(canonical({agent, benchmark, config, model, provider})), the
comparison one without `agent`. The legacy signature also stays the digest of
the work in keys derived for runs without one (`work_key`): identities never change.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from typing import Any
from uuid import UUID, uuid5

NAMESPACE = UUID("6f0c4b5e-7d0b-5a59-9d55-b3c8e1f4a210")

CALIBRATION_AGENTS = frozenset({"perfect_v1", "wrong_v1", "half_v1"})
CALIBRATION_SPEC_VERSION = "calibration_v1"
REAL_AGENTS = frozenset({"eliza", "hermes", "openclaw"})
# The agent of a model comparison (`compare --run`): its runs are the models', not a harness's.
COMPARE_AGENT = "compare"
# The code-agent matrix's adapters (the orchestrator's code_agent_matrix: ElizaOS against
# OpenCode). An addition of ours: the orchestrator's runner keeps them in a comparison
# signature, but never runs them as harnesses, so no orchestrator row it hashes changes.
# (`codex` is not one: the orchestrator runs it as a harness and keeps it in the hash.)
CODE_AGENTS = frozenset({"elizaos", "opencode"})
# The agents whose name in `agent` / `harness` says nothing about the benchmark's
# configuration: the real harnesses, the synthetic baselines, `compare` and `smithers`
# (the orchestrator's), and the code-agent adapters (ours).
ORCHESTRATOR_KNOWN_AGENTS = REAL_AGENTS | {
    "random_v1",
    *CALIBRATION_AGENTS,
    COMPARE_AGENT,
    "smithers",
}
KNOWN_AGENTS = ORCHESTRATOR_KNOWN_AGENTS | CODE_AGENTS
# Runtime limits that do not change what is measured.
RUNTIME_KEYS = ("eliza_bench_http_timeout_s", "openclaw_timeout_s", "timeout_s")


def canonical_json(value: Any) -> str:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def signature_json(value: Any) -> str:
    """The JSON a signature hashes, byte for byte the orchestrator's (see above)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def is_calibration_agent(agent: str | None) -> bool:
    return (agent or "").strip().lower() in CALIBRATION_AGENTS


def effective_config(
    benchmark: str,
    agent: str,
    config: Mapping[str, Any],
    *,
    defaults: Mapping[str, Any] | None = None,
    provider: str = "",
) -> dict[str, Any]:
    """The config a piece of work runs with and is identified by: the orchestrator's
    `_effective_request` steps that apply to benchledger's `run`.

    `config` is what the request states (its extras already overlaid, `per_benchmark`
    resolved); `defaults` the benchmark's registered config, which it overlays:
    - a positive integer `sample` becomes `limit`, unless the request gives `limit`, or
      the sample is only a default and the defaults give `limit`;
    - `agent` is set to the agent label (stripped) unless the label is empty or
      `compare`, or the request gives `agent`;
    - for the `trust` benchmark with a real harness (or provider `claude-subscription`),
      `handler` is set to `eliza` unless the request gives `handler`;
    - `harness` is set to the label if it is absent.

    Applied to its own result (with no defaults) it changes nothing, so the config a
    run recorded, or an orchestrator row's `extra_config_json`, hashes to its signature.
    (The orchestrator leaves a default `sample` without any `limit` alone; none of its
    benchmarks has one, and honouring it here is what keeps the result a fixed point.)
    """
    explicit = dict(config)
    merged = {**(defaults or {}), **explicit}
    label = agent.strip()
    sample = merged.get("sample")
    if (
        isinstance(sample, int)
        and not isinstance(sample, bool)
        and sample > 0
        and "limit" not in explicit
        and ("sample" in explicit or "limit" not in merged)
    ):
        merged["limit"] = sample
    if label and label != "compare" and "agent" not in explicit:
        merged["agent"] = label
    if (
        benchmark == "trust"
        and (label.lower() in REAL_AGENTS or provider.strip().lower() == "claude-subscription")
        and "handler" not in explicit
    ):
        merged["handler"] = "eliza"
    if label:
        merged.setdefault("harness", label)
    return merged


def signature(
    benchmark: str,
    agent: str,
    provider: str,
    model: str,
    config: Mapping[str, Any],
    *,
    directory: str | None = None,
) -> str:
    """The work's signature; `config` is its effective config (see the module docstring)."""
    extra_config = dict(config)
    if is_calibration_agent(agent):
        extra_config["calibration_spec_version"] = CALIBRATION_SPEC_VERSION
    return sha256_hex(
        signature_json(
            {
                "benchmark_id": benchmark,
                "benchmark_directory": benchmark if directory is None else directory,
                "agent": agent,
                "provider": provider,
                "model": model,
                "extra_config": extra_config,
            }
        )
    )


def comparison_config(config: Mapping[str, Any] | None, *, agent: str | None) -> dict[str, Any]:
    """The config without what does not change a comparison (see the module docstring)."""
    extra = dict(config or {})
    if _text(extra.get("agent")).lower() in KNOWN_AGENTS:
        extra.pop("agent", None)
    if _text(extra.get("harness")).lower() in KNOWN_AGENTS:
        extra.pop("harness", None)
    for key in RUNTIME_KEYS:
        extra.pop(key, None)
    if _text(extra.get("reasoning_effort")).lower() == "low":
        extra.pop("reasoning_effort", None)
    dataset, suite = _text(extra.get("dataset")), _text(extra.get("suite"))
    if dataset and dataset == suite:
        extra.pop("dataset", None)
    if is_calibration_agent(agent):
        extra["calibration_spec_version"] = CALIBRATION_SPEC_VERSION
    return extra


def comparison_signature(
    benchmark: str,
    provider: str,
    model: str,
    config: Mapping[str, Any] | None,
    *,
    directory: str | None = None,
    agent: str | None = None,
) -> str:
    """The signature without the agent, so harnesses on the same setup line up.

    `agent` only decides the calibration key: without it none is added."""
    return sha256_hex(
        signature_json(
            {
                "benchmark_id": benchmark,
                "benchmark_directory": benchmark if directory is None else directory,
                "provider": provider,
                "model": model,
                "extra_config": comparison_config(config, agent=agent),
            }
        )
    )


def _text(value: Any) -> str:
    """A config value as the orchestrator compares it: `str(value or "").strip()`."""
    return str(value or "").strip()


def legacy_signature(
    benchmark: str, agent: str, provider: str, model: str, config: Mapping[str, Any]
) -> str:
    """The signature benchledger recorded before it adopted the orchestrator's."""
    return sha256_hex(
        canonical_json(
            {
                "agent": agent,
                "benchmark": benchmark,
                "config": dict(config),
                "model": model,
                "provider": provider,
            }
        )
    )


def legacy_comparison_signature(
    benchmark: str, provider: str, model: str, config: Mapping[str, Any]
) -> str:
    """The comparison signature benchledger recorded before it adopted the orchestrator's."""
    return sha256_hex(
        canonical_json(
            {"benchmark": benchmark, "config": dict(config), "model": model, "provider": provider}
        )
    )


def work_key(
    benchmark: str, agent: str, provider: str, model: str, config: Mapping[str, Any]
) -> str:
    """The digest of the work inside keys derived for runs that bring no key of their
    own: the legacy signature, frozen, so that such a run imported again after the
    signature changed is still the same run."""
    return legacy_signature(benchmark, agent, provider, model, config)


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
