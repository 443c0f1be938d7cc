"""Every read model the ledger keeps, in the order they are applied."""

from __future__ import annotations

from projections.base import Projection
from projections.benchmarks import BenchmarksProjection
from projections.cells import CellsProjection
from projections.chain import ChainProjection
from projections.events import EventsProjection
from projections.imports import ImportsProjection
from projections.latest import LatestProjection
from projections.run_groups import RunGroupsProjection
from projections.runs import RunsProjection
from projections.verdicts import VerdictsProjection


def all_projections() -> list[Projection]:
    return [
        EventsProjection(),
        ChainProjection(),
        RunGroupsProjection(),
        RunsProjection(),
        CellsProjection(),
        BenchmarksProjection(),
        ImportsProjection(),
        LatestProjection(),
        VerdictsProjection(),
    ]
