"""`models`: each stated model name, the `model_id` it resolves to and
what joined it; kept by the `runs` projection, which stamps each run with that id.

A run's name resolves by the shipped rules (`domain.model_identity`), then by the newest
alias declared for the rule's id (`ModelAliasDeclared`): an alias declared after the runs
re-stamps them, one declared before them is found when they arrive.
"""

from __future__ import annotations

from collections.abc import Iterator

from benchledger.domain.model_aliases import ModelAliasDeclared
from benchledger.domain.model_identity import implied_provider, resolve_model
from benchledger.projections.base import Change, Table

MODELS = Table(
    "models",
    {
        "model_id": str,
        "name": str,
        "provider": str,
        # The rule that resolved the name (`stated`: it is its own id), or `alias`.
        "joined_by": str,
        "rule": str,
        "rule_id": str,
        "runs": int,
        # An alias's reason and who declared it, for a name it joined.
        "alias_reason": str,
        "alias_by": str,
        "position": int,
    },
    pk=("name",),
    indexes=(("model_id",), ("rule_id",)),
    lookups=(("rule_id",),),
)


# A run's name seen: listed once (under the alias of its rule id, if one was declared),
# counted per run.
# The newest alias of a rule id: every name of that rule id carries it. Scalar lookups by
# the indexed rule id, not a join: an INSERT that selects from its own table reads it
# through a temporary copy (tests/unit/test_fold_statement_plans.py).
def _alias(column: str) -> str:
    return f"(SELECT {column} FROM [{{models}}] WHERE rule_id = ? AND joined_by = 'alias' LIMIT 1)"


SEEN = (
    "INSERT INTO [{models}] (name, model_id, provider, joined_by, rule, rule_id, runs, "
    f"alias_reason, alias_by, position) VALUES (?, coalesce({_alias('model_id')}, ?), "
    f"CASE WHEN {_alias('model_id')} IS NULL THEN ? ELSE {_alias('provider')} END, "
    f"CASE WHEN {_alias('model_id')} IS NULL THEN ? ELSE 'alias' END, ?, ?, 1, "
    f"{_alias('alias_reason')}, {_alias('alias_by')}, ?) "
    "ON CONFLICT(name) DO UPDATE SET runs = runs + 1"
)
# More runs of a model listed already (`SEEN` counts one run each).
COUNTED = "UPDATE [{models}] SET runs = runs + ? WHERE name = ?"
# The model id a run of the model named by its parameter carries.
MODEL_ID = "(SELECT model_id FROM [{models}] WHERE name = ?)"
STAMP = f"UPDATE [{{runs}}] SET model_id = {MODEL_ID} WHERE run_id = ?"
ALIAS_NAME = (
    "INSERT OR IGNORE INTO [{models}] (name, model_id, provider, joined_by, rule, rule_id, "
    "runs, position) VALUES (?, ?, ?, 'alias', ?, ?, 0, ?)"
)
REJOIN = (
    "UPDATE [{models}] SET model_id = ?, provider = ?, joined_by = 'alias', alias_reason = ?, "
    "alias_by = ?, position = ? WHERE rule_id = ?"
)
RESTAMP = (
    "UPDATE [{runs}] SET model_id = ? "
    "WHERE model IN (SELECT name FROM [{models}] WHERE rule_id = ?)"
)


def seen(model: str, position: int) -> Change:
    """A run's stated model listed under its id (counted once more if listed); a run
    inserted after it reads its id with `MODEL_ID`."""
    found = resolve_model(model)
    rid = found.model_id
    provider, rule = found.provider, found.rule
    return SEEN, (model, rid, rid, rid, provider, rid, rid, rule, rule, rid, rid, rid, position)


def run_seen(run_id: str, model: str, position: int) -> Iterator[Change]:
    """A run's stated model listed under its id, and the run stamped with that id."""
    yield seen(model, position)
    yield STAMP, (model, run_id)


# A run's placeholder model filled by a later source (`RunFactsAdded.identity`): the run
# leaves the name it was counted under (a name no run holds any more is dropped, unless an
# alias keeps it), before it is seen under its stated name.
LEFT = (
    "UPDATE [{models}] SET runs = runs - 1 "
    "WHERE name = (SELECT model FROM [{runs}] WHERE run_id = ?)"
)
DROP_UNUSED = "DELETE FROM [{models}] WHERE runs <= 0 AND joined_by != 'alias'"


def run_renamed(run_id: str) -> Iterator[Change]:
    """Before a run's model changes: it no longer counts under its old name."""
    yield LEFT, (run_id,)
    yield DROP_UNUSED, ()


def alias_declared(event: ModelAliasDeclared, position: int) -> Iterator[Change]:
    """Every name resolving as the alias's name does now resolves to its `model_id`."""
    found = resolve_model(event.name)
    rid = found.model_id
    provider = implied_provider(event.model_id)
    yield ALIAS_NAME, (event.name, event.model_id, provider, found.rule, rid, position)
    yield REJOIN, (event.model_id, provider, event.reason or None, event.actor, position, rid)
    yield RESTAMP, (event.model_id, rid)
