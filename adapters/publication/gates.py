"""The validation gates: pure checks over one `Publication`, each finding a plain dict.

The Publication is the ledger's at one position, or a latest/ directory on disk read
into one (`latest_dir.py`): the same checks either way. The runtime gate is the one
gate over the host instead (`runtime_findings`, from `adapters.execution.runtime`).

A finding is `{scope, reason, value, ...}` with `value` at most 180 characters.
Findings come in a stable order (benchmark, then agent), so two evaluations of
the same ledger position give the same verdict byte for byte.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from uuid import UUID

from benchledger.adapters.execution.runtime import Missing
from benchledger.adapters.publication import code_agent_contract
from benchledger.adapters.publication.publication import Publication
from benchledger.domain.ledger import Ledger
from benchledger.domain.publication import (
    CALIBRATION_EXPECTED,
    agent_marker,
    identity_marker,
    non_real_marker,
)

Finding = dict[str, Any]
GATES = ("publishability", "comparability", "readiness", "calibration")
# The gate over this host rather than the latest rows: its findings come from probing.
RUNTIME = "runtime"
DEFAULT_TOLERANCE = {"comparability": 0.08, "readiness": 0.08, "calibration": 1e-6}
VALUE_LIMIT = 180


def clip(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= VALUE_LIMIT else text[: VALUE_LIMIT - 1] + "…"


def finding(scope: str, reason: str, value: Any, **detail: Any) -> Finding:
    return {"scope": scope, "reason": reason, "value": clip(value), **detail}


def _finite(score: Any) -> bool:
    return isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score)


def _marker_path(payload: Any, path: str = "") -> str:
    """Where in a payload its non-real marker sits, e.g. `config.mock=true`."""
    if isinstance(payload, dict):
        for key, child in payload.items():
            if non_real_marker({key: child}) is not None:
                return _marker_path(child, f"{path}.{key}" if path else str(key))
    elif isinstance(payload, list | tuple):
        for index, child in enumerate(payload):
            if non_real_marker([child]) is not None:
                return _marker_path(child, f"{path}[{index}]")
    return f"{path}={payload!r}" if not isinstance(payload, dict | list) else path


def publishability(pub: Publication) -> list[Finding]:
    """Every latest row must be a succeeded, scored, real result (not demo data: `latest`
    shows the demo's rows for browsing, this gate never passes them); every key must have
    one (except an agent the benchmark is not compatible with)."""
    out: list[Finding] = []
    keys = sorted(set(pub.latest) | set(pub.quarantine))
    for key in keys:
        scope = "::".join(key)
        row = pub.latest.get(key)
        if row is None:
            held = pub.quarantine[key]
            if held.get("quarantine_reason") == "incompatible_harness" or pub.unsupported(*key):
                continue  # the agent cannot run the benchmark: no row is expected
            out.append(
                finding(
                    scope,
                    "no_publishable_row",
                    held.get("quarantine_reason"),
                    run_id=held.get("run_id"),
                )
            )
            continue
        if row.get("status") != "succeeded":
            out.append(
                finding(scope, "latest_row_not_succeeded", row.get("status"), run_id=row["run_id"])
            )
        if not _finite(row.get("score")):
            out.append(
                finding(
                    scope,
                    "latest_row_missing_numeric_score",
                    repr(row.get("score")),
                    run_id=row["run_id"],
                )
            )
        label = _label_marker(key[1], row)
        if label is not None:
            out.append(finding(scope, label, label_value(key[1], row), run_id=row["run_id"]))
        demo = pub.group_marker(row)
        if demo is not None:
            group = f"run group {row.get('run_group_id')}"
            out.append(finding(scope, demo, group, run_id=row["run_id"]))
        payload = {k: row.get(k) for k in ("config", "metrics", "error")}
        reason = non_real_marker(payload)
        if reason is not None:
            out.append(finding(scope, reason, _marker_path(payload), run_id=row["run_id"]))
    if not pub.latest:
        out.append(finding("latest", "no_selected_latest_rows", "0 latest rows in scope"))
    return out


def _label_marker(agent: str, row: dict[str, Any]) -> str | None:
    """A label that names a stand-in: the agent's (`mock`, `smoke`...), or a mock model.
    The ledger's `latest` never holds such a row; a directory on disk may."""
    marker = agent_marker(agent)
    if marker is None and identity_marker("-", row.get("provider"), row.get("model")) == (
        "mock_model"
    ):
        marker = "mock_model"
    return marker


def label_value(agent: str, row: dict[str, Any]) -> str:
    if agent_marker(agent) is not None:
        return f"agent={agent}"
    return f"provider={row.get('provider')} model={row.get('model')}"


def runtime_findings(missing: Iterable[Missing]) -> list[Finding]:
    """One finding per runtime-gate requirement this host does not meet (`Missing`s)."""
    return [
        finding(
            m.benchmark,
            "runtime_gate_blocked",
            f"{m.requirement}: {m.why}",
            requirement=m.requirement,
        )
        for m in missing
    ]


def _real_benchmarks(pub: Publication) -> list[str]:
    return sorted({b for b, _ in set(pub.latest) | set(pub.quarantine)})


def comparability(pub: Publication, tolerance: float | None = None) -> list[Finding]:
    """The required rows of a benchmark must all be there, share a comparison signature
    (and, from a subscription provider, one run group) and agree within tolerance."""
    tol = DEFAULT_TOLERANCE["comparability"] if tolerance is None else tolerance
    benchmarks = _real_benchmarks(pub)
    if not benchmarks:
        return [finding("benchmarks", "no_selected_benchmarks", "0 benchmarks in scope")]
    out: list[Finding] = []
    matrix = pub.matrix()["benchmarks"]
    for benchmark in benchmarks:
        required = pub.required_agents(benchmark)
        rows = {a: pub.latest[(benchmark, a)] for a in required if (benchmark, a) in pub.latest}
        missing = [a for a in required if a not in rows]
        if missing:
            out.append(
                finding(
                    benchmark, "missing_required_latest_rows", ",".join(missing), agents=missing
                )
            )
        cohorts: dict[str, dict[str, float]] = {}
        for agent, row in rows.items():
            if _finite(row.get("score")):
                cohorts.setdefault(str(row.get("comparison_signature")), {})[agent] = row["score"]
        if len({str(r.get("comparison_signature")) for r in rows.values()}) > 1:
            signatures = ",".join(
                f"{a}={str(r.get('comparison_signature'))[:10]}" for a, r in rows.items()
            )
            out.append(finding(benchmark, "mixed_comparison_signatures", signatures))
        cohort_reason = matrix.get(benchmark, {}).get("cohort_reason")
        if cohort_reason is not None:
            groups = ",".join(f"{a}={r.get('run_group_id')}" for a, r in rows.items())
            out.append(finding(benchmark, cohort_reason, groups))
        for signature, scores in sorted(cohorts.items()):
            if len(scores) < 2:
                continue
            high = max(scores, key=lambda a: (scores[a], a))
            low = min(scores, key=lambda a: (scores[a], a))
            if not math.isclose(scores[high], scores[low], rel_tol=tol, abs_tol=tol):
                spread = scores[high] - scores[low]
                out.append(
                    finding(
                        benchmark,
                        "score_spread_exceeds_tolerance",
                        f"{high}={scores[high]:.6g} {low}={scores[low]:.6g} "
                        f"spread={spread:.6g} tolerance={tol:g}",
                        comparison_signature=signature,
                        spread=spread,
                        tolerance=tol,
                    )
                )
    return out


def readiness(
    pub: Publication, tolerance: float | None = None, extra: Sequence[Finding] = ()
) -> list[Finding]:
    """Every required matrix cell succeeded, and the latest rows publishable and comparable;
    then `extra`: what a directory says of itself (`missing_matrix_contract`) and the
    runtime gates of the benchmarks in scope (scope `runtime_gate:<benchmark>`)."""
    out: list[Finding] = []
    for benchmark, entry in pub.matrix()["benchmarks"].items():
        for harness, cell in entry["cells"].items():
            if cell["required"] and cell["state"] != "succeeded":
                out.append(
                    finding(
                        f"{benchmark}::{harness}",
                        str(cell["state"]),
                        cell["status"],
                        run_id=cell["run_id"],
                    )
                )
    for item in publishability(pub):
        out.append({**item, "scope": f"publishability:{item['scope']}"})
    for item in comparability(pub, tolerance):
        out.append({**item, "scope": f"comparability:{item['scope']}"})
    return out + list(extra)


def calibration(pub: Publication, tolerance: float | None = None) -> list[Finding]:
    """Calibration harnesses score as designed, and real scores are not a flat pattern."""
    tol = DEFAULT_TOLERANCE["calibration"] if tolerance is None else tolerance
    out: list[Finding] = []
    for benchmark in sorted({b for b, _ in pub.latest}):
        for agent, expected in sorted(CALIBRATION_EXPECTED.items()):
            scope = f"{benchmark}::{agent}"
            row = pub.baselines.get((benchmark, agent))
            if row is None:
                out.append(finding(scope, "calibration_missing", f"expected {expected:g}"))
            elif not _finite(row.get("score")) or not math.isclose(
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
        scores = {a: r["score"] for (b, a), r in sorted(pub.latest.items()) if b == benchmark}
        pattern = _flat_pattern([s for s in scores.values() if _finite(s)], tol)
        if pattern is not None:
            listing = ",".join(f"{a}={s:.6g}" for a, s in scores.items())
            out.append(finding(benchmark, pattern, listing))
    return out


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


def record(
    ledger: Ledger,
    pub: Publication,
    gate: str,
    *,
    tolerance: float | None,
    params: dict[str, Any],
    actor: str,
    extra: Sequence[Finding] = (),
) -> dict[str, Any]:
    """Evaluate one gate and append its verdict; the verdict as `gate --json` prints it."""
    findings = evaluate(pub, gate, tolerance, extra)
    used = effective_tolerance(gate, tolerance) if gate not in ("publishability", RUNTIME) else None
    verdict_id: UUID = ledger.record_gate(
        gate=gate,
        params={**params, "tolerance": used},
        ok=not findings,
        findings=findings,
        position=pub.position,
        head_sha256=pub.head_sha256,
        actor=actor,
    )
    return {
        "gate": gate,
        "ok": not findings,
        "findings": findings,
        "position": pub.position,
        "head_sha256": pub.head_sha256,
        "verdict_id": str(verdict_id),
    }
