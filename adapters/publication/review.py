"""Review packages: a human sign-off on a scope at one ledger position, and its check.

The package (`manifest.json`, `scorecard.md`) keeps the fields of the ElizaOS
orchestrator's review-package and adds the ledger position and head hash it was
made at; the `ReviewRecorded` event names the sha256 of the manifest it wrote,
so a package can later be matched to its event and to the log as it is now.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchledger.adapters.execution.secrets import HostPaths
from benchledger.adapters.publication import gates
from benchledger.adapters.publication.publication import Publication
from benchledger.adapters.publication.scorecard import scorecard
from benchledger.domain.signatures import sha256_hex

if TYPE_CHECKING:
    from benchledger.domain.publishing import Publishing

GENESIS = "0" * 64
TOKENS = ("input_tokens", "output_tokens", "total_tokens", "cached_tokens")


@dataclass(frozen=True)
class Scope:
    include: list[str]
    exclude: list[str]
    tolerance: float | None
    # A scoped partial matrix: the operator narrowed the package with
    # --include-benchmarks / --exclude-benchmarks, and the manifest says so.
    declared: bool = False

    def covers(self, benchmark: str) -> bool:
        return (not self.include or benchmark in self.include) and benchmark not in self.exclude


@dataclass(frozen=True)
class ReviewReceipt:
    review_id: str
    ok: bool
    blocking_findings: list[dict[str, Any]]
    manifest_sha256: str
    position: int
    head_sha256: str
    out_dir: Path


def git_sha() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


def _utc(moment: str | None) -> str | None:
    if not moment:
        return None
    parsed = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _latest_row(row: dict[str, Any]) -> dict[str, Any]:
    tokens: dict[str, Any] = row["tokens"] if isinstance(row.get("tokens"), dict) else {}
    extras = {**(row.get("config") or {}), **(row.get("metrics") or {})}
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{row['benchmark']}__{row['agent']}")
    return {
        "file": f"{name}.json",
        "benchmark_id": row["benchmark"],
        "agent": row["agent"],
        "status": row.get("status"),
        "provider": row.get("provider"),
        "model": row.get("model"),
        "run_id": row.get("run_id"),
        "score": row.get("score"),
        "unit": row.get("unit"),
        "higher_is_better": row.get("higher_is_better"),
        "output_dir": row.get("run_dir"),
        "trajectory_dir": extras.get("trajectory_dir"),
        **{k: tokens.get(k) for k in TOKENS},
    }


def gate_blocking(verdicts: dict[str, dict[str, Any]], latest_rows: int) -> list[dict[str, Any]]:
    """What in the gates stops a sign-off: readiness (and calibration) findings, no rows."""
    found = [("latest_readiness", f) for f in verdicts["readiness"]["findings"]]
    found += [("calibration", f) for f in verdicts.get("calibration", {}).get("findings", [])]
    if latest_rows == 0:
        found.append(("review", {"scope": "latest", "reason": "no_latest_rows", "value": "0"}))
    return [_finding(gate, f) for gate, f in found]


def inventory_blocking(check: dict[str, Any], scope: Scope) -> list[dict[str, Any]]:
    """The inventory gaps that stop a sign-off, as one finding: every gap of the registry,
    as the orchestrator's review-package requires, unless the package is a scoped partial
    matrix; then only the gaps of benchmarks in its scope. An inventory not checked (no
    registry) blocks nothing: the manifest says it was not checked."""
    if "not checked" in check:
        return []
    gaps = [
        g for g in check.get("gap_list", []) if not scope.declared or scope.covers(g["benchmark"])
    ]
    if not gaps:
        return []
    names = ", ".join(dict.fromkeys(g["benchmark"] for g in gaps))
    # The orchestrator's quirk, kept: the code in `scope`, the text in `reason`.
    return [
        {
            "gate": "inventory",
            "scope": "registry_entries_without_adapters",
            "reason": "registry entries benchledger cannot run as declared",
            "value": names,
        }
    ]


def _blocking(
    note: str,
    verdicts: dict[str, dict[str, Any]],
    latest_rows: int,
    inventory: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """What stops a sign-off: inventory gaps, the gates' blockers, and no note."""
    found = [*inventory, *gate_blocking(verdicts, latest_rows)]
    if not note.strip():
        found.append(
            _finding("review", {"scope": "reviewer_note", "reason": "missing_reviewer_note"})
        )
    return found


def _finding(gate: str, finding: dict[str, Any]) -> dict[str, Any]:
    return {"gate": gate, **{k: finding.get(k, "") for k in ("scope", "reason", "value")}}


def not_checked(reason: str) -> dict[str, str]:
    """A check the package could not run: said so, never a figure it did not see."""
    return {"not checked": reason}


def _figure(check: dict[str, Any], key: str) -> Any:
    """A check's figure for the summary: its count, or why it was not checked."""
    if "not checked" in check:
        return dict(check)
    value = check[key]
    return len(value) if isinstance(value, list) else value


SKIPPED: dict[str, Any] = {
    "ok": None,
    "findings": [],
    "verdict_id": None,
    "skipped": "no calibration baselines",
}


def _gate_entry(verdict: dict[str, Any] | None) -> dict[str, Any]:
    return (
        dict(SKIPPED)
        if verdict is None
        else {k: verdict[k] for k in ("ok", "findings", "verdict_id")}
    )


def build_manifest(
    pub: Publication,
    scope: Scope,
    *,
    reviewer: str,
    note: str,
    verdicts: dict[str, dict[str, Any]],
    blocking: list[dict[str, Any]],
    checks: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """The manifest; `checks` holds what preflight, the inventory and verify-artifacts
    saw (or why each was not run): the summary's figures come from them alone."""
    readiness = verdicts["readiness"]
    return {
        "schema_version": 1,
        "generated_at": _utc(pub.generated_at),
        "git_sha": git_sha(),
        "reviewed_by": reviewer,
        "reviewer_note": note,
        "latest_dir": None,
        "filters": {
            "include_benchmarks": scope.include,
            "exclude_benchmarks": scope.exclude,
            "runtime_gates_checked": False,
            "tolerance": gates.effective_tolerance("readiness", scope.tolerance),
            "scoped_partial_matrix": scope.declared,
        },
        "summary": {
            "ok": not blocking,
            "latest_rows": len(pub.latest),
            "inventory_gaps": _figure(checks["inventory"], "gaps"),
            "readiness_findings": len(readiness["findings"]),
            "artifact_offenders": _figure(checks["verify_artifacts"], "offenders"),
            "blocking_findings": len(blocking),
        },
        "gates": {
            "latest_readiness": {
                **_gate_entry(readiness),
                "tolerance": gates.effective_tolerance("readiness", scope.tolerance),
            },
            "publishability": _gate_entry(verdicts["publishability"]),
            "comparability": _gate_entry(verdicts["comparability"]),
            "calibration": _gate_entry(verdicts.get("calibration")),
        },
        "checks": checks,
        "latest_rows": [_latest_row(row) for _, row in sorted(pub.latest.items())],
        "blocking_findings": blocking,
        "ledger_position": pub.position,
        "ledger_head_sha256": pub.head_sha256,
        "ledger_checkpoint": pub.checkpoint,
    }


def write_atomic(path: Path, data: bytes) -> None:
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def evaluate_gates(
    ledger: Publishing,
    pub: Publication,
    scope: Scope,
    *,
    actor: str,
    runtime: Sequence[dict[str, Any]] = (),
) -> dict[str, dict[str, Any]]:
    """Evaluate and record the gates a review needs: readiness (with the `runtime` gate
    findings of the reviewed benchmarks), publishability, comparability, and calibration
    once there are baselines."""
    params = {
        "include": scope.include,
        "exclude": scope.exclude,
        "as_of": None,
        "review": True,
        "selection": pub.selection,
    }
    names = ["readiness", "publishability", "comparability"]
    names += ["calibration"] if pub.baselines else []
    return {
        name: gates.record(
            ledger,
            pub,
            name,
            tolerance=scope.tolerance,
            params=params,
            actor=actor,
            extra=runtime if name == "readiness" else (),
        )
        for name in names
    }


def review(
    ledger: Publishing,
    pub: Publication,
    scope: Scope,
    *,
    reviewer: str,
    note: str,
    actor: str,
    out_dir: Path,
    checks: dict[str, dict[str, Any]] | None = None,
    verdicts: dict[str, dict[str, Any]] | None = None,
) -> ReviewReceipt:
    """Evaluate and record the gates (unless given, as the review chain evaluated them),
    write the package, then record the review."""
    if verdicts is None:
        verdicts = evaluate_gates(ledger, pub, scope, actor=actor)
    # The package is meant to be committed: the checks name no host path.
    checks = HostPaths(Path.cwd()).scrub_obj(
        {
            "preflight": not_checked("not run"),
            "inventory": not_checked("no registry"),
            "verify_artifacts": not_checked("not run"),
            **(checks or {}),
        }
    )
    inventory = inventory_blocking(checks["inventory"], scope)
    blocking = _blocking(note, verdicts, len(pub.latest), inventory)
    manifest = build_manifest(
        pub,
        scope,
        reviewer=reviewer,
        note=note,
        verdicts=verdicts,
        blocking=blocking,
        checks=checks,
    )
    card = scorecard(manifest).encode()
    manifest["scorecard_sha256"] = sha256_hex(card)
    data = (json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / "scorecard.md", card)
    write_atomic(out_dir / "manifest.json", data)
    digest = sha256_hex(data)
    review_id = ledger.record_review(
        reviewer=reviewer,
        note=note,
        scope={
            "include": scope.include,
            "exclude": scope.exclude,
            "tolerance": scope.tolerance,
            "scoped_partial_matrix": scope.declared,
        },
        ok=not blocking,
        blocking_findings=len(blocking),
        position=pub.position,
        head_sha256=pub.head_sha256,
        gate_verdict_ids=[v["verdict_id"] for v in verdicts.values()],
        manifest_sha256=digest,
    )
    return ReviewReceipt(
        review_id=str(review_id),
        ok=not blocking,
        blocking_findings=blocking,
        manifest_sha256=digest,
        position=pub.position,
        head_sha256=pub.head_sha256,
        out_dir=out_dir,
    )
