"""A payload's text that holds no marker root holds no non-real marker: `latest` skips
the walk for it and decides as the walk would."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from benchledger.domain import publication
from benchledger.domain.publication import MARKER_ROOTS, may_hold_marker, non_real_marker
from benchledger.projections.base import to_json


def test_every_marker_holds_a_root() -> None:
    markers = [
        *publication.NON_REAL_FLAGS,
        *publication.TEXT_MARKERS,
        *publication.WARNING_MARKERS,
        "sample_task_set",
        "sample",  # a dataset_source
        "sample-files",
    ]
    assert [m for m in markers if not any(root in m for root in MARKER_ROOTS)] == []


WORDS = st.sampled_from(
    [
        "ok",
        "Mock",
        "MOCK run",
        "demo_mode",
        "dataset_source",
        "sample",
        "warnings",
        "publication_warnings",
        "dry run",
        "Stub Runtime",
        "score",
        "n",
        "Using Sample Task",
        "larp",
        "x",
    ]
)
VALUES: st.SearchStrategy[Any] = st.recursive(
    st.one_of(WORDS, st.integers(-1, 2), st.booleans(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(WORDS, inner, max_size=3)),
    max_leaves=12,
)


@given(payload=st.dictionaries(WORDS, VALUES, max_size=4), error=st.one_of(st.none(), WORDS))
def test_a_text_without_a_root_holds_no_marker(payload: dict[str, Any], error: str | None) -> None:
    whole = {"metrics": payload, "error": error}
    if non_real_marker(whole) is not None:
        assert may_hold_marker(to_json(payload), error)
    if not may_hold_marker(to_json(payload), error):
        assert non_real_marker(whole) is None


def test_ordinary_metrics_are_not_walked() -> None:
    metrics = {"n": 50, "return_code": 0, "cache_metrics": {"cache_hit_ratio": 0.4}}
    assert not may_hold_marker(to_json(metrics), None, "")
    assert may_hold_marker(to_json({"use_sample_tasks": True}))
    assert may_hold_marker(None, "Ran in DEMO mode")
