"""The Benchmark aggregate: what a suite measures and who holds its high score."""

from __future__ import annotations

from datetime import date
from functools import singledispatch
from uuid import UUID

from pydantic import Field

from benchledger.domain.base import Aggregate, Event
from benchledger.domain.errors import RuleViolationError
from benchledger.domain.records import FiniteFloat


class BenchmarkRegistered(Event):
    benchmark: str
    directory: str | None = None
    unit: str | None = None
    higher_is_better: bool = True
    description: str | None = None


class HighScoreReferenced(Event):
    benchmark: str
    label: str
    value: FiniteFloat
    unit: str | None = None
    source: str | None = None
    as_of: date | None = None


class RequiredAgentsDeclared(Event):
    """Which agents a complete matrix row of this benchmark needs, as a source states it.

    The newest declaration is the benchmark's rule: the publication's cohort of these
    agents, its required matrix cells, and which incompatible-agent records still apply.
    """

    benchmark: str
    required: tuple[str, ...]
    # Every agent that may run it; None when the source does not say (then any may).
    compatible: tuple[str, ...] | None = None
    # Why an agent cannot run it, in the source's words (a matrix cell's `reason`).
    unsupported: dict[str, str] = Field(default_factory=dict)
    source: str
    # What an agent that cannot run it lacks, where the source says (a matrix cell's
    # `required_env`: the environment variables a runtime gate waits for).
    required_env: dict[str, tuple[str, ...]] = Field(default_factory=dict)


AgentRules = tuple[
    tuple[str, ...],
    tuple[str, ...] | None,
    tuple[tuple[str, str], ...],
    str,
    tuple[tuple[str, tuple[str, ...]], ...],
]


class Benchmark(Aggregate):
    benchmark: str
    directory: str | None = None
    unit: str | None = None
    higher_is_better: bool = True
    description: str | None = None
    high_score: tuple[str, float, str | None, str | None, date | None] | None = None
    agent_rules: AgentRules | None = None

    def registration(self) -> tuple[str | None, str | None, bool, str | None]:
        return (self.directory, self.unit, self.higher_is_better, self.description)


@singledispatch
def mutate(event: Event, benchmark: Benchmark | None) -> Benchmark | None:
    raise TypeError(f"Benchmark cannot apply {type(event).__name__}")


@mutate.register
def _(event: BenchmarkRegistered, benchmark: Benchmark | None) -> Benchmark:
    fields = {
        "benchmark": event.benchmark,
        "directory": event.directory,
        "unit": event.unit,
        "higher_is_better": event.higher_is_better,
        "description": event.description,
    }
    if benchmark is None:
        return Benchmark(
            id=event.originator_id,
            version=event.originator_version,
            created_on=event.timestamp,
            modified_on=event.timestamp,
            **fields,
        )
    return benchmark.advanced(event, **fields)  # type: ignore[no-any-return]


@mutate.register
def _(event: HighScoreReferenced, benchmark: Benchmark) -> Benchmark:
    reference = (event.label, event.value, event.unit, event.source, event.as_of)
    return benchmark.advanced(event, high_score=reference)  # type: ignore[no-any-return]


@mutate.register
def _(event: RequiredAgentsDeclared, benchmark: Benchmark) -> Benchmark:
    rules = _rules(
        event.required, event.compatible, event.unsupported, event.source, event.required_env
    )
    return benchmark.advanced(event, agent_rules=rules)  # type: ignore[no-any-return]


def _rules(
    required: tuple[str, ...],
    compatible: tuple[str, ...] | None,
    unsupported: dict[str, str],
    source: str,
    required_env: dict[str, tuple[str, ...]],
) -> AgentRules:
    env = tuple(sorted((agent, tuple(names)) for agent, names in required_env.items()))
    return (required, compatible, tuple(sorted(unsupported.items())), source, env)


def register(
    benchmark_id: UUID,
    current: Benchmark | None,
    benchmark: str,
    *,
    directory: str | None = None,
    unit: str | None = None,
    higher_is_better: bool = True,
    description: str | None = None,
) -> BenchmarkRegistered | None:
    """A registration event, or None when nothing changed (idempotent)."""
    wanted = (directory, unit, higher_is_better, description)
    if current is not None and current.registration() == wanted:
        return None
    return BenchmarkRegistered(
        originator_id=benchmark_id,
        originator_version=1 if current is None else current.version + 1,
        benchmark=benchmark,
        directory=directory,
        unit=unit,
        higher_is_better=higher_is_better,
        description=description,
    )


def reference_high_score(
    current: Benchmark,
    *,
    label: str,
    value: float,
    unit: str | None,
    source: str | None,
    as_of: date | None,
) -> HighScoreReferenced | None:
    """A new reference, or None when it repeats the current one."""
    if current.high_score == (label, value, unit, source, as_of):
        return None
    return HighScoreReferenced(
        originator_id=current.id,
        originator_version=current.version + 1,
        benchmark=current.benchmark,
        label=label,
        value=value,
        unit=unit,
        source=source,
        as_of=as_of,
    )


def declare_required_agents(
    current: Benchmark,
    required: tuple[str, ...],
    *,
    compatible: tuple[str, ...] | None,
    unsupported: dict[str, str],
    source: str,
    required_env: dict[str, tuple[str, ...]] | None = None,
) -> RequiredAgentsDeclared | None:
    """A declaration, or None when it repeats the benchmark's current rule."""
    if len(set(required)) != len(required) or not all(required):
        raise RuleViolationError(
            f"{current.benchmark}: required agents must be distinct names: {list(required)}"
        )
    if compatible is not None and (extra := [a for a in required if a not in compatible]):
        raise RuleViolationError(
            f"{current.benchmark}: required agents {extra} are not among the compatible "
            f"ones ({', '.join(compatible) or 'none'})"
        )
    env = {agent: tuple(names) for agent, names in (required_env or {}).items()}
    if current.agent_rules == _rules(required, compatible, unsupported, source, env):
        return None
    return RequiredAgentsDeclared(
        originator_id=current.id,
        originator_version=current.version + 1,
        benchmark=current.benchmark,
        required=required,
        compatible=compatible,
        unsupported=dict(unsupported),
        source=source,
        required_env=env,
    )
