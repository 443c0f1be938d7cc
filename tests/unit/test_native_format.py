from __future__ import annotations

import json
from pathlib import Path

import pytest

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


def test_the_json_schema_describes_runs_and_cells() -> None:
    schema = native.json_schema()
    assert schema["$id"] == native.SCHEMA_ID
    assert {"benchmark", "agent", "model", "status"} <= set(schema["required"])
    assert schema["properties"]["cells"]["items"] == {"$ref": "#/$defs/Cell"}
    assert "outcome" in schema["$defs"]["Cell"]["properties"]
