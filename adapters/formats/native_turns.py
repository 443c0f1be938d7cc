"""Trajectory turns in the native format: one model call each, as a harness writes it.

A turn states its tokens under the names harnesses use (`input_tokens`,
`output_tokens`) or the orchestrator's (`prompt_tokens`, `completion_tokens`); it
becomes the run's `Turn`, the record the orchestrator's trajectories are imported as,
so every reader of the `turns` read model sees executed and imported runs alike.
"""

from __future__ import annotations

from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from benchledger.adapters.formats.native_common import field_error
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import NonEmptyStr, TokenCount, Turn

DEFAULT_TRAJECTORY = "trajectory"
Latency = Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)]
# A native spelling and the orchestrator's spelling of one Turn field.
SPELLINGS = (
    ("input_tokens", "prompt_tokens"),
    ("output_tokens", "completion_tokens"),
)


class NativeTurn(BaseModel):
    """One turn as the native format states it (its `type` tag aside)."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="Turn")

    trajectory: NonEmptyStr = Field(
        default=DEFAULT_TRAJECTORY, description="the trajectory (file or stream) it belongs to"
    )
    index: TokenCount | None = Field(
        default=None, description="its place in the trajectory; default: order of appearance"
    )
    input_tokens: TokenCount | None = None
    prompt_tokens: TokenCount | None = Field(default=None, description="as input_tokens")
    output_tokens: TokenCount | None = None
    completion_tokens: TokenCount | None = Field(default=None, description="as output_tokens")
    total_tokens: TokenCount | None = None
    cached_tokens: TokenCount | None = None
    cache_creation_tokens: TokenCount | None = None
    latency_ms: Latency | None = None
    prompt_chars: TokenCount | None = None

    @model_validator(mode="after")
    def _one_spelling(self) -> Self:
        for native, orchestrator in SPELLINGS:
            if getattr(self, native) is not None and getattr(self, orchestrator) is not None:
                raise ValueError(f"states both {native} and {orchestrator}: give one")
        return self

    def turn(self, index: int) -> Turn:
        """The run's record of this turn, at `index` when it states none."""
        return Turn(
            trajectory_file=self.trajectory,
            turn_index=index if self.index is None else self.index,
            prompt_tokens=_either(self.input_tokens, self.prompt_tokens),
            completion_tokens=_either(self.output_tokens, self.completion_tokens),
            total_tokens=self.total_tokens,
            cached_tokens=self.cached_tokens,
            cache_creation_tokens=self.cache_creation_tokens,
            latency_ms=self.latency_ms,
            prompt_chars=self.prompt_chars,
        )


def _either(first: int | None, second: int | None) -> int | None:
    return first if first is not None else second


class RunTurns:
    """The turns of one run, in order: each turn's default index is how many turns of
    its trajectory came before it; a place stated twice must state the same turn."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._by_key: dict[str, Turn] = {}
        self._seen: dict[str, int] = {}  # turns per trajectory so far

    @property
    def turns(self) -> tuple[Turn, ...]:
        return tuple(self._by_key.values())

    def add(self, raw: Any, *, line: int | None = None, prefix: str = "") -> Turn | None:
        """Validate `raw` (an object without its type tag) and keep it; None when it
        repeats a turn already kept."""
        try:
            stated = NativeTurn.model_validate(raw)
        except ValidationError as e:
            raise field_error(self.name, e, line=line, prefix=prefix) from None
        return self.keep(stated, line=line, prefix=prefix)

    def keep(self, stated: NativeTurn, *, line: int | None = None, prefix: str = "") -> Turn | None:
        seen = self._seen.get(stated.trajectory, 0)
        self._seen[stated.trajectory] = seen + 1
        turn = stated.turn(seen)
        earlier = self._by_key.setdefault(turn.key, turn)
        if earlier is turn:
            return turn
        if earlier != turn:
            raise InputFormatError(
                self.name,
                f"turn {turn.turn_index} of trajectory '{turn.trajectory_file}' is stated "
                "twice with different values",
                line=line,
                field=f"{prefix}index",
            )
        return None


def native_fields(turn: Turn) -> dict[str, Any]:
    """A Turn as the native format writes it (the stated fields only)."""
    out: dict[str, Any] = {"trajectory": turn.trajectory_file, "index": turn.turn_index}
    renamed = {"prompt_tokens": "input_tokens", "completion_tokens": "output_tokens"}
    for name in Turn.model_fields:
        if name in ("trajectory_file", "turn_index"):
            continue
        value = getattr(turn, name)
        if value is not None:
            out[renamed.get(name, name)] = value
    return out
