"""Read-side queries over the projected tables."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from benchledger.domain.errors import AmbiguousIdError, NotFoundError

# Rows read from the database at a time by a query that streams its rows.
BATCH_ROWS = 500

RUN_JSON_COLUMNS = (
    "config",
    "metrics",
    "tokens",
    "artifacts",
    "command",
    "provenance",
    "code_versions",
)


def _rows(cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _streamed(cursor: sqlite3.Cursor) -> Iterator[dict[str, Any]]:
    """A query's rows as `_rows` gives them, fetched `BATCH_ROWS` at a time."""
    names = [d[0] for d in cursor.description]
    while batch := cursor.fetchmany(BATCH_ROWS):
        for values in batch:
            yield dict(zip(names, values, strict=True))


def decode_run(row: dict[str, Any]) -> dict[str, Any]:
    for column in RUN_JSON_COLUMNS:
        if row.get(column) is not None:
            row[column] = json.loads(row[column])
    if row.get("higher_is_better") is not None:
        row["higher_is_better"] = bool(row["higher_is_better"])
    row["invalidated"] = bool(row.get("invalidated"))
    return row


class Queries:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def runs(
        self,
        *,
        benchmark: str | None = None,
        agent: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        status: str | None = None,
    ) -> list[dict[str, Any]]:
        return list(
            self.iter_runs(
                benchmark=benchmark, agent=agent, provider=provider, model=model, status=status
            )
        )

    def iter_runs(
        self,
        *,
        columns: Sequence[str] | None = None,
        benchmark: str | None = None,
        agent: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        status: str | None = None,
    ) -> Iterator[dict[str, Any]]:
        """`runs`, read and decoded a batch at a time (memory holds a batch, not every
        run); with `columns`, only those (a listing reads no JSON it does not show)."""
        where, params = [], []
        for column, value in (
            ("benchmark", benchmark),
            ("agent", agent),
            ("provider", provider),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if model is not None:  # the name as stated, or the id it resolves to
            where.append("(model = ? OR model_id = ?)")
            params += [model, model]
        if status == "invalidated":
            where.append("invalidated = 1")
        elif status == "superseded":
            where.append("superseded_by IS NOT NULL")
        elif status is not None:
            where.append("status = ?")
            params.append(status)
        selected = "*" if columns is None else ", ".join(f"[{c}]" for c in columns)
        sql = f"SELECT {selected} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY coalesce(started_at, recorded_at), run_id"
        yield from map(decode_run, _streamed(self.conn.execute(sql, params)))

    def models(self, model_id: str | None = None) -> list[dict[str, Any]]:
        """Each stated model name under its model_id, and what joined it (`models`)."""
        sql = "SELECT model_id, name, provider, joined_by, runs, alias_reason FROM models"
        params: list[str] = []
        if model_id is not None:
            sql += " WHERE model_id = ? OR name = ?"
            params += [model_id, model_id]
        return _rows(self.conn.execute(sql + " ORDER BY model_id, name", params))

    def runs_by_agent(self, *, desc: bool, limit: int) -> list[dict[str, Any]]:
        """The first `limit` runs by (agent, the source's run key or else the run id),
        descending with `desc`: the orchestrator's `show-runs` order, sorted and cut by
        the database rather than in memory."""
        order = " DESC" if desc else ""
        sql = (
            "SELECT * FROM runs ORDER BY coalesce(agent, '')"
            f"{order}, coalesce(run_key, run_id){order}, run_id{order} LIMIT ?"
        )
        return [decode_run(r) for r in _rows(self.conn.execute(sql, (limit,)))]

    def open_groups(self) -> list[dict[str, Any]]:
        """Run groups not closed yet, when their runs were last heard of, and how many
        of those runs are still running."""
        sql = (
            "SELECT g.run_group_id, g.label, max(r.updated_at) AS last_activity, "
            "coalesce(sum(r.status = 'running'), 0) AS running FROM run_groups g "
            "LEFT JOIN runs r ON r.run_group_id = g.run_group_id "
            "WHERE g.closed_at IS NULL GROUP BY g.run_group_id ORDER BY g.opened_at"
        )
        return _rows(self.conn.execute(sql))

    def find_run(self, ref: str) -> dict[str, Any]:
        """A run by full id, unique id prefix (4+ characters) or run key; a run key
        names its current version (`import --amend` supersedes a version by another
        of the same key), unless every version of it is superseded."""
        rows = _rows(self.conn.execute("SELECT * FROM runs WHERE run_id = ?", (ref,)))
        if not rows and len(ref) >= 4:
            rows = _rows(
                self.conn.execute(
                    "SELECT * FROM runs WHERE run_id LIKE ? ORDER BY run_id LIMIT 5",
                    (ref.lower() + "%",),
                )
            )
        if not rows:
            rows = _rows(self.conn.execute("SELECT * FROM runs WHERE run_key = ?", (ref,)))
            current = [r for r in rows if r["superseded_by"] is None]
            rows = current or rows
        if not rows:
            raise NotFoundError(f"no run matches '{ref}'")
        if len(rows) > 1:
            ids = ", ".join(r["run_id"][:12] for r in rows)
            raise AmbiguousIdError(f"'{ref}' matches several runs ({ids}); give more of the id")
        return decode_run(rows[0])

    def cell_outcomes(self, run_id: str) -> list[dict[str, Any]]:
        return _rows(
            self.conn.execute(
                "SELECT outcome, count(*) AS cells, avg(score) AS mean_score FROM cells "
                "WHERE run_id = ? GROUP BY outcome ORDER BY outcome",
                (run_id,),
            )
        )

    def trajectory_summary(self, run_id: str) -> list[dict[str, Any]]:
        """Per trajectory file of the run: its turns and their token, cache and latency sums."""
        return _rows(
            self.conn.execute(
                "SELECT trajectory_file, count(*) AS turns, sum(prompt_tokens) AS prompt_tokens, "
                "sum(completion_tokens) AS completion_tokens, sum(total_tokens) AS total_tokens, "
                "sum(cached_tokens) AS cached_tokens, "
                "sum(cache_creation_tokens) AS cache_creation_tokens, "
                "avg(latency_ms) AS mean_latency_ms FROM turns WHERE run_id = ? "
                "GROUP BY trajectory_file ORDER BY trajectory_file",
                (run_id,),
            )
        )

    def cells(self, run_id: str, limit: int | None = None) -> list[dict[str, Any]]:
        sql = "SELECT key, outcome, score, metrics FROM cells WHERE run_id = ? ORDER BY rowid"
        params: list[Any] = [run_id]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = _rows(self.conn.execute(sql, params))
        for row in rows:
            row["metrics"] = json.loads(row["metrics"]) if row["metrics"] else {}
        return rows

    def history(self, run_id: str, *more: str) -> list[dict[str, Any]]:
        """The events of one run (or of several: its versions), with the claims of
        their attempts, in ledger order."""
        ids = json.dumps([run_id, *more])
        return self._events(
            "SELECT * FROM events WHERE stream IN (SELECT value FROM json_each(?)) "
            "OR (type = 'AttemptClaimed' AND json_extract(data, '$.run_id') IN "
            "(SELECT value FROM json_each(?))) ORDER BY position",
            (ids, ids),
        )

    def versions(self, run_id: str) -> list[dict[str, Any]]:
        """Every version of a run, oldest first: the runs of its run key that form a
        chain of supersessions (`superseded_by`) through it."""
        rows = _rows(
            self.conn.execute(
                "SELECT v.* FROM runs AS r JOIN runs AS v ON v.run_key = r.run_key "
                "WHERE r.run_id = ? "
                "ORDER BY v.last_position, v.run_id",
                (run_id,),
            )
        )
        by_id = {r["run_id"]: r for r in rows}
        chain = [by_id[run_id]] if run_id in by_id else []
        earlier = {r["superseded_by"]: r for r in rows if r["superseded_by"] is not None}
        while chain and chain[0]["run_id"] in earlier and len(chain) <= len(rows):
            chain.insert(0, earlier[chain[0]["run_id"]])
        while chain and chain[-1]["superseded_by"] in by_id and len(chain) <= len(rows):
            chain.append(by_id[chain[-1]["superseded_by"]])
        return chain

    def signature_history(self, signature: str) -> list[dict[str, Any]]:
        """Every claim, attempt, skip and refusal of one piece of work, in ledger order."""
        return self._events(
            "SELECT * FROM events WHERE json_extract(data, '$.signature') = ? "
            "OR stream IN (SELECT run_id FROM runs WHERE signature = ?) ORDER BY position",
            (signature, signature),
        )

    def find_signature(self, ref: str) -> str | None:
        if len(ref) < 8 or any(c not in "0123456789abcdef" for c in ref.lower()):
            return None
        rows = self.conn.execute(
            "SELECT DISTINCT signature FROM runs WHERE signature LIKE ? "
            "UNION SELECT DISTINCT signature FROM skips WHERE signature LIKE ? LIMIT 2",
            (ref.lower() + "%", ref.lower() + "%"),
        ).fetchall()
        if len(rows) > 1:
            raise AmbiguousIdError(f"'{ref}' matches several signatures; give more of it")
        return str(rows[0][0]) if rows else None

    def skips(self, run_group: str | None = None) -> list[dict[str, Any]]:
        sql, params = "SELECT * FROM skips", []
        if run_group:
            sql += " WHERE run_group_id = ?"
            params.append(run_group)
        return _rows(self.conn.execute(sql + " ORDER BY position", params))

    def events(self, since: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        return list(self.iter_events(since, limit))

    def iter_events(self, since: int = 0, limit: int | None = None) -> Iterator[dict[str, Any]]:
        """`events`, read and decoded a batch at a time: memory holds a batch, not the log."""
        sql = "SELECT * FROM events WHERE position > ? ORDER BY position"
        params: list[Any] = [since]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return self._iter_events(sql, params)

    def _events(self, sql: str, params: Any) -> list[dict[str, Any]]:
        return list(self._iter_events(sql, params))

    def _iter_events(self, sql: str, params: Any) -> Iterator[dict[str, Any]]:
        for row in _streamed(self.conn.execute(sql, params)):
            row["data"] = json.loads(row["data"])
            yield row

    def counts(self) -> dict[str, int]:
        out = {}
        for table in ("runs", "cells", "events", "benchmarks", "run_groups"):
            out[table] = self.conn.execute(f"SELECT count(*) FROM [{table}]").fetchone()[0]
        return out

    def head(self) -> tuple[int, str]:
        """The position and chain hash these read models were folded up to."""
        row = self.conn.execute(
            "SELECT position, chain_sha256 FROM chain ORDER BY position DESC LIMIT 1"
        ).fetchone()
        return (int(row[0]), str(row[1])) if row else (0, "0" * 64)

    def publication(self, table: str) -> list[dict[str, Any]]:
        """Rows of `latest`, `latest_per_agent`, `quarantine` or `baselines`, by benchmark
        then agent."""
        assert table in ("latest", "latest_per_agent", "quarantine", "baselines")
        rows = _rows(self.conn.execute(f"SELECT * FROM [{table}] ORDER BY benchmark, agent"))
        for row in rows:
            decode_run(row)
        return rows

    def benchmarks(self) -> list[dict[str, Any]]:
        return _rows(self.conn.execute("SELECT * FROM benchmarks ORDER BY benchmark"))
