"""HyperliquidBench run directories (`runs/<agent>-<YYYYMMDD-HHMMSS>/`): eval_score.json
plus its run_meta.json, one run each; the per-domain contributions are the cells.

run_meta's `demoMode` / `llmDryRun` are kept in metrics as `demo_mode` / `dry_run`,
so the publication rules keep demo and dry runs out of `latest`. Its timestamp has no
time zone (the directory name and the timestamp differ by the author's UTC offset),
so it is provenance, not a start time.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchledger.adapters.formats.common import read_json as load_json
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell, RunHeader, RunRecord, RunStatus

BENCHMARK = "hyperliquid_bench"
SCORE_FILE = "eval_score.json"
META_FILE = "run_meta.json"
RUN_DIR = re.compile(r"^(?P<agent>.+)-\d{8}-\d{6}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class Domain(_Strict):
    name: str = Field(min_length=1)
    weight: float
    uniqueSignatures: list[str]
    uniqueCount: int
    contribution: float


class EvalScore(_Strict):
    finalScore: float
    base: float
    bonus: float
    penalty: float
    perDomain: list[Domain]
    uniqueSignatures: list[str]
    capPerSignature: int | None = None
    windowMs: int | None = None
    unmappedSignatures: list[str] = []


class RunMeta(_Strict):
    demoMode: bool | None = None
    llmDryRun: bool | None = None
    network: str | None = None
    timestamp: str | None = None
    effectTimeoutMs: int | None = None
    plan: dict[str, Any] | None = None


def meta_file(path: Path) -> Path:
    return path.with_name(META_FILE)


def _validated(model: type[_Strict], path: Path, doc: Any) -> Any:
    if not isinstance(doc, dict):
        raise InputFormatError(str(path), "expected a JSON object")
    try:
        return model.model_validate(doc)
    except ValidationError as e:
        first = e.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise InputFormatError(str(path), first["msg"], field=field) from None


def parse(path: Path, data: bytes, defaults: dict[str, Any]) -> RunRecord:
    score: EvalScore = _validated(EvalScore, path, load_json(path, data))
    meta_path = meta_file(path)
    meta: RunMeta | None = None
    if meta_path.is_file():
        meta = _validated(RunMeta, meta_path, load_json(meta_path))
    run_dir = path.parent.name
    named = RUN_DIR.match(run_dir)
    agent = named["agent"] if named else defaults.get("agent")
    if not agent:
        raise InputFormatError(
            str(path), f"run directory '{run_dir}' is not <agent>-<YYYYMMDD-HHMMSS>"
        )
    for value, field in ((score.finalScore, "finalScore"), (score.base, "base")):
        if not math.isfinite(value):
            raise InputFormatError(str(path), "must be a finite number", field=field)
    metrics: dict[str, Any] = {
        "base": score.base,
        "bonus": score.bonus,
        "penalty": score.penalty,
        "unique_signatures": len(score.uniqueSignatures),
        "unmapped_signatures": len(score.unmappedSignatures),
        "cap_per_signature": score.capPerSignature,
        "window_ms": score.windowMs,
    }
    provenance: dict[str, Any] = {"run_dir": run_dir}
    if meta is None:
        provenance["run_meta_missing"] = True
    else:
        metrics["demo_mode"] = meta.demoMode
        metrics["dry_run"] = meta.llmDryRun
        metrics["network"] = meta.network
        metrics["plan_steps"] = len((meta.plan or {}).get("steps") or [])
        provenance["timestamp"] = meta.timestamp
    recomputed = score.base + score.bonus - score.penalty
    if not math.isclose(recomputed, score.finalScore, abs_tol=1e-9):
        provenance["final_score_mismatch"] = {"stated": score.finalScore, "recomputed": recomputed}
    contributions = sum(d.contribution for d in score.perDomain)
    if not math.isclose(contributions, score.base, abs_tol=1e-9):
        provenance["base_mismatch"] = {"stated": score.base, "recomputed": contributions}
    names = [d.name for d in score.perDomain]
    if len(set(names)) != len(names):
        raise InputFormatError(str(path), "a domain name appears twice", field="perDomain")
    cells = tuple(_cell(path, i, d) for i, d in enumerate(score.perDomain))
    try:
        header = RunHeader(
            run_key=f"{BENCHMARK}/{run_dir}",
            benchmark=BENCHMARK,
            agent=agent,
            provider=str(defaults.get("provider", "")),
            model=str(defaults.get("model") or "unknown"),
            status=RunStatus.SUCCEEDED,
            score=score.finalScore,
            unit="points",
            higher_is_better=True,
            metrics=metrics,
            provenance=provenance,
        )
    except ValidationError as e:
        first = e.errors()[0]
        raise InputFormatError(str(path), first["msg"], field=str(first["loc"][0])) from None
    return RunRecord(header=header, cells=cells)


def _cell(path: Path, i: int, domain: Domain) -> Cell:
    if not math.isfinite(domain.contribution):
        raise InputFormatError(
            str(path), "must be a finite number", field=f"perDomain.{i}.contribution"
        )
    return Cell(
        key=domain.name,
        outcome="passed" if domain.uniqueCount > 0 else "failed",
        score=domain.contribution,
        metrics={
            "weight": domain.weight,
            "unique_count": domain.uniqueCount,
            "unique_signatures": domain.uniqueSignatures,
        },
    )
