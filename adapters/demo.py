"""A realistic demo ledger, built through the same import path users take.

Results are generated deterministically (fixed seed and dates), written as
native JSONL files, and imported; then one run is invalidated, one score is
corrected and high scores are referenced. Running it twice changes nothing.
Its runs are recorded in a run group of kind `demo`: that recorded fact is what
marks them as demo data, which no gate lets through (`domain.publication.group_marker`).
"""

from __future__ import annotations

import hashlib
import random
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from uuid import UUID

from eventsourcing.persistence import Notification

from benchledger.adapters.formats import native
from benchledger.adapters.store.importer import FileReport, Importer
from benchledger.adapters.store.projection_runner import PAGE, NotificationLog
from benchledger.domain.base import Event
from benchledger.domain.errors import LedgerError
from benchledger.domain.ledger import Ledger
from benchledger.domain.records import Cell, CellOutcome, RunHeader, RunRecord, RunStatus
from benchledger.domain.run_group import RunGroupOpened
from benchledger.domain.signatures import benchmark_id_for, import_id_for, run_id_for

BENCHMARKS = (
    # id, unit, higher_is_better, cells, difficulty
    ("swe_bench_verified", "resolved_rate", True, 60, 0.55),
    ("bfcl", "accuracy", True, 40, 0.25),
    ("terminal_bench", "pass_rate", True, 30, 0.6),
    ("tau_bench", "pass^1", True, 25, 0.45),
    ("gaia", "accuracy", True, 20, 0.7),
)
AGENTS = {"eliza": 0.12, "hermes": 0.05, "opencode": 0.0}
MODELS = (
    ("cerebras", "gpt-oss-120b", 0.0),
    ("openai", "gpt-4.1-mini", -0.08),
    ("anthropic", "claude-sonnet-4.5", 0.1),
)
HIGH_SCORES = (
    ("swe_bench_verified", "OpenHands + Claude Sonnet 4.5", 0.72, "resolved_rate"),
    ("bfcl", "gpt-5", 0.891, "accuracy"),
    ("tau_bench", "gpt-5", 0.4735, "pass^1"),
)
START = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class DemoSummary:
    files: list[FileReport]
    invalidated: str
    corrected: str


def generate() -> dict[str, list[RunRecord]]:
    """Runs per result file: benchmark x agent, several models and attempts each."""
    rng = random.Random(20261001)
    files: dict[str, list[RunRecord]] = {}
    clock = START
    for bench, unit, hib, n_cells, difficulty in BENCHMARKS:
        for agent, agent_skill in AGENTS.items():
            records = []
            for provider, model, model_skill in MODELS:
                attempts = rng.choice((1, 1, 2, 3))
                for attempt in range(1, attempts + 1):
                    clock += timedelta(minutes=rng.randint(7, 95))
                    records.append(
                        _run(
                            rng,
                            bench,
                            unit,
                            hib,
                            n_cells,
                            difficulty,
                            agent,
                            agent_skill,
                            provider,
                            model,
                            model_skill,
                            attempt,
                            attempts,
                            clock,
                        )
                    )
            files[f"{bench}__{agent}.jsonl"] = records
    return files


def _run(
    rng: random.Random,
    bench: str,
    unit: str,
    hib: bool,
    n_cells: int,
    difficulty: float,
    agent: str,
    agent_skill: float,
    provider: str,
    model: str,
    model_skill: float,
    attempt: int,
    attempts: int,
    started: datetime,
) -> RunRecord:
    p_pass = min(0.95, max(0.05, 1 - difficulty + agent_skill + model_skill))
    # Earlier attempts of a retried signature fail: a crash, a timeout, a harness error.
    failing = attempt < attempts
    cutoff = rng.randint(n_cells // 4, n_cells // 2) if failing else n_cells
    cells = []
    for i in range(cutoff):
        roll = rng.random()
        outcome: CellOutcome = "passed" if roll < p_pass else "error" if roll > 0.97 else "failed"
        tokens = rng.randint(800, 24000)
        cells.append(
            Cell(
                key=f"{bench}-{i:04d}",
                outcome=outcome,
                score=1.0 if outcome == "passed" else 0.0,
                metrics={"total_tokens": tokens, "latency_ms": rng.randint(400, 9000)},
            )
        )
    passed = sum(1 for c in cells if c.outcome == "passed")
    duration = timedelta(seconds=rng.randint(120, 3600))
    status, error = RunStatus.SUCCEEDED, None
    score: float | None = round(passed / n_cells, 4)
    if failing:
        status = rng.choice((RunStatus.FAILED, RunStatus.TIMED_OUT))
        error = (
            "harness exited with code 1: sandbox image pull failed"
            if status is RunStatus.FAILED
            else "killed after 3600 s timeout"
        )
        score = None
    total_tokens = sum(int(c.metrics["total_tokens"]) for c in cells)
    return RunRecord(
        header=RunHeader(
            run_key=f"demo-{bench}-{agent}-{provider}-{model}-{attempt}",
            benchmark=bench,
            agent=agent,
            provider=provider,
            model=model,
            config={"limit": n_cells, "temperature": 0.0},
            started_at=started,
            ended_at=started + duration,
            status=status,
            score=score,
            unit=unit,
            higher_is_better=hib,
            metrics={"n": n_cells, "completed": len(cells)},
            tokens={"total_tokens": total_tokens, "llm_calls": len(cells) * 3},
            error=error,
        ),
        cells=tuple(cells),
    )


def demo_streams(files: dict[str, list[RunRecord]]) -> frozenset[UUID]:
    """Every stream the demo appends to but its run group (whose id is new each time):
    its runs, its benchmarks and its result files, named as an import names them."""
    runs = {run_id_for(native.SYSTEM, r.header.natural_key()) for rs in files.values() for r in rs}
    benchmarks = {benchmark_id_for(b[0]) for b in BENCHMARKS}
    imports = {
        import_id_for(hashlib.sha256(native.dump_jsonl(records).encode()).hexdigest())
        for records in files.values()
    }
    return frozenset(runs | benchmarks | imports)


def first_foreign_event(
    recorder: NotificationLog, decode: Callable[[Notification], Event]
) -> Notification | None:
    """The first stored event the demo did not append, or None: the ledger is empty or
    the demo's own. Read in order, up to the first such event, so a real ledger is told
    apart at its first page. `decode`: the event of a notification."""
    own = demo_streams(generate())
    groups: set[UUID | str] = set()
    after = 0
    while notes := recorder.select_notifications(after, PAGE, inclusive_of_start=False):
        for note in notes:
            stream = note.originator_id
            if stream in own or stream in groups:
                continue
            if note.originator_version == 1 and note.topic == RunGroupOpened.TOPIC:
                opened = decode(note)
                if isinstance(opened, RunGroupOpened) and opened.kind == "demo":
                    groups.add(stream)
                    continue
            return note
        after = notes[-1].id
    return None


class NotADemoLedgerError(LedgerError):
    """The demo was pointed at a ledger holding other events: it never mixes into one."""


def refuse_foreign_events(
    recorder: NotificationLog, decode: Callable[[Notification], Event], where: str
) -> None:
    """Raise NotADemoLedgerError naming `where` unless the ledger is empty or the demo's."""
    foreign = first_foreign_event(recorder, decode)
    if foreign is not None:
        raise NotADemoLedgerError(
            f"{where} holds events that are not the demo's (position {foreign.id}: "
            f"{foreign.topic.rpartition(':')[2]}); it was left untouched: the demo builds "
            "only into a new ledger or its own (give --db a new path, e.g. --db demo.db)"
        )


def build_demo(ledger: Ledger, workdir: Path | None = None) -> DemoSummary:
    files = generate()
    importer = Importer(ledger)
    group = ledger.new_group("demo", "demo", request={"command": "demo"})
    reports = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(workdir or tmp)
        for name, records in files.items():
            path = root / name
            path.write_text(native.dump_jsonl(records))
            reports.append(importer.import_file(path, group=group, label=f"demo/{name}"))
    for bench, label, value, unit in HIGH_SCORES:
        ledger.reference_high_score(
            bench,
            label=label,
            value=value,
            unit=unit,
            source="public leaderboard",
            as_of=date(2026, 9, 30),
        )
    invalid = succeeded_run(files, "bfcl", "hermes", "gpt-4.1-mini")
    if not ledger.get_run(invalid).invalidated:
        ledger.invalidate_run(
            invalid, "prompt cache leaked expected answers into the context", "demo"
        )
    corrected = succeeded_run(files, "gaia", "eliza", "claude-sonnet-4.5")
    run = ledger.get_run(corrected)
    if run.corrections == 0:
        ledger.correct_score(
            corrected,
            round((run.score or 0) - 0.05, 4),
            "grader accepted answers with the wrong units",
            "demo",
        )
    ledger.close_group(group)
    return DemoSummary(reports, str(invalid), str(corrected))


def succeeded_run(files: dict[str, list[RunRecord]], bench: str, agent: str, model: str) -> UUID:
    """The id of the demo's succeeded run of this benchmark, agent and model."""
    for record in files[f"{bench}__{agent}.jsonl"]:
        header = record.header
        if header.model == model and header.status is RunStatus.SUCCEEDED:
            return run_id_for(native.SYSTEM, header.natural_key())
    raise LookupError(f"the demo has no succeeded {bench}/{agent}/{model} run")
