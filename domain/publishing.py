"""Recording what is published and judged: gate verdicts, reviews, rankings, comparisons,
head-to-head reports and model aliases.

A part of the ledger application (`domain.ledger.Ledger` is one), and an application of
its own for the commands that record nothing else (`benchledger gate`, `review`,
`compare`, ...): it loads no run, import or execution code, which a command that only
appends a verdict would otherwise load, fold by fold, for nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID, uuid4

from benchledger.domain import verdicts
from benchledger.domain.base import Event
from benchledger.domain.errors import ConcurrencyError
from benchledger.domain.ledger_base import LedgerBase
from benchledger.domain.signatures import natural_id


class Publishing(LedgerBase):
    """Verdicts, reviews, rankings, comparisons, head-to-head reports and model aliases."""

    # An application's name names its tables on PostgreSQL (`ledger_events`) and its
    # environment variables: this is the ledger application's store, not one of its own.
    name = "Ledger"

    def record_gate(self, *, findings: Sequence[dict[str, Any]], **fields: Any) -> UUID:
        """Append a verdict naming its findings by digest, and the findings themselves
        (compressed) unless an earlier verdict stored the same ones."""
        verdict_id = uuid4()
        digest, packed = verdicts.pack_findings(findings)
        stream = natural_id("gate_findings", digest)
        for _attempt in range(2):  # once more if another writer stored them meanwhile
            events: list[Event] = []
            if findings and self._first_event(stream) is None:
                events.append(
                    verdicts.first_event(
                        verdicts.GateFindingsRecorded,
                        stream,
                        verdict_id=verdict_id,
                        gate=fields["gate"],
                        sha256=digest,
                        count=len(findings),
                        compressed=packed,
                    )
                )
            verdict = verdicts.first_event(
                verdicts.GateEvaluated,
                verdict_id,
                findings_sha256=digest if findings else None,
                finding_count=len(findings),
                **fields,
            )
            try:
                self._save([*events, verdict])
            except ConcurrencyError:
                if not events:
                    raise
                continue
            return verdict_id
        raise ConcurrencyError("could not record the gate verdict; try again")

    def declare_model_alias(self, name: str, model_id: str, actor: str, reason: str = "") -> UUID:
        """Declare that the model a source names `name` is `model_id` (`benchledger
        alias-model`): every name the rules resolve as they resolve `name` follows it."""
        from benchledger.domain import model_aliases  # the model rules: this method only

        alias_id = uuid4()
        self._save([model_aliases.declare(alias_id, name, model_id, actor, reason)])
        return alias_id

    def record_review(self, **fields: Any) -> UUID:
        review_id = uuid4()
        self._save([verdicts.first_event(verdicts.ReviewRecorded, review_id, **fields)])
        return review_id

    def record_ranking(self, ranking_id: str, **fields: Any) -> UUID:
        return self._record_named(
            verdicts.RankingRecorded, "ranking", "ranking_id", ranking_id, fields
        )

    def record_comparison(self, comparison_id: str, **fields: Any) -> UUID:
        return self._record_named(
            verdicts.ComparisonRecorded, "comparison", "comparison_id", comparison_id, fields
        )

    def record_head_to_head(self, report_id: str, **fields: Any) -> UUID:
        from benchledger.domain import head_to_head

        return self._record_named(
            head_to_head.HeadToHeadRecorded, "head_to_head", "report_id", report_id, fields
        )

    def _record_named(
        self, cls: type[Any], kind: str, key: str, name: str, fields: dict[str, Any]
    ) -> UUID:
        """One event of `cls` holding `name` as its `key`: the first and only event of the
        stream that `kind` and `name` identify."""
        stream = natural_id(kind, name)
        self._save([verdicts.first_event(cls, stream, **{key: name}, **fields)])
        return stream
