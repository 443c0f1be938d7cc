"""The statements that re-select the publication of every pending benchmark.

Run once at the end of a transaction (`LatestProjection.settle`), in this order:

1. Every key of a benchmark with a pending key becomes pending: a cohort spans agents.
2. Benchmarks without declared rules get rules derived from the newest record of the
   ElizaOS orchestrator's incompatible harnesses that states `supported_harnesses`
   (plus every agent that ran after it): those are the compatible agents, and the
   canonical harnesses (eliza, hermes, openclaw) among them the required ones.
3. An incompatible-agent record is stale when its source later stated the same row as
   a run, or when the current rules allow that agent again (and its reason was the
   compatibility rule): stale records are ignored, as the orchestrator ignores them.
4. `latest_per_agent`, `quarantine`, `baselines`: the newest acceptable, quarantined
   and calibration candidate of each key.
5. `latest`: `latest_per_agent`, except where a benchmark with two or more required
   agents would publish rows of mixed comparison signatures (or, for a subscription
   provider, rows of several run groups): then every required cell gets the newest
   complete cohort, i.e. the acceptable rows of one comparison signature (and run
   group) that cover every required agent, each the newest of its agent there; the
   newest cohort has the greatest (earliest, latest) pair of its rows' end times, then
   the newest run. Older rows are published that way, whatever their scores. With no
   complete cohort the per-agent newest rows stay.

The table placeholders (`{candidates}` ...) are filled by the writer with `str.format`,
so the SQL holds no other braces.
"""

from __future__ import annotations

from benchledger.domain.matrix import CANONICAL_HARNESSES
from benchledger.domain.publication import NON_REAL_FLAGS

ROW_COLUMNS = (
    "benchmark, agent, provider, model, run_id, run_group_id, signature, "
    "comparison_signature, status, score, unit, higher_is_better, started_at, ended_at, "
    "updated_at, config, metrics, tokens, artifacts, error, source_path, run_dir, position"
)
FROM_CANDIDATE = (
    "SELECT benchmark, agent, provider, model, run_id, run_group_id, signature, "
    "comparison_signature, status, score, unit, higher_is_better, started_at, ended_at, "
    "coalesce(ended_at, started_at, recorded_at), config, metrics, tokens, artifacts, error, "
    "source_path, run_dir, position"
)


def _metric(alias: str, key: str) -> tuple[str, str]:
    """(value, JSON type) of a top-level key of a candidate's metrics."""
    return (
        f"json_extract({alias}metrics, '$.{key}')",
        f"json_type({alias}metrics, '$.{key}')",
    )


def _true(alias: str, key: str) -> str:
    return f"{_metric(alias, key)[1]} = 'true'"


# Config flags that say a run was not a real one, whatever its source: benchledger's own
# rule. Only a true value counts. Sample-task flags are not among them: the orchestrator
# publishes runs whose config asks for sample tasks (realm's `use_sample_tasks: true`,
# a `compare` run's `sample: 5`) and quarantines by their metrics instead.
CONFIG_FLAG_NAMES = tuple(
    flag
    for flag in sorted(NON_REAL_FLAGS)
    if flag in {"demo", "demo_mode", "dry_run", "mock", "mock_mode", "stub", "synthetic"}
)
CONFIG_FLAGS = ", ".join(f"'{flag}'" for flag in CONFIG_FLAG_NAMES)


def config_flagged(config: object) -> bool:
    """`_config_flagged` in Python: a top-level flag of `config` set to true (`true` or
    "true"). For a config a run's candidate row does not hold (see `result_flag`)."""
    if not isinstance(config, dict):
        return False
    for flag in CONFIG_FLAG_NAMES:
        value = config.get(flag)
        if value is True or (isinstance(value, str) and value.strip().lower() == "true"):
            return True
    return False


def _config_flagged(alias: str) -> str:
    """A top-level flag of the candidate's config set to true (`true` or "true"): one
    pass over the config, and none for a config that does not hold the word."""
    return (
        f"(instr(lower({alias}config), 'true') > 0 AND EXISTS (SELECT 1 FROM "
        f"json_each({alias}config) WHERE key IN ({CONFIG_FLAGS}) AND (type = 'true' OR "
        "(type = 'text' AND lower(trim(value)) = 'true'))))"
    )


def _number(alias: str, key: str, test: str) -> str:
    value, kind = _metric(alias, key)
    return f"({kind} IN ('integer', 'real') AND {value} {test})"


def _zero(alias: str, key: str) -> str:
    """`metrics[key] == 0` as Python compares it (0, 0.0 and false are zero). Two `IN`s of
    at most two values: SQLite codes those as comparisons, while a list of three builds a
    temporary table each time the expression runs (a generated column's: every insert
    and update of a candidate; four such lists cost an import of 42k runs about 0.6 s)."""
    value, kind = _metric(alias, key)
    return f"(({kind} IN ('integer', 'real') OR {kind} = 'false') AND {value} = 0)"


# What Python's str.strip() removes from the ends, as far as SQLite's trim can tell.
SPACE = "' ' || char(9, 10, 11, 12, 13)"


def reason(alias: str = "") -> str:
    """Why a candidate may not be published, or NULL: the orchestrator's reasons
    (`_publication_quarantine_reason`), in its order, after benchledger's own
    (`running`: never shown; `superseded_run`; `invalidated_run`; a label that names
    no real agent, benchmark or model, `non_real_agent_label`, `placeholder_identity:…`,
    `mock_model`; a config flag of a run that was not real, `truthy_non_real_flag`).
    What its metrics say is read from the candidate's generated columns (`GENERATED`),
    worked out when the metrics are written rather than by each settle."""
    a = alias
    return (
        f"CASE WHEN {a}status = 'running' THEN 'running' "
        f"WHEN {a}status = 'incompatible' THEN 'incompatible_harness' "
        f"WHEN {a}superseded = 1 THEN 'superseded_run' "
        f"WHEN {a}invalidated = 1 THEN 'invalidated_run' "
        f"WHEN {a}status != 'succeeded' THEN 'unsucceeded_run' "
        f"WHEN {a}score IS NULL THEN 'missing_score' "
        f"WHEN {a}label_marker IS NOT NULL THEN {a}label_marker "
        f"WHEN {_config_flagged(a)} THEN 'truthy_non_real_flag' "
        f"WHEN {a}metrics_flag IS NOT NULL THEN {a}metrics_flag "
        f"WHEN {a}score = 0 AND {a}idle_metrics THEN 'no_activity_zero_score' "
        f"WHEN {a}interrupted_metrics THEN 'interrupted_run' END"
    )


def metrics_reasons() -> tuple[str, str, str]:
    """The reasons `reason` reads from a candidate's metrics, in its order, as
    expressions over the row's own `metrics` (a generated column names no table): the
    first of those that need nothing else (or NULL); whether they show no activity
    (`no_activity_zero_score`, with a score of 0); whether the run was interrupted
    (`interrupted_run`, the last reason). The last two are SQL truth values (NULL for a
    key the metrics lack), tested as `reason` tests them."""
    a = ""
    source, source_type = _metric(a, "dataset_source")
    sample = (
        f"{_true(a, 'sample')} OR ({source_type} = 'text' AND "
        f"lower(trim({source}, {SPACE})) IN ('sample', 'sample-files')) "
        f"OR {_true(a, 'use_sample_tasks')}"
    )
    idle = " AND ".join(
        _zero(a, key)
        for key in ("avg_net_worth", "avg_items_sold", "avg_orders_placed", "total_revenue")
    )
    three = f"{_metric(a, 'publishable_three_harness')[1]} = 'false'"
    first = (
        f"CASE WHEN {sample} THEN 'sample_task_set' "
        f"WHEN {_true(a, 'demo_mode')} OR {_true(a, 'demoMode')} THEN 'demo_mode' "
        f"WHEN {three} THEN 'benchmark_not_publishable_three_harness' "
        f"WHEN {_number(a, 'failed_scenarios', '> 0')} THEN 'failed_scenarios' "
        f"WHEN {_number(a, 'total_runs', '> 0')} AND {_number(a, 'successful_runs', '<= 0')} "
        "THEN 'zero_successful_runs' END"
    )
    return first, f"({idle})", f"({_true(a, 'interrupted')})"


# A candidate's columns worked out from its metrics whenever they are written (a
# settle reads them for every candidate of a pending benchmark, several times: each
# reading parsed the metrics' JSON once per key): (name, type, expression).
GENERATED: tuple[tuple[str, type, str], ...] = tuple(
    zip(
        ("metrics_flag", "idle_metrics", "interrupted_metrics"),
        (str, int, int),
        metrics_reasons(),
        strict=True,
    )
)


REASON = reason()


def acceptable(alias: str = "") -> str:
    """A real candidate that may be published: not stale, and without a reason not to."""
    return f"{alias}synthetic = 0 AND {alias}stale = 0 AND ({reason(alias)}) IS NULL"


def baseline(alias: str = "") -> str:
    """A calibration candidate the orchestrator publishes as a baseline: any that is not
    running or stale (a failed or incompatible one too), unless invalidated or superseded."""
    return (
        f"{alias}synthetic = 1 AND {alias}stale = 0 AND {alias}status != 'running' "
        f"AND {alias}invalidated = 0 AND {alias}superseded = 0"
    )


# A superseded version (`import --amend`) is not quarantined: its current version is the
# one that competes for the key, and a quarantine row that only repeats an older version
# of it says nothing about what may be published (on an amended ledger most quarantine
# rows would be such). The version stays a candidate, its reason `superseded_run`, and
# `runs`, `show` and `history` tell its story.
QUARANTINED = (
    f"synthetic = 0 AND stale = 0 AND superseded = 0 "
    f"AND coalesce(({REASON}), 'running') != 'running'"
)


PENDING = "SELECT benchmark FROM [{latest_pending}]"
PENDING_KEYS = "(benchmark, agent) IN (SELECT benchmark, agent FROM [{latest_pending}])"
# The reasons an incompatible-agent record gives that a change of the rules undoes.
COMPATIBILITY_REASONS = (
    "'harness_not_in_compatibility', 'latest_row_violates_current_compatibility', "
    "'incompatible_agent'"
)
# Listed in name order, which is also the canonical order (eliza, hermes, openclaw).
CANONICAL = ", ".join(f"'{h}'" for h in sorted(CANONICAL_HARNESSES))


def _start(alias: str = "") -> str:
    """When a candidate started: the order of "newest", as the orchestrator's."""
    return f"coalesce({alias}started_at, {alias}recorded_at)"


def _newest(where: str) -> str:
    """The newest candidate of each pending key among those `where` holds for (what
    follows FROM). Ranked by rowid, then read whole: a ranking of whole rows sorted
    every column of every candidate (at 45k candidates, 0.22 s a statement; 0.12 so)."""
    return (
        "[{candidates}] WHERE rowid IN (SELECT rid FROM (SELECT rowid AS rid, "
        "row_number() OVER (PARTITION BY benchmark, agent "
        f"ORDER BY {_start()} DESC, run_id DESC) AS newest "
        f"FROM [{{candidates}}] WHERE {PENDING_KEYS} AND {where}) WHERE newest = 1) "
        "ORDER BY benchmark, agent"
    )


WIDEN = (
    "INSERT OR IGNORE INTO [{latest_pending}] (benchmark, agent) "
    f"SELECT DISTINCT benchmark, agent FROM [{{candidates}}] WHERE benchmark IN ({PENDING})"
)
SUPERSEDED = (
    "EXISTS (SELECT 1 FROM [{candidates}] AS r WHERE r.kind = 'run' "
    "AND r.benchmark = {table}.benchmark AND r.run_key = {table}.run_key)"
)
DERIVE = [
    f"DELETE FROM [{{required_agents}}] WHERE declared = 0 AND benchmark IN ({PENDING})",
    "INSERT INTO [{required_agents}] "
    "(benchmark, required, compatible, unsupported, source, declared, position) "
    "SELECT benchmark, (SELECT json_group_array(value) FROM (SELECT value FROM "
    f"json_each(compatible) WHERE value IN ({CANONICAL}) ORDER BY value)), compatible, "
    "json_object(), 'derived from ' || run_id, 0, position FROM ("
    "SELECT x.benchmark, x.run_id, x.position, (SELECT json_group_array(agent) FROM ("
    "SELECT value AS agent FROM json_each(x.supported) UNION "
    "SELECT y.agent FROM [{candidates}] AS y WHERE y.benchmark = x.benchmark "
    f"AND y.kind = 'run' AND y.synthetic = 0 AND {_start('y.')} > {_start('x.')} "
    "ORDER BY 1)) AS compatible FROM ("
    "SELECT *, row_number() OVER (PARTITION BY benchmark "
    f"ORDER BY {_start()} DESC, run_id DESC) AS newest FROM [{{candidates}}] AS c "
    f"WHERE supported IS NOT NULL AND benchmark IN ({PENDING}) "
    f"AND NOT {SUPERSEDED.replace('{table}', 'c')} "
    "AND benchmark NOT IN (SELECT benchmark FROM [{required_agents}] WHERE declared = 1)"
    ") AS x WHERE newest = 1)",
    # Where no contract states a rule and no incompatible record derives one, a benchmark
    # the orchestrator ran requires its default harnesses, as its latest rebuild does when
    # it knows no adapter of the benchmark.
    "INSERT INTO [{required_agents}] "
    "(benchmark, required, compatible, unsupported, source, declared, position) "
    f"SELECT benchmark, json_array({CANONICAL}), NULL, json_object(), "
    "'the orchestrator''s default harnesses', 0, max(position) FROM [{candidates}] "
    f"WHERE source_format = 'orchestrator' AND benchmark IN ({PENDING}) "
    "AND benchmark NOT IN (SELECT benchmark FROM [{required_agents}]) GROUP BY benchmark",
]
ALLOWED_AGAIN = (
    "EXISTS (SELECT 1 FROM [{required_agents}] AS a WHERE a.benchmark = [{candidates}].benchmark "
    "AND (a.compatible IS NULL "
    "OR [{candidates}].agent IN (SELECT value FROM json_each(a.compatible)) "
    "OR [{candidates}].agent IN (SELECT value FROM json_each(a.required))))"
)
# (A record without a reason is never stale by the rule: `coalesce`, not NULL.)
STALE = (
    "UPDATE [{candidates}] SET stale = coalesce("
    f"{SUPERSEDED.replace('{table}', '[{candidates}]')} "
    f"OR (compat_reason IN ({COMPATIBILITY_REASONS}) AND {ALLOWED_AGAIN}), 0) "
    f"WHERE kind = 'skip' AND benchmark IN ({PENDING})"
)
# The cohort each benchmark of mixed latest rows publishes instead: (benchmark, agent,
# run_id) of its required agents. A pool row of each (benchmark, signature, agent), and of
# each group, is its newest: the one with the greatest `recency`, whose text order is the
# order of (start, run_id) because every start is an ISO time in UTC (`iso`) that ends in
# its offset. Grouped maximums, not a ranking of the whole pool by two windows (two sorts
# of every acceptable candidate); and the pool is filtered by the rule's pairs (IN), not
# joined to them, so that it scans the candidates once and holds each of them once (at
# 45k candidates the statement went from 0.46-0.62 s to 0.36-0.40 s, choosing the same).
COHORT = f"""WITH
rule AS (
  SELECT a.benchmark, j.value AS agent, json_array_length(a.required) AS size
  FROM [{{required_agents}}] AS a, json_each(a.required) AS j
  WHERE a.benchmark IN ({PENDING}) AND json_array_length(a.required) >= 2
),
present AS (
  SELECT l.benchmark, max(r.size) AS size, count(*) AS agents,
    count(DISTINCT coalesce(l.comparison_signature, '')) AS signatures,
    min(lower(trim(coalesce(l.provider, ''))) = 'claude-subscription') AS subscription,
    count(DISTINCT coalesce(trim(l.run_group_id), '')) AS groups,
    max(coalesce(trim(l.run_group_id), '') = '') AS ungrouped
  FROM [{{latest_per_agent}}] AS l JOIN rule AS r ON r.benchmark = l.benchmark AND r.agent = l.agent
  GROUP BY l.benchmark
),
mixed AS (
  SELECT benchmark, size FROM present WHERE agents = size
    AND (signatures > 1 OR (subscription = 1 AND (groups > 1 OR ungrouped = 1)))
),
pool AS (
  SELECT c.run_id, c.benchmark, c.agent, c.comparison_signature AS signature,
    coalesce(trim(c.run_group_id), '') AS grp,
    lower(trim(coalesce(c.provider, ''))) = 'claude-subscription' AS subscription,
    coalesce(c.ended_at, c.started_at, c.recorded_at) AS moment,
    {_start("c.")} || ' ' || c.run_id AS recency
  FROM [{{candidates}}] AS c
  WHERE c.benchmark IN (SELECT benchmark FROM mixed)
    AND (c.benchmark, c.agent) IN (SELECT benchmark, agent FROM rule)
    AND coalesce(c.comparison_signature, '') != '' AND {acceptable("c.")}
),
newest AS (
  SELECT benchmark, signature, agent, max(recency) AS recency FROM pool
  GROUP BY benchmark, signature, agent
),
newest_in_group AS (
  SELECT benchmark, signature, grp, agent, max(recency) AS recency FROM pool
  GROUP BY benchmark, signature, grp, agent
),
covering AS (
  SELECT p.benchmark, p.signature, min(p.subscription) AS subscription
  FROM pool AS p JOIN newest AS n USING (benchmark, signature, agent, recency)
  JOIN mixed AS m ON m.benchmark = p.benchmark
  GROUP BY p.benchmark, p.signature HAVING count(*) = max(m.size)
),
members AS (
  SELECT p.benchmark, p.signature, '' AS grp, p.agent, p.run_id, p.moment, p.recency
  FROM pool AS p JOIN newest AS n USING (benchmark, signature, agent, recency)
  JOIN covering AS s ON s.benchmark = p.benchmark AND s.signature = p.signature
  WHERE s.subscription = 0
  UNION ALL
  SELECT p.benchmark, p.signature, p.grp, p.agent, p.run_id, p.moment, p.recency
  FROM pool AS p JOIN newest_in_group AS n USING (benchmark, signature, grp, agent, recency)
  JOIN covering AS s ON s.benchmark = p.benchmark AND s.signature = p.signature
  WHERE s.subscription = 1 AND p.grp != ''
),
cohorts AS (
  SELECT e.benchmark, e.signature, e.grp, min(e.moment) AS earliest, max(e.moment) AS latest,
    max(e.recency) AS newest
  FROM members AS e JOIN mixed AS m ON m.benchmark = e.benchmark
  GROUP BY e.benchmark, e.signature, e.grp HAVING count(*) = max(m.size)
),
best AS (
  SELECT benchmark, signature, grp FROM (
    SELECT *, row_number() OVER (PARTITION BY benchmark
      ORDER BY earliest DESC, latest DESC, newest DESC, signature, grp) AS pick
    FROM cohorts) WHERE pick = 1
),
chosen AS (
  SELECT e.benchmark, e.agent, e.run_id FROM members AS e JOIN best AS b
    ON b.benchmark = e.benchmark AND b.signature = e.signature AND b.grp = e.grp
)
"""

SETTLE = [
    WIDEN,
    *DERIVE,
    STALE,
    f"DELETE FROM [{{latest_per_agent}}] WHERE {PENDING_KEYS}",
    f"INSERT INTO [{{latest_per_agent}}] ({ROW_COLUMNS}) {FROM_CANDIDATE} FROM "
    + _newest(acceptable()),
    f"DELETE FROM [{{quarantine}}] WHERE {PENDING_KEYS}",
    f"INSERT INTO [{{quarantine}}] ({ROW_COLUMNS}, quarantine_reason) "
    f"{FROM_CANDIDATE}, ({REASON}) FROM " + _newest(QUARANTINED),
    f"DELETE FROM [{{baselines}}] WHERE {PENDING_KEYS}",
    f"INSERT INTO [{{baselines}}] ({ROW_COLUMNS}) {FROM_CANDIDATE} FROM " + _newest(baseline()),
    f"DELETE FROM [{{latest}}] WHERE {PENDING_KEYS}",
    # One statement, so that the cohorts are chosen once.
    f"INSERT INTO [{{latest}}] ({ROW_COLUMNS}, selection) {COHORT}"
    f"SELECT {ROW_COLUMNS}, 'newest' FROM [{{latest_per_agent}}] WHERE {PENDING_KEYS} "
    "AND (benchmark, agent) NOT IN (SELECT benchmark, agent FROM chosen) "
    f"UNION ALL {FROM_CANDIDATE}, 'cohort' FROM [{{candidates}}] "
    "WHERE run_id IN (SELECT run_id FROM chosen) ORDER BY benchmark, agent",
    "DELETE FROM [{latest_pending}]",
]
