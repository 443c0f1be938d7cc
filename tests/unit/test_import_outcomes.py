"""Run outcomes kept compactly read back as the outcomes they were."""

from __future__ import annotations

import uuid

import pytest

from benchledger.domain.import_outcomes import RunOutcomes, run_id_texts, state_counts
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


def test_ids_as_text_and_counts_read_alike_from_outcomes_and_a_plain_list() -> None:
    given = [RunOutcome(uuid.uuid4(), k, s) for k, s in (("a", "imported"), ("b", "amended"))]
    outcomes = RunOutcomes()
    for outcome in given:
        outcomes.append(outcome)
    texts = tuple(str(o.run_id) for o in given)
    assert run_id_texts(outcomes) == run_id_texts(given) == texts
    assert state_counts(outcomes) == state_counts(given) == {"imported": 1, "amended": 1}
    assert run_id_texts(RunOutcomes()) == () and state_counts(()) == {}
