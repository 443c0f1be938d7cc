"""Run outcomes kept compactly read back as the outcomes they were."""

from __future__ import annotations

import uuid

import pytest

from benchledger.domain.import_outcomes import RunOutcomes
from benchledger.domain.ledger_base import RunOutcome


def test_outcomes_read_back_in_order_with_their_ids_keys_and_states() -> None:
    given = [
        RunOutcome(uuid.uuid4(), "a", "imported"),
        RunOutcome(uuid.uuid4(), "b", "unchanged"),
        RunOutcome(uuid.uuid4(), "c", "merged"),
        RunOutcome(uuid.uuid4(), "d", "imported"),
    ]
    outcomes = RunOutcomes()
    for outcome in given:
        outcomes.append(outcome)
    assert list(outcomes) == given and len(outcomes) == 4
    assert outcomes[1] == given[1] and outcomes[-1] == given[-1]
    assert outcomes[1:3] == given[1:3]
    assert outcomes.run_ids() == [o.run_id for o in given]
    assert outcomes.counts() == {"imported": 2, "unchanged": 1, "merged": 1}
    assert outcomes.changed()
    with pytest.raises(IndexError):
        outcomes[4]


def test_a_file_of_runs_recorded_already_changed_nothing() -> None:
    outcomes = RunOutcomes()
    assert not outcomes.changed() and outcomes.counts() == {} and list(outcomes) == []
    outcomes.append(RunOutcome(uuid.uuid4(), "a", "unchanged"))
    assert not outcomes.changed()
    outcomes.append(RunOutcome(uuid.uuid4(), "b", "amended"))
    assert outcomes.changed()
