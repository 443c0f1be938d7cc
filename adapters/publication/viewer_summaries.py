"""viewer_data.json's summaries, counted as the orchestrator's viewer counts them.

They are folded from the dataset's runs as they are written, newest first (the order
of `runs`), so memory holds one entry per benchmark, model, agent and calibration
cell, not the runs. Every row of `runs` counts, a skipped or incompatible one too; a
run succeeded when its status says so and it has a numeric score (and, in the ledger,
it is neither invalidated nor superseded); averages add the scores in the order of
`runs`, as the orchestrator does. One difference, on purpose: the best score of runs
that are all lower-is-better is their minimum (the orchestrator takes the maximum
whatever the direction).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchledger.domain.publication import CALIBRATION_EXPECTED

NOT_TERMINAL = frozenset({"queued", "running", "skipped"})


def scored(item: dict[str, Any]) -> float | None:
    """The item's score when it counts as a succeeded run, else None."""
    score = item.get("score")
    if (
        item.get("status") != "succeeded"
        or not isinstance(score, int | float)
        or isinstance(score, bool)
        or item.get("invalidated")
        or item.get("superseded")
    ):
        return None
    return float(score)


@dataclass
class Tally:
    """Running counts of one key: nothing is kept per run."""

    runs: int = 0
    succeeded: int = 0
    total: float = 0.0
    higher: float | None = None  # the best higher-is-better score (or of unknown direction)
    lower: float | None = None  # the best lower-is-better score
    newest: dict[str, Any] | None = None
    newest_terminal: dict[str, Any] | None = None

    def add(self, item: dict[str, Any]) -> None:
        self.runs += 1
        score = scored(item)
        if score is not None:
            self.succeeded += 1
            self.total += score
            if item.get("higher_is_better") is False:
                self.lower = score if self.lower is None else min(self.lower, score)
            else:
                self.higher = score if self.higher is None else max(self.higher, score)
        if self.newest is None:
            self.newest = item
        if self.newest_terminal is None and item.get("status") not in NOT_TERMINAL:
            self.newest_terminal = item

    @property
    def best(self) -> float | None:
        return self.higher if self.higher is not None else self.lower

    @property
    def average(self) -> float | None:
        return self.total / self.succeeded if self.succeeded else None

    @property
    def latest(self) -> dict[str, Any]:
        chosen = self.newest_terminal or self.newest
        assert chosen is not None
        return chosen


@dataclass
class Summaries:
    """Fold `add(item, latest_entry)` over the runs newest first, then read the lists."""

    benchmarks: dict[str, Tally] = field(default_factory=dict)
    models: dict[str, Tally] = field(default_factory=dict)
    agents: dict[str, Tally] = field(default_factory=dict)
    calibration: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    calibration_terminal: set[tuple[str, str]] = field(default_factory=set)
    latest: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    latest_started: dict[tuple[str, str], Any] = field(default_factory=dict)

    def add(self, item: dict[str, Any], latest_entry: Callable[[], dict[str, Any]]) -> None:
        benchmark, agent = str(item.get("benchmark_id") or ""), str(item.get("agent") or "")
        model = f"{item.get('provider') or ''}:{item.get('model') or ''}"
        for table, key in ((self.benchmarks, benchmark), (self.models, model)):
            table.setdefault(key, Tally()).add(item)
        self.agents.setdefault(agent, Tally()).add(item)
        cell = (benchmark, agent)
        if benchmark and agent in CALIBRATION_EXPECTED:
            terminal = item.get("status") not in NOT_TERMINAL
            if cell not in self.calibration or (terminal and cell not in self.calibration_terminal):
                self.calibration[cell] = item
            if terminal:
                self.calibration_terminal.add(cell)
        if scored(item) is not None:
            started = item.get("started_at")
            if cell not in self.latest:
                self.latest[cell], self.latest_started[cell] = [latest_entry()], started
            elif self.latest_started[cell] == started:  # a tie: listed too, as the SQL does
                self.latest[cell].append(latest_entry())

    def latest_scores(self) -> list[dict[str, Any]]:
        return [entry for key in sorted(self.latest) for entry in self.latest[key]]

    def benchmark_summary(self) -> list[dict[str, Any]]:
        out = []
        for benchmark, tally in sorted(self.benchmarks.items()):
            latest = tally.latest
            out.append(
                {
                    "benchmark_id": benchmark,
                    "runs": tally.runs,
                    "succeeded_runs": tally.succeeded,
                    "best_score": tally.best,
                    "latest_run_id": latest.get("run_id"),
                    "latest_started_at": latest.get("started_at"),
                    "latest_model": latest.get("model"),
                    "latest_provider": latest.get("provider"),
                }
            )
        return out

    def summary(self, which: str) -> list[dict[str, Any]]:
        table, name = (self.models, "model_key") if which == "model" else (self.agents, "agent")
        return [
            {
                name: key,
                "runs": tally.runs,
                "succeeded_runs": tally.succeeded,
                "average_score": tally.average,
                "best_score": tally.best,
            }
            for key, tally in sorted(table.items())
        ]

    def calibration_summary(self) -> list[dict[str, Any]]:
        agents = list(CALIBRATION_EXPECTED)
        out = []
        for benchmark in sorted({b for b, _ in self.calibration}):
            rows = {a: self.calibration.get((benchmark, a), {}) for a in agents}
            statuses = {a: rows[a].get("status") for a in agents}
            out.append(
                {
                    "benchmark_id": benchmark,
                    "scores": {a: rows[a].get("score") for a in agents},
                    "statuses": statuses,
                    "complete": all(s == "succeeded" for s in statuses.values()),
                }
            )
        return out
