"""Builders of realistic inputs that several tests share."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def run_json(
    benchmark: str = "bfcl",
    agent: str = "eliza",
    *,
    score: float | None = 0.5,
    status: str = "succeeded",
    cells: Sequence[dict[str, Any]] = (),
    **extra: Any,
) -> dict[str, Any]:
    """A native run document, as a user would write it."""
    doc: dict[str, Any] = {
        "schema": "benchledger/run@1",
        "benchmark": benchmark,
        "agent": agent,
        "provider": "cerebras",
        "model": "gpt-oss-120b",
        "status": status,
        "score": score,
        "unit": "accuracy",
        "started_at": "2026-05-12T10:15:00+00:00",
        "ended_at": "2026-05-12T10:21:41+00:00",
        "cells": list(cells),
    }
    doc.update(extra)
    return doc


def write_json(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc, indent=2))
    return path


def write_jsonl(path: Path, lines: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def fake_distribution(site: Path, name: str, entry_points: str, module: str) -> None:
    """An installed distribution `name` in folder `site` (put it on a child's path): its
    entry_points.txt and its one module, `name` with - as _."""
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)
    (site / f"{name.replace('-', '_')}.py").write_text(module)


def leased_run(started_at: Any, lease_expires_at: Any) -> Any:
    """An executed run just started under a lease (the Run aggregate's state)."""
    from uuid import uuid4

    from benchledger.domain import run as run_model
    from benchledger.domain import run_rules

    event = run_rules.begin(
        uuid4(),
        run_key="k",
        benchmark="b",
        agent="a",
        provider="p",
        model="m",
        config={},
        attempt=1,
        run_group_id=None,
        command=["x"],
        cwd=".",
        host="h",
        started_at=started_at,
        lease_expires_at=lease_expires_at,
        run_dir="d",
    )
    run = run_model.mutate(event, None)
    assert run is not None
    return run


def create_empty_ledger(db: Path) -> Path:
    """A ledger that holds no event yet (read commands refuse a path with no ledger)."""
    from benchledger.adapters.store.bootstrap import Settings, build

    build(Settings(db_path=db)).close()
    return db


def legacy_attempt(
    ledger: Any,
    *,
    benchmark: str,
    agent: str,
    provider: str,
    model: str,
    config: dict[str, Any],
    attempt: int,
    status: Any,
    started_at: Any,
) -> Any:
    """One attempt of `run` as benchledger recorded it before it adopted the orchestrator's
    signatures: its claim on the legacy signature's stream, and its run (started and
    finished) stating the legacy signatures. Returns the run id."""
    from datetime import timedelta

    from benchledger.domain import run_rules
    from benchledger.domain.run import RunFinished
    from benchledger.domain.signature import AttemptClaimed
    from benchledger.domain.signatures import (
        legacy_comparison_signature,
        legacy_signature,
        natural_id,
        signature_id_for,
    )

    legacy = legacy_signature(benchmark, agent, provider, model, config)
    run_id = natural_id("run", "executed", legacy, str(attempt))
    claim = AttemptClaimed(
        originator_id=signature_id_for(legacy),
        originator_version=attempt,
        signature=legacy,
        benchmark=benchmark,
        agent=agent,
        attempt=attempt,
        run_id=run_id,
        mode="first" if attempt == 1 else "force",
    )
    started = run_rules.begin(
        run_id,
        run_key=f"legacy-{attempt}",
        benchmark=benchmark,
        agent=agent,
        provider=provider,
        model=model,
        config=config,
        attempt=attempt,
        run_group_id=None,
        command=["bench"],
        cwd=".",
        host="h",
        started_at=started_at,
        lease_expires_at=started_at + timedelta(minutes=5),
        run_dir="d",
    ).model_copy(
        update={
            "signature": legacy,
            "comparison_signature": legacy_comparison_signature(benchmark, provider, model, config),
        }
    )
    finished = RunFinished(originator_id=run_id, originator_version=2, status=status, score=0.5)
    ledger._save([claim, started, finished])
    return run_id


def import_demo_runs(invoke: Callable[..., Any], directory: Path) -> None:
    """The demo's runs, corrections and high scores recorded as a user's own results: the
    same numbers as `benchledger demo`, without its mark of demo data that no gate or
    review lets through."""
    from benchledger.adapters import demo
    from benchledger.adapters.formats import native

    files = demo.generate()
    directory.mkdir(parents=True, exist_ok=True)
    for name, records in files.items():
        (directory / name).write_text(native.dump_jsonl(records))
    invoke("import", str(directory))
    registry = directory / "required.toml"  # each agent required of each benchmark
    registry.write_text(
        "".join(
            f'[benchmarks.{bench}]\ncommand = ["true"]\nagents = {json.dumps(list(demo.AGENTS))}\n'
            for bench, *_ in demo.BENCHMARKS
        )
    )
    invoke("benchmarks", "--registry", str(registry))
    for bench, label, value, unit in demo.HIGH_SCORES:
        invoke("high-score", "set", bench, "--label", label, "--value", str(value), "--unit", unit)
    invalid = demo.succeeded_run(files, "bfcl", "hermes", "gpt-4.1-mini")
    invoke("invalidate", str(invalid), "--reason", "prompt cache leaked expected answers")
    corrected = demo.succeeded_run(files, "gaia", "eliza", "claude-sonnet-4.5")
    run = json.loads(invoke("show", str(corrected), "--json").stdout)["run"]
    score = round(run["score"] - 0.05, 4)
    invoke("correct-score", str(corrected), "--score", str(score), "--reason", "wrong units")
