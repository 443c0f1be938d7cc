"""inspect_ai hooks that record each eval in a ledger while it runs.

Registered through inspect's `inspect_ai` entry-point group (pyproject.toml), so that
installing benchledger with its `inspect` extra is enough; enabled only when
`BENCHLEDGER_INSPECT` names a ledger (a file's path or a PostgreSQL URL). What is
recorded, and why importing the eval's log afterwards appends nothing, is
`inspect_live`'s. A failure inside a hook never breaks the eval: it is logged as a
warning once, and the eval goes on unrecorded from there.

Light to import on purpose: inspect loads every entry point when it starts, so the
ledger's code is loaded only once an eval is recorded.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inspect_ai.hooks import Hooks, RunEnd, SampleEnd, TaskEnd, TaskStart, hooks
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

if TYPE_CHECKING:
    from benchledger.adapters.integrations.inspect_live import LiveRecorder
    from benchledger.domain.facts import Conflict

ENV = "BENCHLEDGER_INSPECT"
logger = logging.getLogger(__name__)


def plain_json(value: BaseModel, include: set[str] | None = None) -> Any:
    """An inspect object as its log file states it: JSON values as inspect's log writer
    makes them (nulls left out, what JSON cannot hold, a function say, as null)."""
    data = value.model_dump(mode="python", include=include, exclude_none=True, fallback=none)
    return to_jsonable_python(data, exclude_none=True, fallback=none)


def none(_: object) -> None:
    return None


def sample_fields() -> set[str]:
    """The fields of a sample the ledger reads (never its messages or events)."""
    from benchledger.adapters.formats.inspect_ai_models import Sample

    return set(Sample.model_fields)


@hooks(name="benchledger", description="Records each eval in the ledger BENCHLEDGER_INSPECT names")
class BenchledgerHooks(Hooks):
    """Starts a run when a task starts, records a cell as each sample ends and finishes
    the run when the task ends (or, cancelled or failed, when the eval run ends)."""

    def __init__(self) -> None:
        self._recorder: LiveRecorder | None = None
        self._warned = False

    def enabled(self) -> bool:
        return bool(os.environ.get(ENV))

    def recorder(self) -> LiveRecorder:
        target = os.environ[ENV]
        if self._recorder is None or self._recorder.target != target:
            from benchledger.adapters.integrations.inspect_live import LiveRecorder

            if self._recorder is not None:
                self._recorder.close()
            self._recorder = LiveRecorder(target)
        return self._recorder

    def _guarded(self, what: str, action: Callable[[LiveRecorder], object]) -> None:
        """Run `action`; a failure is a warning (the first only), never the eval's."""
        try:
            action(self.recorder())
        except Exception as e:  # the eval must go on whatever the ledger does
            if not self._warned:
                self._warned = True
                logger.warning(
                    "benchledger: could not record %s in %s: %s: %s",
                    what,
                    os.environ.get(ENV),
                    type(e).__name__,
                    e,
                )

    async def on_task_start(self, data: TaskStart) -> None:
        self._guarded(
            f"the start of eval {data.eval_id}",
            lambda r: r.task_start(data.eval_id, plain_json(data.spec), plain_json(data.plan)),
        )

    async def on_sample_end(self, data: SampleEnd) -> None:
        self._guarded(
            f"sample {data.sample.id} of eval {data.eval_id}",
            lambda r: r.sample_end(data.eval_id, plain_json(data.sample, sample_fields())),
        )

    async def on_task_end(self, data: TaskEnd) -> None:
        def finish(r: LiveRecorder) -> None:
            log = plain_json(data.log, set(type(data.log).model_fields) - {"samples"})
            warn_of(data.eval_id, r.task_end(data.eval_id, log))

        self._guarded(f"the end of eval {data.eval_id}", finish)

    async def on_run_end(self, data: RunEnd) -> None:
        """Finish the runs of the tasks that ended without their task's end (an error or
        a cancellation stopped them) as their log files state them; then let the ledger
        go."""

        def finish(r: LiveRecorder) -> None:
            for log in data.logs:
                eval_id = log.eval.eval_id
                if eval_id not in r.evals:
                    continue
                path = Path(log.location) if log.location else None
                if path is not None and path.is_file():
                    conflicts = r.task_end_from_file(eval_id, path)
                else:
                    header = plain_json(log, set(type(log).model_fields) - {"samples"})
                    conflicts = r.task_end(eval_id, header)
                warn_of(eval_id, conflicts)

        if self._recorder is not None:
            self._guarded("the end of the eval run", finish)
            self._recorder.close()
            self._recorder = None


def warn_of(eval_id: str, conflicts: list[Conflict]) -> None:
    """Name each fact the live run stated otherwise than the eval's log."""
    for conflict in conflicts:
        logger.warning("benchledger: eval %s: %s", eval_id, conflict)
