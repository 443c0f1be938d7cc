"""A recorded head-to-head report as files: the summary, its rows, and latest-style rows.

Everything here renders the stored event (see `head_to_head.stored`), so the files
written when the report is made and those written again from `view-head-to-head`
are the same bytes. The latest-style rows are `code_agent_latest`.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from benchledger.adapters.publication import head_to_head_markdown as sections

SUMMARY_KEYS = ("report_id", "target", "baseline", "benchmarks", "options", "position")
COLUMNS = [
    "benchmark",
    "status",
    "target",
    "baseline",
    "acc_delta",
    "tokens_delta",
    "calls_delta",
    "cached%_delta",
    "target_run",
    "baseline_run",
]


def summary(stored: dict[str, Any]) -> dict[str, Any]:
    """`summary.json`: who, what, where in the ledger, then the report itself."""
    return {**{k: stored[k] for k in SUMMARY_KEYS}, **stored["report"]}


def summary_json(stored: dict[str, Any]) -> str:
    return json.dumps(summary(stored), indent=2, ensure_ascii=False) + "\n"


def rows_jsonl(stored: dict[str, Any]) -> str:
    return "".join(
        json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n"
        for r in stored["report"]["report_rows"]
    )


def rows_csv(stored: dict[str, Any]) -> str:
    rows = stored["report"]["report_rows"]
    names = list(rows[0]) if rows else ["benchmark"]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=names, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {k: json.dumps(v) if isinstance(v, list | dict) else v for k, v in row.items()}
        )
    return out.getvalue()


def text(stored: dict[str, Any]) -> str:
    """The report as the command prints it."""
    report = stored["report"]
    table = _table([[_cell(r, c) for c in COLUMNS] for r in report["report_rows"]])
    lines = [
        f"Head-to-head {stored['report_id']} at ledger position {stored['position']}",
        f"Target: {stored['target']['spec']}",
        f"Baseline: {stored['baseline']['spec']}",
        "",
        table,
        "",
    ]
    blocking = report["benchmark_gate"]["blocking_benchmarks"]
    lines.append(
        f"Comparable gate: {'ok' if not blocking else 'blocked by ' + ', '.join(blocking)}"
    )
    for entry in report["improvement_queue"]:
        lines.append(
            f"Improve {entry['benchmark']} ({entry['comparison_status']}): {entry['reason']}"
        )
    for entry in report["efficiency_queue"]:
        lines.append(f"Efficiency {entry['benchmark']}: {'; '.join(entry['regressions'])}")
    lines.append(f"Exit: {report['exit_code']} {report['exit_reason']}")
    return "\n".join(lines)


def markdown(stored: dict[str, Any]) -> str:
    """`summary.md`: the rows, the gates, both queues and the run result."""
    report = stored["report"]
    out = [
        f"# Head-to-head {stored['target']['spec']} vs {stored['baseline']['spec']}",
        "",
        f"Report `{stored['report_id']}` at ledger position {stored['position']}.",
        "",
        "## Rows",
        "",
        _table([[_cell(r, c) for c in COLUMNS] for r in report["report_rows"]], markdown=True),
        "",
        "## Gates",
        "",
        "| gate | ok | blocking |",
        "| --- | --- | --- |",
    ]
    for name, gate in report["gates"].items():
        out.append(f"| {name} | {'yes' if gate['ok'] else 'no'} | {', '.join(gate['blocking'])} |")
    out += sections.coverage(report.get("coverage"))
    out += sections.previous_comparison(report.get("previous_summary_comparison"))
    for title, key in (
        ("Improvement Queue", "improvement_queue"),
        ("Efficiency Queue", "efficiency_queue"),
    ):
        out += ["", f"## {title}", ""]
        entries = report[key]
        if not entries:
            out.append("(empty)")
        for entry in entries:
            why = "; ".join(entry.get("regressions", [])) or entry["reason"]
            rank = f", {entry['priority']}" if entry.get("priority") else ""
            out.append(f"- **{entry['benchmark']}** ({entry['comparison_status']}{rank}): {why}")
            out += sections.queue_entry(entry)
            out += [f"  - rerun: `{c}`" for c in entry["rerun_commands"]]
    out += [
        "",
        "## Run Result",
        "",
        f"- exit_code: {report['exit_code']}",
        f"- exit_reason: {report['exit_reason']}",
        "",
    ]
    return "\n".join(out)


def write_out(directory: Path, stored: dict[str, Any]) -> list[Path]:
    """The four report files in DIR."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "summary.json": summary_json(stored),
        "summary.md": markdown(stored),
        "report-rows.jsonl": rows_jsonl(stored),
        "report-rows.csv": rows_csv(stored),
    }
    paths = []
    for name, content in files.items():
        path = directory / name
        path.write_text(content, encoding="utf-8")
        paths.append(path)
    return paths


def _table(rows: list[list[str]], *, markdown: bool = False) -> str:
    """Columns padded to their widest cell; a Markdown table when asked."""
    widths = [max(len(v) for v in column) for column in zip(COLUMNS, *rows, strict=True)]

    def line(values: list[str]) -> str:
        cells = [v.ljust(w) for v, w in zip(values, widths, strict=True)]
        return f"| {' | '.join(cells)} |" if markdown else "  ".join(cells).rstrip()

    rule = ["-" * w for w in widths]
    return "\n".join([line(COLUMNS), line(rule), *(line(r) for r in rows)])


def _cell(row: dict[str, Any], column: str) -> str:
    if column == "benchmark":
        return str(row["benchmark"])
    if column == "status":
        return str(row["comparison_status"])
    if column in ("target", "baseline"):
        right, total = row[f"{column}_right"], row[f"{column}_total"]
        return "" if total is None else f"{right}/{total}"
    if column == "acc_delta":
        return _signed(row["accuracy_delta"], ".4f")
    if column == "tokens_delta":
        return _signed(row["total_tokens_delta"], "d")
    if column == "calls_delta":
        return _signed(row["llm_calls_delta"], "d")
    if column == "cached%_delta":
        return _signed(row["cached_pct_delta"], ".2f")
    run_id = row[f"{column.removesuffix('_run')}_run_id"]
    return "" if run_id is None else str(run_id)[:8]


def _signed(value: float | int | None, spec: str) -> str:
    if value is None:
        return ""
    text = format(value, spec)
    return f"+{text}" if value > 0 else text
