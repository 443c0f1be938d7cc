"""`campaigns` and `run_fingerprints`: alwm campaigns, their member runs and the six
comparison fingerprints each run states.

alwm groups runs by six sha256 fingerprints (suite definition, prompt set, prompt
registry state, provider config, scoring config, browser config): two runs agreeing
on an axis ran the same thing on it. The importer keeps them in the run's config
(`comparison_fingerprints`) and a campaign member's campaign in its provenance
(`campaign`); these tables lay them out so a campaign's members can be compared
axis by axis without reading JSON. A run stating fingerprints outside any campaign
has a `run_fingerprints` row with no campaign. Every version of a run keeps its row
(`import --amend` supersedes by a new run id): join `runs` for `superseded_by`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from benchledger.domain.run import RunImported, RunStarted
from benchledger.projections import versions
from benchledger.projections.base import (
    Change,
    Envelope,
    ForeignKey,
    Projection,
    Table,
    to_json,
    topics_of,
)

# alwm's six axes, in the order its docs list them.
AXES = (
    "suite_definition",
    "prompt_set",
    "prompt_registry_state",
    "provider_config",
    "scoring_config",
    "browser_config",
)
CAMPAIGN_FIELDS = (
    "title",
    "campaign_version",
    "started_at_utc",
    "finished_at_utc",
    "git_commit_sha",
    "git_describe",
    "campaign_definition_fingerprint",
)

MEMBER = (
    "INSERT INTO [{run_fingerprints}] (run_id, run_key, campaign_id, run_index, benchmark, "
    "status, "
    + ", ".join(AXES)
    + ", other_fingerprints) VALUES (?, ?, ?, ?, ?, ?, "
    + ", ".join("?" for _ in AXES)
    + ", ?)"
)
CAMPAIGN = (
    "INSERT INTO [{campaigns}] (campaign_id, "
    + ", ".join(CAMPAIGN_FIELDS)
    + ", experiment_fingerprints, dry_run, fixture_mode_force_mock, member_runs) VALUES (?, "
    + ", ".join("?" for _ in CAMPAIGN_FIELDS)
    + ", ?, ?, ?, 0) ON CONFLICT (campaign_id) DO NOTHING"
)
# Distinct run keys: an amended member (a new version of the same key) is one member.
COUNT = (
    "UPDATE [{campaigns}] SET member_runs = (SELECT count(DISTINCT run_key) FROM "
    "[{run_fingerprints}] WHERE campaign_id = ?), distinct_fingerprint_sets = (SELECT "
    "count(*) FROM (SELECT DISTINCT " + ", ".join(AXES) + " FROM [{run_fingerprints}] "
    "WHERE campaign_id = ?)) WHERE campaign_id = ?"
)


class CampaignsProjection(Projection):
    name = "campaigns"
    version = versions.version(name)
    tables = (
        Table(
            "campaigns",
            {
                "campaign_id": str,
                **dict.fromkeys(CAMPAIGN_FIELDS, str),
                "experiment_fingerprints": str,
                "dry_run": int,
                "fixture_mode_force_mock": int,
                "member_runs": int,
                "distinct_fingerprint_sets": int,
            },
            pk=("campaign_id",),
        ),
        Table(
            "run_fingerprints",
            {
                "run_id": str,
                "run_key": str,
                "campaign_id": str,
                "run_index": int,
                "benchmark": str,
                "status": str,
                **dict.fromkeys(AXES, str),
                "other_fingerprints": str,
            },
            pk=("run_id",),
            indexes=(("campaign_id", "run_index"), ("run_key",)),
            lookups=(("campaign_id", "run_index"),),  # COUNT
            foreign_keys=(
                ForeignKey("run_id", "runs", "run_id"),
                ForeignKey("campaign_id", "campaigns", "campaign_id"),
            ),
        ),
    )
    topics = topics_of(RunStarted, RunImported)

    def fold(self, envelope: Envelope) -> Iterable[Change]:
        event = envelope.event
        if not isinstance(event, RunStarted):
            return
        campaign = _mapping(event.provenance.get("campaign"))
        fingerprints = _mapping(event.config.get("comparison_fingerprints")) or {}
        campaign_id = _text(campaign.get("campaign_id")) if campaign else None
        if campaign_id is None and not fingerprints:
            return  # neither a campaign member nor a run stating fingerprints
        if campaign is not None and campaign_id is not None:
            yield (
                CAMPAIGN,
                (
                    campaign_id,
                    *(_text(campaign.get(f)) for f in CAMPAIGN_FIELDS),
                    to_json(campaign.get("campaign_experiment_fingerprints")),
                    _flag(campaign.get("dry_run")),
                    _flag(campaign.get("fixture_mode_force_mock")),
                ),
            )
        others = {k: v for k, v in fingerprints.items() if k not in AXES}
        # As imported; a run this ledger ran has its status in `runs` only.
        status = str(event.status) if isinstance(event, RunImported) else None
        yield (
            MEMBER,
            (
                envelope.stream_id,
                event.run_key,
                campaign_id,
                _index(campaign.get("run_index")) if campaign else None,
                event.benchmark,
                status,
                *(_text(fingerprints.get(axis)) for axis in AXES),
                to_json(others) if others else None,
            ),
        )
        if campaign_id is not None:
            yield COUNT, (campaign_id, campaign_id, campaign_id)


def _mapping(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def _index(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _flag(value: Any) -> int | None:
    return int(value) if isinstance(value, bool) else None
