"""A recorded head-to-head report as code-agent latest rows: the orchestrator publisher's
row and index shape (its code_agent_matrix `--publish-latest-dir`), plus benchledger's
own facts as additional keys.

One `<benchmark>__<target>_vs_<baseline>.json` per row: the orchestrator's flat report
row (`benchmark`, `target_*` / `baseline_*` outcomes, tokens, cached-token percent and
LLM calls, `*_delta`, provenance paths, the report's `*_gate_ok`), then what its
publisher adds (`benchmark_id`, `agent`, `status` succeeded/failed, `comparison_status`,
`score` = the target's accuracy, `unit` accuracy, `metrics`, `token_metrics`,
`failure_reason(s)`), then ours (report id, ledger position, run ids, the paired
statistics and their verdict as `paired_status`). `comparison_status` is the contract's:
what the measured accuracies say (`code_agent_contract.expected_status`); the report's
own verdict, from the paired statistics, is `paired_status`. Each side's command, result
and trajectory are written beside the rows (`code_agent_evidence`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchledger.adapters.publication import code_agent_contract as contract
from benchledger.adapters.publication import code_agent_evidence as evidence
from benchledger.adapters.publication.queries import Queries

SIDES = ("target", "baseline")
# The report's gate behind each `*_gate_ok` field of a row.
GATE_FIELDS = {
    "coverage_gate_ok": "coverage",
    "benchmark_gate_ok": "comparable",
    "required_stats_gate_ok": "required_stats",
    "efficiency_gate_ok": "efficiency",
    "no_regression_gate_ok": "no_regression",
    "quality_guardrail_gate_ok": "quality",
    "trajectory_review_gate_ok": "trajectory_reviews",
    "live_report_gate_ok": "live_report",
    "report_gate_ok": "report",
    "release_readiness_ok": "release",
}
# The orchestrator's side figure: the report row's.
SIDE_FIGURES = {
    "right": "right",
    "wrong": "wrong",
    "total": "total",
    "accuracy": "accuracy",
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "total_tokens": "total_tokens",
    "cached_token_percent": "cached_pct",
    "llm_call_count": "llm_calls",
}
DELTA_FIGURES = {
    "accuracy_delta": "accuracy_delta",
    "input_token_delta": "input_tokens_delta",
    "output_token_delta": "output_tokens_delta",
    "total_token_delta": "total_tokens_delta",
    "cached_token_percent_delta": "cached_pct_delta",
    "llm_call_delta": "llm_calls_delta",
}
RUN_FACTS = (
    "run_id, benchmark, agent, provider, model, status, score, unit, started_at, ended_at, "
    "cells_passed, cells_failed, cells_error, cells_skipped, source_format, source_path, "
    "command, cwd, host, run_dir, run_group_id"
)
TURN_COLUMNS = (
    "trajectory_file, turn_index, prompt_tokens, completion_tokens, total_tokens, "
    "cached_tokens, cache_creation_tokens, latency_ms, prompt_chars"
)


def label(side: dict[str, Any]) -> str:
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in str(side["agent"]))


def run_facts(queries: Queries, run_id: str | None) -> dict[str, Any] | None:
    if run_id is None:
        return None
    cursor = queries.conn.execute(f"SELECT {RUN_FACTS} FROM runs WHERE run_id = ?", (run_id,))
    row = cursor.fetchone()
    if row is None:
        return None
    facts = dict(zip([d[0] for d in cursor.description], row, strict=True))
    config = queries.conn.execute(
        "SELECT config FROM candidates WHERE run_id = ?", (run_id,)
    ).fetchone()
    facts["config"] = json.loads(config[0]) if config and config[0] else {}
    return facts


def turns(queries: Queries, run_id: str) -> list[dict[str, Any]]:
    cursor = queries.conn.execute(
        f"SELECT {TURN_COLUMNS} FROM turns WHERE run_id = ? ORDER BY trajectory_file, turn_index",
        (run_id,),
    )
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r, strict=True)) for r in cursor]


def _command(run: dict[str, Any]) -> dict[str, Any]:
    """What ran, as the run recorded it (redacted when it was recorded)."""
    command = run["command"]
    try:
        argv = json.loads(command) if command else None
    except ValueError:
        argv = command
    keys = ("run_id", "agent", "provider", "model", "cwd", "host", "config")
    return {"command": argv, **{k: run[k] for k in keys}}


def _result(run: dict[str, Any]) -> dict[str, Any]:
    keys: tuple[str, ...] = ("run_id", "benchmark", "agent", "provider", "model", "status")
    keys += ("score", "unit", "started_at", "ended_at", "source_format", "source_path", "run_dir")
    cells = {n: run[f"cells_{n}"] for n in ("passed", "failed", "error", "skipped")}
    return {**{k: run[k] for k in keys}, "cells": cells}


def _failure_class(run: dict[str, Any] | None) -> str | None:
    if run is None:
        return None
    return "pass" if run["status"] == "succeeded" else "harness_error"


def row_document(
    row: dict[str, Any],
    stored: dict[str, Any],
    runs: dict[str, dict[str, Any] | None],
    paths: dict[str, dict[str, str | None]],
    run_root: str,
) -> dict[str, Any]:
    """The latest row of one report row, in the orchestrator's shape plus ours."""
    report = stored["report"]
    gates = report["gates"]
    first = runs["target"] or runs["baseline"] or {}
    generated_at = stored.get("recorded_at")
    doc: dict[str, Any] = {
        "generated_at": generated_at,
        "run_root": run_root,
        "mode": "live" if row["live"] else "not_live",
        "provider": first.get("provider"),
        "model": first.get("model"),
        "benchmark": row["benchmark"],
        "target_adapter": stored["target"]["agent"],
        "baseline_adapter": stored["baseline"]["agent"],
    }
    for side in SIDES:
        doc[f"{side}_failure_class"] = _failure_class(runs[side])
    for kind in ("result_path", "command_path", "trajectory_dir"):
        for side in SIDES:
            doc[f"{side}_{kind}"] = paths[side].get(kind)
    for side in SIDES:
        for name, field in SIDE_FIGURES.items():
            doc[f"{side}_{name}"] = row[f"{side}_{field}"]
    for name, field in DELTA_FIGURES.items():
        doc[name] = row[field]
    for name, gate in GATE_FIELDS.items():
        doc[name] = gates[gate]["ok"]
    release = gates["release"]
    doc["release_readiness_blocking_requirements"] = ",".join(
        p for p in release["parts"] if not gates[p]["ok"]
    )
    doc["release_readiness_unblock_command_ids"] = ""
    measured = contract.expected_status(doc)
    paired_status = row["comparison_status"]
    status = paired_status if paired_status in ("missing", "not comparable") else measured
    doc.update(
        {
            "updated_at": generated_at,
            "benchmark_id": row["benchmark"],
            "benchmark_directory": row["benchmark"],
            "agent": f"{label(stored['target'])}_vs_{label(stored['baseline'])}",
            "status": "pending",
            "comparison_status": status or "missing",
            "score": row["target_accuracy"],
            "unit": "accuracy",
            "higher_is_better": True,
            "metrics": {
                **{f"{s}_{n}": row[f"{s}_{n}"] for s in SIDES for n in ("right", "wrong", "total")},
                **{name: doc[name] for name in DELTA_FIGURES},
            },
            "token_metrics": {
                f"{s}_{n}": doc[f"{s}_{n}"] for s in SIDES for n in list(SIDE_FIGURES)[4:]
            },
        }
    )
    reasons = contract.publisher_failure_reasons(doc)
    # Ours, after the contract's: demo data is never published, and the paired statistics
    # must back the claim (they also decide the report's comparable gate).
    if row.get("demo_data"):
        reasons.append("demo data")
    if paired_status not in contract.ACCEPTABLE_STATUSES:
        reasons.append(f"paired statistics: {paired_status}")
    doc["status"] = "failed" if reasons else "succeeded"
    doc["failure_reason"] = ", ".join(reasons)
    doc["failure_reasons"] = reasons
    doc.update(
        {
            "report_id": stored["report_id"],
            "ledger_position": stored["position"],
            "ledger_head_sha256": stored["head_sha256"],
            "target_run_id": row["target_run_id"],
            "baseline_run_id": row["baseline_run_id"],
            "target_cached_tokens": row["target_cached_tokens"],
            "baseline_cached_tokens": row["baseline_cached_tokens"],
            "paired_status": paired_status,
            "status_reason": row["status_reason"],
            "paired": row["paired"],
            "differing_keys": row["differing_keys"],
            "efficiency_regressions": row["efficiency_regressions"],
            "demo_data": bool(row.get("demo_data")),
        }
    )
    return doc


def publish(
    directory: Path, stored: dict[str, Any], queries: Queries, summary_json: str = ""
) -> dict[str, Any]:
    """The rows, each side's evidence and `index.json`; older rows of this pair (and their
    evidence) that the report no longer has are removed, every other file kept."""
    directory.mkdir(parents=True, exist_ok=True)
    root = directory.resolve()
    pair = f"{label(stored['target'])}_vs_{label(stored['baseline'])}"
    folder = root / evidence.EVIDENCE
    documents: dict[str, dict[str, Any]] = {}
    for row in stored["report"]["report_rows"]:
        name = f"{row['benchmark']}__{pair}"
        runs = {s: run_facts(queries, row[f"{s}_run_id"]) for s in SIDES}
        paths: dict[str, dict[str, str | None]] = {}
        for side in SIDES:
            run = runs[side]
            paths[side] = (
                evidence.write_side(
                    folder / name / side, _command(run), _result(run), turns(queries, run["run_id"])
                )
                if run is not None
                else {}
            )
        documents[f"{name}.json"] = row_document(row, stored, runs, paths, str(folder))
    stale = sorted(
        p.name for p in root.glob(f"*__{pair}.json") if p.is_file() and p.name not in documents
    )
    for name in stale:
        (root / name).unlink()
    evidence.prune(folder, pair, {n.removesuffix(".json") for n in documents})
    for name, document in documents.items():
        text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=True)
        (root / name).write_text(text + "\n", encoding="utf-8")
    index = _index(stored, documents, root, pair, summary_json, str(folder))
    index["code_agent_matrix"]["stale_row_count"] = len(stale)
    index["code_agent_matrix"]["stale_rows"] = stale
    text = json.dumps(index, indent=2, sort_keys=True, ensure_ascii=True)
    (root / "index.json").write_text(text + "\n", encoding="utf-8")
    return index


def _index(
    stored: dict[str, Any],
    documents: dict[str, dict[str, Any]],
    root: Path,
    pair: str,
    summary_json: str,
    run_root: str,
) -> dict[str, Any]:
    """index.json as the orchestrator's publisher writes it, plus the report's identity."""
    latest: dict[str, Any] = {}
    benchmarks: dict[str, Any] = {}
    failed = 0
    for name, doc in documents.items():
        state = doc["status"]
        failed += state != "succeeded"
        latest[f"{doc['benchmark_id']}::{pair}"] = {
            "path": str(root / name),
            "score": doc["score"],
            "status": state,
            "comparison_status": doc["comparison_status"],
            "reason": doc["failure_reason"],
            "updated_at": doc["updated_at"],
        }
        benchmarks[doc["benchmark_id"]] = {
            "complete": state == "succeeded",
            "cells": {
                pair: {
                    "required": True,
                    "state": state,
                    "status": state,
                    "score": doc["score"],
                    "reason": doc["failure_reason"],
                    "failure_reasons": doc["failure_reasons"],
                }
            },
        }
    summary = {
        "unsupported_real_cells": 0,
        "missing_required_real_cells": 0,
        "failed_required_real_cells": failed,
        "no_required_real_harness_benchmarks": 0 if documents else 1,
    }
    return {
        "updated_at": stored.get("recorded_at"),
        "latest": latest,
        "code_agent_matrix": {
            "summary_json": summary_json,
            "run_root": run_root,
            "target_adapter": stored["target"]["agent"],
            "baseline_adapter": stored["baseline"]["agent"],
            "row_count": len(documents),
            "target": stored["target"]["spec"],
            "baseline": stored["baseline"]["spec"],
        },
        "matrix_contract": {
            "status": "complete" if documents and not failed else "incomplete",
            "summary": summary,
            "benchmarks": benchmarks,
        },
        "report_id": stored["report_id"],
        "ledger_position": stored["position"],
        "ledger_head_sha256": stored["head_sha256"],
    }
