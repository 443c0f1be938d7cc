"""Export the publication as the orchestrator's `latest/` snapshot: one file per row.

`DIR/latest/<b>__<a>.json`, `DIR/quarantine/<b>__<a>.json`, `DIR/baselines/<b>__<a>.json`
and `DIR/latest/index.json`, in the shapes of ORCHESTRATOR.md §4 and §11(b, c); latest
and quarantine rows that succeeded carry the orchestrator's `publication_warnings`. A
row of a run imported from the orchestrator is the row it wrote: its ids, paths, status,
error and completed token metrics (`source_rows`); the ledger's own runs keep host
paths out.
Everything is derived from one ledger position, so re-exporting without new
events is byte-identical; every file is written atomically, and an unchanged
file is not rewritten. DIR belongs to the export: any other `<b>__<a>.json` in
the three managed directories is removed as stale (nothing else is touched).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchledger.adapters.publication.export_files import (
    PathScrubber,
    dumps_sorted,
    file_names,
    result_path,
    sub_objects,
    write_atomically,
)
from benchledger.adapters.publication.publication import Publication
from benchledger.adapters.publication.queries import Queries
from benchledger.adapters.publication.source_rows import source_rows
from benchledger.domain.publication import complete_token_metrics, publication_warnings
from benchledger.projections.latest_select import acceptable

MANAGED = ("latest", "quarantine", "baselines")
ROW_FILE = re.compile(r"^[a-z0-9._-]+__[a-z0-9._-]+\.json$")
# The newest acceptable real run of every (signature, benchmark, agent) ever recorded:
# the same acceptability as `latest`, but not only the current rows.
BY_SIGNATURE = """
SELECT * FROM (
  SELECT run_id, run_group_id, benchmark, agent, signature, comparison_signature, score,
         status, coalesce(ended_at, started_at, recorded_at) AS updated_at, source_path, run_dir,
         row_number() OVER (
           PARTITION BY {column}, benchmark, agent
           ORDER BY coalesce(started_at, recorded_at) DESC, run_id DESC
         ) AS newest
  FROM candidates
  WHERE ACCEPTABLE AND {column} IS NOT NULL AND {column} != ''
) WHERE newest = 1 ORDER BY {column}, benchmark, agent
""".replace("ACCEPTABLE", acceptable())


@dataclass
class ExportReceipt:
    position: int
    head_sha256: str
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)


class LatestExport:
    """One export of a Publication into DIR."""

    def __init__(self, publication: Publication, queries: Queries, root: Path) -> None:
        self.view = publication
        self.queries = queries
        self.root = root
        self.paths = PathScrubber(root)
        # The orchestrator's rows of the picks imported from it, by ledger run id.
        self.sources = publication.sources()

    def run(self) -> ExportReceipt:
        view = self.view
        receipt = ExportReceipt(view.position, view.head_sha256)
        planned: dict[str, bytes] = {}
        index_latest: dict[str, Any] = {}
        for table, rows in (
            ("latest", view.latest),
            ("quarantine", view.quarantine),
            ("baselines", view.baselines),
        ):
            names = file_names(sorted(rows))
            for key, row in sorted(rows.items()):
                relative = f"{table}/{names[key]}"
                payload = self.row_payload(table, row)
                planned[relative] = dumps_sorted(payload)
                if table == "latest":
                    index_latest[f"{key[0]}::{key[1]}"] = self.index_entry(relative, row, payload)
            receipt.rows[table] = len(rows)
        # Rows first and the index last, so the index never names a file not yet there.
        planned["latest/index.json"] = dumps_sorted(self.index(index_latest))
        for directory in MANAGED:
            (self.root / directory).mkdir(parents=True, exist_ok=True)
        for relative, data in planned.items():
            changed = write_atomically(self.root / relative, data)
            (receipt.written if changed else receipt.unchanged).append(relative)
        for directory in MANAGED:
            for existing in sorted((self.root / directory).iterdir()):
                relative = f"{directory}/{existing.name}"
                if ROW_FILE.match(existing.name) and relative not in planned:
                    existing.unlink()
                    receipt.removed.append(relative)
        return receipt

    def row_payload(self, table: str, row: dict[str, Any]) -> dict[str, Any]:
        source = self.sources.get(row["run_id"])
        if source is not None:
            return self.source_payload(table, row, source)
        bench = self.view.benchmarks.get(row["benchmark"], {})
        metrics = row.get("metrics") or {}
        hib = row.get("higher_is_better")
        payload: dict[str, Any] = {
            "updated_at": row.get("updated_at"),
            "benchmark_id": row["benchmark"],
            "benchmark_directory": bench.get("directory") or row["benchmark"],
            "run_group_id": row.get("run_group_id"),
            "run_id": row["run_id"],
            "signature": row.get("signature"),
            "comparison_signature": row.get("comparison_signature"),
            "status": row.get("status"),
            "agent": row["agent"],
            "provider": row.get("provider"),
            "model": row.get("model"),
            "score": row.get("score"),
            "unit": row.get("unit"),
            "higher_is_better": None if hib is None else bool(hib),
            "metrics": metrics,
            **sub_objects(metrics, row.get("tokens") or {}),
            "result_json_path": result_path(row),
            "artifacts": list(row.get("artifacts") or []),
            "error": row.get("error"),
        }
        if table == "quarantine":
            payload["quarantine_reason"] = row.get("quarantine_reason")
        else:  # a baseline is a calibration harness's latest row
            payload["extra_config"] = row.get("config") or {}
        self.stamp(table, row, payload, metrics)
        return dict(self.paths.clean(payload))

    def source_payload(
        self, table: str, row: dict[str, Any], source: dict[str, Any]
    ) -> dict[str, Any]:
        """A row of a run imported from the orchestrator: the row it writes of that run."""
        metrics = dict(source["metrics"])
        tokens = complete_token_metrics(
            source.get("token_metrics") or {}, source.get("trajectory_summary") or {}
        )
        metrics["token_metrics"] = tokens
        payload: dict[str, Any] = {
            "updated_at": source["ended_at"] or source["started_at"],
            **{k: source[k] for k in ("benchmark_id", "benchmark_directory", "run_group_id")},
            **{k: source[k] for k in ("run_id", "signature")},
            "comparison_signature": row.get("comparison_signature"),
            **{k: source[k] for k in ("status", "agent", "provider", "model")},
            **({} if table == "quarantine" else {"extra_config": source["extra_config"]}),
            **{k: source[k] for k in ("score", "unit", "higher_is_better")},
            "metrics": metrics,
            "trajectory_summary": source.get("trajectory_summary") or {},
            "token_metrics": tokens,
            "cache_metrics": source.get("cache_metrics") or {},
            "performance_metrics": source.get("performance_metrics") or {},
            "result_json_path": source["result_json_path"],
            "artifacts": source["artifacts"] or [],
            "error": source["error"],
        }
        if table == "quarantine":
            payload["quarantine_reason"] = row.get("quarantine_reason")
        self.stamp(table, row, payload, metrics)
        return payload

    def stamp(
        self, table: str, row: dict[str, Any], payload: dict[str, Any], metrics: dict[str, Any]
    ) -> None:
        """A baseline's `synthetic`; a published row's warnings and demo marker."""
        if table == "baselines":
            payload["synthetic"] = True
            return
        warnings = publication_warnings(
            row["benchmark"], payload["status"], payload["token_metrics"], metrics
        )
        demo = self.view.group_marker(row)
        if demo is not None:  # stamped, so that no reader takes it for a result
            payload["demo_data"] = True
            warnings = [demo, *warnings]
        if warnings:
            payload["publication_warnings"] = warnings

    def index_entry(
        self, path: str, row: dict[str, Any], payload: dict[str, Any]
    ) -> dict[str, Any]:
        """The row's entry in the index. `path` is the file's below the export's root:
        the orchestrator writes where it put the file on its host; an export keeps this
        host's paths out (no reader of the index opens it)."""
        demo = {"demo_data": True} if self.view.group_marker(row) is not None else {}
        return {
            **demo,
            "path": path,
            **{k: payload[k] for k in ("run_id", "run_group_id", "signature")},
            **{k: payload[k] for k in ("comparison_signature", "score", "status", "updated_at")},
        }

    def index(self, latest: dict[str, Any]) -> dict[str, Any]:
        """latest/index.json; it names the rows that are demo data (`demo_data`), if any."""
        view = self.view
        demo = sorted(key for key, entry in latest.items() if entry.get("demo_data"))
        return {
            **({"demo_data": demo} if demo else {}),
            "updated_at": self.updated_at(),
            "latest": latest,
            "latest_by_signature": self.by_signature("signature"),
            "latest_by_comparison_signature": self.by_signature("comparison_signature"),
            "benchmark_comparability": self.comparability(),
            "matrix_contract": self.matrix(),
            "ledger_position": view.position,
            "ledger_head_sha256": view.head_sha256,
            "ledger_checkpoint": view.checkpoint,
        }

    def updated_at(self) -> str | None:
        """The index's time, as the orchestrator's rebuild stamps it: the newest time its
        rows state (so that it is the same on every export of the same rows)."""
        view = self.view
        stamps = []
        for rows in (view.latest, view.quarantine, view.baselines):
            for row in rows.values():
                source = self.sources.get(row["run_id"])
                times = (
                    (source["ended_at"], source["started_at"])
                    if source is not None
                    else (row.get("updated_at"), row.get("ended_at"), row.get("started_at"))
                )
                stamps += [str(t) for t in times if t]
        return max(stamps) if stamps else view.generated_at

    def by_signature(self, column: str) -> dict[str, Any]:
        scope = set(self.view.benchmark_ids) | {b for b, _ in self.view.latest}
        cursor = self.queries.conn.execute(BY_SIGNATURE.replace("{column}", column))
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, values, strict=True)) for values in cursor]
        rows = [row for row in rows if row["benchmark"] in scope]
        sources = source_rows(self.queries.conn, [row["run_id"] for row in rows])
        out: dict[str, Any] = {}
        for row in rows:
            source = sources.get(row["run_id"])
            if source is not None:
                entry = {
                    **{k: source[k] for k in ("run_id", "run_group_id", "benchmark_id")},
                    "agent": row["agent"],
                    **{k: source[k] for k in ("signature", "score", "status")},
                    "updated_at": source["ended_at"] or source["started_at"],
                    "result_json_path": source["result_json_path"],
                }
                if column == "comparison_signature":
                    entry["comparison_signature"] = row["comparison_signature"]
                out[f"{row[column]}::{row['benchmark']}::{row['agent']}"] = entry
                continue
            entry = {
                "run_id": row["run_id"],
                "run_group_id": row["run_group_id"],
                "benchmark_id": row["benchmark"],
                "agent": row["agent"],
                "signature": row["signature"],
                "score": row["score"],
                "status": row["status"],
                "updated_at": row["updated_at"],
                "result_json_path": result_path(row),
            }
            if column == "comparison_signature":
                entry["comparison_signature"] = row["comparison_signature"]
            out[f"{row[column]}::{row['benchmark']}::{row['agent']}"] = self.paths.clean(entry)
        return out

    def matrix(self) -> dict[str, Any]:
        """The matrix contract; a cell of a run imported from the orchestrator names its
        run and group as the orchestrator does, and its status as it states it."""
        contract = self.view.matrix()
        for benchmark in (contract.get("benchmarks") or {}).values():
            for cell in (benchmark.get("cells") or {}).values():
                source = self.sources.get(str(cell.get("run_id")))
                if source is None:
                    continue
                cell["run_id"], cell["run_group_id"] = source["run_id"], source["run_group_id"]
                if cell.get("status") == "recovered":
                    cell["status"] = source["status"]
                    if cell.get("state") == "recovered":
                        cell["state"] = source["status"]
        return contract

    def comparability(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for (benchmark, agent), row in sorted(self.view.latest.items()):
            entry = out.setdefault(
                benchmark, {"agents": [], "comparable": True, "comparison_signatures": {}}
            )
            entry["agents"].append(agent)
            entry["comparison_signatures"][agent] = row.get("comparison_signature")
        for entry in out.values():
            distinct = {s for s in entry["comparison_signatures"].values() if s}
            entry["comparable"] = len(distinct) <= 1
        return out


def export_latest(publication: Publication, queries: Queries, root: Path) -> ExportReceipt:
    return LatestExport(publication, queries, root).run()
