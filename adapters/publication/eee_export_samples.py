"""A run's cells as Every Eval Ever instance-level rows (schema 0.2.1)."""

from __future__ import annotations

from typing import Any

INSTANCE_SCHEMA_VERSION = "instance_level_eval_0.2.1"
INTERACTIONS = ("single_turn", "multi_turn", "agentic")


def instance_rows(
    run: dict[str, Any], record: dict[str, Any], cells: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One instance-level row per cell: its key, score and verdict (the ledger keeps no
    prompts or answers, so `input` is empty); a cell without a score states its verdict
    as 1 or 0, and `metadata.outcome` says what the ledger recorded."""
    result = record["evaluation_results"][0]
    rows = []
    for cell in cells:
        metrics = cell.get("metrics") or {}
        score = cell.get("score")
        row: dict[str, Any] = {
            "schema_version": INSTANCE_SCHEMA_VERSION,
            "evaluation_id": record["evaluation_id"],
            "evaluation_result_id": result["evaluation_result_id"],
            "model_id": record["model_info"]["id"],
            "evaluation_name": result["evaluation_name"],
            "sample_id": str(cell["key"]),
            "interaction_type": metrics.get("interaction_type")
            if metrics.get("interaction_type") in INTERACTIONS
            else "single_turn",
            "input": {"raw": "", "reference": []},
            # What the schema asks of each kind of interaction: an output or messages.
            "output": {"raw": []},
            "answer_attribution": [],
            "evaluation": {
                "score": score
                if score is not None
                else (1.0 if cell["outcome"] == "passed" else 0.0),
                "is_correct": cell["outcome"] == "passed",
            },
            "metadata": {"outcome": cell["outcome"]},
        }
        if score is None:
            row["metadata"]["score_stated"] = "false"
        if row["interaction_type"] != "single_turn":
            row["output"], row["messages"] = None, []
        if cell["outcome"] == "error":
            row["error"] = str(metrics.get("error") or "error")
        if isinstance(metrics.get("sample_hash"), str):
            row["sample_hash"] = metrics["sample_hash"]
        usage = metrics.get("token_usage")
        if isinstance(usage, dict) and all(
            isinstance(usage.get(k), int) for k in ("input_tokens", "output_tokens", "total_tokens")
        ):
            row["token_usage"] = usage
        if isinstance(metrics.get("performance"), dict):
            row["performance"] = metrics["performance"]
        for key in ("num_turns", "tool_calls_count"):
            if isinstance(metrics.get(key), int):
                row["evaluation"][key] = metrics[key]
        rows.append(row)
    return rows
