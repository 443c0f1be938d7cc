"""An import registers the benchmarks of its new runs that are not registered yet. It asks
the store once for all of a file's, and never again for one it has seen registered (events
are never deleted); one it saw unregistered is asked again, since another writer may
register it, and nothing an import rolled back counts as registered."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from benchledger.adapters.store.bootstrap import Services, Settings, build
from benchledger.domain import result_import
from benchledger.domain.records import RunHeader, RunRecord, SourceFile
from benchledger.domain.signatures import benchmark_id_for, sha256_hex


def import_file(services: Services, name: str, benchmarks: Sequence[str]) -> None:
    records = [
        RunRecord(
            header=RunHeader(
                run_key=f"{name}-{i}", benchmark=b, agent="a", model="m", status="succeeded"
            )
        )
        for i, b in enumerate(benchmarks)
    ]
    data = name.encode()
    source = SourceFile(path=name, sha256=sha256_hex(data), size=len(data), format="native")
    services.ledger.import_runs("native", source, records)


def registrations(db: Path) -> dict[str, int]:
    """How many `BenchmarkRegistered` events each benchmark's stream holds."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT originator_id, count(*) FROM stored_events "
            "WHERE topic LIKE '%BenchmarkRegistered' GROUP BY 1"
        ).fetchall()
    names = {benchmark_id_for(n).hex: n for n in ("b0", "b1", "b2", "x", "y", "z")}
    return {names[str(oid).replace("-", "")]: n for oid, n in rows}


@pytest.fixture
def writers(tmp_path: Path) -> Iterator[tuple[Services, Services]]:
    """Two writers of one ledger, as two processes are."""
    db = tmp_path / "ledger.db"
    with build(Settings(db_path=db)) as one, build(Settings(db_path=db)) as other:
        yield one, other


def asked_ids(services: Services) -> list[UUID]:
    """Every stream id the ledger asks the store about in bulk, from now on."""
    asked: list[UUID] = []
    present = services.ledger.streams_present
    assert present is not None

    def counting(ids: Sequence[UUID]) -> set[UUID]:
        asked.extend(ids)
        return present(ids)

    services.ledger.streams_present = counting
    return asked


def test_a_files_benchmarks_are_asked_once_together_and_not_again_once_registered(
    writers: tuple[Services, Services],
) -> None:
    ledger, _ = writers
    asked = asked_ids(ledger)
    import_file(ledger, "first", ["b0", "b1", "b2", "b0"])
    ids = {benchmark_id_for(b) for b in ("b0", "b1", "b2")}
    assert sorted(i for i in asked if i in ids) == sorted(ids)
    asked.clear()
    import_file(ledger, "second", ["b2", "b1", "b0"])
    assert not ids & set(asked)
    assert registrations(ledger.settings.db_path) == {"b0": 1, "b1": 1, "b2": 1}


def test_a_benchmark_registered_by_another_writer_between_two_files_is_found(
    writers: tuple[Services, Services], monkeypatch: pytest.MonkeyPatch
) -> None:
    one, other = writers
    import_file(one, "first", ["x"])
    # The first writer sees `y` unregistered, then its import fails: nothing is appended.
    with monkeypatch.context() as patched:

        def fail(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError("the disk is full")

        patched.setattr(result_import, "imported", fail)
        with pytest.raises(RuntimeError):
            import_file(one, "failed", ["y"])
    assert registrations(one.settings.db_path) == {"x": 1}
    import_file(other, "other", ["y"])  # another writer registers it meanwhile
    import_file(one, "second", ["x", "y"])  # found registered: not registered twice
    assert registrations(one.settings.db_path) == {"x": 1, "y": 1}


def test_a_benchmark_an_import_registered_and_rolled_back_is_registered_by_the_next(
    writers: tuple[Services, Services], monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger, _ = writers
    with monkeypatch.context() as patched:

        def fail(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError("the disk is full")

        patched.setattr(result_import, "imported", fail)
        with pytest.raises(RuntimeError):
            import_file(ledger, "failed", ["z"])  # its registration of `z` rolled back
    assert registrations(ledger.settings.db_path) == {}
    import_file(ledger, "again", ["z"])
    assert registrations(ledger.settings.db_path) == {"z": 1}
    assert ledger.ledger.get_benchmark("z") is not None
