"""The results matrix: benchmarks x agents, with a number only where a review still vouches
for it.

A cell shows its latest row's score only when that row passes the gates a review runs and
the newest passing review whose scope covers its benchmark is still current: nothing
touching that scope was appended after the review's position, and the log there is the
one the review saw (what `verify-review` checks). Every other cell is `not-run` with
each reason that holds, so a published matrix never carries a number nobody signed off.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchledger.adapters.publication import gates as checks
from benchledger.adapters.publication.publication import Publication, load
from benchledger.adapters.publication.queries import Queries
from benchledger.adapters.publication.review import Scope
from benchledger.adapters.publication.review_check import changes_since, hash_at, recorded_scope

Key = tuple[str, str]
UNSUPPORTED, NO_RUN, QUARANTINED = "unsupported", "no run", "quarantined"
GATE_FINDING, NOT_REVIEWED, OUT_OF_DATE = "gate finding", "not reviewed", "review out of date"
# A gate's finding on a benchmark as a whole (no `::agent`), or any calibration finding
# (its agents are the synthetic baselines), holds for every cell of that benchmark.
WHOLE_BENCHMARK_GATES = frozenset({"calibration"})
PREFIXED_GATES = ("publishability", "comparability")


def short(identifier: str | None) -> str:
    return (identifier or "")[:8]


@dataclass(frozen=True)
class Reason:
    kind: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}" if self.detail else self.kind


@dataclass(frozen=True)
class Cell:
    """One benchmark x agent: a reviewed score, or the reasons it has none."""

    benchmark: str
    agent: str
    reasons: tuple[Reason, ...] = ()
    score: float | None = None
    unit: str | None = None
    run_id: str | None = None
    review_id: str | None = None

    @property
    def text(self) -> str:
        """What the matrix table shows: six significant digits, never a rounded-up guess."""
        if self.reasons or self.score is None:
            kinds = dict.fromkeys(r.kind for r in self.reasons) or {"no score": None}
            return f"not-run ({', '.join(kinds)})"
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.score:.6g}{unit} (run {short(self.run_id)}, review {short(self.review_id)})"


@dataclass(frozen=True)
class ResultsMatrix:
    position: int
    head_sha256: str
    benchmarks: list[str]
    agents: list[str]
    cells: dict[Key, Cell] = field(default_factory=dict)


@dataclass(frozen=True)
class RecordedReview:
    review_id: str
    ok: bool
    position: int
    scope: Scope
    # Why it no longer vouches for its scope; None while it still does.
    stale: str | None
    # Which rows its gates saw: the `latest` table's (cohort) or each agent's newest.
    selection: str = "cohort"


def recorded_reviews(queries: Queries) -> list[RecordedReview]:
    """Every recorded review, newest first; each passing one checked against the ledger as
    it is now (a blocked review vouches for nothing, so it needs no check)."""
    rows = queries.conn.execute(
        "SELECT r.review_id, r.ok, r.scope, r.position, r.head_sha256, (SELECT "
        "json_extract(v.params, '$.selection') FROM gate_verdicts AS v WHERE v.verdict_id = "
        "json_extract(r.gate_verdict_ids, '$[0]')) FROM reviews AS r "
        "ORDER BY r.event_position DESC"
    ).fetchall()
    passing = [int(r[3]) for r in rows if r[1]]
    # One pass over the log from the oldest passing review serves every review's check.
    later = changes_since(queries.conn, min(passing), Scope([], [], None)) if passing else []
    out = []
    for review_id, ok, scope_json, position, head, selection in rows:
        scope = recorded_scope(scope_json)
        stale = _staleness(queries, str(review_id), position, head, scope, later) if ok else None
        out.append(
            RecordedReview(
                str(review_id), bool(ok), int(position), scope, stale, selection or "cohort"
            )
        )
    return out


def _staleness(
    queries: Queries,
    review_id: str,
    position: int,
    head: str,
    scope: Scope,
    later: Sequence[dict[str, Any]],
) -> str | None:
    """Why a passing review no longer vouches for its scope, or None while it does."""
    where = f"review {short(review_id)} at position {position}"
    if hash_at(queries.conn, position) != head:
        return f"{where}: the ledger's hash there is not the one it saw (the log was rewritten)"
    changes = [c for c in later if c["position"] > position and scope.covers(c["benchmark"])]
    if not changes:
        return None
    first = changes[0]
    return (
        f"{where}: events touching its scope after it "
        f"(first: position {first['position']}, {first['type']})"
    )


def coverage(reviews: Sequence[RecordedReview], benchmark: str) -> RecordedReview | Reason:
    """The newest passing, current review covering a benchmark, or why there is none."""
    scoped = [r for r in reviews if r.scope.covers(benchmark)]
    # The matrix shows `latest` rows; a review of each agent's newest rows saw other ones.
    covering = [r for r in scoped if r.ok and r.selection == "cohort"]
    current = next((r for r in covering if r.stale is None), None)
    if current is not None:
        return current
    if covering:
        return Reason(OUT_OF_DATE, covering[0].stale or "")
    detail = f"no passing review covers {benchmark}"
    if scoped:
        other = scoped[0]
        why = "was blocked" if not other.ok else f"signed off --selection {other.selection} rows"
        detail += f" (review {short(other.review_id)} {why})"
    return Reason(NOT_REVIEWED, detail)


def _target(gate: str, item: dict[str, Any]) -> tuple[str, str, str | None]:
    """(gate, benchmark, agent or None for the whole benchmark) a finding is about: the
    one it names (a publishability finding's scope is a file and a JSON path), else the
    one its scope names."""
    scope = str(item.get("scope", ""))
    for prefix in PREFIXED_GATES:
        if scope.startswith(prefix + ":"):
            gate, scope = prefix, scope[len(prefix) + 1 :]
    if isinstance(item.get("benchmark_id"), str) and isinstance(item.get("agent"), str):
        return gate, item["benchmark_id"], item["agent"]
    benchmark, separator, agent = scope.partition("::")
    whole = not separator or gate in WHOLE_BENCHMARK_GATES
    return gate, benchmark, None if whole else agent


def gate_findings(
    pub: Publication, tolerance: float | None
) -> dict[tuple[str, str | None], list[Reason]]:
    """The blocking gates a review runs (readiness, and calibration once there are
    baselines), evaluated without recording a verdict, keyed by what each finding is about."""
    names = ["readiness", *(["calibration"] if pub.baselines else [])]
    out: dict[tuple[str, str | None], list[Reason]] = {}
    for name in names:
        for item in checks.evaluate(pub, name, tolerance):
            gate, benchmark, agent = _target(name, item)
            value = str(item.get("value") or "")
            where = item.get("path")
            if isinstance(where, str) and where.startswith("$.") and value:
                value = f"{where}={value}"  # a publishability finding: where in the row
            detail = f"{gate}/{item.get('reason')}" + (f": {value}" if value else "")
            out.setdefault((benchmark, agent), []).append(Reason(GATE_FINDING, detail))
    return out


FindingsOf = Callable[[Key, Scope | None], list[Reason]]


def findings_by_scope(queries: Queries, default: Publication) -> FindingsOf:
    """A row's gate findings as its covering review's gates see it (over that review's
    scope, with its tolerance), or, unreviewed, as they see the matrix's own scope; each
    scope is evaluated once."""
    cache: dict[Any, dict[tuple[str, str | None], list[Reason]]] = {}

    def of(key: Key, scope: Scope | None) -> list[Reason]:
        marker = (
            None if scope is None else (tuple(scope.include), tuple(scope.exclude), scope.tolerance)
        )
        if marker not in cache:
            if scope is None:
                cache[marker] = gate_findings(default, None)
            else:
                pub = load(queries, scope.include, scope.exclude)
                cache[marker] = gate_findings(pub, scope.tolerance)
        found = cache[marker]
        return [*found.get((key[0], None), []), *found.get(key, [])]

    return of


def cell(
    key: Key,
    contract_cell: dict[str, Any],
    pub: Publication,
    reviews: Sequence[RecordedReview],
    findings: FindingsOf,
) -> Cell:
    """One cell: unsupported; no latest row (no run, or quarantined); else its gate findings;
    and, unless a current passing review covers it, why none does."""
    benchmark, agent = key
    if contract_cell["state"] == "unsupported":
        return Cell(benchmark, agent, (Reason(UNSUPPORTED, str(contract_cell.get("reason"))),))
    row = pub.latest.get(key)
    covered = coverage(reviews, benchmark)
    review_reason = [covered] if isinstance(covered, Reason) else []
    if row is None:
        held = pub.quarantine.get(key)
        missing = (
            Reason(QUARANTINED, str(held.get("quarantine_reason")))
            if held is not None
            else Reason(NO_RUN)
        )
        return Cell(benchmark, agent, (missing, *review_reason))
    if isinstance(covered, Reason):
        reasons = (*findings(key, None), covered)
        return Cell(benchmark, agent, reasons, run_id=row.get("run_id"))
    if found := findings(key, covered.scope):
        return Cell(benchmark, agent, tuple(found), run_id=row.get("run_id"))
    return Cell(
        benchmark,
        agent,
        score=row.get("score"),
        unit=row.get("unit"),
        run_id=row.get("run_id"),
        review_id=covered.review_id,
    )


def build(
    queries: Queries,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    harnesses: Sequence[str] | None = None,
    required_agents: Sequence[str] = (),
) -> ResultsMatrix:
    """Every benchmark in scope x the agents (`harnesses`, else those with a row of it or
    required of it: the matrix contract's cells), `required_agents` required of each."""
    pub = load(queries, include, exclude)
    if required_agents:
        pub = pub.requiring(required_agents)
    contract = pub.matrix(harnesses)
    reviews = recorded_reviews(queries)
    findings = findings_by_scope(queries, pub)
    cells = {
        (benchmark, agent): cell((benchmark, agent), contract_cell, pub, reviews, findings)
        for benchmark, entry in contract["benchmarks"].items()
        for agent, contract_cell in entry["cells"].items()
    }
    return ResultsMatrix(
        position=pub.position,
        head_sha256=pub.head_sha256,
        benchmarks=list(contract["benchmarks"]),
        agents=list(contract["harnesses"]),
        cells=cells,
    )
