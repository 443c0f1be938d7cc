"""The head-to-head report: a target agent against a baseline, benchmark by benchmark.

Built from the read models at one ledger position. Per benchmark it takes the
target's newest acceptable run and the baseline's newest acceptable run with the
same comparison signature (so both ran the same benchmark, provider, model and
config); a baseline that only ran another setup makes the row `not comparable`,
naming the config keys that differ, and a side with no run makes it `missing`.
Outcomes come from the runs' cells, tokens from their trajectory turns (else the
run's `tokens`), LLM calls from the turns (else the `llm_calls` metric). The
status follows the paired statistics of `domain.comparison_stats`. The gates and
their exit codes are documented in docs/head-to-head.md.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from benchledger.adapters.publication import head_to_head_history as history
from benchledger.adapters.publication import head_to_head_queue as queue
from benchledger.adapters.publication import head_to_head_reviews as reviews
from benchledger.adapters.publication.compare import (
    ACCEPTABLE,
    NEWEST,
    cell_values_and_clusters,
    same_model,
)
from benchledger.adapters.publication.queries import Queries
from benchledger.domain.comparison_stats import PairedStats, holm, paired_stats, verdict
from benchledger.domain.errors import NotFoundError
from benchledger.domain.publication import group_marker

SPEC = re.compile(r"^(?P<agent>[^@:\s]+)(?:@(?P<provider>[^@:\s]+):(?P<model>[^@\s]+))?$")

# The exit-code contract, in the order the gates are checked (the first failing
# enforced gate decides the exit code).
EXIT_CODES: dict[str, int] = {
    "ok": 0,
    "preflight_failed": 2,
    "comparable_gate_failed": 3,
    "token_evidence_failed": 4,
    "required_stats_failed": 5,
    "coverage_gate_failed": 6,
    "report_gate_failed": 7,
    "efficiency_gate_failed": 8,
    "no_regression_failed": 9,
    "quality_guardrail_failed": 10,
    "trajectory_review_failed": 11,
    "live_report_failed": 12,
    "release_readiness_failed": 13,
}
GATES = (
    "comparable",
    "token_evidence",
    "required_stats",
    "coverage",
    "report",
    "efficiency",
    "no_regression",
    "quality",
    "trajectory_reviews",
    "live_report",
    "release",
)
GATE_REASONS = dict(zip(GATES, list(EXIT_CODES)[2:], strict=True))
ACCEPTED = ("superior", "comparable")
# Config values that say a run was no live execution.
NOT_LIVE = {"smoke", "dry_run", "dry-run", "mock", "summarize"}
DEFAULT_TOLERANCE = 0.05


@dataclass(frozen=True)
class Side:
    agent: str
    provider: str | None = None
    model: str | None = None

    @property
    def spec(self) -> str:
        return f"{self.agent}@{self.provider}:{self.model}" if self.provider else self.agent

    @property
    def label(self) -> str:
        """The side's name in file names: its agent."""
        return re.sub(r"[^A-Za-z0-9_.-]", "_", self.agent)

    def as_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "agent": self.agent,
            "provider": self.provider,
            "model": self.model,
        }

    def where(self) -> tuple[str, list[str]]:
        sql, params = "agent = ?", [self.agent]
        if self.provider:  # the model's runs however spelled (its model_id)
            model_sql, model_params = same_model(self.provider, str(self.model))
            sql += f" AND {model_sql}"
            params += model_params
        return sql, params


def parse_side(text: str) -> Side:
    """`agent[@provider:model]`; ValueError if malformed."""
    match = SPEC.match(text.strip())
    if not match:
        raise ValueError(f"'{text}' is not agent[@provider:model]")
    provider = match["provider"]
    return Side(match["agent"], provider.lower() if provider else None, match["model"])


def new_report_id(now: datetime | None = None) -> str:
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"h2h_{moment:%Y%m%dT%H%M%SZ}_{secrets.token_hex(4)}"


@dataclass(frozen=True)
class Options:
    """What the report was asked for; recorded with it and carried into rerun commands."""

    tolerance: float = DEFAULT_TOLERANCE
    enforce: tuple[str, ...] = ()
    coverage: tuple[str, ...] = ()
    previous: dict[str, Any] | None = None
    quality: dict[str, Any] | None = None
    publish_latest_dir: str | None = None
    deferred: tuple[str, ...] = history.DEFAULT_DEFERRED
    # The previous report whose improvement queue chose the benchmarks, and which of it.
    rerun_queue: bool = False
    queue_priorities: tuple[str, ...] = ()
    queue_statuses: tuple[str, ...] = ()

    @property
    def included(self) -> tuple[str, ...]:
        """The benchmarks coverage requires: the registered ones, less the deferred."""
        return tuple(b for b in self.coverage if b not in self.deferred)

    def as_dict(self) -> dict[str, Any]:
        return {
            "tolerance": self.tolerance,
            "enforce": list(self.enforce),
            "coverage_benchmarks": list(self.coverage),
            "compare_summary": self.previous is not None,
            "quality_guardrail": self.quality is not None,
            "publish_latest_dir": self.publish_latest_dir,
            "deferred_benchmarks": list(self.deferred),
            "rerun_queue": self.rerun_queue,
            "queue_priorities": list(self.queue_priorities),
            "queue_statuses": list(self.queue_statuses),
        }


# -- selecting runs ---------------------------------------------------------------

RUN_COLUMNS = (
    "run_id, agent, provider, model, score, unit, higher_is_better, comparison_signature, "
    "config, metrics, tokens, artifacts, source_path, run_dir, synthetic, run_group_id"
)


def known_agent(queries: Queries, side: Side) -> bool:
    where, params = side.where()
    row = queries.conn.execute(f"SELECT 1 FROM candidates WHERE {where} LIMIT 1", params)
    return row.fetchone() is not None


def _runs(queries: Queries, benchmark: str, side: Side, extra: str = "", *args: str) -> Any:
    where, params = side.where()
    cursor = queries.conn.execute(
        f"SELECT {RUN_COLUMNS} FROM candidates WHERE benchmark = ? AND {where} "
        f"AND {ACCEPTABLE} {extra} {NEWEST} LIMIT 1",
        [benchmark, *params, *args],
    )
    row = cursor.fetchone()
    if row is None:
        return None
    run = dict(zip([d[0] for d in cursor.description], row, strict=True))
    for name in ("config", "metrics", "tokens", "artifacts"):
        run[name] = json.loads(run[name]) if run[name] else {}
    return run


def chosen_runs(
    queries: Queries, benchmark: str, target: Side, baseline: Side
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, bool]:
    """The target's newest run and the baseline's newest with the same comparison
    signature; else the baseline's newest, and False (not comparable)."""
    run_t = _runs(queries, benchmark, target)
    if run_t is None:
        return None, _runs(queries, benchmark, baseline), True
    same = _runs(
        queries, benchmark, baseline, "AND comparison_signature = ?", run_t["comparison_signature"]
    )
    if same is not None:
        return run_t, same, True
    other = _runs(queries, benchmark, baseline)
    return run_t, other, other is None


def differing_keys(run_t: dict[str, Any], run_b: dict[str, Any]) -> list[str]:
    """The setup keys (provider, model, config keys) whose values differ."""
    keys = [k for k in ("provider", "model") if run_t[k] != run_b[k]]
    config_t, config_b = run_t["config"], run_b["config"]
    keys += [
        k for k in sorted(config_t.keys() | config_b.keys()) if config_t.get(k) != config_b.get(k)
    ]
    return keys or ["comparison_signature"]


# -- one side's measurements ---------------------------------------------------------


def measures(queries: Queries, run: dict[str, Any] | None) -> dict[str, Any]:
    """Right/wrong/total and accuracy from the cells; tokens, cache and LLM calls from
    the trajectory turns when the run has them, else from its tokens and metrics."""
    if run is None:
        return {}
    right, wrong = queries.conn.execute(
        "SELECT coalesce(sum(outcome = 'passed'), 0), "
        "coalesce(sum(outcome IN ('failed', 'error')), 0) FROM cells WHERE run_id = ?",
        (run["run_id"],),
    ).fetchone()
    total = right + wrong
    turns = reviews.turn_totals(queries, run["run_id"])
    tokens, metrics = run["tokens"], run["metrics"]
    source: str | None
    if turns["turns"]:
        calls, files = turns["turns"], turns["files"]
        input_t, output_t = turns["input_tokens"], turns["output_tokens"]
        total_t, cached = turns["total_tokens"], turns["cached_tokens"]
        source = "trajectory"
    else:
        calls = _int(metrics.get("llm_calls"))
        input_t = _first(tokens, "input_tokens", "prompt_tokens")
        output_t = _first(tokens, "output_tokens", "completion_tokens")
        total_t = _first(tokens, "total_tokens")
        cached = _first(tokens, "cached_tokens", "cache_read_tokens", "cached_input_tokens")
        files = 0
        source = "run" if tokens else None
    if total_t is None and input_t is not None and output_t is not None:
        total_t = input_t + output_t
    return {
        "run_id": run["run_id"],
        "right": right if total else None,
        "wrong": wrong if total else None,
        "total": total if total else None,
        "accuracy": right / total if total else None,
        "score": run["score"],
        "input_tokens": input_t,
        "output_tokens": output_t,
        "total_tokens": total_t,
        "cached_tokens": cached,
        "cached_pct": 100.0 * cached / input_t if cached is not None and input_t else None,
        "llm_calls": calls,
        "token_source": source,
        "trajectory_turns": turns["turns"],
        "trajectory_files": files,
        "live": _live(run),
    }


def _first(values: dict[str, Any], *names: str) -> int | None:
    for name in names:
        if isinstance(values.get(name), int):
            return int(values[name])
    return None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _live(run: dict[str, Any]) -> bool:
    """Live unless synthetic, or its config says smoke, dry run, mock or summarize."""
    if run["synthetic"]:
        return False
    config = run["config"]
    mode = str(config.get("mode", "")).lower()
    return mode not in NOT_LIVE and not any(config.get(flag) is True for flag in NOT_LIVE)


# -- statistics ---------------------------------------------------------------------


def paired(queries: Queries, run_t: dict[str, Any], run_b: dict[str, Any]) -> PairedStats:
    """Target - baseline over the cells both runs scored (values as `compare` reads them),
    clustered where the cells state a cluster (the target's, else the baseline's)."""
    values_t, clusters_t = cell_values_and_clusters(queries, run_t["run_id"])
    values_b, clusters_b = cell_values_and_clusters(queries, run_b["run_id"])
    clusters = {**clusters_b, **clusters_t}
    return paired_stats(values_t, values_b, clusters=clusters or None)


def settle_statuses(rows: list[dict[str, Any]], tolerance: float) -> None:
    """The status of each paired row from its statistics, its p-value Holm-adjusted over
    the report's paired rows (one comparison, many benchmarks)."""
    pending = [r for r in rows if r.get("_stats") is not None]
    adjusted = holm([r["_stats"].p_value for r in pending])
    for row, p in zip(pending, adjusted, strict=True):
        stats: PairedStats = row["_stats"]
        row["paired"] = {**stats.as_dict(), "holm_p": p}
        if stats.n_paired == 0:
            row["comparison_status"] = "inconclusive"
            row["status_reason"] = "the runs share no cell keys to pair"
            continue
        row["comparison_status"], row["status_reason"] = verdict(
            stats, tolerance=tolerance, higher_is_better=row["_higher"], adjusted_p=p
        )


# -- rows -------------------------------------------------------------------------------

SIDE_FIELDS = (
    "right",
    "wrong",
    "total",
    "accuracy",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cached_tokens",
    "cached_pct",
    "llm_calls",
)
DELTAS = {
    "accuracy_delta": "accuracy",
    "input_tokens_delta": "input_tokens",
    "output_tokens_delta": "output_tokens",
    "total_tokens_delta": "total_tokens",
    "cached_pct_delta": "cached_pct",
    "llm_calls_delta": "llm_calls",
}


def report_row(queries: Queries, benchmark: str, target: Side, baseline: Side) -> dict[str, Any]:
    run_t, run_b, comparable = chosen_runs(queries, benchmark, target, baseline)
    t, b = measures(queries, run_t), measures(queries, run_b)
    row: dict[str, Any] = {"benchmark": benchmark}
    for prefix, side in (("target", t), ("baseline", b)):
        for name in SIDE_FIELDS:
            row[f"{prefix}_{name}"] = side.get(name)
    for name, field in DELTAS.items():
        tv, bv = t.get(field), b.get(field)
        row[name] = tv - bv if tv is not None and bv is not None else None
    row["target_run_id"] = t.get("run_id")
    row["baseline_run_id"] = b.get("run_id")
    row["differing_keys"] = []
    row["paired"] = None
    if run_t is None or run_b is None:
        absent = [n for n, r in (("target", run_t), ("baseline", run_b)) if r is None]
        row["comparison_status"] = "missing"
        row["status_reason"] = f"no acceptable run of the {' and the '.join(absent)}"
    elif not comparable:
        row["differing_keys"] = differing_keys(run_t, run_b)
        row["comparison_status"] = "not comparable"
        row["status_reason"] = "comparison signatures differ: " + ", ".join(row["differing_keys"])
    else:
        row["comparison_status"], row["status_reason"] = "inconclusive", "not yet tested"
        row["_stats"] = paired(queries, run_t, run_b)
        row["_higher"] = run_t["higher_is_better"] in (1, None)
    row["token_evidence"] = _token_evidence(t) and _token_evidence(b)
    row["required_stats"] = all(s.get("total") for s in (t, b))
    row["trajectory_review"] = all(
        s.get("trajectory_turns") and s.get("cached_tokens") is not None for s in (t, b)
    )
    row["live"] = bool(t.get("live")) and bool(b.get("live"))
    row["demo_data"] = any(_demo(queries, run) for run in (run_t, run_b))
    row["efficiency_regressions"] = efficiency_regressions(row)
    row["_locations"] = {"target": _locations(run_t), "baseline": _locations(run_b)}
    row["_runs"] = {"target": _rerun_facts(run_t), "baseline": _rerun_facts(run_b)}
    row["_reviews"] = {
        "target": reviews.trajectory_review(queries, t.get("run_id")),
        "baseline": reviews.trajectory_review(queries, b.get("run_id")),
    }
    row["_failure_classes"] = {
        "target": reviews.failure_class(t),
        "baseline": reviews.failure_class(b),
    }
    return row


def _demo(queries: Queries, run: dict[str, Any] | None) -> bool:
    """Whether `run` was recorded in the demo's run group (`demo_data`): never published."""
    if run is None or not run.get("run_group_id"):
        return False
    found = queries.conn.execute(
        "SELECT kind FROM run_groups WHERE run_group_id = ?", (run["run_group_id"],)
    ).fetchone()
    return found is not None and group_marker(found[0]) is not None


def _token_evidence(side: dict[str, Any]) -> bool:
    names = ("input_tokens", "output_tokens", "total_tokens", "cached_pct", "llm_calls")
    return bool(side) and all(side.get(n) is not None for n in names)


def efficiency_regressions(row: dict[str, Any]) -> list[str]:
    """Where the target costs more than the baseline: tokens, calls, or less caching."""
    found = []
    if (row["total_tokens_delta"] or 0) > 0:
        found.append(f"total tokens +{row['total_tokens_delta']}")
    if (row["llm_calls_delta"] or 0) > 0:
        found.append(f"LLM calls +{row['llm_calls_delta']}")
    if (row["cached_pct_delta"] or 0) < 0:
        found.append(f"cached-token % {row['cached_pct_delta']:.2f}")
    return found


def _locations(run: dict[str, Any] | None) -> dict[str, Any] | None:
    """Where the run's logs, results and trajectories are, as the run recorded them."""
    if run is None:
        return None
    return {
        "run_id": run["run_id"],
        "results": run["source_path"],
        "run_dir": run["run_dir"],
        "artifacts": run["artifacts"] or {},
    }


def _rerun_facts(run: dict[str, Any] | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {k: run[k] for k in ("agent", "provider", "model", "config")}


# -- gates -------------------------------------------------------------------------------------


def gates(rows: list[dict[str, Any]], options: Options) -> dict[str, dict[str, Any]]:
    """Every gate's outcome with the benchmarks that block it (see docs/head-to-head.md)."""

    def gate(blocking: list[str], **extra: Any) -> dict[str, Any]:
        return {"ok": not blocking, "blocking": blocking, **extra}

    by_name = {r["benchmark"]: r for r in rows}
    result = {
        "comparable": gate(
            [r["benchmark"] for r in rows if r["comparison_status"] not in ACCEPTED]
        ),
        "token_evidence": gate([r["benchmark"] for r in rows if not r["token_evidence"]]),
        "required_stats": gate(
            [
                r["benchmark"]
                for r in rows
                if not r["required_stats"] or (r["live"] and not r["token_evidence"])
            ]
        ),
        "coverage": gate(
            [
                b
                for b in options.included
                if b not in by_name or by_name[b]["comparison_status"] == "missing"
            ],
            deferred_benchmarks=list(options.deferred),
        ),
        "efficiency": gate([r["benchmark"] for r in rows if r["efficiency_regressions"]]),
        "no_regression": gate(_regressions(rows, options.previous)),
        "quality": gate([] if _quality_ok(options.quality) else ["quality_guardrail"]),
        "trajectory_reviews": gate([r["benchmark"] for r in rows if not r["trajectory_review"]]),
        "live_report": gate([r["benchmark"] for r in rows if not r["live"]]),
    }
    parts = ["coverage", "comparable", "required_stats"]
    parts += [
        g
        for g in ("efficiency", "no_regression", "quality", "trajectory_reviews", "live_report")
        if g in options.enforce
    ]
    result["report"] = gate(sorted({b for p in parts for b in result[p]["blocking"]}), parts=parts)
    release = ["live_report", "coverage", "comparable", "required_stats", "token_evidence"]
    release += ["trajectory_reviews", "efficiency", "quality"]
    result["release"] = gate(
        sorted({b for p in release for b in result[p]["blocking"]}), parts=release
    )
    return {name: result[name] for name in GATES}


def _regressions(rows: list[dict[str, Any]], previous: dict[str, Any] | None) -> list[str]:
    """Benchmarks whose target accuracy fell below the previous summary's."""
    if previous is None:
        return []
    before = {b: r["target_accuracy"] for b, r in history.previous_rows(previous).items()}
    return [
        r["benchmark"]
        for r in rows
        if isinstance(before.get(r["benchmark"]), int | float)
        and (r["target_accuracy"] is None or r["target_accuracy"] < before[r["benchmark"]])
    ]


def _quality_ok(quality: dict[str, Any] | None) -> bool:
    """A guardrail report is clean when it says ok: true or exit_code 0."""
    return quality is not None and (quality.get("ok") is True or quality.get("exit_code") == 0)


def exit_result(
    gate_results: dict[str, dict[str, Any]], enforce: tuple[str, ...]
) -> tuple[int, str]:
    for name in GATES:
        if name in enforce and not gate_results[name]["ok"]:
            reason = GATE_REASONS[name]
            return EXIT_CODES[reason], reason
    return 0, "ok"


# -- the report ------------------------------------------------------------------------------------


def build(
    queries: Queries,
    target: Side,
    baseline: Side,
    benchmarks: list[str],
    options: Options,
    generated_at: str = "",
) -> dict[str, Any]:
    """The report as recorded: rows, queues, gates, coverage, the comparison with a
    previous summary when given, the exit code and its reason."""
    rows = [report_row(queries, b, target, baseline) for b in benchmarks]
    settle_statuses(rows, options.tolerance)
    improvement, efficiency = queue.queues(rows, target, baseline, options)
    gate_results = gates(rows, options)
    code, reason = exit_result(gate_results, options.enforce)
    for row in rows:
        for name in ("_locations", "_runs", "_stats", "_higher", "_reviews", "_failure_classes"):
            row.pop(name, None)
    comparable = gate_results["comparable"]
    report: dict[str, Any] = {
        "report_rows": rows,
        "benchmark_gate": {"ok": comparable["ok"], "blocking_benchmarks": comparable["blocking"]},
        "gates": gate_results,
        "improvement_queue": improvement,
        "efficiency_queue": efficiency,
        "coverage": history.coverage_summary(benchmarks, options.included, options.deferred),
    }
    if options.previous is not None:
        report["previous_summary_comparison"] = history.previous_summary_comparison(
            report, options.previous, generated_at
        )
    return {
        **report,
        "exit_codes": EXIT_CODES,
        "exit_code": code,
        "exit_reason": reason,
    }


def stored(queries: Queries, report_id: str) -> dict[str, Any]:
    """The report exactly as its event recorded it."""
    row = queries.conn.execute(
        "SELECT data, time FROM events WHERE type = 'HeadToHeadRecorded' "
        "AND json_extract(data, '$.report_id') = ? ORDER BY position LIMIT 1",
        (report_id,),
    ).fetchone()
    if row is None:
        raise NotFoundError(f"no head-to-head report '{report_id}'")
    data: dict[str, Any] = json.loads(row[0])
    # When it was recorded: the latest rows' `generated_at` / `updated_at`.
    data["recorded_at"] = row[1]
    return data
