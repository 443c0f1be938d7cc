"""The live recorder behind the inspect hooks, driven with an eval's data directly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.integrations import inspect_live
from benchledger.adapters.integrations.inspect_live import LiveRecorder
from benchledger.adapters.store.bootstrap import Settings, open_ledger
from benchledger.domain.run import LeaseRenewed, RunFinished

SPEC: dict[str, Any] = {
    "run_id": "run-1",
    "eval_id": "eval-1",
    "task": "arith",
    "model": "mockllm/model",
    "config": {},
    "scorers": [{"name": "match"}, {"name": "includes"}],
}
PLAN: dict[str, Any] = {"name": "plan", "steps": [{"solver": "generate"}]}


def sample(sample_id: int, match: str, includes: str) -> dict[str, Any]:
    return {
        "id": sample_id,
        "epoch": 1,
        "scores": {"match": {"value": match}, "includes": {"value": includes}},
    }


def ended(headline: str) -> dict[str, Any]:
    return {
        "version": 2,
        "status": "success",
        "eval": SPEC,
        "plan": PLAN,
        "results": {
            "total_samples": 2,
            "completed_samples": 2,
            "scores": [
                {
                    "name": headline,
                    "scorer": headline,
                    "metrics": {"accuracy": {"name": "accuracy", "value": 0.5}},
                }
            ],
        },
        "stats": {"started_at": "2026-01-01T00:00:00Z", "completed_at": "2026-01-01T00:01:00Z"},
    }


def events(db: Path) -> list[Any]:
    ledger = open_ledger(Settings(db_path=db))
    try:
        return list(ledger.events.get(inspect_live.run_id_for("inspect_ai", "eval-1")))
    finally:
        ledger.close()


def test_a_run_holds_its_lease_while_samples_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inspect_live, "LEASE_SECONDS", 0.0)  # every sample renews it
    recorder = LiveRecorder(str(tmp_path / "l.db"))
    recorder.task_start("eval-1", SPEC, PLAN)
    recorder.sample_end("eval-1", sample(1, "C", "C"))
    recorder.sample_end("eval-1", sample(1, "C", "C"))  # announced twice: recorded once
    recorder.sample_end("eval-1", sample(2, "I", "C"))
    assert recorder.task_end("eval-1", ended("match")) == []
    recorder.close()
    stream = events(tmp_path / "l.db")
    assert sum(isinstance(e, LeaseRenewed) for e in stream) == 3
    assert sum(len(getattr(e, "cells", ())) for e in stream) == 2
    finished = stream[-1]
    assert isinstance(finished, RunFinished) and finished.status.value == "succeeded"


def test_a_cell_the_log_scores_otherwise_ends_the_run_in_error_never_overwritten(
    tmp_path: Path,
) -> None:
    recorder = LiveRecorder(str(tmp_path / "l.db"))
    recorder.task_start("eval-1", SPEC, PLAN)
    recorder.sample_end("eval-1", sample(1, "C", "C"))
    recorder.sample_end("eval-1", sample(2, "I", "C"))
    # The finished log's headline scorer is the second: sample 2 passes by it.
    recorder.task_end("eval-1", ended("includes"))
    recorder.close()
    stream = events(tmp_path / "l.db")
    finished = stream[-1]
    assert isinstance(finished, RunFinished) and finished.status.value == "error"
    assert finished.error and "'2'" in finished.error
    assert sum(len(getattr(e, "cells", ())) for e in stream) == 2


def test_an_eval_it_never_saw_start_is_left_alone(tmp_path: Path) -> None:
    recorder = LiveRecorder(str(tmp_path / "l.db"))
    recorder.sample_end("other", sample(1, "C", "C"))
    assert recorder.task_end("other", ended("match")) == []
    assert not (tmp_path / "l.db").exists()
