"""What became of each run of an imported file, kept compactly: a file of a million
runs is one outcome each, and memory should hold a batch of runs, not the file."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Literal, overload
from uuid import UUID

from benchledger.domain.ledger_base import RunOutcome

State = Literal["imported", "unchanged", "amended", "merged"]
STATES: tuple[State, ...] = ("imported", "unchanged", "amended", "merged")
_CODE = {state: i for i, state in enumerate(STATES)}


class RunOutcomes(Sequence[RunOutcome]):
    """RunOutcomes in order: each id as its 16 bytes and its state as one byte, with its
    run key (the same string the import keeps to find a key stated twice)."""

    def __init__(self) -> None:
        self._ids = bytearray()
        self._states = bytearray()
        self._keys: list[str] = []

    def append(self, outcome: RunOutcome) -> None:
        self._ids += outcome.run_id.bytes
        self._states.append(_CODE[outcome.state])
        self._keys.append(outcome.run_key)

    def __len__(self) -> int:
        return len(self._keys)

    @overload
    def __getitem__(self, index: int) -> RunOutcome: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[RunOutcome]: ...

    def __getitem__(self, index: int | slice) -> RunOutcome | Sequence[RunOutcome]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = range(len(self))[index]  # negative indexes, and IndexError past the end
        return RunOutcome(self.run_id(i), self._keys[i], STATES[self._states[i]])

    def __iter__(self) -> Iterator[RunOutcome]:
        for i in range(len(self)):
            yield self[i]

    def run_id(self, i: int) -> UUID:
        return UUID(bytes=bytes(self._ids[16 * i : 16 * i + 16]))

    def run_ids(self) -> list[UUID]:
        return [self.run_id(i) for i in range(len(self))]

    def run_id_texts(self) -> tuple[str, ...]:
        """`str(run_id)` of every run, made from the ids' bytes at once (a file of tens of
        thousands of runs made an object and a UUID per run, at the end of its import)."""
        text = self._ids.hex()
        return tuple(
            f"{text[i : i + 8]}-{text[i + 8 : i + 12]}-{text[i + 12 : i + 16]}-"
            f"{text[i + 16 : i + 20]}-{text[i + 20 : i + 32]}"
            for i in range(0, len(text), 32)
        )

    def counts(self) -> dict[State, int]:
        """How many runs ended in each state (only states that occur)."""
        return {STATES[code]: n for code, n in Counter(self._states).items()}

    def changed(self) -> bool:
        """Whether any run was not already recorded as it is."""
        return any(code != _CODE["unchanged"] for code in self._states)


def state_counts(runs: Sequence[RunOutcome]) -> dict[State, int]:
    """How many runs ended in each state (only states that occur)."""
    if isinstance(runs, RunOutcomes):
        return runs.counts()
    return dict(Counter(r.state for r in runs))


def run_id_texts(runs: Sequence[RunOutcome]) -> tuple[str, ...]:
    """The runs' ids as text, in order."""
    if isinstance(runs, RunOutcomes):
        return runs.run_id_texts()
    return tuple(str(r.run_id) for r in runs)
