"""The write-ahead log copied into the database file by a thread of its own during a bulk write.

In WAL mode a commit appends the pages it changed to the log, and the connection that
commits past `wal_autocheckpoint` pages then copies the log into the database file
(a checkpoint) before its commit returns. A large catch-up or rebuild writes hundreds
of MiB of pages: at 50k orchestrator rows, the ten commits of the read models' first
fill took 1.8 s of the 5.7 s this process spent writing them (0.5 s without their
checkpoints), while the child folding ahead left the other core idle a third of the
time. With the copies made aside, that import took 14.47 and 14.75 s against 14.76 and
15.20 s without (medians of two rounds of 5 and 4 runs of each, interleaved).

`Checkpointer` takes the copies off the writer: the writer's connection stops
checkpointing, and after each of its commits a thread, through a connection of its
own, runs a PASSIVE checkpoint: it copies what is committed, never waits for the
writer, and the writer never waits for it (SQLite releases the GIL while it copies).
A writer that begins its next transaction before a checkpoint ends keeps the log from
starting over, so the log grows by what the bulk writes; once it is larger than
`WAL_BYTES`, and when the thread stops, the checkpoint is a TRUNCATE: it waits (up to
`RESTART_WAIT_S`) for the writer's commit and for readers of the log, holds the
writer's next transaction back while it copies the last commit's pages (the others
are copied already), and empties the log. A reader that holds the log longer (a long
query of Datasette's) makes it give up; the log is then left to grow by another
`WAL_BYTES` before the next one waits, so that no commit after it is held back.

A checkpoint moves committed pages between two files that SQLite keeps consistent; one
that fails or is not run loses nothing (the pages stay in the log, and the next
checkpoint copies them), so the thread's errors end it and are logged, never raised.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path

logger = logging.getLogger(__name__)

# The log's size above which a checkpoint empties it (see the module's docstring).
WAL_BYTES = 256 << 20
# How long a checkpoint that empties the log waits for the writer's commit and for
# readers of the log; past it, it copies what it can, and the next one tries again.
RESTART_WAIT_S = 5.0
# How long the last checkpoint, when the bulk ends, waits for readers of the log: the
# command ends after it, and a log it cannot empty is copied by later checkpoints.
STOP_WAIT_MS = 100
# The writer's `wal_autocheckpoint` once the thread stops (SQLite's default).
AUTOCHECKPOINT_PAGES = 1000


class Checkpointer:
    """Checkpoints `path` (a SQLite file in WAL mode) in a thread, after each commit of
    `writer` (call `committed()`), until `close()`; `writer` checkpoints no more
    meanwhile."""

    def __init__(self, path: Path | str, writer: sqlite3.Connection) -> None:
        self.path = str(path)
        self.writer = writer
        self.checkpoints = 0
        self.emptied = 0
        self.refused = 0  # emptying checkpoints that readers of the log held back
        self._bound = WAL_BYTES
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="benchledger-checkpoint")
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        self._thread.start()

    def committed(self) -> None:
        """Copy what the writer committed (after the copy under way, if one is)."""
        self._wake.set()

    def close(self) -> None:
        """Copy what is committed and empty the log, then stop; the writer checkpoints
        as before."""
        self._stopping = True
        self._wake.set()
        self._thread.join()
        self.writer.execute(f"PRAGMA wal_autocheckpoint = {AUTOCHECKPOINT_PAGES}")

    def _wal_bytes(self) -> int:
        try:
            return os.path.getsize(self.path + "-wal")
        except OSError:
            return 0

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=RESTART_WAIT_S)
        except sqlite3.Error as e:
            logger.warning("checkpoints of %s: %s", self.path, e)
            return
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                stopping = self._stopping
                # The log is written from its start again only once emptied (or copied
                # whole between two transactions): its file's size is what it holds.
                size = self._wal_bytes()
                empty = stopping or size > self._bound
                mode = "TRUNCATE" if empty else "PASSIVE"
                if stopping:  # no writer is left to wait for, only readers: briefly
                    conn.execute(f"PRAGMA busy_timeout = {STOP_WAIT_MS}")
                busy, _, _ = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
                self.checkpoints += 1
                if empty and busy:
                    self.refused += 1
                    self._bound = size + WAL_BYTES
                elif empty:
                    self.emptied += 1
                    self._bound = WAL_BYTES
                if stopping:
                    return
        except sqlite3.Error as e:
            logger.warning("checkpoints of %s: %s", self.path, e)
        finally:
            conn.close()
