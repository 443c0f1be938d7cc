"""Every read model the ledger keeps, in the order they are applied.

Each is known first by what `versions` states of it (name, version, tables, topics), and
its module is loaded when a catch-up first needs more: its folds, for an event of one of
its topics, or its tables' columns, to make them. A command that appends a verdict to a
ledger whose read models are current then loads the verdicts' read models, not the runs'
(nor the run events their modules name).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

from benchledger.projections.base import Change, Envelope, Projection
from benchledger.projections.versions import READ_MODELS, TOPICS

# name -> (module in benchledger.projections, class), in the order they are applied.
CLASSES: dict[str, tuple[str, str]] = {
    "events": ("events", "EventsProjection"),
    "chain": ("chain", "ChainProjection"),
    "run_groups": ("run_groups", "RunGroupsProjection"),
    "runs": ("runs", "RunsProjection"),
    "cells": ("cells", "CellsProjection"),
    "campaigns": ("campaigns", "CampaignsProjection"),
    "trajectories": ("trajectories", "TrajectoriesProjection"),
    "benchmarks": ("benchmarks", "BenchmarksProjection"),
    "imports": ("imports", "ImportsProjection"),
    "latest": ("latest", "LatestProjection"),
    "verdicts": ("verdicts", "VerdictsProjection"),
    "head_to_head": ("head_to_head", "HeadToHeadProjection"),
    "search": ("search", "SearchProjection"),
}


class Deferred(Projection):
    """A read model whose projection is made (its module loaded) on first use; until then
    its name, version, table names and topics are those `versions` states."""

    _real: Projection | None = None

    def projection(self) -> Projection:
        """The projection itself, made once."""
        if self._real is None:
            module, cls = CLASSES[self.name]
            made = getattr(importlib.import_module(f"benchledger.projections.{module}"), cls)()
            assert (made.name, made.version, made.topics) == (self.name, self.version, self.topics)
            self._real = made
        return self._real

    def __getattr__(self, attribute: str) -> Any:
        # Only what the instance and its class do not hold: `tables`, and what a
        # projection has of its own.
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return getattr(self.projection(), attribute)

    def table_names(self) -> tuple[str, ...]:
        return READ_MODELS[self.name][1]

    def resolved(self) -> Projection:
        return self.projection()

    def prepare(self, read: Any, names: dict[str, str]) -> None:
        self.projection().prepare(read, names)

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        return self.projection().fold(envelope)

    def fold_page(self, envelopes: Iterable[Envelope]) -> Iterable[Change]:
        return self.projection().fold_page(envelopes)

    def settle(self) -> Iterable[Change]:
        return self.projection().settle()

    def check_rebuilt(self, read: Any, live: dict[str, str], fresh: dict[str, str]) -> None:
        self.projection().check_rebuilt(read, live, fresh)


def _deferred(name: str) -> Projection:
    kind = type(
        f"Deferred[{name}]",
        (Deferred,),
        {"name": name, "version": READ_MODELS[name][0], "topics": TOPICS[name]},
    )
    projection: Projection = kind()
    return projection


def all_projections() -> list[Projection]:
    return [_deferred(name) for name in CLASSES]
