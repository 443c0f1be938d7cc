"""Following a running benchmark's files: complete lines once each, by offset."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.execution import live
from benchledger.adapters.execution.live import Follower, Tail, follows_result
from benchledger.adapters.execution.registry import BenchmarkSpec
from benchledger.domain.records import Cell, Turn

RUN = json.dumps({"type": "run", "status": "succeeded", "score": 1.0})


def cell_line(key: str, **fields: Any) -> str:
    return json.dumps({"type": "cell", "key": key, "outcome": "passed", **fields})


def spec(**fields: Any) -> BenchmarkSpec:
    return BenchmarkSpec.model_validate({"id": "b", "command": ["x"], **fields})


class Recorder:
    def __init__(self) -> None:
        self.batches: list[list[Cell]] = []
        self.turn_batches: list[list[Turn]] = []
        self.warnings: list[str] = []

    def follower(self, root: Path, **fields: Any) -> Follower:
        out = root / "output"
        out.mkdir(exist_ok=True)
        return Follower(
            spec(**fields),
            out,
            root,
            time.time(),
            self.batches.append,
            self.warnings.append,
            lambda turns: self.turn_batches.append(list(turns)),
        )

    @property
    def keys(self) -> list[str]:
        return [c.key for batch in self.batches for c in batch]


def test_a_tail_reads_each_complete_line_once_and_a_partial_one_when_it_ends(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(RUN + "\n" + cell_line("a") + "\n" + '{"type": "ce')
    tail = Tail(path, "r.jsonl", strict=True)
    assert [tail.cell(n, line) for n, line in tail.lines()] == [
        None,
        Cell(key="a", outcome="passed"),
    ]
    assert tail.lines() == []  # the partial line waits
    with path.open("a") as f:
        f.write('ll", "key": "b", "outcome": "failed"}\n')
    [(lineno, line)] = tail.lines()
    assert lineno == 3 and tail.cell(lineno, line) == Cell(key="b", outcome="failed")
    assert tail.offset == path.stat().st_size


def test_a_replaced_or_shrunk_file_is_no_longer_followed(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(RUN + "\n")
    tail = Tail(path, "r.jsonl", strict=True)
    assert len(tail.lines()) == 1
    path.with_suffix(".tmp").write_text(RUN + "\n" + cell_line("a") + "\n")
    os.replace(path.with_suffix(".tmp"), path)
    assert tail.lines() == [] and tail.ended


def test_a_look_records_new_cells_in_bounded_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "RECORD_CELLS", 3)
    recorder = Recorder()
    follower = recorder.follower(tmp_path, result="*.jsonl")
    assert follower.active
    result = follower.output_dir / "result.jsonl"
    with result.open("w") as f:
        f.write("\n".join([RUN, *(cell_line(f"c{i}") for i in range(7))]) + "\n")
    follower.look()
    assert [len(b) for b in recorder.batches] == [3, 3, 1]
    follower.look()  # nothing new: nothing recorded again
    with result.open("a") as f:
        f.write(cell_line("c7") + "\n")
    follower.look()
    assert recorder.keys == [f"c{i}" for i in range(8)]


def test_a_bad_result_line_ends_following_and_leaves_it_to_the_final_reading(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    follower = recorder.follower(tmp_path, result="result.jsonl")
    lines = [RUN, cell_line("a"), cell_line("b", score="high"), cell_line("c")]
    (follower.output_dir / "result.jsonl").write_text("\n".join(lines) + "\n")
    follower.look(drain=True)
    assert recorder.keys == ["a"] and follower.problems == []
    [warning] = recorder.warnings
    assert "output/result.jsonl:3: field 'score'" in warning


def test_cell_lines_of_the_progress_file_are_cells_and_a_bad_one_is_a_problem(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    follower = recorder.follower(tmp_path, result="result.json", progress="progress.ndjson")
    assert follower.active and not follows_result(follower.spec)
    lines = [json.dumps({"done": 1}), cell_line("a"), "[1]", cell_line("b", outcomes="x")]
    (follower.output_dir / "progress.ndjson").write_text("\n".join(lines) + "\n")
    follower.look()
    assert recorder.keys == ["a"]
    [problem] = follower.problems
    assert problem.startswith("output/progress.ndjson:4: field 'outcomes'")


def test_only_native_json_lines_results_are_followed() -> None:
    assert follows_result(spec(result="out/*.jsonl"))
    assert not follows_result(spec())  # **/*.json: read when it ends
    assert not follows_result(spec(result="*.jsonl", format="lm_eval"))
    assert not spec(result="r.json").progress
    with pytest.raises(ValueError, match="relative to the run's output dir"):
        spec(progress="../elsewhere.ndjson")


def turn_line(**fields: Any) -> str:
    return json.dumps({"type": "turn", **fields})


def test_turn_lines_of_the_result_are_recorded_as_turns_in_bounded_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "RECORD_CELLS", 2)
    recorder = Recorder()
    follower = recorder.follower(tmp_path, result="result.jsonl")
    result = follower.output_dir / "result.jsonl"
    lines = [RUN, turn_line(input_tokens=1), cell_line("a"), turn_line(input_tokens=2)]
    lines += [turn_line(trajectory="other", input_tokens=3)]
    result.write_text("\n".join(lines) + "\n")
    follower.look()
    assert recorder.keys == ["a"]
    assert [len(b) for b in recorder.turn_batches] == [2, 1]
    with result.open("a") as f:
        f.write(turn_line(input_tokens=4) + "\n")
    follower.look()
    turns = [t for batch in recorder.turn_batches for t in batch]
    places = [(t.trajectory_file, t.turn_index, t.prompt_tokens) for t in turns]
    assert places == [
        ("trajectory", 0, 1),
        ("trajectory", 1, 2),
        ("other", 0, 3),
        ("trajectory", 2, 4),
    ]


def test_a_bad_turn_line_ends_following_like_a_bad_cell(tmp_path: Path) -> None:
    recorder = Recorder()
    follower = recorder.follower(tmp_path, result="result.jsonl")
    lines = [RUN, turn_line(input_tokens=1), turn_line(input_tokens=-1), cell_line("a")]
    (follower.output_dir / "result.jsonl").write_text("\n".join(lines) + "\n")
    follower.look(drain=True)
    assert recorder.keys == [] and len(recorder.turn_batches) == 1
    [warning] = recorder.warnings
    assert "output/result.jsonl:3: field 'input_tokens'" in warning


def test_turn_lines_of_the_progress_file_are_passed_over(tmp_path: Path) -> None:
    recorder = Recorder()
    follower = recorder.follower(tmp_path, result="result.json", progress="progress.ndjson")
    lines = [turn_line(input_tokens=1), cell_line("a")]
    (follower.output_dir / "progress.ndjson").write_text("\n".join(lines) + "\n")
    follower.look()
    assert recorder.keys == ["a"] and recorder.turn_batches == [] and follower.problems == []


def test_a_result_masked_before_it_is_recorded_keeps_its_turns_masked_too() -> None:
    from benchledger.adapters.execution.runner import _scrubbed
    from benchledger.domain.records import RunHeader, RunRecord

    header = RunHeader(benchmark="b", agent="a", model="m", status="succeeded", error="at /h/x")
    turn = Turn(trajectory_file="/h/x/agent.jsonl", turn_index=0, prompt_tokens=3)
    record = RunRecord(header=header, turns=(turn,))

    def scrub(value: Any) -> Any:
        return json.loads(json.dumps(value).replace("/h/x", "<run>"))

    masked = _scrubbed(record, scrub)
    assert masked is not None and masked.header.error == "at <run>"
    assert masked.turns == (turn.model_copy(update={"trajectory_file": "<run>/agent.jsonl"}),)
