"""The parts of alwm's run and campaign files the alwm parser reads, validated strictly.

Fields alwm writes but the ledger does not need are ignored; the ones read have the
types alwm's own models give them (`agent_llm_wiki_matrix.models`), so a value of the
wrong type is an error naming the field rather than a silent coercion.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
Text = Annotated[str, Field(min_length=1)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)


class CellPaths(_Model):
    """One `cells[]` entry of a run manifest: where the cell's files are."""

    cell_id: Text
    request_relpath: Text
    aggregate_response_relpath: Text
    evaluation_relpath: Text


class RuntimeSummary(_Model):
    started_at_utc: str | None = None
    finished_at_utc: str | None = None
    duration_seconds: FiniteFloat | None = None
    browser_phase_seconds: FiniteFloat | None = None
    provider_completion_seconds: FiniteFloat | None = None
    evaluation_phase_seconds: FiniteFloat | None = None
    judge_phase_seconds: FiniteFloat | None = None


class RunManifest(_Model):
    """`manifest.json` of one benchmark run (`alwm benchmark run`)."""

    schema_version: int
    run_id: Text
    benchmark_id: Text
    title: str | None = None
    created_at: str | None = None
    rubric_ref: str | None = None
    variant_ids: list[str]
    prompt_ids: list[str]
    cells: list[CellPaths]
    definition_source_relpath: str | None = None
    prompt_registry_effective_ref: str | None = None
    comparison_fingerprints: dict[str, str] | None = None
    tags: list[str] = Field(default_factory=list)
    taxonomy: dict[str, Any] | None = None
    retry_policy: dict[str, Any] | None = None
    time_budget_seconds: FiniteFloat | None = None
    token_budget: int | None = None
    runtime_summary: RuntimeSummary | None = None
    retry_summary: dict[str, Any] | None = None


class Request(_Model):
    """`cells/<cell>/request.json`: what was asked of which model, in which run."""

    run_id: Text
    cell_id: Text
    benchmark_id: Text
    variant_id: Text
    prompt_id: Text
    model: Text


class Response(_Model):
    """`cells/<cell>/benchmark_response.json`: who answered, through which backend."""

    benchmark_id: Text
    variant_id: Text
    prompt_id: Text
    agent_stack: Text
    execution_mode: Text
    backend_kind: Text
    backend_model: Text
    duration_ms: int | FiniteFloat | None = None


class Evaluation(_Model):
    """`cells/<cell>/evaluation.json`: the rubric scores of the cell's response."""

    scores: dict[str, FiniteFloat]
    weights: dict[str, FiniteFloat] = Field(default_factory=dict)
    total_weighted_score: FiniteFloat
    rubric_id: str | None = None
    evaluator: str | None = None
    scoring_backend: str | None = None


class CampaignRunEntry(_Model):
    """One `runs[]` entry of a campaign manifest: a member run as the campaign saw it."""

    run_id: Text
    run_index: int
    status: Literal["succeeded", "failed"]
    benchmark_id: Text
    suite_ref: str | None = None
    manifest_relpath: str | None = None
    output_relpath: str | None = None
    cell_count: int | None = None
    mean_total_weighted_score: FiniteFloat | None = None
    comparison_fingerprints: dict[str, str] | None = None
    duration_seconds: FiniteFloat | None = None
    eval_scoring_label: str | None = None
    provider_config_ref: str | None = None
    browser_config_applied: bool | None = None
    execution_modes_filter: list[str] | None = None
    error: str | None = None


class RunStatusSummary(_Model):
    succeeded: int
    failed: int


class CampaignFailure(_Model):
    run_index: int
    run_id: str
    message: str


class CampaignManifest(_Model):
    """`manifest.json` of a campaign (`alwm benchmark campaign run`)."""

    schema_version: int
    campaign_id: Text
    campaign_version: str | None = None
    title: str | None = None
    created_at: str | None = None
    started_at_utc: str | None = None
    finished_at_utc: str | None = None
    duration_seconds: FiniteFloat | None = None
    git_commit_sha: str | None = None
    git_describe: str | None = None
    campaign_definition_fingerprint: str | None = None
    campaign_experiment_fingerprints: dict[str, str] | None = None
    fixture_mode_force_mock: bool
    dry_run: bool = False
    run_count: int
    run_status_summary: RunStatusSummary | None = None
    failures: list[CampaignFailure] = Field(default_factory=list)
    runs: list[CampaignRunEntry]
