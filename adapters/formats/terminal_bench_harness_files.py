"""The files of a `tb run` folder, read and validated: `results.json` (BenchmarkResults)
and `run_metadata.json` (RunMetadata), shaped as Terminal-Bench's harness models write
them (`terminal_bench/harness/models.py`).

The shapes are the harness's own, across its versions: a trial's id is `id` (older
writers: `uuid`), its timestamps and `n_commands` came later, and the aggregate's
`id`, `n_resolved`, `resolved_ids`, `accuracy` and `pass_at_k` are computed fields a
writer may leave out. Unknown keys are kept (`extras`); a known key of the wrong type
is an error naming the file and the field.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from benchledger.adapters.formats.common import read_json
from benchledger.adapters.formats.terminal_bench_files import validate
from benchledger.domain.errors import InputFormatError

RESULTS = "results.json"
METADATA = "run_metadata.json"

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0)]
Text = Annotated[str, Field(min_length=1)]
_ATTEMPT = re.compile(r"(?P<attempt>\d+)-of-(?P<attempts>\d+)(?:\.(?P<run_id>.+))?")


class _Shape(BaseModel):
    # Strict types; keys a later harness adds are kept, not refused.
    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    def extras(self) -> dict[str, Any]:
        """The keys this shape does not know, as the file states them."""
        return dict(self.__pydantic_extra__ or {})


class Trial(_Shape):
    """One `results[]` entry (TrialResults): one attempt at one task."""

    trial_name: Text
    task_id: Text
    # Required here though the harness defaults it: it always writes the key, and null
    # (the tests never ran or could not be parsed) is a statement, a missing key is not.
    is_resolved: bool | None
    id: str | None = None
    uuid: str | None = None
    instruction: str | None = None
    failure_mode: str | None = None
    parser_results: dict[str, str] | None = None
    recording_path: str | None = None
    total_input_tokens: Count | None = None
    total_output_tokens: Count | None = None
    n_commands: Count | None = None
    trial_started_at: str | None = None
    trial_ended_at: str | None = None
    agent_started_at: str | None = None
    agent_ended_at: str | None = None
    test_started_at: str | None = None
    test_ended_at: str | None = None


class Results(_Shape):
    """`results.json` (BenchmarkResults): the trials and the figures computed from them."""

    results: list[Trial]
    id: str | None = None
    n_resolved: Count | None = None
    n_unresolved: Count | None = None
    resolved_ids: list[str] | None = None
    unresolved_ids: list[str] | None = None
    accuracy: FiniteFloat | None = None
    # pass@k by k; JSON object keys are strings ("2", "5").
    pass_at_k: dict[str, FiniteFloat | None] | None = None


class RunMetadata(_Shape):
    """`run_metadata.json`: who ran what, how, and when."""

    run_id: Text
    agent_name: Text
    uuid: str | None = None
    dataset_path: str | None = None
    dataset_name: str | None = None
    dataset_version: str | None = None
    output_path: str | None = None
    no_rebuild: bool | None = None
    cleanup: bool | None = None
    log_level: int | None = None
    task_ids: list[str] | None = None
    exclude_task_ids: list[str] | None = None
    n_tasks: Count | None = None
    n_concurrent_trials: Count | None = None
    n_attempts: Annotated[int, Field(ge=1)] | None = None
    dataset_size: Count | None = None
    accuracy: FiniteFloat | None = None
    model_name: str | None = None
    start_time: str | None = None
    end_time: str | None = None
    commit_hash: str | None = None
    username: str | None = None
    s3_bucket: str | None = None
    agent_kwargs: dict[str, Any] | None = None
    pass_at_k: dict[str, FiniteFloat | None] | None = None
    resumed_at: str | None = None


def named_by_harness(path: Path) -> bool:
    """The file under the name `tb run` gives it, in its run folder."""
    return path.name == RESULTS


def published_copy(path: Path) -> bool:
    """A results.json renamed as it is published alone (`<run_id>_results.json`)."""
    return path.name.lower().endswith(RESULTS) and not named_by_harness(path)


def read_results(path: Path, data: bytes) -> Results:
    document = read_json(path, data)
    if not isinstance(document, dict):
        raise InputFormatError(str(path), "expected an object with the run's results")
    results = validate(Results, document, path)
    seen: dict[str, int] = {}
    for i, trial in enumerate(results.results):
        if trial.trial_name in seen:
            first = seen[trial.trial_name]
            raise InputFormatError(
                str(path),
                f"trial {trial.trial_name!r} appears twice (first as results[{first}])",
                field=f"results[{i}].trial_name",
            )
        seen[trial.trial_name] = i
    return results


def attempt_of(trial: Trial) -> re.Match[str] | None:
    """The parts of the name the harness gives a trial, `<task>.<k>-of-<n>[.<run_id>]`
    (older writers leave out the run id); None for a name of another shape."""
    prefix = f"{trial.task_id}."
    if not trial.trial_name.startswith(prefix):
        return None
    return _ATTEMPT.fullmatch(trial.trial_name, len(prefix))


def named_run_id(trials: list[Trial]) -> str | None:
    """The run id every trial name ends with, when they all name the same one."""
    found = {m["run_id"] if (m := attempt_of(t)) else None for t in trials}
    return found.pop() if len(found) == 1 else None


def named_attempts(trials: list[Trial]) -> int | None:
    """The number of attempts every trial name states, when they all state the same."""
    found = {int(m["attempts"]) if (m := attempt_of(t)) else None for t in trials}
    return found.pop() if len(found) == 1 else None


def read_metadata(path: Path) -> RunMetadata | None:
    if not path.is_file():
        return None
    document = read_json(path)
    if not isinstance(document, dict):
        raise InputFormatError(str(path), "expected an object with the run's metadata")
    return validate(RunMetadata, document, path)


def stated_time(text: str | None, path: Path, field: str) -> datetime | None:
    """A time the header keeps: ISO 8601, read as UTC when it has no offset (the harness
    writes UTC); one that is not a time is refused, naming the field."""
    if text is None:
        return None
    moment = parse_time(text)
    if moment is None:
        raise InputFormatError(str(path), f"not an ISO 8601 time: {text!r}", field=field)
    return moment


def parse_time(text: str | None) -> datetime | None:
    """An ISO 8601 time as UTC, or None when there is none or it is not one."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except (ValueError, OverflowError):
        return None
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
