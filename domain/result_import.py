"""The Import aggregate: one result file's content, imported once."""

from __future__ import annotations

from uuid import UUID

from benchledger.domain.base import Event, written_when_set


class ResultFileImported(Event):
    format: str
    path: str
    sha256: str
    size: int
    run_ids: list[UUID]
    run_group_id: UUID | None = None


class SkipNoted(Event):
    """A source's skip (by its own key) was recorded, on the run group named."""

    system: str
    skip_key: str
    run_group_id: UUID
    # The digest of the source row the skip was read from, where its format gives one
    # (as `RunImported.source_row_sha256`); written only when set.
    source_row_sha256: str | None = written_when_set()


def imported(
    import_id: UUID,
    *,
    format: str,
    path: str,
    sha256: str,
    size: int,
    run_ids: list[UUID],
    run_group_id: UUID | None,
) -> ResultFileImported:
    return ResultFileImported(
        originator_id=import_id,
        originator_version=1,
        format=format,
        path=path,
        sha256=sha256,
        size=size,
        run_ids=run_ids,
        run_group_id=run_group_id,
    )
