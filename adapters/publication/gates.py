"""The validation gates: pure checks over one `Publication`, each finding a plain dict.

The Publication is the ledger's at one position, or a latest/ directory on disk read
into one (`latest_dir.py`): the same checks either way. The runtime gate is the one
gate over the host instead (`runtime_findings`, from `adapters.execution.runtime`).

A finding is `{scope, reason, value, ...}` (`gate_findings.py`): publishability,
comparability and readiness name and count theirs as the orchestrator's validators do on
the same rows (`extra: false`) and label benchledger's own checks `extra: true`.
Findings come in a stable order, so two evaluations of the same ledger position give the
same verdict byte for byte.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from benchledger.adapters.publication import code_agent_contract
from benchledger.adapters.publication.gate_comparability import comparability, compared_benchmarks
from benchledger.adapters.publication.gate_findings import Finding, clip, counts, finite, named
from benchledger.adapters.publication.gate_publishability import publishability
from benchledger.adapters.publication.gate_readiness import readiness
from benchledger.adapters.publication.publication import Publication
from benchledger.domain.publication import CALIBRATION_EXPECTED

if TYPE_CHECKING:
    from benchledger.adapters.execution.runtime import Missing
    from benchledger.domain.publishing import Publishing

__all__ = [
    "Finding",
    "comparability",
    "counts",
    "publishability",
    "readiness",
    "runtime_findings",
]

GATES = ("publishability", "comparability", "readiness", "calibration")
# The gate over this host rather than the latest rows: its findings come from probing.
RUNTIME = "runtime"
DEFAULT_TOLERANCE = {"comparability": 0.08, "readiness": 0.08, "calibration": 1e-6}


def runtime_findings(missing: Iterable[Missing]) -> list[Finding]:
    """One finding per runtime-gate requirement this host does not meet (`Missing`s):
    the orchestrator's `runtime_gate_blocked`, though of the registry's requirements."""
    return [
        named(
            m.benchmark,
            "runtime_gate_blocked",
            clip(f"{m.requirement}: {m.why}"),
            requirement=m.requirement,
        )
        for m in missing
    ]


def calibration(pub: Publication, tolerance: float | None = None) -> list[Finding]:
    """Calibration harnesses score as designed, and real scores are not a flat pattern."""
    tol = DEFAULT_TOLERANCE["calibration"] if tolerance is None else tolerance
    out: list[Finding] = []
    # Each benchmark's latest scores by agent, benchmarks and agents in sorted order.
    by_benchmark: dict[str, dict[str, Any]] = {}
    for (b, a), r in sorted(pub.latest.items()):
        by_benchmark.setdefault(b, {})[a] = r["score"]
    for benchmark, scores in by_benchmark.items():
        for agent, expected in sorted(CALIBRATION_EXPECTED.items()):
            scope = f"{benchmark}::{agent}"
            row = pub.baselines.get((benchmark, agent))
            if row is None:
                out.append(finding(scope, "calibration_missing", f"expected {expected:g}"))
            elif not finite(row.get("score")) or not math.isclose(
                row["score"], expected, rel_tol=tol, abs_tol=tol
            ):
                out.append(
                    finding(
                        scope,
                        "calibration_mismatch",
                        f"expected {expected:g}, got {row.get('score')!r}",
                        run_id=row.get("run_id"),
                    )
                )
        pattern = _flat_pattern([s for s in scores.values() if finite(s)], tol)
        if pattern is not None:
            listing = ",".join(f"{a}={s:.6g}" for a, s in scores.items())
            out.append(finding(benchmark, pattern, listing))
    return out


def finding(scope: str, reason: str, value: Any, **detail: Any) -> Finding:
    """A calibration finding (the orchestrator's calibration report has none to match)."""
    return {"scope": scope, "reason": reason, "value": clip(value), **detail}


def _flat_pattern(scores: list[float], tol: float) -> str | None:
    if not scores:
        return None
    if all(math.isclose(s, 0.0, abs_tol=tol) for s in scores):
        return "all_real_zero"
    if all(math.isclose(s, 1.0, rel_tol=tol, abs_tol=tol) for s in scores):
        return "all_real_one"
    if len(scores) >= 2 and all(
        math.isclose(s, scores[0], rel_tol=tol, abs_tol=tol) for s in scores
    ):
        return "all_real_equal"
    return None


CHECKS: dict[str, Callable[[Publication, float | None, Sequence[Finding]], list[Finding]]] = {
    "publishability": lambda pub, _tolerance, _extra: publishability(pub),
    "comparability": lambda pub, tolerance, _extra: comparability(pub, tolerance),
    "readiness": readiness,
    "calibration": lambda pub, tolerance, _extra: calibration(pub, tolerance),
    # The host's runtime gates: their findings are all given (`runtime_findings`).
    RUNTIME: lambda _pub, _tolerance, extra: list(extra),
}


def evaluate(
    pub: Publication, gate: str, tolerance: float | None = None, extra: Sequence[Finding] = ()
) -> list[Finding]:
    """The gate's findings; `extra` is what readiness adds, or the runtime gate's own;
    then the code-agent row contract's, for a directory's code-agent rows."""
    return CHECKS[gate](pub, tolerance, extra) + code_agent_contract.findings(gate, pub)


def effective_tolerance(gate: str, tolerance: float | None) -> float | None:
    return DEFAULT_TOLERANCE.get(gate) if tolerance is None else tolerance


def report_keys(pub: Publication, gate: str, tolerance: float | None) -> dict[str, Any]:
    """The keys the orchestrator's validator of this gate reports besides its findings."""
    if gate == "publishability":
        return {"latest_dir": pub.latest_dir, "checked_files": pub.checked_files}
    if gate == "comparability":
        return {
            "latest_dir": pub.latest_dir,
            "checked_benchmarks": len(compared_benchmarks(pub)),
            "tolerance": effective_tolerance(gate, tolerance),
        }
    if gate == "readiness":
        return {"latest_dir": pub.latest_dir, "tolerance": effective_tolerance(gate, tolerance)}
    return {}


def check(
    pub: Publication,
    gate: str,
    *,
    tolerance: float | None,
    extra: Sequence[Finding] = (),
) -> dict[str, Any]:
    """Evaluate one gate and append nothing: the verdict as `gate --json` prints it (with
    the keys of the orchestrator's report of the same gate), its `verdict_id` None."""
    findings = evaluate(pub, gate, tolerance, extra)
    return {
        "gate": gate,
        **report_keys(pub, gate, tolerance),
        "ok": not findings,
        "findings": findings,
        "position": pub.position,
        "head_sha256": pub.head_sha256,
        "verdict_id": None,
    }


def record(
    ledger: Publishing,
    pub: Publication,
    gate: str,
    *,
    tolerance: float | None,
    params: dict[str, Any],
    actor: str,
    extra: Sequence[Finding] = (),
) -> dict[str, Any]:
    """Evaluate one gate and append its verdict (`check`, then the verdict's id)."""
    verdict = check(pub, gate, tolerance=tolerance, extra=extra)
    used = effective_tolerance(gate, tolerance) if gate not in ("publishability", RUNTIME) else None
    verdict_id: UUID = ledger.record_gate(
        gate=gate,
        params={**params, "tolerance": used},
        ok=verdict["ok"],
        findings=verdict["findings"],
        position=pub.position,
        head_sha256=pub.head_sha256,
        actor=actor,
    )
    return {**verdict, "verdict_id": str(verdict_id)}
