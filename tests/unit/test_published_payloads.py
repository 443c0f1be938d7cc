"""What the publishability gate reads of a published row: host paths scrubbed, every
non-real marker found where it sits, in the order the orchestrator reports them."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from benchledger.adapters.publication.export_files import PathScrubber
from benchledger.adapters.publication.gate_publishability import _text_marker, scan
from benchledger.domain.publication import TEXT_MARKERS


class TestScrubbingAPublishedRow:
    def test_keeps_numbers_flags_nulls_and_text_without_paths_as_they_are(self) -> None:
        row = {"a": 1, "b": True, "c": None, "d": "plain text", "e": [2, False, "x"]}
        assert PathScrubber(Path("/export")).clean(row) == row

    def test_scrubs_paths_and_non_finite_numbers_at_any_depth(self) -> None:
        row: dict[str, Any] = {
            "artifacts": ["/export/runs/a.json", "/elsewhere/b.log"],
            "nested": {"note": "see /elsewhere/c/d.txt here", "score": math.inf},
            "items": [[{"path": "/export/e.json", "nan": math.nan, "n": 3}]],
            "tuple": ("/export/f.json", 1.5),
        }
        assert PathScrubber(Path("/export")).clean(row) == {
            "artifacts": ["runs/a.json", "b.log"],
            "nested": {"note": "see d.txt here", "score": None},
            "items": [[{"path": "e.json", "nan": None, "n": 3}]],
            "tuple": ["f.json", 1.5],
        }

    def test_a_text_subclass_is_scrubbed_as_text(self) -> None:
        class Text(str):
            pass

        assert PathScrubber(Path("/export")).clean({"p": Text("/export/a.json")}) == {"p": "a.json"}


class TestScanningAPublishedRow:
    def test_reports_each_marker_at_its_path_depth_first(self) -> None:
        payload = {
            "status": "succeeded",
            "extra_config": {"mock": True, "dataset_source": "Sample", "demo": 0},
            "metrics": {"notes": ["fine", {"why": "a mock runtime was used"}], "n": 1},
            "publication_warnings": ["stub_agent", "ok"],
            "error": "Dry run only",
        }
        assert list(scan(payload)) == [
            ("$.extra_config.mock", "truthy_non_real_flag", "true"),
            ("$.extra_config.dataset_source", "sample_dataset_source", '"Sample"'),
            (
                "$.metrics.notes[1].why",
                "non_real_text_marker:mock run",
                '"a mock runtime was used"',
            ),
            ("$.publication_warnings[0]", "non_real_publication_warning", '"stub_agent"'),
            ("$.error", "non_real_text_marker:dry run", '"Dry run only"'),
        ]

    def test_a_key_names_a_check_once_stripped_and_lowered_whatever_came_before(self) -> None:
        """Each key's checks are kept across payloads: the same key finds the same in the
        next one, a key equal to another as a dict key (1, True) is taken for itself."""
        payloads: list[dict[Any, Any]] = [
            {" Mock ": True, "DATASET_SOURCE": "sample", 1: "fine", "n": 2},
            {" Mock ": 0, "DATASET_SOURCE": "full", True: "demo mode", "mock": "yes"},
            {"Publication_Warnings": ["stub_agent"], 1: "x", "n": "mock run"},
        ]
        assert [list(scan(p)) for p in payloads] == [
            [
                ("$. Mock ", "truthy_non_real_flag", "true"),
                ("$.DATASET_SOURCE", "sample_dataset_source", '"sample"'),
            ],
            [
                ("$.True", "non_real_text_marker:demo mode", '"demo mode"'),
                ("$.mock", "truthy_non_real_flag", '"yes"'),
            ],
            [
                ("$.Publication_Warnings[0]", "non_real_publication_warning", '"stub_agent"'),
                ("$.n", "non_real_text_marker:mock run", '"mock run"'),
            ],
        ]

    def test_a_list_or_a_text_alone_is_scanned_too(self) -> None:
        assert list(scan(["ok", ["demo mode on"]])) == [
            ("$[1][0]", "non_real_text_marker:demo mode", '"demo mode on"')
        ]
        assert list(scan("bundled smoke test")) == [
            ("$", "non_real_text_marker:bundled smoke", '"bundled smoke test"')
        ]
        assert list(scan({"score": 0.5, "values": [1, 2.0, None, True]})) == []


_TEXT = st.one_of(
    st.text(max_size=30),
    st.sampled_from([f"{pad}{m.upper()}{pad}" for m in TEXT_MARKERS for pad in ("", " ", "\t")]),
    st.sampled_from(["/export/a.json", "see /elsewhere/b.txt", "x/y"]),
)
_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    _TEXT,
)
_VALUE = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["mock", "note", "score", "x", "dataset_source"]), inner),
    ),
    max_leaves=25,
)


def _cleaned(scrubber: PathScrubber, value: Any) -> Any:
    """What `clean` makes of a value, spelt out one case at a time."""
    if isinstance(value, str):
        return scrubber.clean(value)
    if isinstance(value, dict):
        return {k: _cleaned(scrubber, v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_cleaned(scrubber, v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class TestShortCuts:
    """What the gate skips or remembers gives what looking at every value would."""

    @settings(max_examples=300, deadline=None)
    @given(_VALUE)
    def test_clean_keeps_finite_floats_and_nulls_the_others_at_any_depth(self, value: Any) -> None:
        scrubber = PathScrubber(Path("/export"))
        assert scrubber.clean({"v": value}) == _cleaned(scrubber, {"v": value})

    @settings(max_examples=500, deadline=None)
    @given(
        st.lists(st.sampled_from(["", ".", "..", "export", "a", "b.json", "é x"]), max_size=5),
        st.lists(st.sampled_from(["", ".", "..", "export", "a", "b.json"]), max_size=6),
        st.sampled_from(["/", "//", ""]),
    )
    def test_a_path_is_made_relative_as_pathlib_makes_it(
        self, root: list[str], names: list[str], lead: str
    ) -> None:
        """Plain absolute paths are compared name by name, without pathlib: the same
        answer as pathlib's for every path, under the root, beside it, or odd."""
        scrubber = PathScrubber(Path("/" + "/".join(n for n in root if n not in ("", ".", ".."))))
        text = lead + "/".join(names)
        assert scrubber.path(text) == scrubber._as_pathlib_reads_it(text)

    @settings(max_examples=300, deadline=None)
    @given(_TEXT)
    def test_a_text_marker_is_that_of_the_stripped_lowered_text(self, text: str) -> None:
        lowered = text.strip().lower()
        expected = next((f"non_real_text_marker:{m}" for m in TEXT_MARKERS if m in lowered), None)
        assert _text_marker(text) == expected

    def test_no_marker_begins_or_ends_with_a_space(self) -> None:
        assert all(m == m.strip() for m in TEXT_MARKERS)

    @settings(max_examples=200, deadline=None)
    @given(st.lists(_VALUE, max_size=5))
    def test_payloads_scanned_with_one_memo_find_what_each_finds_alone(
        self, payloads: list[Any]
    ) -> None:
        marked: dict[str, str | None] = {}
        shared = [list(scan(p, marked=marked)) for p in payloads]
        assert shared == [list(scan(p)) for p in payloads]
