"""The parts of an inspect_ai eval log the ledger reads, validated; everything else is ignored.

Field names follow inspect's own `EvalLog` (log format v2 and v3). Models ignore
unknown keys, so newer logs with more fields still read; types are strict, so a
retyped value is an error naming its field rather than a silent coercion.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
)

Number = StrictInt | StrictFloat
Scalar = StrictStr | StrictBool | StrictInt | StrictFloat
# inspect's `Value`: a scalar, a list of scalars or a dict of scalars (or None).
ScoreValue = Scalar | list[Scalar] | dict[str, Scalar | None]
MetricValue = Number | list[Number | None] | dict[str, Number | None] | None
Text = Annotated[StrictStr, Field(min_length=1)]
SampleId = StrictInt | Text


class _Part(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


def read_time(value: Any) -> datetime | None:
    """An inspect timestamp (ISO 8601, usually with a local offset) as UTC; "" is unknown."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 timestamp string")
    try:
        parsed = datetime.fromisoformat(value)
        # A timestamp without an offset is read as UTC (inspect always writes one).
        return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except (ValueError, OverflowError):
        raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from None


class Dataset(_Part):
    name: StrictStr | None = None
    location: StrictStr | None = None
    samples: StrictInt | None = None
    shuffled: StrictBool | None = None


class Revision(_Part):
    type: StrictStr | None = None
    origin: StrictStr | None = None
    commit: StrictStr | None = None
    dirty: StrictBool | None = None


class EvalConfig(BaseModel):
    """`eval.config`: the few run-defining settings typed, the rest kept as given."""

    model_config = ConfigDict(extra="allow", frozen=True)

    limit: StrictInt | list[StrictInt] | None = None
    sample_id: SampleId | list[SampleId] | None = None
    epochs: Annotated[StrictInt, Field(ge=1)] | None = None
    epochs_reducer: list[StrictStr] | None = None


class ScorerSpec(_Part):
    name: StrictStr


class EvalSpec(_Part):
    run_id: Text
    eval_id: Text | None = None
    eval_set_id: StrictStr | None = None
    created: datetime | None = None
    task: Text
    task_id: StrictStr | None = None
    task_version: StrictInt | StrictStr = 0
    task_file: StrictStr | None = None
    task_registry_name: Text | None = None
    task_display_name: StrictStr | None = None
    task_args: dict[str, Any] = Field(default_factory=dict)
    dataset: Dataset | None = None
    sandbox: Any = None
    model: Text
    model_base_url: StrictStr | None = None
    model_args: dict[str, Any] = Field(default_factory=dict)
    model_generate_config: dict[str, Any] = Field(default_factory=dict)
    model_roles: dict[str, Any] | None = None
    config: EvalConfig = Field(default_factory=EvalConfig)
    revision: Revision | None = None
    packages: dict[str, StrictStr] = Field(default_factory=dict)
    scorers: list[ScorerSpec] | None = None

    @field_validator("created", mode="before")
    @classmethod
    def _time(cls, value: Any) -> datetime | None:
        return read_time(value)

    @field_validator("model")
    @classmethod
    def _model(cls, value: str) -> str:
        if value.endswith("/"):
            raise ValueError("must be 'provider/model' with a model name after the slash")
        return value


class PlanStep(_Part):
    solver: Text
    params: dict[str, Any] = Field(default_factory=dict)


class Plan(_Part):
    name: StrictStr = "plan"
    steps: list[PlanStep] = Field(default_factory=list)
    config: dict[str, Any] = Field(default_factory=dict)


class Metric(_Part):
    name: StrictStr
    value: MetricValue = None


class Score(_Part):
    """One entry of `results.scores`: a scorer's (reduced) metrics."""

    name: Text
    scorer: StrictStr
    reducer: StrictStr | None = None
    scored_samples: StrictInt | None = None
    unscored_samples: StrictInt | None = None
    metrics: dict[str, Metric] = Field(default_factory=dict)


class ReducedSample(_Part):
    value: ScoreValue
    sample_id: SampleId


class Reduction(_Part):
    scorer: Text
    reducer: StrictStr | None = None
    samples: list[ReducedSample]


class Results(_Part):
    total_samples: StrictInt = 0
    completed_samples: StrictInt = 0
    scores: list[Score] = Field(default_factory=list)
    # Logs up to 0.3.41 kept the per-sample reductions here, not at the top level.
    sample_reductions: list[Reduction] | None = None


class ModelUsage(_Part):
    input_tokens: StrictInt = 0
    output_tokens: StrictInt = 0
    total_tokens: StrictInt = 0
    input_tokens_cache_write: StrictInt | None = None
    input_tokens_cache_read: StrictInt | None = None
    reasoning_tokens: StrictInt | None = None
    total_cost: Number | None = None


class Stats(_Part):
    started_at: datetime | None = None
    completed_at: datetime | None = None
    model_usage: dict[str, ModelUsage] = Field(default_factory=dict)

    @field_validator("started_at", "completed_at", mode="before")
    @classmethod
    def _time(cls, value: Any) -> datetime | None:
        return read_time(value)


class EvalError(_Part):
    message: StrictStr


class LogHeader(_Part):
    """Everything of a log but its samples: a JSON log's top level, a .eval's header.json."""

    version: StrictInt
    status: Literal["started", "success", "cancelled", "error"]
    eval: EvalSpec
    plan: Plan = Field(default_factory=Plan)
    results: Results | None = None
    stats: Stats = Field(default_factory=Stats)
    error: EvalError | None = None
    invalidated: StrictBool | None = None
    reductions: list[Reduction] | None = None


class SampleScore(_Part):
    value: ScoreValue


class SampleLimit(_Part):
    type: StrictStr


class Sample(_Part):
    """One sample in one epoch: a JSON log's `samples[i]`, a .eval's sample entry or summary."""

    id: SampleId
    epoch: Annotated[StrictInt, Field(ge=1)] = 1
    scores: dict[str, SampleScore] | None = None
    # A full sample carries an EvalError object, a summary just its message.
    error: StrictStr | EvalError | None = None
    limit: StrictStr | SampleLimit | None = None
    model_usage: dict[str, ModelUsage] = Field(default_factory=dict)
    total_time: Number | None = None
    working_time: Number | None = None
    error_retries: list[Any] | None = None
