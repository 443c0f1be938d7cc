"""What an import tells of each record without the longer way, told as the longer way
tells it: a name's control character, a key that may be a run of this ledger, the
attempt a source counted."""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchledger.adapters.formats import kept
from benchledger.domain import run_rules
from benchledger.domain.errors import InputFormatError
from benchledger.domain.import_lookups import own_run_id
from benchledger.domain.importing import counted_attempt
from benchledger.domain.records import GroupRecord, RunHeader, RunRecord, SkipRecord

# Names with a control character now and then (C0, DEL, C1), or none at all.
NAMES = st.text(alphabet=st.sampled_from("ab\x00\x1b\n\x7f\x9b\u00e9"), min_size=1, max_size=6)


def refusal_name_by_name(record: Any) -> str | None:
    """The first name, in `kept.NAMES` order, that holds a control character."""
    header = getattr(record, "header", None)
    named, prefix = (record, "") if header is None else (header, "header.")
    for name in kept.NAMES:
        value = getattr(named, name, None)
        if isinstance(value, str) and re.search("[\x00-\x1f\x7f-\x9f]", value):
            return f"record 1: {prefix}{name}"
    return None


def refusal(record: Any) -> str | None:
    try:
        kept._check_names("f", 0, record)
    except InputFormatError as e:
        return e.field
    return None


class TestNamesOfARecord:
    @given(run_key=NAMES, benchmark=NAMES, agent=NAMES, provider=NAMES, model=NAMES)
    def test_a_run_is_refused_for_the_first_name_that_holds_a_control_character(
        self, run_key: str, benchmark: str, agent: str, provider: str, model: str
    ) -> None:
        header = RunHeader.model_construct(
            **RunHeader(benchmark="b", agent="a", model="m", status="succeeded").__dict__,
        )
        header.__dict__.update(
            run_key=run_key, benchmark=benchmark, agent=agent, provider=provider, model=model
        )
        run = RunRecord.model_construct(header=header)
        assert refusal(run) == refusal_name_by_name(run)

    @given(benchmark=NAMES, agent=NAMES, provider=NAMES, model=NAMES)
    def test_a_skip_is_refused_for_the_first_name_that_holds_a_control_character(
        self, benchmark: str, agent: str, provider: str, model: str
    ) -> None:
        skip = SkipRecord(
            benchmark=benchmark, agent=agent, provider=provider, model=model, reason="skipped"
        )
        assert refusal(skip) == refusal_name_by_name(skip)

    def test_a_record_without_names_is_kept(self) -> None:
        assert refusal(GroupRecord(group_key="g\x1b")) is None


class TestKeysThatMayBeRunsOfThisLedger:
    @given(st.one_of(st.uuids().map(str), st.uuids().map(lambda u: str(u).upper()), st.text()))
    def test_a_key_is_a_run_id_only_when_it_is_one_written_out(self, key: str) -> None:
        try:
            expected: UUID | None = UUID(key)
        except ValueError:
            expected = None
        if expected is not None and str(expected) != key:
            expected = None
        assert own_run_id(key) == expected

    @pytest.mark.parametrize(
        "key", ["{12345678-1234-5678-1234-567812345678}", "12345678123456781234567812345678"]
    )
    def test_other_spellings_of_an_id_are_not_run_ids(self, key: str) -> None:
        assert own_run_id(key) is None


ATTEMPTS = st.dictionaries(
    st.sampled_from(["attempt", "other"]),
    st.one_of(st.integers(-1, 3), st.booleans(), st.none(), st.text(max_size=2)),
    max_size=2,
)


class TestTheAttemptASourceCounted:
    @given(provenance=ATTEMPTS, supplement=ATTEMPTS)
    def test_is_the_one_the_supplement_states_over_the_provenance(
        self, provenance: dict[str, Any], supplement: dict[str, Any]
    ) -> None:
        header = RunHeader(
            run_key="k", benchmark="b", agent="a", model="m", status="succeeded"
        ).model_copy(update={"provenance": provenance})
        run = RunRecord(header=header, supplement=supplement)
        merged = run_rules.stated_attempt({**provenance, **supplement})
        assert counted_attempt(run) == merged
