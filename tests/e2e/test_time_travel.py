"""--as-of prints exactly what the command printed when the ledger was at that point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Invoke
from tests.helpers import run_json, write_json

READS = [
    ("runs",),
    ("runs", "--json"),
    ("runs", "--benchmark", "bfcl", "--csv"),
    ("latest",),
    ("latest", "--json"),
    ("latest", "--quarantine", "--json"),
    ("matrix", "--json"),
    ("show", "demo-bfcl-eliza-cerebras-gpt-oss-120b-1", "--json", "--cells", "5"),
]


@pytest.fixture
def changed_after_capture(invoke: Invoke, tmp_path: Path) -> tuple[int, dict[tuple[str, ...], str]]:
    invoke("demo")
    head = json.loads(invoke("verify", "--json").stdout)["head_position"]
    captured = {args: invoke(*args).stdout for args in READS}
    run = json.loads(invoke("latest", "--json").stdout)[0]["run_id"]
    invoke("invalidate", run, "--reason", "leak found later")
    invoke(
        "correct-score",
        "demo-bfcl-eliza-cerebras-gpt-oss-120b-1",
        "--score",
        "0.1",
        "--reason",
        "regrade",
    )
    invoke("import", str(write_json(tmp_path / "new.json", run_json("bfcl", score=0.99))))
    invoke("high-score", "set", "bfcl", "--label", "newer", "--value", "0.99")
    return head, captured


@pytest.mark.parametrize("args", READS, ids=lambda a: " ".join(a))
def test_as_of_a_position_reprints_the_captured_output_byte_for_byte(
    invoke: Invoke,
    changed_after_capture: tuple[int, dict[tuple[str, ...], str]],
    args: tuple[str, ...],
) -> None:
    head, captured = changed_after_capture
    assert invoke(*args).stdout != captured[args] or args[0] == "matrix"
    assert invoke(*args, "--as-of", str(head)).stdout == captured[args]


def test_as_of_a_timestamp_finds_the_position_at_that_time(
    invoke: Invoke, changed_after_capture: tuple[int, dict[tuple[str, ...], str]]
) -> None:
    head, captured = changed_after_capture
    events = json.loads(invoke("events", "--json").stdout)
    moment = next(e["time"] for e in events if e["position"] == head)
    assert invoke("runs", "--json", "--as-of", moment).stdout == captured[("runs", "--json")]


def test_a_position_beyond_the_head_is_a_usage_error(invoke: Invoke) -> None:
    invoke("demo")
    assert "beyond the ledger's head" in invoke("runs", "--as-of", "999999", expect=2).stderr
