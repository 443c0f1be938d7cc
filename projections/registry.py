"""Every read model the ledger keeps, in the order they are applied."""

from __future__ import annotations

from benchledger.projections.base import Projection
from benchledger.projections.benchmarks import BenchmarksProjection
from benchledger.projections.campaigns import CampaignsProjection
from benchledger.projections.cells import CellsProjection
from benchledger.projections.chain import ChainProjection
from benchledger.projections.events import EventsProjection
from benchledger.projections.head_to_head import HeadToHeadProjection
from benchledger.projections.imports import ImportsProjection
from benchledger.projections.latest import LatestProjection
from benchledger.projections.run_groups import RunGroupsProjection
from benchledger.projections.runs import RunsProjection
from benchledger.projections.search import SearchProjection
from benchledger.projections.trajectories import TrajectoriesProjection
from benchledger.projections.verdicts import VerdictsProjection


def all_projections() -> list[Projection]:
    return [
        EventsProjection(),
        ChainProjection(),
        RunGroupsProjection(),
        RunsProjection(),
        CellsProjection(),
        CampaignsProjection(),
        TrajectoriesProjection(),
        BenchmarksProjection(),
        ImportsProjection(),
        LatestProjection(),
        VerdictsProjection(),
        HeadToHeadProjection(),
        SearchProjection(),
    ]
