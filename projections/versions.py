"""Each read model's version and tables, readable without importing any projection.

A command checks with plain sqlite3 whether the read models are current, so it
need not load the event classes; the projections take their versions from here
(and a test checks the table names agree), so the two cannot drift apart.
"""

from __future__ import annotations

# name -> (version, tables), in the order the projections are applied.
READ_MODELS: dict[str, tuple[int, tuple[str, ...]]] = {
    "events": (3, ("events",)),
    "chain": (1, ("chain",)),
    "run_groups": (6, ("run_groups", "skips")),
    "runs": (10, ("runs", "models")),
    "cells": (3, ("cells",)),
    "campaigns": (2, ("campaigns", "run_fingerprints")),
    "trajectories": (2, ("turns",)),
    "benchmarks": (1, ("benchmarks", "high_scores")),
    "imports": (2, ("imports",)),
    "latest": (
        17,
        (
            "candidates",
            "latest",
            "latest_per_agent",
            "quarantine",
            "baselines",
            "required_agents",
            "latest_pending",
        ),
    ),
    "verdicts": (
        4,
        (
            "gate_verdicts",
            "gate_findings",
            "reviews",
            "comparisons",
            "comparison_rows",
            "rankings",
        ),
    ),
    "head_to_head": (2, ("head_to_head_reports", "head_to_head_rows")),
    "search": (1, ("search",)),
}

STATE_TABLE = "_projection_state"


def version(name: str) -> int:
    return READ_MODELS[name][0]
