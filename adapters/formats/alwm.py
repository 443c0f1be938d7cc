"""alwm (sempervent/agent-llm-wiki-matrix): benchmark run directories and campaigns.

A benchmark run (`alwm benchmark run`) is a directory: `manifest.json` plus one
`cells/<variant>__<prompt>/` per variant x prompt, holding `request.json`,
`benchmark_response.json` and `evaluation.json`. The run is claimed through its
`manifest.json` (only when a `cells/` directory sits beside it: `examples/v1/manifest.json`
is a schema sample whose cells were never written); the cell files are its members, so
a change to any of them is a new version, and are never claimed on their own.

Mapping: run key = alwm's `run_id`; benchmark = `benchmark_id`; agent / provider /
model = the variants' `agent_stack` / `backend_kind` / `backend_model` (distinct values,
sorted, '+'-joined); config = variants, prompts, rubric, alwm's comparison fingerprints,
budgets and `mock: true` when the mock backend answered (so publication quarantines it);
cells = `evaluation.total_weighted_score` with per-criterion scores (`passed` at or above
alwm's FT-ABS-LOW line, 0.55); score = their mean (unit `mean_total_weighted_score`).
Times come from `runtime_summary` (real wall-clock); `created_at` counts only when it is
not the epoch, where alwm's fixture mode pins it.

A campaign's `manifest.json` produces its member runs (see `alwm_campaign`): member
manifests under `<campaign>/runs/` are not claimed on their own, and `--format alwm` on
one yields the same record the campaign does. `campaign-summary.json` repeats the
manifest's runs and is never claimed. A regenerated tree with the same `run_id` is a
conflict (import --amend records it as a new version).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchledger.adapters.formats import alwm_campaign as campaigns
from benchledger.adapters.formats import alwm_run as run
from benchledger.adapters.formats.alwm_files import loads, read, validate
from benchledger.adapters.formats.alwm_models import CampaignManifest, RunManifest
from benchledger.adapters.formats.common import read_bytes, read_head
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunHeader, RunRecord, SkipRecord

NAME = "alwm"
SYSTEM = "alwm"
MANIFEST = "manifest.json"


def detect(path: Path, head: bytes) -> bool:
    if path.name != MANIFEST or not head.lstrip().startswith(b"{"):
        return False
    if b'"campaign_id"' in head:
        return True
    if b'"benchmark_id"' in head and b'"cells"' in head and b'"evaluation_relpath"' in head:
        return (path.parent / "cells").is_dir() and _campaign_of(path) is None
    return False


def _campaign_of(path: Path) -> Path | None:
    """The campaign manifest a member run's manifest (`<campaign>/runs/runNNNN/`) belongs to."""
    if path.parent.parent.name != "runs":
        return None
    candidate = path.parent.parent.parent / MANIFEST
    head = read_head(candidate)
    return candidate if head is not None and b'"campaign_id"' in head else None


def parse(
    path: Path, data: bytes, defaults: dict[str, Any] | None = None
) -> Iterator[RunRecord | SkipRecord]:
    doc = loads(path, data)
    if not isinstance(doc, dict):
        raise InputFormatError(str(path), "expected a JSON object (an alwm manifest)")
    if "campaign_id" in doc:
        campaign = campaigns.read_campaign(path, doc)
        yield from campaigns.records(path, campaign, defaults or {})
        return
    manifest = run.read_manifest(path, doc)
    owner = _campaign_of(path)
    if owner is not None:
        yield _through_campaign(owner, path, manifest, defaults or {})
        return
    yield _standalone(path, manifest, defaults or {})


def _standalone(path: Path, manifest: RunManifest, defaults: dict[str, Any]) -> RunRecord:
    parts = run.read_run(path, manifest)
    fields: dict[str, Any] = {
        "run_key": manifest.run_id,
        "benchmark": manifest.benchmark_id,
        **run.identity(parts),
        "config": run.config(parts),
        **run.times(parts, path),
        "status": "succeeded",  # alwm writes the manifest last, once every cell is evaluated
        "score": parts.mean,
        "unit": run.UNIT,
        "higher_is_better": True,
        "metrics": run.metrics(parts),
        "provenance": run.provenance(parts),
    }
    header = validate(RunHeader, {**campaigns.UNKNOWN, **defaults, **fields}, path)
    return RunRecord(header=header, cells=run.cells(parts))


def _through_campaign(
    owner: Path, path: Path, manifest: RunManifest, defaults: dict[str, Any]
) -> RunRecord:
    """A member manifest named directly: the record its campaign gives, never a second one."""
    campaign = campaigns.read_campaign(owner, read(owner))
    for i, entry in enumerate(campaign.runs):
        if entry.run_id == manifest.run_id:
            return campaigns.member_record(owner, campaign, i, defaults)
    raise InputFormatError(
        str(path), f"run '{manifest.run_id}' is not listed in {owner}", field="run_id"
    )


def members(path: Path) -> list[Path]:
    """The cell files (and, for a campaign, member manifests) the result is made of."""
    try:
        doc = loads(path, read_bytes(path))
        if not isinstance(doc, dict):
            return []
        found: list[Path] = []
        if "campaign_id" in doc:
            campaign = validate(CampaignManifest, doc, path)
            for i, entry in enumerate(campaign.runs):
                try:
                    member = campaigns.member_manifest_path(path, entry, i)
                except InputFormatError:
                    continue
                if member is not None and member.is_file():
                    found.append(member)
                    found += _run_files(member)
        else:
            owner = _campaign_of(path)
            if owner is not None:
                found.append(owner)
            found += _run_files(path)
        return sorted({p for p in found if p.is_file()})
    except (InputFormatError, OSError, ValueError):
        return []  # parse says what is wrong, naming the file and field


def _run_files(manifest_path: Path) -> list[Path]:
    try:
        manifest = run.read_manifest(manifest_path, read(manifest_path))
        return run.cell_paths(manifest_path.parent, manifest_path, manifest)
    except InputFormatError:
        return []
