"""The environment a benchmark gets for its model provider, as the orchestrator's runner sets it.

For an OpenAI-compatible provider (groq, openrouter, vllm, cerebras) the endpoint is
resolved, first found wins:

1. the effective config's `<provider>_base_url`, then `base_url`;
2. the environment's provider variable (e.g. `VLLM_BASE_URL`), `BENCHMARK_BASE_URL`,
   then `OPENAI_BASE_URL`;
3. the provider's default (vllm: `http://127.0.0.1:8001/v1`).

It is exported as `OPENAI_BASE_URL` and as the provider's own variable, so neither an
OpenAI client nor the provider's SDK in the benchmark can reach another endpoint. The
provider's key, when set, is exported as `OPENAI_API_KEY` too; vllm, a self-hosted
server, gets the key `dummy` when none is set.

For any other provider, a base URL the config states (`<provider>_base_url`,
`base_url`, or `vllm_base_url`, the key `compare` records a side's `@base_url` under,
as the orchestrator's compare does) is exported as `OPENAI_BASE_URL`; without one the
environment is left as it is.

Whatever the provider, a `reasoning_effort` the effective config gives (a model
profile's `extra`, `--extra`, or their `per_benchmark` entry) is exported, stripped and
lower-cased, under each name the orchestrator's runner mirrors it to
(`REASONING_EFFORT_ENV`: `OPENAI_REASONING_EFFORT`, `CEREBRAS_REASONING_EFFORT`, ...),
replacing a value the environment already had; without one (or with a blank or
non-string one) the environment is left as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The orchestrator's endpoints of OpenAI-compatible providers, and their variables.
DEFAULT_BASE_URL: dict[str, str] = {
    "groq": "https://api.groq.com/openai/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "vllm": "http://127.0.0.1:8001/v1",
    "cerebras": "https://api.cerebras.ai/v1",
}
BASE_URL_ENV: dict[str, str] = {
    "groq": "GROQ_BASE_URL",
    "openrouter": "OPENROUTER_BASE_URL",
    "vllm": "VLLM_BASE_URL",
    "cerebras": "CEREBRAS_BASE_URL",
}
KEY_ENV: dict[str, str] = {
    "groq": "GROQ_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "vllm": "VLLM_API_KEY",
    "cerebras": "CEREBRAS_API_KEY",
}
# Providers whose API key has no real secret value (self-hosted endpoints).
DUMMY_KEY: dict[str, str] = {"vllm": "dummy"}
# Where `compare` records a side's @base_url, whatever its provider (as the orchestrator).
COMPARE_BASE_URL_KEY = "vllm_base_url"
# The variables the orchestrator's runner sets from the config's `reasoning_effort`.
REASONING_EFFORT_ENV = (
    "BENCHMARK_REASONING_EFFORT",
    "OPENAI_REASONING_EFFORT",
    "CEREBRAS_REASONING_EFFORT",
    "OPENCLAW_THINKING_LEVEL",
)


def provider_env(
    provider: str, config: Mapping[str, Any], environ: Mapping[str, str]
) -> dict[str, str]:
    """The variables to set for a benchmark run with this provider and effective config."""
    name = provider.strip().lower()
    if name not in DEFAULT_BASE_URL:
        url = _configured(config, f"{name}_base_url", "base_url", COMPARE_BASE_URL_KEY)
        return {"OPENAI_BASE_URL": url} if url else {}
    env: dict[str, str] = {}
    key_name = KEY_ENV[name]
    key = environ.get(key_name) or DUMMY_KEY.get(name)
    if key:
        if not environ.get(key_name):
            env[key_name] = key
        env["OPENAI_API_KEY"] = key
    url = base_url(name, config, environ)
    env["OPENAI_BASE_URL"] = url
    env[BASE_URL_ENV[name]] = url
    return env


def reasoning_env(config: Mapping[str, Any]) -> dict[str, str]:
    """The reasoning-effort variables of an effective config (see the module docstring)."""
    value = config.get("reasoning_effort")
    if not isinstance(value, str) or not value.strip():
        return {}
    effort = value.strip().lower()
    return dict.fromkeys(REASONING_EFFORT_ENV, effort)


def base_url(provider: str, config: Mapping[str, Any], environ: Mapping[str, str]) -> str:
    """The endpoint of an OpenAI-compatible provider (see the module docstring)."""
    configured = _configured(config, f"{provider}_base_url", "base_url")
    if configured:
        return configured
    for name in (BASE_URL_ENV[provider], "BENCHMARK_BASE_URL", "OPENAI_BASE_URL"):
        value = environ.get(name, "").strip()
        if value:
            return value
    return DEFAULT_BASE_URL[provider]


def _configured(config: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = config.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None
