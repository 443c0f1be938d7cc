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

# What happens to a run that `runs`, `latest` and `search` all fold.
_RUN_CHANGED = frozenset(
    f"domain.run:{event}"
    for event in (
        "RunFactsAdded",
        "RunFinished",
        "RunImported",
        "RunInvalidated",
        "RunReinstated",
        "RunSuperseded",
        "ScoreCorrected",
        "StaleRunRecovered",
    )
)

# name -> the topics of the events its fold reads (None: every event), as each projection
# states them (`Projection.topics`; a test checks the two agree): the runner passes over
# a read model whose topics a catch-up's events miss without loading its module
# (`registry.all_projections`), nor the modules of the events it folds.
TOPICS: dict[str, frozenset[str] | None] = {
    "events": None,
    "chain": None,
    "run_groups": frozenset(
        {
            "domain.run:RunImported",
            "domain.run:RunStarted",
            "domain.run_group:BenchmarkSkipped",
            "domain.run_group:LaunchRefused",
            "domain.run_group:RunGroupClosed",
            "domain.run_group:RunGroupOpened",
        }
    ),
    "runs": _RUN_CHANGED
    | {
        "domain.model_aliases:ModelAliasDeclared",
        "domain.run:CellsRecorded",
        "domain.run:LeaseRenewed",
        "domain.run:RunStarted",
    },
    "cells": frozenset({"domain.run:CellsRecorded"}),
    "campaigns": frozenset({"domain.run:RunImported", "domain.run:RunStarted"}),
    "trajectories": frozenset({"domain.run:RunImported", "domain.run:TrajectoryRecorded"}),
    "benchmarks": frozenset(
        {"domain.benchmark:BenchmarkRegistered", "domain.benchmark:HighScoreReferenced"}
    ),
    "imports": frozenset({"domain.result_import:ResultFileImported"}),
    "latest": _RUN_CHANGED
    | {
        "domain.benchmark:RequiredAgentsDeclared",
        "domain.run:RunStarted",
        "domain.run_group:BenchmarkSkipped",
    },
    "verdicts": frozenset(
        {
            "domain.verdicts:ComparisonRecorded",
            "domain.verdicts:GateEvaluated",
            "domain.verdicts:GateFindingsRecorded",
            "domain.verdicts:RankingRecorded",
            "domain.verdicts:ReviewRecorded",
        }
    ),
    "head_to_head": frozenset({"domain.head_to_head:HeadToHeadRecorded"}),
    "search": _RUN_CHANGED
    | {
        "domain.verdicts:GateEvaluated",
        "domain.verdicts:GateFindingsRecorded",
        "domain.verdicts:ReviewRecorded",
    },
}


def version(name: str) -> int:
    return READ_MODELS[name][0]
