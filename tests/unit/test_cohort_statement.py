"""The settle's cohort statement (`latest_select.COHORT`) finds each key's newest
candidate by a grouped maximum of `recency`; its definition is a ranking by start, then
run id. On random candidates (starts with and without microseconds, equal starts, groups,
subscriptions, several signatures and required agents listed twice) both choose the same
cohorts."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from benchledger.projections.base import iso
from benchledger.projections.latest import LatestProjection
from benchledger.projections.latest_select import COHORT, SETTLE, _start, acceptable
from benchledger.projections.store import ReadModelStore

NAMES = {t.name: t.name for t in LatestProjection.tables}

# The pool, its coverage and its members as a ranking defines them (the statement's text
# before grouped maximums, joined to the rule's pairs): each key's first row by start,
# then run id, newest first.
RANKED = f"""
pool AS (
  SELECT c.run_id, c.benchmark, c.agent, c.comparison_signature AS signature,
    coalesce(trim(c.run_group_id), '') AS grp,
    lower(trim(coalesce(c.provider, ''))) = 'claude-subscription' AS subscription,
    coalesce(c.ended_at, c.started_at, c.recorded_at) AS moment,
    {_start("c.")} || ' ' || c.run_id AS recency,
    row_number() OVER (PARTITION BY c.benchmark, c.comparison_signature, c.agent
      ORDER BY {_start("c.")} DESC, c.run_id DESC) AS nth,
    row_number() OVER (
      PARTITION BY c.benchmark, c.comparison_signature, coalesce(trim(c.run_group_id), ''),
        c.agent
      ORDER BY {_start("c.")} DESC, c.run_id DESC) AS nth_in_group
  FROM [{{candidates}}] AS c JOIN rule AS r ON r.benchmark = c.benchmark AND r.agent = c.agent
  WHERE c.benchmark IN (SELECT benchmark FROM mixed) AND coalesce(c.comparison_signature, '') != ''
    AND {acceptable("c.")}
),
covering AS (
  SELECT p.benchmark, p.signature, min(p.subscription) AS subscription
  FROM pool AS p JOIN mixed AS m ON m.benchmark = p.benchmark WHERE p.nth = 1
  GROUP BY p.benchmark, p.signature HAVING count(*) = max(m.size)
),
members AS (
  SELECT p.benchmark, p.signature, '' AS grp, p.agent, p.run_id, p.moment, p.recency
  FROM pool AS p JOIN covering AS s ON s.benchmark = p.benchmark AND s.signature = p.signature
  WHERE s.subscription = 0 AND p.nth = 1
  UNION ALL
  SELECT p.benchmark, p.signature, p.grp, p.agent, p.run_id, p.moment, p.recency
  FROM pool AS p JOIN covering AS s ON s.benchmark = p.benchmark AND s.signature = p.signature
  WHERE s.subscription = 1 AND p.nth_in_group = 1 AND p.grp != ''
),
"""


def ranked_cohort() -> str:
    start, end = COHORT.index("pool AS ("), COHORT.index("cohorts AS (")
    return COHORT[:start] + RANKED.lstrip() + COHORT[end:]


def chosen(store: ReadModelStore, cohort: str) -> list[tuple[str, str, str]]:
    sql = (cohort + "SELECT benchmark, agent, run_id FROM chosen ORDER BY 1, 2, 3").format(**NAMES)
    return [tuple(r) for r in store.conn.execute(sql)]


def moments(rng: random.Random) -> Iterator[str]:
    base = datetime(2026, 5, 1, tzinfo=UTC)
    while True:
        at = base + timedelta(seconds=rng.randrange(40), microseconds=rng.choice([0, 0, 7, 5000]))
        yield str(iso(at))


def fill(store: ReadModelStore, rng: random.Random) -> None:
    agents = ["eliza", "hermes", "openclaw", "other"]
    when = moments(rng)
    conn = store.conn
    for b in range(6):
        benchmark = f"bench{b}"
        required = rng.choice(
            [agents[:3], agents[:2], ["eliza", "hermes", "hermes"], [*agents[:3], "other"]]
        )
        conn.execute(
            "INSERT INTO required_agents (benchmark, required, declared, position) "
            "VALUES (?, ?, 1, 0)",
            (benchmark, json.dumps(required)),
        )
        for n in range(rng.randrange(10, 60)):
            agent = rng.choice(agents)
            conn.execute(
                "INSERT INTO candidates (run_id, benchmark, agent, provider, status, score, "
                "config, metrics, invalidated, superseded, synthetic, stale, kind, "
                "comparison_signature, run_group_id, started_at, ended_at, recorded_at) "
                "VALUES (?, ?, ?, ?, ?, 1.0, '{}', '{}', 0, 0, 0, 0, 'run', ?, ?, ?, ?, ?)",
                (
                    f"run-{b}-{n:03d}-{rng.randrange(99):02d}",
                    benchmark,
                    agent,
                    rng.choice(["cerebras", "claude-subscription", "claude-subscription "]),
                    rng.choice(["succeeded"] * 5 + ["failed"]),
                    rng.choice(["sig-a", "sig-b", "sig-c", "", None]),
                    rng.choice(["g1", "g2", " g2 ", "", None]),
                    rng.choice([next(when), next(when), None]),
                    rng.choice([next(when), None]),
                    next(when),
                ),
            )
        conn.execute(
            "INSERT OR IGNORE INTO latest_pending (benchmark, agent) "
            "SELECT DISTINCT benchmark, agent FROM candidates"
        )


def settled_to_the_cohort(store: ReadModelStore, seed: int) -> None:
    """A random ledger of `seed`, settled up to the cohort: the newest rows per agent
    that the cohort compares (call inside `store.write()`)."""
    store.create_tables(LatestProjection())
    fill(store, random.Random(seed))
    cohort_at = next(i for i, sql in enumerate(SETTLE) if "cohorts AS (" in sql)
    for sql in SETTLE[: cohort_at - 1]:
        store.conn.execute(sql.format(**NAMES))


@pytest.mark.parametrize("seed", range(40))
def test_grouped_maximums_choose_what_the_ranking_chooses(tmp_path: Path, seed: int) -> None:
    store = ReadModelStore(tmp_path / "ledger.db")
    with store.write():
        settled_to_the_cohort(store, seed)
        assert chosen(store, COHORT) == chosen(store, ranked_cohort())
    store.close()


def test_the_random_ledgers_hold_cohorts() -> None:
    """The comparison above is not empty: most seeds choose cohorts, some by group."""
    found = grouped = 0
    for seed in range(40):
        store = ReadModelStore(Path(":memory:"))
        with store.write():
            settled_to_the_cohort(store, seed)
            picks = chosen(store, COHORT)
            found += bool(picks)
            grouped += any(
                store.conn.execute(
                    "SELECT 1 FROM candidates WHERE run_id = ? AND provider LIKE 'claude%'",
                    (run_id,),
                ).fetchone()
                for _, _, run_id in picks
            )
        store.close()
    assert found >= 20
    assert grouped >= 3
