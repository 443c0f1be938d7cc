"""Executing benchmarks: the registry, the supervised process and the runner."""

# Constants that options show in their defaults and help live here, not in the modules
# that use them, so a command's --help loads neither pydantic nor the runner.

# The registry file a command reads unless told otherwise.
DEFAULT_REGISTRY = "benchledger.toml"
# The orchestrator's defaults for `validate-matrix`.
DEFAULT_PROVIDER = "cerebras"
DEFAULT_MODEL = "gemma-4-31b"
