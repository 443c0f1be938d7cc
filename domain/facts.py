"""What sources state about a run, as facts: a later source adds, never changes.

A run's identity is its source's run key. Several files of one source system can
state the same run, each with what it knows: the orchestrator's database states
every column, a latest/ row a subset, a comparison file a few. A run's facts are
the header fields a source states (an unstated field, a null and an empty object
state nothing), with objects (config, metrics, tokens, provenance) merged key by
key, and its cells. A later source that states only facts already recorded adds
nothing; one that states new facts adds them (`RunFactsAdded`); one that states a
recorded fact differently is a conflict naming the field and both values.

A placeholder is no fact (DESIGN.md section 4): what an importer filled in because
its source is silent (the record's `placeholders`, kept on `RunStarted.unstated`: an
`unknown` model, an empty list of tags) and an identity field that names nothing
whoever wrote it (an empty provider, a model `unknown`). A recorded placeholder
counts as absent, so a later source that states the field fills it
(`RunFactsAdded`); a later source's placeholder states nothing, so it never
conflicts with a recorded fact.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ConfigDict, TypeAdapter

from benchledger.domain.host_paths import strip_host_paths
from benchledger.domain.publication import PLACEHOLDER_NAMES
from benchledger.domain.records import RunHeader, RunRecord
from benchledger.domain.run import (
    CellsRecorded,
    RunFactsAdded,
    RunFinished,
    RunImported,
    RunStarted,
    StaleRunRecovered,
    TrajectoryRecorded,
)
from benchledger.domain.secrets import MASK, mask_config, mask_value

# The header fields that are facts of the run, in the order conflicts are reported.
HEADER_FACTS = (
    "benchmark",
    "agent",
    "provider",
    "model",
    "status",
    "score",
    "unit",
    "higher_is_better",
    "started_at",
    "ended_at",
    "duration_seconds",
    "error",
    "config",
    "metrics",
    "tokens",
    "provenance",
)
# How far apart two floats may be and state one number: float summation noise (about
# 1e-16 relative), far below any precision a result is reported at.
FLOAT_NOISE = 1e-12
# Header fields with a default a source may leave unset: unset, they state nothing.
DEFAULTED = ("higher_is_better",)
# The header fields that name the run's work (its signature's): one whose value names
# nothing (`is_placeholder`) states nothing, whoever wrote it.
IDENTITY = ("benchmark", "agent", "provider", "model")


@dataclass(frozen=True)
class Conflict:
    path: str
    recorded: Any
    stated: Any

    def __str__(self) -> str:
        return (
            f"{self.path}: recorded {_short(self.recorded)}, this file states {_short(self.stated)}"
        )


@dataclass
class RecordedRun:
    """What the ledger holds about a run, from its events."""

    facts: dict[str, Any] = field(default_factory=dict)
    cells: dict[str, str] = field(default_factory=dict)  # key -> digest
    turns: int = 0
    # Its benchmark, agent, provider and model as its events name them, placeholders too.
    identity: dict[str, str] = field(default_factory=dict)

    def identity_after(self, added: dict[str, Any]) -> dict[str, str]:
        """Its identity once `added` is: an added identity fact fills a placeholder."""
        return {**self.identity, **{k: added[k] for k in IDENTITY if k in added}}


_JSON = TypeAdapter(Any, config=ConfigDict(ser_json_inf_nan="strings", defer_build=True))


def plain(value: Any) -> Any:
    """Plain JSON values (times as ISO text, non-finite floats as strings)."""
    return _JSON.dump_python(value, mode="json")


def _stated(facts: dict[str, Any]) -> dict[str, Any]:
    """Facts without the nulls and empty objects that state nothing."""
    out: dict[str, Any] = {}
    for key, value in facts.items():
        if isinstance(value, dict):
            value = _stated(value)
            if not value:
                continue
        elif value is None:
            continue
        out[key] = value
    return out


def is_placeholder(name: str, value: Any) -> bool:
    """True for an identity field's value that names nothing: an empty provider, a
    benchmark, agent or model named `unknown`, `none`, `...` (`PLACEHOLDER_NAMES`)."""
    if name not in IDENTITY or not isinstance(value, str):
        return False
    text = value.strip().lower()
    return not text or text in PLACEHOLDER_NAMES


def unstated(record: RunRecord) -> tuple[str, ...]:
    """What this record's source did not state: the defaulted header fields it left
    unset, then the fields and provenance keys its importer filled in (`placeholders`)."""
    names = [name for name in DEFAULTED if name not in record.header.model_fields_set]
    return (*names, *(p for p in record.placeholders if p not in names))


def stated(record: RunRecord) -> dict[str, Any]:
    """The facts a record states, as plain JSON values (its placeholders left out)."""
    header = record.header
    facts: dict[str, Any] = {}
    for name in HEADER_FACTS:
        if name == "provenance":
            value: Any = {**header.provenance, **record.supplement}
        elif name == "config":
            value = mask_config(header.config)
        else:
            value = getattr(header, name)
        facts[name] = value
    return _stated(plain(without_placeholders(facts, unstated(record))))


def without_placeholders(facts: dict[str, Any], paths: Iterable[str]) -> dict[str, Any]:
    """`facts` without the placeholders: the `paths` (`model`, `provenance.tags`) and
    the identity fields whose value names nothing (`is_placeholder`)."""
    out = {k: v for k, v in facts.items() if not is_placeholder(k, v)}
    for path in paths:
        head, dot, rest = path.partition(".")
        if not dot:
            out.pop(head, None)
        elif isinstance(out.get(head), dict):
            out[head] = without_placeholders(out[head], (rest,))
    return out


def recorded(events: Iterable[Any]) -> RecordedRun:
    """The facts a run's events hold, as their source(s) stated them.

    The ledger's own acts on a run (invalidations, score corrections, supersession)
    are not facts of its source and are left out.
    """
    run = RecordedRun()
    # The placeholders of the run's first source: left out of its start and its end. A
    # later source's `RunFactsAdded` holds only what it states (`stated`).
    skipped: list[str] = []
    for event in events:
        placeholders = skipped
        if isinstance(event, RunStarted):  # a RunImported too: then its end as well
            skipped = placeholders = list(event.unstated)
            run.identity = {name: getattr(event, name) for name in IDENTITY}
            facts: dict[str, Any] = {
                "benchmark": event.benchmark,
                "agent": event.agent,
                "provider": event.provider,
                "model": event.model,
                "started_at": event.started_at,
                "config": event.config,
                "provenance": event.provenance,
            }
            if isinstance(event, RunImported):
                facts.update(_ended(event))
                run.turns += len(event.turns)
        elif isinstance(event, RunFinished):
            facts = _ended(event)
        elif isinstance(event, StaleRunRecovered):
            facts = {"status": "recovered", "error": event.detail}
        elif isinstance(event, RunFactsAdded):
            facts, placeholders = event.facts, []
            if event.identity is not None:
                run.identity = dict(event.identity)
        elif isinstance(event, CellsRecorded):
            run.cells.update((c.key, c.digest()) for c in event.cells)
            continue
        elif isinstance(event, TrajectoryRecorded):
            run.turns += len(event.turns)
            continue
        else:
            continue
        held = _stated(plain(without_placeholders(facts, placeholders)))
        run.facts = added_to(run.facts, held)
    return run


def identified(header: RunHeader, identity: dict[str, str]) -> RunHeader:
    """`header` naming its work as the run's `identity` does, for the run's signatures
    (a later source's placeholder is not the run's name)."""
    if all(getattr(header, name) == value for name, value in identity.items()):
        return header
    # Validated anew, not copied: a copy would share the signatures derived already.
    return RunHeader.model_validate({**header.model_dump(), **identity})


def _ended(event: RunFinished | RunImported) -> dict[str, Any]:
    return {
        "status": event.status.value,
        "score": event.score,
        "unit": event.unit,
        "higher_is_better": event.higher_is_better,
        "metrics": event.metrics,
        "tokens": event.tokens,
        "duration_seconds": event.duration_seconds,
        "error": event.error,
        "ended_at": event.ended_at,
    }


def added_to(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`base` with the facts of `extra` it lacks (objects merged key by key)."""
    out = dict(base)
    for key, value in extra.items():
        mine = out.get(key)
        if isinstance(mine, dict) and isinstance(value, dict):
            out[key] = added_to(mine, value)
        elif key not in out:
            out[key] = value
    return out


def result_additions(config: dict[str, Any], record: RunRecord) -> dict[str, Any]:
    """What an executed run's own result file states beyond the config it was started
    with, as `RunFactsAdded` facts: the config keys (a `mock` flag, say) and the source's
    own flags (provenance) it adds. The run's config keeps its values, since the run's
    signature is the request's; a config key the file states differently is not lost
    either: the file's whole config is kept under provenance `result_config`."""
    header = record.header
    stated = _stated(plain({"config": mask_config(header.config), "provenance": header.provenance}))
    added, conflicts = compare({"config": plain(mask_config(config))}, stated)
    if any(c.path.startswith("config.") for c in conflicts):
        added.setdefault("provenance", {})["result_config"] = stated["config"]
    return added


def compare(
    recorded_facts: dict[str, Any], new: dict[str, Any], prefix: str = ""
) -> tuple[dict[str, Any], list[Conflict]]:
    """The facts `new` adds to `recorded_facts`, and the ones it states differently."""
    added: dict[str, Any] = {}
    conflicts: list[Conflict] = []
    order = {name: i for i, name in enumerate(HEADER_FACTS)} if not prefix else {}
    for key in sorted(new, key=lambda k: (order.get(k, len(order)), k)):
        value = new[key]
        path = f"{prefix}{key}"
        if key not in recorded_facts:
            added[key] = value
            continue
        mine = recorded_facts[key]
        if isinstance(mine, dict) and isinstance(value, dict):
            more, clashes = compare(mine, value, f"{path}.")
            if more:
                added[key] = more
            conflicts.extend(clashes)
        elif not _same(mine, value) and not _masked_same(key, mine, value):
            conflicts.append(Conflict(path, mine, value))
    return added, conflicts


def _masked_same(name: str, recorded: Any, stated: Any) -> bool:
    """Whether `stated` is `recorded` with its secrets masked: a ledger written before
    imports masked secrets holds the source's value as it was, and the source, read
    again, states it masked. The ledger keeps what it recorded."""
    if MASK not in _JSON.dump_json(stated).decode():
        return False
    return bool(plain(mask_value(recorded, name)) == stated)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if a == b:
        return True
    if isinstance(a, float) and isinstance(b, float):
        # One number written at another precision (a sum taken in another order: a
        # leaderboard's cost 279.1673704500001 one day, 279.16737045 the next) is the
        # same fact; a value that differs in its first twelve digits is another one.
        return math.isclose(a, b, rel_tol=FLOAT_NOISE)
    # An earlier import kept a source's host paths cut (`domain.host_paths`): the text it
    # recorded is the one stated now, cut. The ledger keeps what it recorded.
    return isinstance(b, str | list) and type(a) is type(b) and a == strip_host_paths(b)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
