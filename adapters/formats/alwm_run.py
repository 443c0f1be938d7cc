"""One alwm benchmark run directory (`manifest.json` + `cells/*`) as a ledger run.

Variants x prompts are the run's cells (`cells/<variant>__<prompt>/`); the run's score is
the mean of the cells' `total_weighted_score`, computed the way alwm computes a campaign
member's `mean_total_weighted_score` (cells in manifest order).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchledger.adapters.formats.alwm_files import inside, is_epoch, read, real_time, validate
from benchledger.adapters.formats.alwm_models import (
    CellPaths,
    Evaluation,
    Request,
    Response,
    RunManifest,
)
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell

UNIT = "mean_total_weighted_score"
# alwm's default `--low-score`: its longitudinal and campaign analyses tag a cell scoring
# below it FT-ABS-LOW. A rubric score has no pass mark of its own; this is alwm's.
LOW_SCORE = 0.55


@dataclass(frozen=True)
class CellFiles:
    """The three JSON files of one cell, read and cross-checked against the manifest."""

    paths: CellPaths
    request: Request
    response: Response
    evaluation: Evaluation


@dataclass(frozen=True)
class RunParts:
    """What a run directory states, ready to become a header (with or without a campaign)."""

    manifest: RunManifest
    cells: tuple[CellFiles, ...]

    @property
    def scores(self) -> list[float]:
        return [c.evaluation.total_weighted_score for c in self.cells]

    @property
    def mean(self) -> float | None:
        scores = self.scores
        return sum(scores) / len(scores) if scores else None


def read_manifest(path: Path, doc: Any) -> RunManifest:
    return validate(RunManifest, doc, path)


def cell_paths(run_dir: Path, manifest_path: Path, manifest: RunManifest) -> list[Path]:
    """The JSON files of every cell, in manifest order (request, response, evaluation)."""
    files = []
    for i, cell in enumerate(manifest.cells):
        for name in ("request_relpath", "aggregate_response_relpath", "evaluation_relpath"):
            files.append(inside(run_dir, getattr(cell, name), manifest_path, f"cells[{i}].{name}"))
    return files


def read_run(manifest_path: Path, manifest: RunManifest) -> RunParts:
    run_dir = manifest_path.parent
    seen: set[str] = set()
    cells = []
    for i, entry in enumerate(manifest.cells):
        if entry.cell_id in seen:
            raise InputFormatError(
                str(manifest_path), f"cell '{entry.cell_id}' is listed twice", field=f"cells[{i}]"
            )
        seen.add(entry.cell_id)
        cells.append(_read_cell(run_dir, manifest_path, manifest, i, entry))
    return RunParts(manifest, tuple(cells))


def _read_cell(
    run_dir: Path, manifest_path: Path, manifest: RunManifest, i: int, entry: CellPaths
) -> CellFiles:
    where = f"cells[{i}]"
    request_path = inside(run_dir, entry.request_relpath, manifest_path, f"{where}.request_relpath")
    response_path = inside(
        run_dir,
        entry.aggregate_response_relpath,
        manifest_path,
        f"{where}.aggregate_response_relpath",
    )
    evaluation_path = inside(
        run_dir, entry.evaluation_relpath, manifest_path, f"{where}.evaluation_relpath"
    )
    request = validate(Request, read(request_path), request_path)
    response = validate(Response, read(response_path), response_path)
    evaluation = validate(Evaluation, read(evaluation_path), evaluation_path)
    # A cell file from another cell or run would silently mix results: refuse it.
    _same(request_path, "run_id", request.run_id, manifest.run_id)
    _same(request_path, "cell_id", request.cell_id, entry.cell_id)
    _same(request_path, "benchmark_id", request.benchmark_id, manifest.benchmark_id)
    _same(response_path, "benchmark_id", response.benchmark_id, manifest.benchmark_id)
    _same(response_path, "variant_id", response.variant_id, request.variant_id)
    _same(response_path, "prompt_id", response.prompt_id, request.prompt_id)
    return CellFiles(entry, request, response, evaluation)


def _same(path: Path, field: str, value: str, expected: str) -> None:
    if value != expected:
        raise InputFormatError(
            str(path), f"is {value!r} but the run's manifest says {expected!r}", field=field
        )


def joined(values: list[str]) -> str:
    """One name for what several variants used: the distinct values, sorted, '+'-joined."""
    return "+".join(sorted(set(values)))


def identity(parts: RunParts) -> dict[str, str]:
    """agent / provider / model of the run: the variants' agent stacks and backends."""
    responses = [c.response for c in parts.cells]
    if not responses:
        return {}
    return {
        "agent": joined([r.agent_stack for r in responses]),
        "provider": joined([r.backend_kind for r in responses]),
        "model": joined([r.backend_model for r in responses]),
    }


def config(parts: RunParts) -> dict[str, Any]:
    """What was run and how: part of the signature, so mock runs never compare with real ones."""
    m = parts.manifest
    variants: dict[str, dict[str, str]] = {}
    for c in parts.cells:
        r = c.response
        variants.setdefault(
            r.variant_id,
            {
                "agent_stack": r.agent_stack,
                "execution_mode": r.execution_mode,
                "backend_kind": r.backend_kind,
                "backend_model": r.backend_model,
            },
        )
    out: dict[str, Any] = {
        "variants": variants,
        "prompt_ids": list(m.prompt_ids),
        "rubric_ref": m.rubric_ref,
    }
    if m.comparison_fingerprints is not None:
        out["comparison_fingerprints"] = dict(m.comparison_fingerprints)
    backends = sorted(
        {c.evaluation.scoring_backend for c in parts.cells if c.evaluation.scoring_backend}
    )
    if backends:
        out["scoring_backends"] = backends
    for key in ("retry_policy", "time_budget_seconds", "token_budget"):
        if getattr(m, key) is not None:
            out[key] = getattr(m, key)
    if any(c.response.backend_kind == "mock" for c in parts.cells):
        out["mock"] = True  # alwm's mock backend answered: not a real model result
    return out


def metrics(parts: RunParts) -> dict[str, Any]:
    m = parts.manifest
    by_variant: dict[str, list[float]] = {}
    for c in parts.cells:
        by_variant.setdefault(c.response.variant_id, []).append(c.evaluation.total_weighted_score)
    durations = [c.response.duration_ms for c in parts.cells if c.response.duration_ms is not None]
    out: dict[str, Any] = {
        "cells": len(parts.cells),
        "variants": len(by_variant),
        "prompts": len(m.prompt_ids),
        "variant_mean_scores": {v: sum(s) / len(s) for v, s in by_variant.items()},
        "cells_below_low_score": sum(1 for s in parts.scores if s < LOW_SCORE),
        "low_score": LOW_SCORE,
    }
    if durations:
        out["duration_ms"] = sum(durations)
    if m.runtime_summary is not None:
        phases = m.runtime_summary.model_dump(exclude_none=True)
        phases.pop("started_at_utc", None)
        phases.pop("finished_at_utc", None)
        out["runtime"] = phases
    if m.retry_summary is not None:
        out["retry_summary"] = m.retry_summary
    return out


def provenance(parts: RunParts) -> dict[str, Any]:
    m = parts.manifest
    out: dict[str, Any] = {"run_id": m.run_id, "schema_version": m.schema_version}
    for key in (
        "title",
        "created_at",
        "definition_source_relpath",
        "prompt_registry_effective_ref",
    ):
        if getattr(m, key) is not None:
            out[key] = getattr(m, key)
    if m.tags:
        out["tags"] = list(m.tags)
    if m.taxonomy is not None:
        out["taxonomy"] = m.taxonomy
    quirks = []
    if is_epoch(m.created_at):
        quirks.append("created_at pinned to the epoch (alwm fixture mode): not a real time")
    for c in parts.cells:
        if c.request.model != c.response.backend_model:
            quirks.append(
                f"cell {c.paths.cell_id}: request model {c.request.model!r} "
                f"but backend_model {c.response.backend_model!r}"
            )
    if quirks:
        out["quirks"] = quirks
    return out


def times(parts: RunParts, manifest_path: Path) -> dict[str, Any]:
    """Real start/end from `runtime_summary`, else a non-epoch `created_at` as the start."""
    m = parts.manifest
    if m.runtime_summary is not None:
        rs = m.runtime_summary
        return {
            "started_at": real_time(
                rs.started_at_utc, manifest_path, "runtime_summary.started_at_utc"
            ),
            "ended_at": real_time(
                rs.finished_at_utc, manifest_path, "runtime_summary.finished_at_utc"
            ),
        }
    return {"started_at": real_time(m.created_at, manifest_path, "created_at")}


def cells(parts: RunParts) -> tuple[Cell, ...]:
    out = []
    for c in parts.cells:
        e = c.evaluation
        cell_metrics: dict[str, Any] = {
            "variant_id": c.response.variant_id,
            "prompt_id": c.response.prompt_id,
            "criteria": dict(e.scores),
        }
        if c.response.duration_ms is not None:
            cell_metrics["duration_ms"] = c.response.duration_ms
        if e.scoring_backend is not None:
            cell_metrics["scoring_backend"] = e.scoring_backend
        score = e.total_weighted_score
        outcome = "passed" if score >= LOW_SCORE else "failed"
        out.append(Cell(key=c.paths.cell_id, outcome=outcome, score=score, metrics=cell_metrics))
    return tuple(out)
