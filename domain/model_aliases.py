"""A user's alias: a stated model name is a spelling of a model id the rules do not reach.

Each declaration is a stream of one event; the newest declaration for a name's rule id
wins (a read model applies it), so a rebuild and `--as-of` see exactly the aliases
declared up to their position.
"""

from __future__ import annotations

from uuid import UUID

from benchledger.domain.base import Event
from benchledger.domain.errors import RuleViolationError
from benchledger.domain.model_identity import UNRESOLVED


class ModelAliasDeclared(Event):
    """`name` (as some source states it) is the model `model_id`, said by `actor`."""

    name: str
    model_id: str
    actor: str
    reason: str = ""


def declare(alias_id: UUID, name: str, model_id: str, actor: str, reason: str) -> Event:
    """The declaration's event; RuleViolationError for a name or id that names no model."""
    for field, value in (("name", name), ("model_id", model_id)):
        if value.strip() != value or value.lower() in UNRESOLVED:
            raise RuleViolationError(
                f"{field}: {value!r} names no model (empty, `unknown` or padded with spaces)"
            )
    return ModelAliasDeclared(
        originator_id=alias_id,
        originator_version=1,
        name=name,
        model_id=model_id,
        actor=actor,
        reason=reason,
    )
