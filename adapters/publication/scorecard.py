"""A review package's `scorecard.md`: its manifest as a reviewer reads it."""

from __future__ import annotations

from typing import Any


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]


def _shown(figure: Any) -> str:
    if isinstance(figure, dict) and "not checked" in figure:
        return f"not checked: {figure['not checked']}"
    return str(figure)


def _preflight(check: dict[str, Any]) -> str:
    if "not checked" in check:
        return _shown(check)
    return "ok" if check["ok"] else f"blocked (exit {check['exit_code']})"


def scorecard(manifest: dict[str, Any]) -> str:
    summary = manifest["summary"]
    lines = [
        "# Benchmark Review Scorecard",
        "",
        f"- Status: `{'ok' if summary['ok'] else 'blocked'}`",
        f"- Git SHA: `{manifest['git_sha']}`",
        f"- Generated at: `{manifest['generated_at']}`",
        f"- Ledger position: `{manifest['ledger_position']}`",
        f"- Ledger head hash: `{manifest['ledger_head_sha256']}`",
        f"- Reviewed by: `{manifest['reviewed_by'] or 'unspecified'}`",
        f"- Latest rows: `{summary['latest_rows']}`",
        f"- Readiness findings: `{summary['readiness_findings']}`",
        f"- Preflight: `{_preflight(manifest['checks']['preflight'])}`",
        f"- Inventory gaps: `{_shown(summary['inventory_gaps'])}`",
        f"- Artifact offenders: `{_shown(summary['artifact_offenders'])}`",
        "",
        "## Reviewer Note",
        "",
        manifest["reviewer_note"].strip() or "_No note._",
        "",
        "## Gate Summary",
        "",
    ]
    gate_rows = []
    for name, entry in manifest["gates"].items():
        status = "skipped" if entry["ok"] is None else ("ok" if entry["ok"] else "blocked")
        detail = entry.get("skipped") or f"{len(entry['findings'])} findings"
        gate_rows.append([name, status, detail])
    lines += _table(["gate", "status", "detail"], gate_rows)
    if manifest["blocking_findings"]:
        lines += ["", "## Blocking Findings", ""]
        lines += _table(
            ["gate", "scope", "reason", "value"],
            [
                [f["gate"], f["scope"], f["reason"], f["value"]]
                for f in manifest["blocking_findings"]
            ],
        )
    lines += ["", "## Latest Rows", ""]
    lines += _table(
        ["benchmark", "agent", "status", "score", "provider", "model", "run id", "trajectory dir"],
        [
            [
                r["benchmark_id"],
                r["agent"],
                r["status"],
                r["score"],
                r["provider"],
                r["model"],
                r["run_id"],
                r["trajectory_dir"],
            ]
            for r in manifest["latest_rows"]
        ],
    )
    return "\n".join(lines) + "\n"
