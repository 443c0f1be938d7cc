"""Export `viewer_data.json` in the orchestrator's shape (ORCHESTRATOR.md §5, §11(d)).

Runs and run groups are streamed from their cursors, newest first, one item at a time,
and never capped (the orchestrator keeps 10,000 runs and 3,000 groups); the summaries
are folded from the runs as they are written (`viewer_summaries`), so memory does not
grow with the ledger. A run or group imported from the orchestrator is written as the
orchestrator writes it (`source_rows`: its ids, paths, statuses, telemetry columns),
and so are the rows it did not run (its skipped, incompatible and missing-env rows are
runs of its dataset); the ledger's own runs keep host paths out. `latest_scores` is
the orchestrator export's: per benchmark and agent, the succeeded runs with a score
that started last. `generated_at` is the newest time the runs and groups state, so a
re-export without new events is byte-identical. The text is exactly
`json.dumps(data, indent=2)` plus a newline (ASCII escaped, keys in the orchestrator's
order), written to a temp file beside the target and renamed over it.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
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
from benchledger.adapters.publication.source_rows import (
    ORCHESTRATOR,
    is_source_run,
    latest_score,
    run_row,
    skip_row,
    with_flat_tokens,
)
from benchledger.adapters.publication.viewer_summaries import Summaries

# The time and id a run is listed by, newest first, as the orchestrator lists its rows:
# a run imported from it by the times and id it states.
RUN_START = (
    "coalesce(json_extract(provenance, '$.source_columns.started_at'), started_at, recorded_at)"
)
RUN_END = "coalesce(json_extract(provenance, '$.source_columns.ended_at'), ended_at)"
RUN_ID = (
    f"CASE WHEN source_format = '{ORCHESTRATOR}' THEN coalesce(run_key, run_id) ELSE run_id END"
)
# The rows the orchestrator did not run, imported from it (`source_rows.is_source_skip`).
SOURCE_SKIP = (
    "json_type(provenance, '$.run_id') = 'text' AND json_type(provenance, '$.status') = 'text' "
    "AND json_type(provenance, '$.signature_check') IS NOT NULL"
)
SKIP_START = (
    "coalesce(json_extract(provenance, '$.source_columns.started_at'), "
    "json_extract(provenance, '$.started_at'), time)"
)
SKIP_END = (
    "coalesce(json_extract(provenance, '$.source_columns.ended_at'), "
    "json_extract(provenance, '$.ended_at'))"
)
SKIP_ID = "json_extract(provenance, '$.run_id')"
GROUP_ID = "CASE WHEN kind = 'source' THEN coalesce(label, run_group_id) ELSE run_group_id END"
GROUP_STATE = """
SELECT
  (SELECT json_group_array(DISTINCT benchmark) FROM runs WHERE run_group_id = :g),
  (SELECT count(*) FROM runs WHERE run_group_id = :g AND status != 'succeeded')
  + (SELECT count(*) FROM skips WHERE run_group_id = :g AND outcome = 'launch_refused')
"""
# A source group's columns the ledger keeps in its `source`, in `list_run_groups`' order.
GROUP_SCALARS = ("execution_namespace", "checkpoint_relpath")
GROUP_PAUSE = ("pause_retry_at", "pause_reason", "updated_at")
GROUP_JSON = ("execution_contract", "pause_metadata", "storage_preflight")


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
        self.summaries = Summaries()

    def where(self, prefix: str = "WHERE") -> tuple[str, list[str]]:
        """A benchmark filter over `runs` or `skips`, and its parameters."""
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
            handle.write(member("generated_at", self.generated_at()) + ",\n")
            stream(handle, "runs", self.runs())
            handle.write(",\n")
            stream(handle, "run_groups", self.run_groups())
            summaries = self.summaries
            latest = summaries.latest_scores()
            for key, value in (
                ("latest_scores", latest),
                ("benchmark_summary", summaries.benchmark_summary()),
                ("model_summary", summaries.summary("model")),
                ("agent_summary", summaries.summary("agent")),
                ("calibration_summary", summaries.calibration_summary()),
                ("ledger_position", self.view.position),
                ("ledger_head_sha256", self.view.head_sha256),
                ("ledger_checkpoint", self.view.checkpoint),
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

    def generated_at(self) -> str | None:
        """The newest time a listed run or group states, as the orchestrator stamps its
        dataset (so that it is the same on every export of the same runs)."""
        where, params = self.where()
        also, more = self.where("AND")
        times = [
            *self.conn.execute(
                f"SELECT max(coalesce({RUN_END}, '')), max(coalesce({RUN_START}, '')) "
                f"FROM runs {where}",
                params,
            ).fetchone(),
            *self.conn.execute(
                f"SELECT max(coalesce({SKIP_END}, '')), max(coalesce({SKIP_START}, '')) "
                f"FROM skips WHERE {SOURCE_SKIP} {also}",
                more,
            ).fetchone(),
            *self.conn.execute(
                # An import's group opened when it was imported: not a time of the runs.
                "SELECT max(coalesce(json_extract(source, '$.finished_at'), closed_at, '')), "
                "max(coalesce(json_extract(source, '$.created_at'), opened_at, '')) "
                "FROM run_groups WHERE kind != 'import'"
            ).fetchone(),
        ]
        stated = [t for t in times if t]
        return max(stated) if stated else self.view.generated_at

    def runs(self) -> Iterator[dict[str, Any]]:
        """The runs and the source's rows it did not run, newest first, each folded into
        the summaries as it is written."""
        where, params = self.where()
        also, more = self.where("AND")
        repo_meta = {
            g["run_group_id"]: json.loads(g["repo_meta"] or "{}")
            for g in self.rows("SELECT run_group_id, repo_meta FROM run_groups")
        }
        runs = self.rows(
            f"SELECT *, {RUN_START} AS listed_at, {RUN_ID} AS listed_id FROM runs {where} "
            "ORDER BY listed_at DESC, listed_id DESC",
            params,
        )
        skips = self.rows(
            f"SELECT *, {SKIP_START} AS listed_at, {SKIP_ID} AS listed_id FROM skips "
            f"WHERE {SOURCE_SKIP} {also} ORDER BY listed_at DESC, listed_id DESC",
            more,
        )
        listed = heapq.merge(
            runs, skips, key=lambda r: (r["listed_at"] or "", r["listed_id"] or ""), reverse=True
        )
        for row in listed:
            self.counts["runs"] += 1
            if "run_key" not in row:  # a row of `skips`
                row["provenance"] = json.loads(row["provenance"] or "{}")
                source = skip_row(row)
                item = with_flat_tokens(source)
                self.summaries.add(item, partial(latest_score, source))
                yield item
                continue
            run = decode_run(row)
            if is_source_run(run):
                source = run_row(run)
                item = {
                    **with_flat_tokens(source),
                    "invalidated": run["invalidated"],
                    "invalidated_reason": run.get("invalidated_reason"),
                }
                summary = {**item, "superseded": run.get("superseded_by") is not None}
                self.summaries.add(summary, partial(latest_score, source))
                yield item
                continue
            item = self.paths.clean(self.run_item(run, repo_meta))
            summary = {**item, "superseded": run.get("superseded_by") is not None}
            self.summaries.add(summary, partial(self.latest_entry, run))
            yield item

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
        sql = f"SELECT * FROM run_groups ORDER BY opened_at DESC, {GROUP_ID} DESC"
        for group in self.rows(sql):
            if group["kind"] == "source":
                item = self.source_group(group)
                if item is not None:
                    self.counts["run_groups"] += 1
                    yield item
                continue
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

    def source_group(self, group: dict[str, Any]) -> dict[str, Any] | None:
        """A run group imported from the orchestrator, as its `list_run_groups` reads it:
        its id and columns as stated (a NULL JSON column has no key)."""
        source = json.loads(group["source"] or "{}")
        selection = json.loads(group["selection"] or "[]")
        benchmarks = [b for b in selection if self.in_scope(b)]
        if (self.include or self.exclude) and not benchmarks:
            return None
        item: dict[str, Any] = {
            "run_group_id": group["label"],
            "created_at": source.get("created_at", group["opened_at"]),
            "finished_at": source.get("finished_at", group["closed_at"]),
            **{k: source.get(k) for k in GROUP_SCALARS},
            "cohort_status": source.get("status", group["status"]),
            **{k: source.get(k) for k in GROUP_PAUSE},
            "request": json.loads(group["request"] or "{}"),
            "benchmarks": benchmarks,
            "repo_meta": json.loads(group["repo_meta"] or "{}"),
        }
        item.update({k: source[k] for k in GROUP_JSON if source.get(k) is not None})
        return item

    def latest_entry(self, row: dict[str, Any]) -> dict[str, Any]:
        """A `latest_scores` entry of a run the ledger executed (or imported from another
        harness): its token counts as the ledger recorded them."""
        scored = self.view.with_high_score(row)
        counts = token_counts(row.get("tokens") or {}, row.get("metrics") or {})
        calls = counts["llm_call_count"]
        entry = {
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
        cleaned: dict[str, Any] = self.paths.clean(entry)
        return cleaned


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
