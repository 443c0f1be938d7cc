"""The attempts an import counts per signature, kept compactly until the file ends, come
back in the order counted with each run's id and None for each skip."""

from __future__ import annotations

import sys
import uuid

from benchledger.domain.importing import CountedAttempts, _Attempts


def test_items_come_back_as_added() -> None:
    runs = [uuid.uuid4().bytes for _ in range(3)]
    attempts = _Attempts("bench", "agent")
    added = [(1, runs[0], "k1"), (2, None, "skip-2"), (3, runs[1], "k3"), (10**20, runs[2], "k4")]
    for item in added:
        attempts.add(*item)
    assert list(attempts.items()) == added
    assert (attempts.benchmark, attempts.agent) == ("bench", "agent")


def test_signatures_are_kept_apart() -> None:
    counted = CountedAttempts()
    counted._add("s1", "b", "a", (1, b"\x01" * 16, "x"))
    counted._add("s2", "b", "c", (1, None, "y"))
    counted._add("s1", "b", "a", (2, b"\x02" * 16, "z"))
    assert [list(counted.by_signature[s].items()) for s in ("s1", "s2")] == [
        [(1, b"\x01" * 16, "x"), (2, b"\x02" * 16, "z")],
        [(1, None, "y")],
    ]


def test_an_attempt_costs_far_less_than_a_tuple_and_a_bytes_object() -> None:
    """What 10,000 attempts add beyond their keys (shared with the rest of the import)."""
    keys = [f"run-{i}" for i in range(10_000)]
    attempts = _Attempts("b", "a")
    for i, key in enumerate(keys):
        attempts.add(i % 200, uuid.UUID(int=i).bytes, key)
    kept = sum(sys.getsizeof(x) for x in (attempts.numbers, attempts.ids, attempts.runs))
    kept += sys.getsizeof(attempts.keys)
    as_tuples = [(i % 200, uuid.UUID(int=i).bytes, key) for i, key in enumerate(keys)]
    before = sys.getsizeof(as_tuples) + sum(
        sys.getsizeof(t) + sys.getsizeof(t[1]) for t in as_tuples
    )
    assert kept < before / 3
