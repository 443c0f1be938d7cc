"""Indexes built on full tables (`ReadModelStore.index_filled`) do not add SQLite's sorter
to the bulk page cache: measured in a child process, as what its peak resident size
grows by while the indexes of a table filled under `bulk()` are built."""

from __future__ import annotations

import subprocess
import sys

import pytest

MiB = 1 << 20
# Fills a 400,000-row table under the bulk cache (its keys ~50 MB, more than the index
# cache, less than the bulk one, the table wider than the bulk cache), then builds its
# index, and prints how much the process's peak resident size grew while it did.
# argv[1]: the index cache in KiB.
CHILD = """
import sys, tempfile
from pathlib import Path
from benchledger.projections import store as store_module
from benchledger.projections.base import Projection, Table

store_module.INDEX_CACHE_KIB = int(sys.argv[1])

class Wide(Projection):
    name = "wide"
    version = 1
    tables = (Table("wide", {"k": str, "v": str}, indexes=(("k",),)),)

def peak():
    # VmHWM: this process's own peak. Not ru_maxrss, which keeps across exec the peak of
    # the process it was forked from (the test runner's, hundreds of MiB late in a run).
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise SystemExit("no VmHWM in /proc/self/status")

folder = Path(tempfile.mkdtemp())
store = store_module.ReadModelStore(folder / "l.db")
projection = Wide()
with store.bulk():
    with store.write():
        store.create_tables(projection, indexed=False)
        store.conn.executemany(
            "INSERT INTO wide (k, v) VALUES (?, ?)",
            ((f"{i * 7919 % 400_000:012d}" + "k" * 110, "v" * 40) for i in range(400_000)),
        )
    before = peak()
    with store.write():
        store.index_filled(projection)
    assert store.conn.execute("PRAGMA cache_size").fetchone()[0] == -store_module.BULK_CACHE_KIB
print(peak() - before)
"""


def _growth(index_cache_kib: int) -> int:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(index_cache_kib)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_building_indexes_adds_no_sorter_to_the_bulk_cache() -> None:
    from benchledger.projections.store import BULK_CACHE_KIB, INDEX_CACHE_KIB

    assert _growth(INDEX_CACHE_KIB) < 8 * MiB
    # With the bulk cache kept for the builds, the sorter holds the keys beside it: the
    # measure above can fail.
    assert _growth(BULK_CACHE_KIB) > 32 * MiB
