"""Runs registered benchmarks as subprocesses and records everything as it happens.

Per benchmark: compatibility, the skip decision, required environment, then an
atomic claim of the next attempt; the command runs in its own process group
while the run's lease is renewed; its result file is located, parsed and
recorded with the outcome and artifacts. Secrets (secret-looking environment
values, config keys and command options; well-known key shapes) never reach an
event or a log file, and no event names an absolute host path. The benchmark's
own files are never rewritten: files of its output that hold a secret get a
masked copy under the run directory's `masked/`.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal
from uuid import uuid4

from benchledger.adapters import formats
from benchledger.adapters.execution.accounts import AccountChoice, home_secrets
from benchledger.adapters.execution.live import LOOK_SECONDS, Follower, LiveCells
from benchledger.adapters.execution.process import Outcome, artifacts, execute, masked_copies
from benchledger.adapters.execution.providers import provider_env, reasoning_env
from benchledger.adapters.execution.registry import (
    BenchmarkSpec,
    overlay_config,
    render_command,
    work_config,
)
from benchledger.adapters.execution.runtime import Missing, Probe, parse
from benchledger.adapters.execution.secrets import HostPaths, Redactor, mask_argv, secret_values
from benchledger.adapters.execution.versions import code_versions
from benchledger.adapters.formats.common import read_bytes
from benchledger.domain.errors import InputFormatError, LedgerError
from benchledger.domain.facts import result_additions
from benchledger.domain.ledger import GroupHandle, Ledger, Skip
from benchledger.domain.records import Cell, RunRecord, RunStatus
from benchledger.domain.secrets import config_secrets
from benchledger.domain.signature import Mode, decide

State = Literal["succeeded", "failed", "timed_out", "error", "skipped", "refused"]
FAILING: tuple[State, ...] = ("failed", "timed_out", "error", "refused")


@dataclass(frozen=True)
class RunRequest:
    agent: str
    provider: str
    model: str
    extras: tuple[dict[str, Any], ...] = ()
    mode: Mode = "default"
    timeout: float | None = None
    lease_seconds: float = 300.0
    renew_seconds: float = 60.0
    # The credential pool's accounts, rotated over the selection: run i gets the i-th.
    accounts: AccountChoice | None = None
    # What the run group and every run started are tagged with (a comparison's id and
    # side): in the group's request and each run's provenance, never in the work.
    tags: Mapping[str, Any] = field(default_factory=dict)
    # Launch benchmarks whose runtime-gate requirements (`requires`) are not met.
    skip_runtime_gates: bool = False


@dataclass(frozen=True)
class BenchmarkOutcome:
    benchmark: str
    state: State
    run_id: str | None = None
    run_key: str | None = None
    attempt: int | None = None
    score: float | None = None
    reason: str | None = None
    account: str | None = None
    agent: str | None = None
    # The run a skip defers to (the one that already succeeded, or is running).
    defer_to: str | None = None

    @property
    def failed(self) -> bool:
        return self.state in FAILING


# One benchmark to run under one request, with the index of its account in the pool.
WorkItem = tuple[BenchmarkSpec, RunRequest, int]


@dataclass
class Runner:
    ledger: Ledger
    results_root: Path
    host: str = field(default_factory=socket.gethostname)
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    log: Callable[[str], None] = field(default=lambda message: print(message, file=sys.stderr))
    # Brings the read models up to date, so readers see a run start and its cells arrive.
    catch_up: Callable[[], object] = field(default=lambda: None)
    # Probes each benchmark's runtime gate before it launches (Docker asked once).
    probe: Probe | None = None

    def __post_init__(self) -> None:
        if self.probe is None:
            self.probe = Probe(self.environ)

    def run_all(
        self, group: GroupHandle, specs: Sequence[BenchmarkSpec], request: RunRequest, jobs: int
    ) -> list[BenchmarkOutcome]:
        return self.run_items(group, [(spec, request, i) for i, spec in enumerate(specs)], jobs)

    def run_items(
        self, group: GroupHandle, items: Sequence[WorkItem], jobs: int
    ) -> list[BenchmarkOutcome]:
        """Run each (benchmark, request, account index), `jobs` at a time, outcomes in
        order: a cohort is each benchmark under one request per agent."""
        if jobs <= 1 or len(items) <= 1:
            return [self.run_one(group, *item) for item in items]
        from concurrent.futures import ThreadPoolExecutor  # (and logging) for --jobs only

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(lambda item: self.run_one(group, *item), items))

    def run_one(
        self, group: GroupHandle, spec: BenchmarkSpec, request: RunRequest, index: int = 0
    ) -> BenchmarkOutcome:
        """Run the `index`-th benchmark of the selection (its account is the index-th)."""
        return replace(self._run_one(group, spec, request, index), agent=request.agent)

    def _run_one(
        self, group: GroupHandle, spec: BenchmarkSpec, request: RunRequest, index: int
    ) -> BenchmarkOutcome:
        config = work_config(spec, request.agent, request.provider, *request.extras)
        who: dict[str, Any] = {
            "benchmark": spec.id,
            "agent": request.agent,
            "provider": request.provider,
            "model": request.model,
            "config": config,
            "directory": spec.directory,
        }
        # The config as benchledger hashed it before it adopted the orchestrator's
        # signatures: attempts recorded then still count.
        legacy_config = overlay_config(spec.config, spec.id, *request.extras)
        if not spec.accepts(request.agent):
            detail = f"agent '{request.agent}' is not among {', '.join(spec.agents)}"
            self.ledger.skip(
                group,
                reason="incompatible_agent",
                detail=detail,
                supported_agents=list(spec.agents),
                **who,
            )
            return BenchmarkOutcome(spec.id, "skipped", reason=f"incompatible_agent: {detail}")
        known = self.ledger.work_attempts(**who, legacy_config=legacy_config)
        decision = decide(known.runs, request.mode, datetime.now(UTC))
        if not decision.execute:
            return self._skipped(group, spec, who, Skip(decision.reason or "", decision.defer_to))
        given = set(request.accounts.env(index)) if request.accounts else set()
        missing = [
            name for name in spec.required_env if name not in given and not self.environ.get(name)
        ]
        if missing:
            detail = f"Missing required environment variables: {', '.join(missing)}"
            self.ledger.refuse_launch(
                group, reason="missing_env", missing_env=missing, detail=detail, **who
            )
            return BenchmarkOutcome(spec.id, "refused", reason=detail)
        unmet = self._unmet(spec, request, given)
        if unmet:
            names = [m.requirement for m in unmet]
            shown = "; ".join(f"{m.requirement}: {m.why}" for m in unmet)
            detail = f"Runtime gate blocked: {shown}"
            self.ledger.refuse_launch(
                group,
                reason="runtime_gate",
                missing_env=[r.removeprefix("env:") for r in names if _env_only(r)],
                missing_requirements=names,
                detail=detail,
                **who,
            )
            return BenchmarkOutcome(spec.id, "refused", reason=detail)
        return self._execute(group, spec, request, config, who, legacy_config, index)

    def _unmet(self, spec: BenchmarkSpec, request: RunRequest, given: set[str]) -> list[Missing]:
        if request.skip_runtime_gates or not spec.requires:
            return []
        probe = self.probe or Probe(self.environ)
        return probe.missing(spec.id, spec.requires, spec.cwd, given)

    def _skipped(
        self, group: GroupHandle, spec: BenchmarkSpec, who: dict[str, Any], skip: Skip
    ) -> BenchmarkOutcome:
        self.ledger.skip(group, reason=skip.reason, defer_to=skip.defer_to, **who)
        defer = f" (see run {str(skip.defer_to)[:8]})" if skip.defer_to else ""
        return BenchmarkOutcome(
            spec.id,
            "skipped",
            reason=skip.reason + defer,
            defer_to=str(skip.defer_to) if skip.defer_to else None,
        )

    def _execute(
        self,
        group: GroupHandle,
        spec: BenchmarkSpec,
        request: RunRequest,
        config: dict[str, Any],
        who: dict[str, Any],
        legacy_config: dict[str, Any],
        index: int,
    ) -> BenchmarkOutcome:
        token = uuid4().hex[:8]
        pool = request.accounts
        account = pool.at(index).id if pool else None
        run_key = f"run_{spec.id}_{datetime.now(UTC):%Y%m%dT%H%M%SZ}_{token}"
        run_dir_rel = f"{group.label}/{_safe(spec.id)}__{_safe(request.agent)}/{run_key}"
        run_dir = self.results_root / run_dir_rel
        output_dir = run_dir / "output"
        output_dir.mkdir(parents=True, exist_ok=True)
        values = command_values(spec, request, run_key, output_dir)
        argv = render_command(spec.command, values, config)
        masked_argv, argv_secrets = mask_argv(argv)
        # What an account's home holds, and where it is, stay out of events and logs.
        held = [*home_secrets(pool.accounts), *pool.root_spellings()] if pool else []
        redactor = Redactor(
            [*secret_values(self.environ), *config_secrets(config), *argv_secrets, *held]
        )
        paths = HostPaths(Path.cwd(), self.results_root)

        def scrub(value: Any) -> Any:
            return paths.scrub_obj(redactor.redact_obj(value))

        def render(text: str) -> str:
            return render_command([text], values, config)[0]

        versions = code_versions(spec.cwd, spec.versions, render, self.environ, scrub)
        started = self.ledger.start_attempt(
            group,
            mode=request.mode,
            command=scrub(masked_argv),
            cwd=scrub(str(spec.cwd)),
            host=self.host,
            lease_seconds=request.lease_seconds,
            run_key=run_key,
            run_dir=run_dir_rel,
            legacy_config=legacy_config,
            account=account,
            code_versions=versions,
            provenance=dict(request.tags),
            **who,
        )
        if isinstance(started, Skip):
            return self._skipped(group, spec, who, started)
        self._caught_up()
        env = {
            **self.environ,
            **launch_env(spec, request, config, self.environ, values, index),
        }
        launched_at = time.time()
        live = LiveCells(
            self.ledger, self.ledger.running_run(started.run_id), scrub, self.log, self._caught_up
        )
        follower = Follower(
            spec,
            output_dir,
            run_dir,
            launched_at,
            live.record,
            lambda m: self.log(f"warning: {scrub(m)}"),
            live.record_turns,
        )
        renew = _Every(
            request.renew_seconds, lambda: self._renew(started.run_id, request.lease_seconds)
        )

        def tick() -> None:
            if follower.active:
                live.look(follower)
            renew.maybe()

        try:
            outcome = execute(
                argv,
                cwd=spec.cwd,
                env=env,
                stdout_path=run_dir / "stdout.log",
                stderr_path=run_dir / "stderr.log",
                redactor=redactor,
                timeout=request.timeout,
                on_tick=tick,
                tick_seconds=(
                    min(LOOK_SECONDS, request.renew_seconds)
                    if follower.active
                    else request.renew_seconds
                ),
            )
            if follower.active:
                live.look(follower, drain=True)
            masked_copies(output_dir, run_dir / "masked", redactor)
            status, score, error, record = self._judge(spec, who, output_dir, launched_at, outcome)
            if follower.problems and status is RunStatus.SUCCEEDED:
                status, error = RunStatus.ERROR, "; ".join(follower.problems)
            record = _scrubbed(record, scrub)
            finished = _finish_fields(spec, record, status, score, error, outcome)
            finished["artifacts"] = [
                {"path": a.path, "size": a.size, "sha256": a.sha256}
                for a in artifacts(run_dir, self.results_root)
            ]
            # Cells that disagreed while it ran are stated again: the finish names them.
            cells: Sequence[Cell] = [*(record.cells if record else ()), *live.disagreeing]
            turns = [*(record.turns if record else ()), *live.disagreeing_turns]
            added = result_additions(config, record) if record else {}
            ended = self.ledger.finish_run(
                started.run_id, cells, turns=turns, added_facts=scrub(added), **scrub(finished)
            )
            status, error = ended.status, ended.error
        except LedgerError:
            raise
        except Exception as e:  # our own failure after the claim: record it, never hide it
            self.ledger.finish_run(
                started.run_id,
                (),
                status=RunStatus.ERROR,
                error=scrub(f"benchledger failed while running: {e!r}"),
            )
            raise
        self._caught_up()
        state: State = "succeeded" if status is RunStatus.SUCCEEDED else _failing(status)
        return BenchmarkOutcome(
            spec.id,
            state,
            str(started.run_id),
            run_key,
            started.attempt,
            score,
            scrub(error),
            account,
        )

    def _renew(self, run_id: Any, lease_seconds: float) -> None:
        try:
            self.ledger.renew_lease(run_id, lease_seconds)
        except LedgerError as e:  # a missed heartbeat must not kill the benchmark
            self.log(f"warning: lease renewal of run {str(run_id)[:8]} failed: {e}")
            return
        self._caught_up()

    def _caught_up(self) -> None:
        try:
            self.catch_up()
        except (LedgerError, sqlite3.Error) as e:  # the events are recorded; a read can redo it
            self.log(f"warning: the read models could not catch up: {e}")

    def _judge(
        self,
        spec: BenchmarkSpec,
        who: dict[str, Any],
        output_dir: Path,
        launched_at: float,
        outcome: Outcome,
    ) -> tuple[RunStatus, float | None, str | None, RunRecord | None]:
        if outcome.launch_error:
            return RunStatus.FAILED, None, outcome.launch_error, None
        record, problem = self._result(spec, who, output_dir, launched_at)
        score = record.header.score if record else None
        if outcome.timed_out:
            return RunStatus.TIMED_OUT, score, f"killed after the {spec.id} timeout", record
        if outcome.exit_code != 0:
            kept = " (its result was kept)" if record else ""
            return RunStatus.FAILED, score, f"exited with code {outcome.exit_code}{kept}", record
        if record is None:
            return RunStatus.FAILED, None, problem, None
        if record.header.status is not RunStatus.SUCCEEDED:
            return record.header.status, score, record.header.error or "result says so", record
        if score is None:
            return RunStatus.FAILED, None, "the result has no numeric score", record
        return RunStatus.SUCCEEDED, score, None, record

    def _result(
        self, spec: BenchmarkSpec, who: dict[str, Any], output_dir: Path, launched_at: float
    ) -> tuple[RunRecord | None, str]:
        found = sorted(
            (
                p
                for p in output_dir.glob(spec.result)
                if p.is_file() and p.stat().st_mtime >= launched_at - 1
            ),
            key=lambda p: (p.stat().st_mtime, str(p)),
        )
        if not found:
            return None, f"no result file matching '{spec.result}' was written"
        path = found[-1]
        defaults = {
            "benchmark": who["benchmark"],
            "agent": who["agent"],
            "provider": who["provider"],
            "model": who["model"],
            "config": who["config"],
            "status": "succeeded",
        }
        try:
            fmt = formats.by_name(spec.format)
            parsed = formats.parse(fmt, path, read_bytes(path), defaults)
        except (InputFormatError, LedgerError) as e:
            return None, f"result unreadable: {e}"
        records = [r for r in parsed if isinstance(r, RunRecord)]
        if len(records) != 1 or len(parsed) != 1:
            return None, f"result holds {len(parsed)} records, expected one run"
        return records[0], ""


class _Every:
    """Calls `action` at most every `seconds`, when asked (from the supervise loop)."""

    def __init__(self, seconds: float, action: Callable[[], None]) -> None:
        self.seconds, self.action = seconds, action
        self.next = time.monotonic() + seconds

    def maybe(self) -> None:
        now = time.monotonic()
        if now >= self.next:
            self.next = now + self.seconds
            self.action()


def _scrubbed(record: RunRecord | None, scrub: Callable[[Any], Any]) -> RunRecord | None:
    """The result as parsed from the original bytes, with secrets and host paths masked
    in its text (JSON escapes would hide a secret from byte masking)."""
    if record is None:
        return None
    # Turns are not part of the dump (`RunRecord.turns`): their text is masked apart.
    dumped = record.model_dump(mode="json")
    turns = [t.model_dump(mode="json") for t in record.turns]
    scrubbed, scrubbed_turns = scrub(dumped), scrub(turns)
    if scrubbed == dumped and scrubbed_turns == turns:
        return record
    return RunRecord.model_validate({**scrubbed, "turns": scrubbed_turns})


def _finish_fields(
    spec: BenchmarkSpec,
    record: RunRecord | None,
    status: RunStatus,
    score: float | None,
    error: str | None,
    outcome: Outcome,
) -> dict[str, Any]:
    header = record.header if record else None
    metrics = dict(header.metrics) if header else {}
    metrics["return_code"] = outcome.exit_code
    return {
        "status": status,
        "score": score,
        "unit": (header.unit if header and header.unit else None) or spec.unit,
        "higher_is_better": spec.higher_is_better,
        "metrics": metrics,
        "tokens": dict(header.tokens) if header else {},
        "duration_seconds": round(outcome.duration_seconds, 3),
        "exit_code": outcome.exit_code,
        "error": error,
        "ended_at": datetime.now(UTC),
    }


def _failing(status: RunStatus) -> State:
    return "timed_out" if status is RunStatus.TIMED_OUT else "failed"


def _safe(text: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "-_." else "-" for c in text.lower()).strip("-")
    return cleaned or "item"


def command_values(
    spec: BenchmarkSpec, request: RunRequest, run_key: str, output_dir: Path
) -> dict[str, str]:
    """The values of a benchmark command's placeholders for one run (`registry.py`)."""
    return {
        "agent": request.agent,
        "provider": request.provider,
        "model": request.model,
        "benchmark": spec.id,
        "run_id": run_key,
        "output_dir": str(output_dir),
    }


def launch_env(
    spec: BenchmarkSpec,
    request: RunRequest,
    config: Mapping[str, Any],
    environ: Mapping[str, str],
    values: Mapping[str, str],
    index: int,
) -> dict[str, str]:
    """The variables a run sets over the host's environment `environ`: the run's own, its
    provider's (`providers.py`) and its account's (`values` from `command_values`)."""
    pool = request.accounts
    return {
        "BENCHLEDGER_RUN_ID": values["run_id"],
        "BENCHLEDGER_OUTPUT_DIR": values["output_dir"],
        "BENCHLEDGER_AGENT": request.agent,
        "BENCHLEDGER_PROVIDER": request.provider,
        "BENCHLEDGER_MODEL": request.model,
        "BENCHLEDGER_BENCHMARK": spec.id,
        **provider_env(request.provider, config, environ),
        **reasoning_env(config),
        **(pool.env(index) if pool else {}),
    }


def register(ledger: Ledger, specs: Sequence[BenchmarkSpec]) -> int:
    """Record the registry's benchmarks (their required agents, high scores) in the
    ledger; idempotent."""
    changed = 0
    for spec in specs:
        changed += ledger.register_benchmark(
            spec.id,
            directory=spec.directory,
            unit=spec.unit,
            higher_is_better=spec.higher_is_better,
            description=spec.description,
        )
        if spec.required():
            changed += ledger.declare_required_agents(
                spec.id, spec.required(), compatible=spec.agents or None, source="registry"
            )
        if spec.high_score is not None:
            hs = spec.high_score
            changed += ledger.reference_high_score(
                spec.id,
                label=hs.label,
                value=hs.value,
                unit=hs.unit,
                source=hs.source,
                as_of=hs.as_of,
            )
    return changed


def _env_only(requirement: str) -> bool:
    """A requirement that is one environment variable, no alternative."""
    kinds = parse(requirement)
    return len(kinds) == 1 and kinds[0][0] == "env"
