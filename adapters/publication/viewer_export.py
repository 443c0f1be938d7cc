"""Export `viewer_data.json` in the orchestrator's shape (ORCHESTRATOR.md §5, §11(d)).

Runs and run groups are streamed from their cursors, one item at a time, and
never capped; summaries are SQL aggregates, so memory does not grow with the
ledger. The text is exactly `json.dumps(data, indent=2)` plus a newline (ASCII
escaped, keys in the orchestrator's order), written to a temp file beside the
target and renamed over it. One definition of `latest_scores`: the
publication's latest rows. Best scores follow each run's direction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from itertools import groupby
from pathlib import Path
from typing import IO, Any

from benchledger.adapters.publication.export_files import (
    PathScrubber,
    atomic_file,
    result_path,
    sub_objects,
    token_counts,
)
from benchledger.adapters.publication.publication import Publication
from benchledger.adapters.publication.queries import Queries, decode_run
from benchledger.domain.publication import CALIBRATION_EXPECTED

NEWEST = "coalesce(started_at, recorded_at) DESC, run_id DESC"
# A superseded version is not counted: its current version is.
CURRENT = "invalidated = 0 AND superseded_by IS NULL"
OK = f"(status = 'succeeded' AND {CURRENT} AND score IS NOT NULL)"
HIGHER = "coalesce(higher_is_better, 1)"
SUMMARY = f"""
SELECT {{key}} AS key, count(*) AS runs,
  coalesce(sum(status = 'succeeded' AND {CURRENT}), 0) AS succeeded_runs,
  max(CASE WHEN {OK} AND {HIGHER} = 1 THEN score END) AS best_higher,
  min(CASE WHEN {OK} AND {HIGHER} = 0 THEN score END) AS best_lower,
  coalesce(sum({OK} AND {HIGHER} = 1), 0) AS higher_runs
FROM runs {{where}} GROUP BY key ORDER BY key
"""
SCORES = f"SELECT {{key}} AS key, score FROM runs WHERE {OK} {{where}} ORDER BY key"
LATEST_PER_BENCHMARK = f"""
SELECT benchmark, run_id, started_at, model, provider FROM (
  SELECT *, row_number() OVER (
    PARTITION BY benchmark ORDER BY status = 'running', {NEWEST}
  ) AS newest FROM runs {{where}}
) WHERE newest = 1
"""
GROUP_STATE = """
SELECT
  (SELECT json_group_array(DISTINCT benchmark) FROM runs WHERE run_group_id = :g),
  (SELECT count(*) FROM runs WHERE run_group_id = :g AND status != 'succeeded')
  + (SELECT count(*) FROM skips WHERE run_group_id = :g AND outcome = 'launch_refused')
"""


@dataclass(frozen=True)
class ViewerReceipt:
    path: str
    runs: int
    run_groups: int
    latest_scores: int
    position: int
    head_sha256: str


class ViewerExport:
    def __init__(
        self,
        publication: Publication,
        queries: Queries,
        out: Path,
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
    ) -> None:
        self.view = publication
        self.conn = queries.conn
        self.out = out
        self.paths = PathScrubber(out.parent)
        self.include, self.exclude = sorted(include), sorted(exclude)
        self.counts = {"runs": 0, "run_groups": 0}

    def where(self, prefix: str = "WHERE") -> tuple[str, list[str]]:
        """A benchmark filter over `runs`, and its parameters."""
        clauses, params = [], []
        if self.include:
            clauses.append(f"benchmark IN ({', '.join('?' * len(self.include))})")
            params += self.include
        if self.exclude:
            clauses.append(f"benchmark NOT IN ({', '.join('?' * len(self.exclude))})")
            params += self.exclude
        return (f"{prefix} " + " AND ".join(clauses) if clauses else ""), params

    def in_scope(self, benchmark: str) -> bool:
        return (not self.include or benchmark in self.include) and benchmark not in self.exclude

    def run(self) -> ViewerReceipt:
        with atomic_file(self.out, "w") as handle:
            handle.write("{\n")
            handle.write(member("generated_at", self.view.generated_at) + ",\n")
            stream(handle, "runs", self.runs())
            handle.write(",\n")
            stream(handle, "run_groups", self.run_groups())
            latest = self.latest_scores()
            for key, value in (
                ("latest_scores", latest),
                ("benchmark_summary", self.benchmark_summary()),
                ("model_summary", self.summary("provider || ':' || model", "model_key")),
                ("agent_summary", self.summary("agent", "agent")),
                ("calibration_summary", self.calibration_summary()),
                ("ledger_position", self.view.position),
                ("ledger_head_sha256", self.view.head_sha256),
            ):
                handle.write(",\n" + member(key, value))
            handle.write("\n}\n")
        return ViewerReceipt(
            str(self.out),
            self.counts["runs"],
            self.counts["run_groups"],
            len(latest),
            self.view.position,
            self.view.head_sha256,
        )

    def rows(self, sql: str, params: Any = ()) -> Iterator[dict[str, Any]]:
        cursor = self.conn.execute(sql, params)
        names = [d[0] for d in cursor.description]
        for values in cursor:
            yield dict(zip(names, values, strict=True))

    def runs(self) -> Iterator[dict[str, Any]]:
        where, params = self.where()
        repo_meta = {
            g["run_group_id"]: json.loads(g["repo_meta"] or "{}")
            for g in self.rows("SELECT run_group_id, repo_meta FROM run_groups")
        }
        for row in self.rows(f"SELECT * FROM runs {where} ORDER BY {NEWEST}", params):
            self.counts["runs"] += 1
            yield self.paths.clean(self.run_item(decode_run(row), repo_meta))

    def run_item(self, row: dict[str, Any], repo_meta: dict[str, Any]) -> dict[str, Any]:
        metrics = row.get("metrics") or {}
        parts = sub_objects(metrics, row.get("tokens") or {})
        counts = token_counts(row.get("tokens") or {}, metrics)
        meta = repo_meta.get(row.get("run_group_id") or "", {})
        scored = self.view.with_high_score(row)
        run_dir = row.get("run_dir")
        bench = self.view.benchmarks.get(row["benchmark"], {})

        def number(name: str, *sources: dict[str, Any]) -> Any:
            found = (s.get(name) for s in (*sources, metrics))
            return next((v for v in found if isinstance(v, int | float)), None)

        return {
            **{k: row.get(k) for k in ("run_id", "run_group_id", "signature")},
            "benchmark_id": row["benchmark"],
            "benchmark_directory": bench.get("directory") or row["benchmark"],
            **{k: row.get(k) for k in ("status", "attempt", "agent", "provider", "model")},
            **{k: row.get(k) for k in ("started_at", "ended_at", "duration_seconds", "cwd")},
            "stdout_path": f"{run_dir}/stdout.log" if run_dir else None,
            "stderr_path": f"{run_dir}/stderr.log" if run_dir else None,
            "result_json_path": result_path(row),
            **{k: row.get(k) for k in ("score", "unit", "higher_is_better")},
            "trajectory_count": number("trajectory_count"),
            "llm_call_count": counts["llm_call_count"],
            "total_prompt_tokens": counts["input_tokens"],
            "total_completion_tokens": counts["output_tokens"],
            "total_cache_read_input_tokens": counts["cached_tokens"],
            "total_cache_creation_input_tokens": counts["cache_creation_input_tokens"],
            "mean_latency_ms": number("mean_latency_ms", parts["performance_metrics"]),
            "p95_latency_ms": number("p95_latency_ms", parts["performance_metrics"]),
            "throughput_per_second": number("throughput_per_second", parts["performance_metrics"]),
            "error": row.get("error"),
            **{k: scored[k] for k in ("high_score_label", "high_score_value")},
            "delta_to_high_score": scored["delta_to_high_score"],
            # The run's own code versions (recorded running it, or stated by its source),
            # else its group's: the orchestrator's `eliza_*` are benchledger's `agent_*`.
            "benchmark_version": row.get("benchmark_version")
            or meta.get("benchmark_version")
            or meta.get("benchmarks_version"),
            "benchmarks_commit": row.get("benchmarks_commit") or meta.get("benchmarks_commit"),
            "eliza_commit": row.get("agent_commit") or meta.get("eliza_commit"),
            "eliza_version": row.get("agent_version") or meta.get("eliza_version"),
            "extra_config": row.get("config") or {},
            "command": row.get("command") or [],
            "metrics": metrics,
            **parts,
            "artifacts": row.get("artifacts") or [],
            **{k: counts[k] for k in ("input_tokens", "output_tokens", "total_tokens")},
            "cached_tokens": counts["cached_tokens"],
            "call_count": counts["llm_call_count"],
            # Not in the orchestrator's shape: it never invalidates a run, the ledger does.
            "invalidated": bool(row.get("invalidated")),
            "invalidated_reason": row.get("invalidated_reason"),
        }

    def run_groups(self) -> Iterator[dict[str, Any]]:
        sql = "SELECT * FROM run_groups ORDER BY opened_at DESC, run_group_id DESC"
        for group in self.rows(sql):
            gid = group["run_group_id"]
            ran, failures = self.conn.execute(GROUP_STATE, {"g": gid}).fetchone()
            selection = json.loads(group["selection"] or "[]") or sorted(json.loads(ran))
            benchmarks = [b for b in selection if self.in_scope(b)]
            if selection and not benchmarks:
                continue
            closed = group["closed_at"]
            status = "running" if not closed else "failed" if failures else "succeeded"
            self.counts["run_groups"] += 1
            yield self.paths.clean(
                {
                    "run_group_id": gid,
                    "created_at": group["opened_at"],
                    "finished_at": closed,
                    "execution_namespace": None,
                    "checkpoint_relpath": None,
                    "cohort_status": status,
                    "pause_retry_at": None,
                    "pause_reason": None,
                    "updated_at": closed or group["opened_at"],
                    "request": json.loads(group["request"] or "{}"),
                    "benchmarks": benchmarks,
                    "repo_meta": json.loads(group["repo_meta"] or "{}"),
                    "pause_metadata": {},
                    "storage_preflight": {},
                }
            )

    def latest_scores(self) -> list[dict[str, Any]]:
        out = []
        for _, row in sorted(self.view.latest.items()):
            scored = self.view.with_high_score(row)
            counts = token_counts(row.get("tokens") or {}, row.get("metrics") or {})
            calls = counts["llm_call_count"]
            out.append(
                {
                    "benchmark_id": row["benchmark"],
                    **{k: row.get(k) for k in ("run_id", "run_group_id", "started_at")},
                    **{k: row.get(k) for k in ("score", "unit", "agent", "provider", "model")},
                    **{k: scored[k] for k in ("high_score_label", "high_score_value")},
                    "delta_to_high_score": scored["delta_to_high_score"],
                    "llm_call_count": calls,
                    "total_prompt_tokens": counts["input_tokens"],
                    "total_completion_tokens": counts["output_tokens"],
                    "total_cache_read_input_tokens": counts["cached_tokens"],
                    "total_cache_creation_input_tokens": counts["cache_creation_input_tokens"],
                    **{k: v for k, v in counts.items() if k != "llm_call_count"},
                    "call_count": calls,
                    "token_metrics": {**counts, "call_count": calls},
                }
            )
        return list(self.paths.clean(out))

    def summary(self, expression: str, name: str) -> list[dict[str, Any]]:
        """Runs per key; best_score follows direction: the minimum when every scored run
        is lower-is-better, else the maximum over the higher-is-better runs only."""
        where, params = self.where()
        sql = SUMMARY.replace("{key}", expression).replace("{where}", where)
        means = self.means(expression)
        return [
            {
                name: r["key"],
                "runs": r["runs"],
                "succeeded_runs": r["succeeded_runs"],
                "average_score": means.get(r["key"]),
                "best_score": r["best_higher"] if r["higher_runs"] else r["best_lower"],
            }
            for r in self.rows(sql, params)
        ]

    def means(self, expression: str) -> dict[str, float]:
        """Mean score per key of the succeeded, valid runs, summed exactly: the same
        bytes whatever order the store yields the scores in."""
        where, params = self.where("AND")
        sql = SCORES.replace("{key}", expression).replace("{where}", where)
        out = {}
        for key, group in groupby(self.rows(sql, params), key=lambda r: r["key"]):
            scores = [Fraction(r["score"]) for r in group]
            out[key] = float(sum(scores, Fraction(0)) / len(scores))
        return out

    def benchmark_summary(self) -> list[dict[str, Any]]:
        where, params = self.where()
        latest = {
            r["benchmark"]: r
            for r in self.rows(LATEST_PER_BENCHMARK.replace("{where}", where), params)
        }
        out = []
        for entry in self.summary("benchmark", "benchmark_id"):
            newest = latest[entry["benchmark_id"]]
            out.append(
                {
                    **{k: v for k, v in entry.items() if k != "average_score"},
                    "latest_run_id": newest["run_id"],
                    "latest_started_at": newest["started_at"],
                    "latest_model": newest["model"],
                    "latest_provider": newest["provider"],
                }
            )
        return out

    def calibration_summary(self) -> list[dict[str, Any]]:
        """Per benchmark with a calibration run: each harness's baseline score, and its
        status (the newest run's when it has no baseline row, else `missing`)."""
        agents = list(CALIBRATION_EXPECTED)
        where, params = self.where("AND")
        marks = ", ".join("?" * len(agents))
        newest: dict[tuple[str, str], str] = {}
        sql = f"SELECT benchmark, agent, status FROM runs WHERE agent IN ({marks}) {where}"
        for r in self.rows(f"{sql} ORDER BY {NEWEST}", [*agents, *params]):
            newest.setdefault((r["benchmark"], r["agent"]), r["status"])
        out = []
        for benchmark in sorted({b for b, _ in newest}):
            rows = {a: self.view.baselines.get((benchmark, a)) for a in agents}
            out.append(
                {
                    "benchmark_id": benchmark,
                    "scores": {a: r["score"] if r else None for a, r in rows.items()},
                    "statuses": {
                        a: r["status"] if r else newest.get((benchmark, a), "missing")
                        for a, r in rows.items()
                    },
                    "complete": all(r is not None for r in rows.values()),
                }
            )
        return out


def member(key: str, value: Any) -> str:
    """One `"key": value` member of a top-level indent-2 object."""
    return f"  {json.dumps(key)}: " + json.dumps(value, indent=2).replace("\n", "\n  ")


def stream(handle: IO[str], key: str, items: Iterable[Any]) -> None:
    """A list member written item by item, byte-identical to json.dumps(indent=2)."""
    handle.write(f"  {json.dumps(key)}: [")
    empty = True
    for item in items:
        handle.write(("\n" if empty else ",\n") + "    ")
        handle.write(json.dumps(item, indent=2).replace("\n", "\n    "))
        empty = False
    handle.write("]" if empty else "\n  ]")


def export_viewer_data(
    publication: Publication,
    queries: Queries,
    out: Path,
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
) -> ViewerReceipt:
    return ViewerExport(publication, queries, out, include, exclude).run()
