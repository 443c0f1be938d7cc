"""Trajectory turns in the native format: read strictly, into the run's Turn records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.formats import native
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord, Turn

HEADER = {"benchmark": "bfcl", "agent": "eliza", "model": "m", "status": "succeeded", "score": 0.5}


def parse(name: str, text: str) -> list[RunRecord]:
    return list(native.parse(Path(name), text.encode()))  # type: ignore[arg-type]


def jsonl(*objects: dict[str, Any]) -> str:
    return "\n".join(json.dumps(o) for o in objects) + "\n"


def run_line(**fields: Any) -> dict[str, Any]:
    return {"type": "run", **HEADER, **fields}


def turn_line(**fields: Any) -> dict[str, Any]:
    return {"type": "turn", **fields}


class TestJson:
    def test_turns_become_the_runs_turn_records_with_harness_names_mapped(self) -> None:
        doc = {
            **HEADER,
            "turns": [
                {"input_tokens": 100, "output_tokens": 20, "cached_tokens": 80, "latency_ms": 412},
                {"prompt_tokens": 120, "completion_tokens": 5, "cache_creation_tokens": 7},
            ],
        }
        [record] = parse("r.json", json.dumps(doc))
        assert record.turns == (
            Turn(
                trajectory_file="trajectory",
                turn_index=0,
                prompt_tokens=100,
                completion_tokens=20,
                cached_tokens=80,
                latency_ms=412.0,
            ),
            Turn(
                trajectory_file="trajectory",
                turn_index=1,
                prompt_tokens=120,
                completion_tokens=5,
                cache_creation_tokens=7,
            ),
        )

    def test_turns_are_not_part_of_the_runs_content(self) -> None:
        [plain] = parse("r.json", json.dumps(HEADER))
        [with_turns] = parse("r.json", json.dumps({**HEADER, "turns": [{"input_tokens": 1}]}))
        assert with_turns.content_sha256() == plain.content_sha256()

    def test_a_bad_turn_names_its_position_and_field(self) -> None:
        doc = {**HEADER, "turns": [{"input_tokens": 1}, {"output_tokens": -3}]}
        with pytest.raises(InputFormatError) as e:
            parse("r.json", json.dumps(doc))
        assert (e.value.path, e.value.field) == ("r.json", "turns[1].output_tokens")

    def test_turns_must_be_an_array(self) -> None:
        with pytest.raises(InputFormatError) as e:
            parse("r.json", json.dumps({**HEADER, "turns": {"input_tokens": 1}}))
        assert e.value.field == "turns"


class TestJsonl:
    def test_turn_lines_belong_to_the_run_before_them(self) -> None:
        text = jsonl(
            run_line(run_key="r1"),
            turn_line(input_tokens=1),
            {"type": "cell", "key": "a", "outcome": "passed"},
            turn_line(input_tokens=2),
            run_line(run_key="r2"),
            turn_line(input_tokens=3),
        )
        first, second = parse("r.jsonl", text)
        assert [t.prompt_tokens for t in first.turns] == [1, 2]
        assert [t.turn_index for t in first.turns] == [0, 1]
        assert [c.key for c in first.cells] == ["a"]
        assert [(t.turn_index, t.prompt_tokens) for t in second.turns] == [(0, 3)]

    def test_the_default_index_counts_within_each_trajectory(self) -> None:
        text = jsonl(
            run_line(),
            turn_line(trajectory="task-1", input_tokens=1),
            turn_line(trajectory="task-2", input_tokens=2),
            turn_line(trajectory="task-1", input_tokens=3),
        )
        [record] = parse("r.jsonl", text)
        places = [(t.trajectory_file, t.turn_index) for t in record.turns]
        assert places == [("task-1", 0), ("task-2", 0), ("task-1", 1)]

    def test_a_stated_index_is_kept(self) -> None:
        [record] = parse("r.jsonl", jsonl(run_line(), turn_line(index=5, input_tokens=1)))
        assert record.turns[0].turn_index == 5

    def test_a_turn_before_any_run_is_refused(self) -> None:
        with pytest.raises(InputFormatError, match="turn line comes before any run line"):
            parse("r.jsonl", jsonl(turn_line(input_tokens=1)))

    def test_a_bad_turn_names_its_line_and_field(self) -> None:
        text = jsonl(run_line(), turn_line(input_tokens=1), turn_line(latency_ms="fast"))
        with pytest.raises(InputFormatError) as e:
            parse("r.jsonl", text)
        assert (e.value.line, e.value.field) == (3, "latency_ms")

    def test_one_place_stated_twice_differently_is_refused_the_same_twice_kept_once(
        self,
    ) -> None:
        same = jsonl(
            run_line(), turn_line(index=0, input_tokens=1), turn_line(index=0, input_tokens=1)
        )
        [record] = parse("r.jsonl", same)
        assert len(record.turns) == 1
        other = jsonl(run_line(), turn_line(input_tokens=1), turn_line(index=0, input_tokens=2))
        with pytest.raises(InputFormatError) as e:
            parse("r.jsonl", other)
        assert (e.value.line, e.value.field) == (3, "index")
        assert "turn 0 of trajectory 'trajectory' is stated twice" in e.value.message

    def test_round_trips_through_dump_jsonl(self) -> None:
        text = jsonl(
            run_line(run_key="r1"),
            {"type": "cell", "key": "a", "outcome": "passed"},
            turn_line(trajectory="t", input_tokens=3, output_tokens=1, cached_tokens=0),
            turn_line(trajectory="t", latency_ms=2.5, prompt_chars=40, total_tokens=9),
        )
        records = parse("r.jsonl", text)
        again = parse("again.jsonl", native.dump_jsonl(records))
        assert again == records and again[0].turns == records[0].turns

    def test_a_stream_gives_the_same_turns_as_the_whole_file(self, tmp_path: Path) -> None:
        lines = [run_line()]
        for i in range(3000):  # cells and turns interleaved across bulk batches
            lines.append({"type": "cell", "key": f"k{i}", "outcome": "passed"})
            lines.append(turn_line(trajectory=f"t{i % 3}", input_tokens=i))
        path = tmp_path / "r.jsonl"
        path.write_text(jsonl(*lines))
        [streamed] = native.stream(path)
        assert [streamed] == parse("r.jsonl", jsonl(*lines))
        assert len(streamed.cells) == 3000 and len(streamed.turns) == 3000
        assert [c.key for c in streamed.cells[:3]] == ["k0", "k1", "k2"]
        assert streamed.turns[3].turn_index == 1 and streamed.turns[3].prompt_tokens == 3

    def test_a_bad_turn_deep_in_a_bulk_batch_names_its_line(self, tmp_path: Path) -> None:
        lines = [run_line()]
        lines += [{"type": "cell", "key": f"k{i}", "outcome": "passed"} for i in range(100)]
        lines[60] = turn_line(cached_tokens=1.5)
        path = tmp_path / "r.jsonl"
        path.write_text(jsonl(*lines))
        with pytest.raises(InputFormatError) as e:
            list(native.stream(path))
        assert (e.value.line, e.value.field) == (61, "cached_tokens")

    def test_an_unknown_line_type_names_the_three_kinds(self) -> None:
        with pytest.raises(InputFormatError, match="must be 'run', 'cell' or 'turn'"):
            parse("r.jsonl", jsonl(run_line(), {"type": "step"}))


class TestStrictness:
    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("input_tokens", -1),
            ("input_tokens", 1.5),
            ("input_tokens", True),
            ("output_tokens", "3"),
            ("cached_tokens", "1"),
            ("index", -1),
            ("prompt_chars", 2.0),
            ("latency_ms", -0.5),
            ("latency_ms", "12"),
            ("latency_ms", True),
            ("trajectory", ""),
        ],
    )
    def test_counts_are_non_negative_integers_and_latency_a_finite_number(
        self, field: str, value: object
    ) -> None:
        with pytest.raises(InputFormatError) as e:
            parse("r.json", json.dumps({**HEADER, "turns": [{field: value}]}))
        assert e.value.field == f"turns[0].{field}"

    def test_a_non_finite_latency_is_refused(self) -> None:
        with pytest.raises(InputFormatError) as e:
            parse("r.jsonl", jsonl(run_line()).rstrip() + '\n{"type": "turn", "latency_ms": NaN}\n')
        assert (e.value.line, e.value.field) == (2, "latency_ms")

    def test_both_spellings_of_one_count_are_refused(self) -> None:
        doc = {**HEADER, "turns": [{"input_tokens": 1, "prompt_tokens": 1}]}
        with pytest.raises(InputFormatError, match="both input_tokens and prompt_tokens"):
            parse("r.json", json.dumps(doc))

    def test_unknown_turn_fields_are_refused(self) -> None:
        with pytest.raises(InputFormatError) as e:
            parse("r.json", json.dumps({**HEADER, "turns": [{"input_tokns": 1}]}))
        assert e.value.field == "turns[0].input_tokns"


def test_the_json_schema_describes_turns() -> None:
    schema = native.json_schema()
    assert schema["properties"]["turns"]["items"] == {"$ref": "#/$defs/Turn"}
    turn = schema["$defs"]["Turn"]
    assert {"trajectory", "index", "input_tokens", "output_tokens", "cached_tokens"} <= set(
        turn["properties"]
    )
    assert turn["additionalProperties"] is False


def test_the_documented_examples_parse_with_their_turns() -> None:
    page = (Path(__file__).parents[2] / "docs" / "native-format.md").read_text()
    blocks = [b.split("```", 1)[0] for b in page.split("```json\n")[1:]]
    [document] = parse("r.json", blocks[0])
    assert [t.turn_index for t in document.turns] == [0, 1]
    assert document.turns[0].cached_tokens == 1024
    [lines] = parse("r.jsonl", blocks[1])
    assert len(lines.turns) == 1 and len(lines.cells) == 2
