"""summary.md sections of a head-to-head report beyond its rows and gates: coverage with
its deferred entries, the previous-summary comparison, and a queue entry's diagnosis,
trajectory briefs and rerun template. A report recorded before a section existed has
none, and its summary.md has none either."""

from __future__ import annotations

from typing import Any

COMPARISON_COLUMNS = (
    "benchmark",
    "trend",
    "status",
    "target accuracy",
    "Δ accuracy",
    "Δ tokens",
    "Δ cached %",
    "Δ calls",
)


def coverage(section: dict[str, Any] | None) -> list[str]:
    if section is None:
        return []
    included = section["included_benchmarks"]
    chosen = sum(1 for b in included if b["selected"])
    out = ["", "## Coverage", "", f"- included: {chosen} of {len(included)} selected"]
    if section["unselected_included_benchmarks"]:
        out.append(f"- not selected: {', '.join(section['unselected_included_benchmarks'])}")
    if not section["deferred_benchmarks"]:
        return [*out, "- deferred: (none)"]
    out.append("- deferred (tracked, not required by the coverage gate):")
    for entry in section["deferred_benchmarks"]:
        selected = ", selected" if entry["selected"] else ""
        out.append(
            f"  - **{entry['benchmark']}** ({entry['promotion_priority']}{selected}): "
            f"{entry['reason']}"
        )
        out += [f"    - to promote: {r}" for r in entry["promotion_requirements"]]
    return out


def previous_comparison(section: dict[str, Any] | None) -> list[str]:
    if section is None:
        return []
    counts = ", ".join(f"{n} {t}" for t, n in section["trend_counts"].items())
    out = ["", "## Previous Summary Comparison", ""]
    if section["previous_report_id"]:
        out.append(f"Against report `{section['previous_report_id']}`: {counts}.")
    else:
        out.append(f"Against the previous summary: {counts}.")
    out += ["", "| " + " | ".join(COMPARISON_COLUMNS) + " |"]
    out.append("| " + " | ".join("---" for _ in COMPARISON_COLUMNS) + " |")
    for c in section["comparisons"]:
        status = f"{c['previous_status'] or '-'} → {c['current_status'] or '-'}"
        accuracy = (
            f"{_number(c['previous_target_accuracy'], '.4f')} → "
            f"{_number(c['current_target_accuracy'], '.4f')}"
        )
        cells = [
            c["benchmark"],
            c["trend"],
            status,
            accuracy,
            _signed(c["target_accuracy_delta"], ".4f"),
            _signed(c["target_total_token_delta"], "d"),
            _signed(c["target_cached_token_percent_delta"], ".2f"),
            _signed(c["target_llm_call_delta"], "d"),
        ]
        out.append("| " + " | ".join(cells) + " |")
    return out


def queue_entry(entry: dict[str, Any]) -> list[str]:
    """An improvement-queue entry's diagnosis, briefs and rerun template: none for an
    efficiency-queue entry, nor for one recorded before entries had a priority, so an
    older report's summary.md renders as it did."""
    if "priority" not in entry:
        return []
    out = [f"  - diagnosis: {'; '.join(entry['diagnosis']) or '(none)'}"]
    for side in ("target", "baseline"):
        brief = entry.get(f"{side}_trajectory_review")
        if brief is not None:
            out.append(f"  - {side} trajectory: {_brief(brief)}")
    if entry.get("rerun_command_template"):
        out.append(f"  - rerun template: `{entry['rerun_command_template']}`")
    return out


def _brief(brief: dict[str, Any]) -> str:
    cached, mean = brief["cached_token_percent"], brief["mean_latency_ms"]
    parts = [
        f"{brief['turns']} turns",
        f"{brief['input_tokens']} in / {brief['output_tokens']} out tokens",
        "cached n/a" if cached is None else f"cached {cached:.2f}%",
        "latency n/a"
        if mean is None
        else f"latency mean {mean:.1f} ms, p95 {brief['p95_latency_ms']:.1f} ms",
    ]
    if brief["review_notes"]:
        parts.append("; ".join(brief["review_notes"]))
    return ", ".join(parts)


def _number(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _signed(value: float | int | None, spec: str) -> str:
    if value is None:
        return ""
    if spec == "d" and isinstance(value, float):
        spec = ".0f" if value.is_integer() else ".2f"
    text = format(value, spec)
    return f"+{text}" if value > 0 else text
