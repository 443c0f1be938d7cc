"""Ledgers in particular states, built once and copied: a demo, and events not yet projected."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from benchledger.commands.cli import cli
from tests.helpers import run_json


def build_demo(db: Path) -> Path:
    result = CliRunner().invoke(cli, ["--db", str(db), "demo"])
    assert result.exit_code == 0, result.stderr
    return db


PLANTED_ERROR = "planted: quota exhausted on shard 7f3a"
REVIEW_NOTE = (
    "**Spot-checked** the bfcl cells.\n\n- tool calls look right\n- <script>alert(1)</script>"
)


def build_browsable(db: Path) -> Path:
    """The demo as a user browses it after some work: a head-to-head report recorded, a
    review whose note is Markdown (with a script tag that must never run), and a failed
    run whose error text is unique (PLANTED_ERROR), for searching."""
    build_demo(db)
    runner = CliRunner()
    planted = db.parent / "planted.json"
    planted.write_text(
        json.dumps(run_json("gaia", "hermes", score=None, status="failed", error=PLANTED_ERROR))
    )
    for args in (
        ["import", str(planted)],
        ["head-to-head", "--target", "eliza", "--baseline", "opencode"],
    ):
        result = runner.invoke(cli, ["--db", str(db), *args])
        assert result.exit_code == 0, result.stderr
    review = ["review", "--no-run", "--reviewer", "ana", "--note", REVIEW_NOTE]
    result = runner.invoke(cli, ["--db", str(db), *review, "--out", str(db.parent / "review")])
    # The demo's gates have findings (exit 1); the sign-off is recorded all the same.
    assert result.exit_code in (0, 1), result.stderr
    return db


def build_corpus(db: Path, corpus: Path) -> Path:
    """A ledger of every result file of `corpus` (../shared/corpus), as a team importing
    them all gets it. The import's exit code is not asserted: a conflict between two of
    its files is reported and the rest is still recorded; the runs are what matter."""
    result = CliRunner().invoke(cli, ["--db", str(db), "import", str(corpus)])
    assert result.exit_code in (0, 1), result.stderr[-2000:]
    listed = CliRunner().invoke(cli, ["--db", str(db), "runs", "--json"])
    assert len(json.loads(listed.stdout)) > 500, "the corpus imported too few runs"
    return db


def copy_ledger(source: Path, target: Path) -> Path:
    shutil.copyfile(source, target)
    return target


def append_unprojected_runs(db: Path, count: int = 1, name: str = "late") -> int:
    """Append runs as another process would, without folding them into the read models.

    Returns how many events were appended.
    """
    from benchledger.adapters.store.bootstrap import Settings, event_store_env
    from benchledger.domain.ledger import Ledger
    from benchledger.domain.records import Cell, RunHeader, RunRecord, SourceFile
    from benchledger.domain.signatures import sha256_hex

    ledger = Ledger(env=event_store_env(Settings(db_path=db)))
    try:
        before = ledger.recorder.max_notification_id() or 0
        for i in range(count):
            record = RunRecord(
                header=RunHeader(
                    run_key=f"{name}-{i}",
                    benchmark="bfcl",
                    agent="late-agent",
                    model="m",
                    status="succeeded",
                    score=0.5,
                ),
                cells=(Cell(key="k", outcome="passed", score=1.0),),
            )
            data = record.model_dump_json().encode()
            source = SourceFile(
                path=f"{name}-{i}.json", sha256=sha256_hex(data), size=len(data), format="native"
            )
            ledger.import_runs("native", source, [record])
        return (ledger.recorder.max_notification_id() or 0) - before
    finally:
        ledger.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())
