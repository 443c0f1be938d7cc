"""Whether two runs of one benchmark may be paired: the same work, each side's own identity aside.

Two sides differ by agent, provider or model on purpose; anything else their comparison
signatures hash (the config, after `comparison_config` drops what never changes a
comparison) must be equal, or a difference in scores may be a difference in setup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchledger.domain.signatures import comparison_config

# What the sides of a comparison are: a config may state them, and they differ by design.
SIDE_KEYS = frozenset({"agent", "provider", "model"})
MISSING: Any = object()


def differing_config_keys(
    config_a: Mapping[str, Any] | None,
    config_b: Mapping[str, Any] | None,
    *,
    agent_a: str | None = None,
    agent_b: str | None = None,
) -> list[str]:
    """The config keys whose values differ (or that one side lacks), sorted; [] pairs them."""
    a = comparison_config(config_a, agent=agent_a)
    b = comparison_config(config_b, agent=agent_b)
    keys = (a.keys() | b.keys()) - SIDE_KEYS
    return sorted(k for k in keys if a.get(k, MISSING) != b.get(k, MISSING))
