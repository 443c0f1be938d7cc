"""What a run derives from its config alone (signatures, the masked config), worked out
once per distinct config.

An import of tens of thousands of runs holds a few hundred distinct configs: the same
small dict, parsed again for every row, hashed and masked again each time. These are
pure functions of their arguments, so each result is kept under a key that tells
configs apart exactly as their JSON does."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")
KEPT = 4096
_ATOMS = (str, int, bool, type(None))


def flat_key(config: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """A hashable key equal for two configs only when their JSON is the same text: each
    key with its value's type and value (1, 1.0 and True are equal in Python but not in
    JSON), a float by its repr (-0.0 and 0.0 are equal floats). None for a config with
    a nested value: it is worked out every time."""
    items: list[tuple[Any, ...]] = []
    for key, value in config.items():
        kind = type(value)
        if kind in _ATOMS:
            items.append((key, kind, value))
        elif kind is float:
            items.append((key, kind, repr(value)))
        else:
            return None
    return tuple(items)


class Memo:
    """Results of one pure function by key, at most `KEPT` of them (then forgotten)."""

    def __init__(self) -> None:
        self.kept: dict[Hashable, Any] = {}

    def get(self, key: Hashable | None, make: Callable[[], T]) -> T:
        """`make()`, or what it gave for `key` before; always `make()` without a key."""
        if key is None:
            return make()
        kept = self.kept
        if key in kept:
            return kept[key]  # type: ignore[no-any-return]
        if len(kept) >= KEPT:
            kept.clear()
        value = kept[key] = make()
        return value


def config_key(config: Mapping[str, Any], *others: Any) -> tuple[Any, ...] | None:
    """`flat_key(config)` with the other arguments of the function, or None."""
    flat = flat_key(config)
    return None if flat is None else (*others, flat)
