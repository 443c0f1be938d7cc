"""alwm campaigns: the campaign manifest states its member runs, and is where they are read.

A campaign (`alwm benchmark campaign run`) writes `manifest.json` with one `runs[]` entry
per planned member, including failed ones, and each succeeded member's benchmark tree
under `runs/runNNNN/`. The campaign manifest is the member runs' primary file: it alone
knows a member failed, the git commit and the fixture flag; the member manifests are read
through it and never claimed on their own, so no run is counted twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchledger.adapters.formats import alwm_run as run
from benchledger.adapters.formats.alwm_files import inside, read, validate
from benchledger.adapters.formats.alwm_models import CampaignManifest, CampaignRunEntry
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunHeader, RunRecord

# A failed member left no cells, so nothing says which agent or model it would have used.
UNKNOWN = {"agent": "alwm", "model": "unknown"}


def read_campaign(path: Path, doc: Any) -> CampaignManifest:
    return validate(CampaignManifest, doc, path)


def records(
    path: Path, campaign: CampaignManifest, defaults: dict[str, Any]
) -> Iterator[RunRecord]:
    """Every member run the campaign states (none for a dry run: it only planned them)."""
    seen: set[str] = set()
    for i, entry in enumerate(campaign.runs):
        if entry.run_id in seen:
            raise InputFormatError(
                str(path), f"run '{entry.run_id}' is listed twice", field=f"runs[{i}].run_id"
            )
        seen.add(entry.run_id)
        yield member_record(path, campaign, i, defaults)


def member_manifest_path(path: Path, entry: CampaignRunEntry, i: int) -> Path | None:
    if entry.manifest_relpath is None:
        return None
    return inside(path.parent, entry.manifest_relpath, path, f"runs[{i}].manifest_relpath")


def member_record(
    path: Path, campaign: CampaignManifest, i: int, defaults: dict[str, Any]
) -> RunRecord:
    entry = campaign.runs[i]
    quirks = _campaign_quirks(campaign)
    fields: dict[str, Any] = {
        "run_key": entry.run_id,
        "benchmark": entry.benchmark_id,
        "config": _config(campaign, entry),
        "status": entry.status,
        "unit": run.UNIT,
        "higher_is_better": True,
        "metrics": {"cells": 0},
    }
    cells: tuple[Any, ...] = ()
    provenance: dict[str, Any] = {"run_id": entry.run_id}
    manifest_path = member_manifest_path(path, entry, i)
    if entry.status == "failed":
        fields["error"] = _failure(campaign, entry)
    else:
        if manifest_path is None:
            raise InputFormatError(
                str(path), "a succeeded run needs its manifest", field=f"runs[{i}].manifest_relpath"
            )
        manifest = run.read_manifest(manifest_path, read(manifest_path))
        for name in ("run_id", "benchmark_id"):
            if getattr(manifest, name) != getattr(entry, name):
                raise InputFormatError(
                    str(path),
                    f"is {getattr(entry, name)!r} but {manifest_path} says "
                    f"{getattr(manifest, name)!r}",
                    field=f"runs[{i}].{name}",
                )
        parts = run.read_run(manifest_path, manifest)
        fields.update(run.identity(parts))
        fields["config"] = {**run.config(parts), **fields["config"]}
        fields.update(run.times(parts, manifest_path))
        fields["score"] = parts.mean
        fields["metrics"] = run.metrics(parts)
        provenance = run.provenance(parts)
        quirks += _member_quirks(entry, parts)
        cells = run.cells(parts)
    if entry.duration_seconds is not None:
        fields["metrics"]["duration_seconds"] = entry.duration_seconds
    provenance["campaign"] = _campaign_provenance(campaign, entry)
    provenance["published"] = {
        "status": entry.status,
        "cell_count": entry.cell_count,
        "mean_total_weighted_score": entry.mean_total_weighted_score,
    }
    quirks = provenance.pop("quirks", []) + quirks
    if quirks:
        provenance["quirks"] = quirks
    fields["provenance"] = provenance
    header = validate(RunHeader, {**UNKNOWN, **defaults, **fields}, path, f"runs[{i}].")
    return RunRecord(header=header, cells=cells)


def _config(campaign: CampaignManifest, entry: CampaignRunEntry) -> dict[str, Any]:
    """The campaign's axes for this member (its suite, scoring, provider, browser, flags)."""
    out: dict[str, Any] = {}
    for key in (
        "suite_ref",
        "eval_scoring_label",
        "provider_config_ref",
        "browser_config_applied",
        "execution_modes_filter",
    ):
        if getattr(entry, key) is not None:
            out[key] = getattr(entry, key)
    if entry.comparison_fingerprints is not None:
        out["comparison_fingerprints"] = dict(entry.comparison_fingerprints)
    out["fixture_mode_force_mock"] = campaign.fixture_mode_force_mock
    if campaign.fixture_mode_force_mock:
        out["mock"] = True  # the campaign forced alwm's mock backend on every member
    return out


def _failure(campaign: CampaignManifest, entry: CampaignRunEntry) -> str:
    if entry.error:
        return entry.error
    for failure in campaign.failures:
        if failure.run_index == entry.run_index:
            return failure.message
    return "the campaign reports this run failed (no message)"


def _campaign_provenance(campaign: CampaignManifest, entry: CampaignRunEntry) -> dict[str, Any]:
    out: dict[str, Any] = {"campaign_id": campaign.campaign_id, "run_index": entry.run_index}
    for key in (
        "campaign_version",
        "title",
        "created_at",
        "started_at_utc",
        "finished_at_utc",
        "git_commit_sha",
        "git_describe",
        "campaign_definition_fingerprint",
        "campaign_experiment_fingerprints",
    ):
        if getattr(campaign, key) is not None:
            out[key] = getattr(campaign, key)
    out["dry_run"] = campaign.dry_run
    out["fixture_mode_force_mock"] = campaign.fixture_mode_force_mock
    if entry.manifest_relpath is not None:
        out["manifest_relpath"] = entry.manifest_relpath
    return out


def _campaign_quirks(campaign: CampaignManifest) -> list[str]:
    """Where the campaign's own totals disagree with its runs[]."""
    quirks = []
    statuses = [e.status for e in campaign.runs]
    if campaign.run_count != len(statuses):
        quirks.append(f"campaign run_count {campaign.run_count} but {len(statuses)} runs listed")
    summary = campaign.run_status_summary
    succeeded, failed = statuses.count("succeeded"), statuses.count("failed")
    if summary is not None and (summary.succeeded, summary.failed) != (succeeded, failed):
        quirks.append(
            f"campaign run_status_summary {summary.succeeded} succeeded / {summary.failed} "
            f"failed but runs[] has {succeeded} / {failed}"
        )
    return quirks


def _member_quirks(entry: CampaignRunEntry, parts: run.RunParts) -> list[str]:
    """Where the campaign's published numbers for a member disagree with its cells."""
    quirks = []
    if entry.cell_count is not None and entry.cell_count != len(parts.cells):
        quirks.append(f"published cell_count {entry.cell_count} but {len(parts.cells)} cells")
    published, recomputed = entry.mean_total_weighted_score, parts.mean
    if (published is None) != (recomputed is None) or (
        published is not None and recomputed is not None and abs(published - recomputed) > 1e-9
    ):
        quirks.append(
            f"published mean_total_weighted_score {published} but the cells give {recomputed}"
        )
    stated, listed = parts.manifest.comparison_fingerprints, entry.comparison_fingerprints
    if stated is not None and listed is not None and dict(stated) != dict(listed):
        quirks.append("campaign comparison_fingerprints differ from the member manifest's")
    return quirks
