"""What sources state about a run, as facts: a later source adds, never changes.

A run's identity is its source's run key. Several files of one source system can
state the same run, each with what it knows: the orchestrator's database states
every column, a latest/ row a subset, a comparison file a few. A run's facts are
the header fields a source states (an unstated field, a null and an empty object
state nothing), with objects (config, metrics, tokens, provenance) merged key by
key, and its cells. A later source that states only facts already recorded adds
nothing; one that states new facts adds them (`RunFactsAdded`); one that states a
recorded fact differently is a conflict naming the field and both values.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ConfigDict, TypeAdapter

from benchledger.domain.host_paths import strip_host_paths
from benchledger.domain.records import RunRecord
from benchledger.domain.run import (
    CellsRecorded,
    RunFactsAdded,
    RunFinished,
    RunImported,
    RunStarted,
    StaleRunRecovered,
    TrajectoryRecorded,
)
from benchledger.domain.secrets import mask_config

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
# Header fields with a default a source may leave unset: unset, they state nothing.
DEFAULTED = ("higher_is_better",)


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


_JSON = TypeAdapter(Any, config=ConfigDict(ser_json_inf_nan="strings"))


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


def unstated(record: RunRecord) -> tuple[str, ...]:
    """The defaulted header fields this record's source did not state."""
    return tuple(name for name in DEFAULTED if name not in record.header.model_fields_set)


def stated(record: RunRecord) -> dict[str, Any]:
    """The facts a record states, as plain JSON values."""
    header = record.header
    skipped = set(unstated(record))
    facts: dict[str, Any] = {}
    for name in HEADER_FACTS:
        if name in skipped:
            continue
        if name == "provenance":
            value: Any = {**header.provenance, **record.supplement}
        elif name == "config":
            value = mask_config(header.config)
        else:
            value = getattr(header, name)
        facts[name] = value
    return _stated(plain(facts))


def recorded(events: Iterable[Any]) -> RecordedRun:
    """The facts a run's events hold, as their source(s) stated them.

    The ledger's own acts on a run (invalidations, score corrections, supersession)
    are not facts of its source and are left out.
    """
    run = RecordedRun()
    skipped: set[str] = set()
    for event in events:
        if isinstance(event, RunStarted):  # a RunImported too: then its end as well
            skipped = set(event.unstated)
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
            facts = event.facts
        elif isinstance(event, CellsRecorded):
            run.cells.update((c.key, c.digest()) for c in event.cells)
            continue
        elif isinstance(event, TrajectoryRecorded):
            run.turns += len(event.turns)
            continue
        else:
            continue
        held = _stated(plain({k: v for k, v in facts.items() if k not in skipped}))
        run.facts = added_to(run.facts, held)
    return run


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
        elif not _same(mine, value):
            conflicts.append(Conflict(path, mine, value))
    return added, conflicts


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if a == b:
        return True
    # An earlier import kept a source's host paths cut (`domain.host_paths`): the text it
    # recorded is the one stated now, cut. The ledger keeps what it recorded.
    return isinstance(b, str | list) and type(a) is type(b) and a == strip_host_paths(b)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
