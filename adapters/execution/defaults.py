"""Defaults the options name in their help: here, not in the modules that use them, so
a command's --help loads neither pydantic nor the runner."""

from __future__ import annotations

# The registry file a command reads unless told otherwise.
DEFAULT_REGISTRY = "benchledger.toml"
# The orchestrator's defaults for `validate-matrix`.
DEFAULT_PROVIDER = "cerebras"
DEFAULT_MODEL = "gemma-4-31b"
