"""The rules of a running run's trajectory: which turns are new, which disagree."""

from __future__ import annotations

from collections.abc import Sequence

from benchledger.domain.errors import RunAlreadyFinishedError
from benchledger.domain.records import Turn
from benchledger.domain.run import Run
from benchledger.domain.run_rules import split_statements

TURN_FIELDS = tuple(f for f in Turn.model_fields if f not in ("trajectory_file", "turn_index"))


def split_turns(run: Run, turns: Sequence[Turn]) -> tuple[list[Turn], list[Turn]]:
    """The turns not recorded yet, and those that state a recorded place (trajectory and
    index), or one given earlier in `turns`, with other values: a disagreement, never
    an overwrite."""
    if run.finished:
        raise RunAlreadyFinishedError(f"run {run.id} has finished; its turns are closed")
    return split_statements(run.turn_digests, turns)


def disagreement(pairs: Sequence[tuple[Turn | None, Turn]], *, shown: int = 3) -> str:
    """What a run's error says of turns its result states differently from how they were
    recorded while it ran: each turn's place and the fields that differ, both values."""
    parts: list[str] = []
    for recorded, stated in pairs[:shown]:
        where = f"turn {stated.turn_index} of trajectory '{stated.trajectory_file}'"
        fields = [f for f in TURN_FIELDS if recorded and getattr(recorded, f) != getattr(stated, f)]
        parts.extend(
            f"{where}, field '{f}': recorded {getattr(recorded, f)!r}, "
            f"then stated {getattr(stated, f)!r}"
            for f in fields
        )
        if not fields:
            parts.append(where)
    more = f"; and {len(pairs) - shown} more turns" if len(pairs) > shown else ""
    return (
        "the result states turns differently from how they were recorded while it ran "
        "(the recorded ones are kept): " + "; ".join(parts) + more
    )
