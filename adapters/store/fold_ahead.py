"""A catch-up of many events folded in a child process while this one writes the rows.

Folding events (reading, decoding, turning them into statements) and running the
statements are each about half of a catch-up. For a large one (a file of tens of
thousands of runs just imported, a rebuild) the folds run in a forked child (`forked`)
that reads the committed events through a connection of its own and sends each page's
statements; this process runs them in its transaction(s) as it would have, in the
same order, and records the same positions. The rows are the ones an in-process fold
writes: a projection's fold is pure, and the running state one keeps across pages
(the chain's head) lives in the projection, which the child prepares once, before its
first page, from the committed tables, as this process's transaction has written
nothing yet.

Running the statements alone left this process idle a third of the time, so it folds
a few projections itself (`FOLDED_HERE`): it reads the same pages of the same committed
events through a connection of its own (both stop at the log's head when the fold
began), folds each before it waits for the child's, and puts their statements where
the child's would have been."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from eventsourcing.sqlite import SQLiteApplicationRecorder

from benchledger.adapters.store import forked, hotpath
from benchledger.adapters.store.ledger_file import EVENT_TABLE
from benchledger.domain.errors import LedgerError
from benchledger.projections.base import Envelope, Params, Projection, group_changes

# The projections this process folds itself while the child folds the others: the two
# that need no decode (`Envelope.head`), so no event is decoded twice, nor any only for
# them (an import's attempts and skip notes), and their rows, the events' text the
# largest, need not be sent. Measured on the catch-up of a fresh import of 50k
# orchestrator rows (147k events): the child's CPU went from 13 s to about 8, this
# process's from 10.6 to about 9.5 (it writes the rows, then settles and indexes alone).
FOLDED_HERE = frozenset({"events", "chain"})

# A page of the child's that took longer than this to arrive was waited for: this
# process then claims one of the child's later pages (`_Claims`), at most CLAIMS_OPEN
# at a time.
CLAIM_AFTER = 0.002
CLAIMS_OPEN = 2

Batches = list[tuple[str, list[Params]]]
Changes = list[tuple[str, int, Batches]]

# A page of stored events as they are stored (position, stream's hex, version, topic,
# state): what `ReadOnlyRecorder` reads, without a Notification made of each.
ROWS = (
    "SELECT rowid, originator_id, originator_version, topic, state "
    f"FROM {EVENT_TABLE} WHERE rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?"
)


@dataclass(frozen=True)
class FoldedPage:
    """A page of events folded: how many, the last one's position, and per projection
    that had events in it, its last event's position and its statements (with table
    placeholders, in order, consecutive equal statements as one batch)."""

    count: int
    last: int
    changes: Changes


def events_file(recorder: Any) -> str | None:
    """The SQLite file holding the events, which a child can open on its own."""
    if isinstance(recorder, SQLiteApplicationRecorder):
        pool = recorder.datastore.pool
        if not pool.is_sqlite_memory_mode:
            return str(pool.db_name)
    return None


def can_fold_ahead(recorder: Any, events: int) -> bool:
    return (
        events > 0
        and events >= hotpath.FOLD_AHEAD_EVENTS
        and events_file(recorder) is not None
        and forked.can_fork()
    )


def fold_ahead(
    recorder: Any,
    envelope: Callable[[int, str, int, str, bytes], Envelope],
    page_size: int,
    projections: Sequence[Projection],
    names: dict[str, dict[str, str]],
    positions: dict[str, int],
    read_models: str,
    stop: int,
    *,
    here: Collection[str] = (),
    read: Any = None,
) -> Iterator[FoldedPage]:
    """Every event after each projection's position up to `stop` (the log's head when
    the fold began: both processes read the same pages; later events are the caller's
    to fold) folded, page by page: the projections named in `here` in this process
    (prepared through `read`), the others in a child. `envelope`: how the runner wraps a
    stored row; `names`: each projection's tables; `read_models`: the file they are in."""
    source = events_file(recorder)
    assert source is not None
    ahead = [p for p in projections if p.name not in here]
    local = [p for p in projections if p.name in here]
    start = min(positions[p.name] for p in projections)
    folds_here = bool(local) and min(positions[p.name] for p in local) < stop
    # Pages this process takes from the child (`_Claims`) and folds itself: not where a
    # projection of the child's keeps running state (the chain's head) from page to page.
    stateless = all(type(p.resolved()).prepare is Projection.prepare for p in ahead)
    claims = _Claims() if folds_here and stateless else None

    def fold() -> Iterator[tuple[int, int, Changes | None]]:
        events = _events(source)
        models = sqlite3.connect(f"file:{read_models}?mode=ro", uri=True)

        def read_committed(sql: str, params: Sequence[Any] = ()) -> Any:
            return models.execute(sql, params).fetchone()

        prepared: set[str] = set()
        after = start
        page = 0
        while rows := events.execute(ROWS, (after, stop, page_size)).fetchall():
            if claims is not None and claims.taken(page):
                yield len(rows), rows[-1][0], None  # folded by the parent
            else:
                envelopes = [envelope(*row) for row in rows]
                changes = _page(ahead, envelopes, positions, prepared, read_committed, names)
                yield len(rows), rows[-1][0], changes
            after = rows[-1][0]
            page += 1

    pages = forked.forked(
        fold,
        batch=lambda waiting, page: True,
        died=lambda: LedgerError("the process folding the events ended before the log did"),
        unportable=lambda e: LedgerError(f"folding the events failed: {type(e).__name__}: {e}"),
        plain=True,  # statements' parameters: tuples of text, numbers and None
        waited=claims.waited if claims is not None else None,
    )
    if not folds_here:
        return (FoldedPage(count, last, changes or []) for count, last, changes in pages)
    return _folded_here(
        pages,
        source,
        envelope,
        page_size,
        projections,
        ahead,
        local,
        start,
        stop,
        names,
        positions,
        read,
        claims,
    )


class _Claims:
    """Pages of the child's projections that this process folds itself, so that it
    folds rather than waits when the child is the slower half.

    Whenever this process waited for one of the child's pages (`CLAIM_AFTER`), it claims
    the page after next, through a pipe the child reads before each page: the child sends
    an empty place for a page it finds claimed, and this process folds that page's
    events for the child's projections too. A claim the child reads too late (it has
    begun that page) costs a page folded twice; the child's copy is then dropped. Folds
    are pure, so either process folds a page into the same statements."""

    def __init__(self) -> None:
        self.read_fd = self.write_fd = -1
        self.last_wait = 0.0
        self.mine: set[int] = set()  # this process's claims, until it folds them
        self.read: set[int] = set()  # in the child: the claims it has read

    def open(self) -> None:
        """Make the pipe: before the child is forked, which inherits it."""
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)

    def waited(self, seconds: float) -> None:
        self.last_wait = seconds

    def claim_after_waiting(self, page: int) -> None:
        """After receiving the child's `page`: if that took a wait, claim a later one."""
        if self.last_wait <= CLAIM_AFTER or len(self.mine) >= CLAIMS_OPEN:
            return
        claimed = page + 2
        while claimed in self.mine:
            claimed += 1
        self.mine.add(claimed)
        with contextlib.suppress(OSError):  # the child ended: its pages say why
            os.write(self.write_fd, claimed.to_bytes(8, "little"))

    def ours(self, page: int) -> bool:
        """Whether this process folds `page` (it claimed it); forgets the claim."""
        if page in self.mine:
            self.mine.discard(page)
            return True
        return False

    def taken(self, page: int) -> bool:
        """In the child: whether the parent has claimed `page`."""
        while True:
            try:
                data = os.read(self.read_fd, 4096)
            except BlockingIOError:
                break
            if not data:
                break
            self.read.update(
                int.from_bytes(data[i : i + 8], "little") for i in range(0, len(data), 8)
            )
        if page in self.read:
            self.read.discard(page)
            return True
        return False

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            if fd >= 0:
                os.close(fd)
        self.read_fd = self.write_fd = -1


def _folded_here(
    pages: Iterator[tuple[int, int, Changes | None]],
    source: str,
    envelope: Callable[[int, str, int, str, bytes], Envelope],
    page_size: int,
    projections: Sequence[Projection],
    ahead: list[Projection],
    local: list[Projection],
    start: int,
    stop: int,
    names: dict[str, dict[str, str]],
    positions: dict[str, int],
    read: Any,
    claims: _Claims | None,
) -> Iterator[FoldedPage]:
    """The child's pages with the `local` projections' changes, folded here from the
    same pages of events, each in its projection's place. A page is folded here before
    the child's is waited for: time this process would wait for the child is spent. So
    are the pages this process claimed (`_Claims`): it folds all their projections."""
    order = {p.name: i for i, p in enumerate(projections)}
    prepared: set[str] = set()
    after = start
    page = 0
    with closing(_events(source)) as events:
        try:
            if claims is not None:
                claims.open()  # here, so that a fold never begun leaves no pipe open
            while rows := events.execute(ROWS, (after, stop, page_size)).fetchall():
                last = rows[-1][0]
                envelopes = [envelope(*row) for row in rows]
                ours = _page(local, envelopes, positions, prepared, read, names)
                mine = claims is not None and claims.ours(page)
                if mine:
                    ours += _page(ahead, envelopes, positions, prepared, read, names)
                count, theirs, changes = next(pages, (0, 0, None))
                if (count, theirs) != (len(rows), last):  # committed events: cannot happen
                    raise LedgerError("the events folded ahead changed while being folded")
                if mine or changes is None:
                    changes = []  # the child's copy of a page claimed late is not used
                    if not mine:  # it left a page nobody claimed: cannot happen
                        raise LedgerError("a page of events was folded by neither process")
                elif claims is not None:
                    claims.claim_after_waiting(page)
                if ours:
                    changes = sorted(changes + ours, key=lambda c: order[c[0]])
                yield FoldedPage(count, last, changes)
                after = last
                page += 1
            if next(pages, None) is not None:
                raise LedgerError("the events folded ahead changed while being folded")
        finally:
            close = getattr(pages, "close", None)
            if close is not None:
                close()  # the child stops, and is waited for
            if claims is not None:
                claims.close()


def _events(source: str) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{source}?mode=ro", uri=True)


def _page(
    projections: Sequence[Projection],
    envelopes: list[Envelope],
    positions: dict[str, int],
    prepared: set[str],
    read: Any,
    names: dict[str, dict[str, str]],
) -> Changes:
    """A page's changes for each projection that has events in it past its position."""
    changes = []
    first = envelopes[0].position
    for p in projections:
        seen = positions[p.name]
        todo = envelopes if first > seen else [e for e in envelopes if e.position > seen]
        if todo:
            changes.append((p.name, todo[-1].position, _folded(p, todo, prepared, read, names)))
    return changes


def _folded(
    projection: Projection,
    envelopes: list[Envelope],
    prepared: set[str],
    read: Any,
    names: dict[str, dict[str, str]],
) -> Batches:
    """What `ReadModelStore.apply` would run for these events."""
    topics = projection.topics
    if topics is not None:
        envelopes = [e for e in envelopes if e.topic in topics]
    if not envelopes:
        return []
    if projection.name not in prepared:
        projection.prepare(read, names[projection.name])
        prepared.add(projection.name)
    return [(sql, batch) for sql, batch in group_changes(projection.fold_page(envelopes)) if batch]
