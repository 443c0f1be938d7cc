from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchledger.adapters.formats import native
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunStatus


def parse(name: str, text: str) -> list:  # type: ignore[type-arg]
    return list(native.parse(Path(name), text.encode()))


HEADER = {"benchmark": "bfcl", "agent": "eliza", "model": "m", "status": "succeeded", "score": 0.5}


class TestJson:
    def test_reads_one_run_with_its_cells(self) -> None:
        doc = {
            "schema": native.SCHEMA_ID,
            **HEADER,
            "cells": [{"key": "a", "outcome": "passed", "score": 1}],
        }
        [record] = parse("r.json", json.dumps(doc))
        assert record.header.status is RunStatus.SUCCEEDED
        assert record.cells[0].outcome == "passed"

    def test_a_wrong_type_names_the_file_and_field(self) -> None:
        doc = {
            **HEADER,
            "cells": [
                {"key": "a", "outcome": "passed"},
                {"key": "b", "outcome": "passed", "score": "high"},
            ],
        }
        with pytest.raises(InputFormatError) as e:
            parse("r.json", json.dumps(doc))
        assert e.value.path == "r.json"
        assert e.value.field == "cells[1].score"

    def test_a_missing_required_key_is_named(self) -> None:
        doc = {k: v for k, v in HEADER.items() if k != "benchmark"}
        with pytest.raises(InputFormatError, match="field 'benchmark'"):
            parse("r.json", json.dumps(doc))

    def test_truncated_json_names_the_line(self) -> None:
        text = json.dumps({**HEADER, "cells": []}, indent=2)[:-10]
        with pytest.raises(InputFormatError) as e:
            parse("r.json", text)
        assert e.value.line is not None and "invalid JSON" in e.value.message

    def test_unknown_fields_are_refused_so_typos_are_caught(self) -> None:
        with pytest.raises(InputFormatError, match="scroe"):
            parse("r.json", json.dumps({**HEADER, "scroe": 1}))

    def test_a_non_finite_score_is_refused(self) -> None:
        with pytest.raises(InputFormatError, match="field 'score'"):
            parse("r.json", json.dumps({**HEADER, "score": float("nan")}))

    def test_non_finite_metric_values_are_kept_as_strings(self) -> None:
        [record] = parse("r.json", json.dumps({**HEADER, "metrics": {"stderr": float("inf")}}))
        assert '"metrics":{"stderr":"Infinity"}' in record.header.model_dump_json()


class TestJsonl:
    def test_reads_several_runs_each_followed_by_its_cells(self) -> None:
        lines = [
            {"type": "run", **HEADER, "run_key": "r1"},
            {"type": "cell", "key": "a", "outcome": "passed"},
            {"type": "run", **HEADER, "run_key": "r2"},
            {"type": "cell", "key": "a", "outcome": "failed"},
            {"type": "cell", "key": "b", "outcome": "error"},
        ]
        records = parse("r.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n\n")
        assert [len(r.cells) for r in records] == [1, 2]

    def test_a_bad_cell_names_its_line_and_field(self) -> None:
        lines = [
            {"type": "run", **HEADER},
            {"type": "cell", "key": "a", "outcome": "passed"},
            {"type": "cell", "key": "b", "outcome": "maybe"},
        ]
        with pytest.raises(InputFormatError) as e:
            parse("r.jsonl", "\n".join(json.dumps(x) for x in lines))
        assert (e.value.line, e.value.field) == (3, "outcome")
        assert str(e.value).startswith("r.jsonl:3: field 'outcome'")

    def test_a_cell_before_any_run_is_refused(self) -> None:
        with pytest.raises(InputFormatError, match="before any run"):
            parse("r.jsonl", json.dumps({"type": "cell", "key": "a", "outcome": "passed"}))

    def test_an_empty_file_is_refused(self) -> None:
        with pytest.raises(InputFormatError, match="no run line"):
            parse("r.jsonl", "\n")

    def test_round_trips_through_dump_jsonl(self) -> None:
        lines = [
            {"type": "run", **HEADER, "run_key": "r1"},
            {"type": "cell", "key": "a", "outcome": "passed", "metrics": {"t": 1}},
        ]
        records = parse("r.jsonl", "\n".join(json.dumps(x) for x in lines))
        assert parse("again.jsonl", native.dump_jsonl(records)) == records

    def test_a_cell_cluster_is_read_from_json_and_jsonl_and_dumped_back(self) -> None:
        cell = {"key": "django__django-11099", "outcome": "passed", "cluster": "django/django"}
        [record] = parse("r.json", json.dumps({**HEADER, "cells": [cell]}))
        assert record.cells[0].cluster == "django/django"
        lines = [{"type": "run", **HEADER, "run_key": "r1"}, {"type": "cell", **cell}]
        records = parse("r.jsonl", "\n".join(json.dumps(x) for x in lines))
        assert records[0].cells[0].cluster == "django/django"
        assert '"cluster": "django/django"' in native.dump_jsonl(records)
        assert parse("again.jsonl", native.dump_jsonl(records)) == records

    def test_an_empty_cluster_is_refused(self) -> None:
        cell = {"key": "a", "outcome": "passed", "cluster": ""}
        with pytest.raises(InputFormatError, match="cluster"):
            parse("r.json", json.dumps({**HEADER, "cells": [cell]}))


class TestStrictness:
    @pytest.mark.parametrize("score", [True, False, "0.5", "1"])
    def test_a_boolean_or_a_string_is_not_a_score(self, score: object) -> None:
        with pytest.raises(InputFormatError) as e:
            parse("r.json", json.dumps({**HEADER, "score": score}))
        assert e.value.field == "score"
        cell = {"type": "cell", "key": "a", "outcome": "passed", "score": score}
        lines = [json.dumps({"type": "run", **HEADER}), json.dumps(cell)]
        with pytest.raises(InputFormatError) as e:
            parse("r.jsonl", "\n".join(lines))
        assert (e.value.line, e.value.field) == (2, "score")

    def test_an_integer_is_still_a_score(self) -> None:
        [record] = parse("r.json", json.dumps({**HEADER, "score": 1}))
        assert record.header.score == 1.0

    @pytest.mark.parametrize("count", [-1, True, 1.5, "3"])
    def test_token_counts_are_non_negative_integers(self, count: object) -> None:
        with pytest.raises(InputFormatError) as e:
            parse("r.json", json.dumps({**HEADER, "tokens": {"input_tokens": count}}))
        assert e.value.field == "tokens.input_tokens"

    def test_a_duplicate_key_in_a_jsonl_line_is_refused_with_its_line(self) -> None:
        text = json.dumps({"type": "run", **HEADER}) + '\n{"type": "cell", "key": "a", '
        text += '"outcome": "passed", "metrics": {"n": 1, "n": 2}}\n'
        with pytest.raises(InputFormatError) as e:
            parse("r.jsonl", text)
        assert str(e.value) == 'r.jsonl:2: duplicate key "n" in one object'

    def test_a_duplicate_key_in_a_json_document_is_refused_with_its_line(self) -> None:
        text = json.dumps({**HEADER, "score": 0.5}, indent=1)[:-2] + ',\n "score": 0.9\n}'
        with pytest.raises(InputFormatError) as e:
            parse("r.json", text)
        assert str(e.value) == f'r.json:{text.count(chr(10))}: duplicate key "score" in one object'

    def test_the_schema_states_what_strictness_refuses(self) -> None:
        props = native.json_schema()["properties"]
        assert props["tokens"]["additionalProperties"] == {"minimum": 0, "type": "integer"}


class TestFuzzing:
    @settings(max_examples=200, deadline=None)
    @given(data=st.binary(max_size=300), suffix=st.sampled_from([".json", ".jsonl"]))
    def test_arbitrary_bytes_parse_or_are_refused(self, data: bytes, suffix: str) -> None:
        try:
            list(native.parse(Path("fuzz" + suffix), data))
        except InputFormatError as e:
            assert e.path == "fuzz" + suffix

    @settings(max_examples=200, deadline=None)
    @given(
        doc=st.fixed_dictionaries(
            {},
            optional={
                k: st.recursive(
                    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                    lambda inner: (
                        st.lists(inner, max_size=3)
                        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
                    ),
                    max_leaves=8,
                )
                for k in ("benchmark", "agent", "model", "status", "score", "tokens", "cells")
            },
        )
    )
    def test_a_document_of_any_shape_parses_or_is_refused(self, doc: dict[str, object]) -> None:
        try:
            [record] = parse("r.json", json.dumps({**HEADER, **doc}))
        except InputFormatError:
            return
        record.json_bytes()


def test_the_json_schema_describes_runs_and_cells() -> None:
    schema = native.json_schema()
    assert schema["$id"] == native.SCHEMA_ID
    assert {"benchmark", "agent", "model", "status"} <= set(schema["required"])
    assert schema["properties"]["cells"]["items"] == {"$ref": "#/$defs/Cell"}
    assert "outcome" in schema["$defs"]["Cell"]["properties"]
    assert "cluster" in schema["$defs"]["Cell"]["properties"]


def cell_line(key: str, **extra: object) -> str:
    return json.dumps({"type": "cell", "key": key, "outcome": "passed", **extra})


class TestStreamedJsonl:
    def stream(self, tmp_path: Path, lines: list[str]) -> list:  # type: ignore[type-arg]
        path = tmp_path / "r.jsonl"
        path.write_text("\n".join(lines) + "\n")
        return list(native.stream(path))

    def test_a_stream_gives_the_same_runs_as_the_whole_file(self, tmp_path: Path) -> None:
        lines = [json.dumps({"type": "run", "run_key": "a", **HEADER})]
        lines += [cell_line(f"k{i}", metrics={"i": i, "x": {"y": [1, 2]}}) for i in range(5000)]
        lines += ["", json.dumps({"type": "run", "run_key": "b", **HEADER}), cell_line("z")]
        streamed = self.stream(tmp_path, lines)
        assert streamed == parse("r.jsonl", "\n".join(lines) + "\n")
        assert [len(r.cells) for r in streamed] == [5000, 1]

    def test_a_duplicate_key_deep_in_a_bulk_batch_is_refused_with_its_line(
        self, tmp_path: Path
    ) -> None:
        lines = [json.dumps({"type": "run", **HEADER})]
        lines += [cell_line(f"k{i}") for i in range(100)]
        lines[50] = '{"type": "cell", "key": "a", "key": "b", "outcome": "passed"}'
        with pytest.raises(InputFormatError) as e:
            self.stream(tmp_path, lines)
        assert str(e.value).endswith('/r.jsonl:51: duplicate key "key" in one object')

    def test_key_ends_with_spaces_are_counted_too(self, tmp_path: Path) -> None:
        lines = [json.dumps({"type": "run", **HEADER}), cell_line("a")]
        lines.append('{"type" : "cell", "key" :"b", "outcome": "passed", "key"  : "c"}')
        with pytest.raises(InputFormatError) as e:
            self.stream(tmp_path, lines)
        assert str(e.value).endswith('/r.jsonl:3: duplicate key "key" in one object')
        lines[2] = '{"type" : "cell", "key" :"b", "outcome": "passed"}'
        assert [c.key for c in self.stream(tmp_path, lines)[0].cells] == ["a", "b"]
