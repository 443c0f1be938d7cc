"""A large file parsed in a child process while this one appends what it has read.

Parsing a result file and appending its events are each about half of an import, and
each keeps one core busy: with the parse in a forked child, sending its records through
a pipe a batch at a time, the two overlap. Nothing else changes: the records are the
ones the format yields (pickled whole), in order, and the parent appends them inside
the file's one transaction as before.

The child only reads the file; it never touches the ledger it inherited (it ends with
`os._exit`, running none of the parent's cleanup, so no inherited connection is ever
closed, rolled back or checkpointed). It stops when the parent stops reading (a broken
pipe), and dies with it: a parent killed mid-import leaves a child whose next write
fails. An error in the parse is sent back and raised in the parent as it was raised.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO

from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord, SkipRecord

Parsed = RunRecord | SkipRecord

# Files smaller than this are parsed in process: forking would cost more than it saves.
READ_AHEAD_BYTES = 8 << 20
# Records sent at a time: few enough that the parent starts early, and a batch of a
# native file's large runs is cut short by its cells.
BATCH_RECORDS = 50
BATCH_WEIGHT = 5_000
# The pipe holds this much, so that the child is not held up by a parent busy appending.
PIPE_BYTES = 1 << 20
F_SETPIPE_SZ = 1031  # Linux's fcntl to resize a pipe


def can_read_ahead() -> bool:
    """Forking is safe only without other threads (they would be copied mid-work)."""
    return hasattr(os, "fork") and threading.active_count() == 1


def read_ahead(produce: Callable[[], Iterable[Parsed]], name: str) -> Iterator[Parsed]:
    """What `produce()` yields, parsed in a child process (in this one when it cannot
    fork). `name`: the file, named by an error the child cannot send as it is."""
    if not can_read_ahead():
        yield from produce()
        return
    read_fd, write_fd = os.pipe()
    with contextlib.suppress(OSError, AttributeError):  # only Linux resizes pipes
        import fcntl

        fcntl.fcntl(write_fd, F_SETPIPE_SZ, PIPE_BYTES)
    pid = os.fork()
    if pid == 0:  # the child: nothing but parsing and writing, then out
        code = 1
        try:
            os.close(read_fd)
            _send(produce, write_fd, name)
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb", buffering=PIPE_BYTES) as reader:
        try:
            yield from _received(reader, name)
        finally:
            reader.close()  # a child still writing gets a broken pipe and stops
            os.waitpid(pid, 0)


def _received(reader: BinaryIO, name: str) -> Iterator[Parsed]:
    while True:
        try:
            kind, payload = pickle.load(reader)
        except EOFError:
            raise InputFormatError(name, "its reader process ended before the file") from None
        if kind == "records":
            yield from payload
        elif kind == "error":
            raise _rebuilt(payload)
        else:
            return


def _send(produce: Callable[[], Iterable[Parsed]], write_fd: int, name: str) -> None:
    """Records in batches, then the end (or the error that stopped the parse). A broken
    pipe (the parent stopped reading) ends the child; the parse is closed either way, so
    that what it holds (a copy of a database) is cleaned up."""
    records = iter(produce())
    try:
        with os.fdopen(write_fd, "wb", buffering=1 << 16) as out:

            def dump(message: tuple[str, Any]) -> None:
                pickle.dump(message, out, pickle.HIGHEST_PROTOCOL)  # no memo kept between

            try:
                batch: list[Parsed] = []
                weight = 0
                for record in records:
                    batch.append(record)
                    if isinstance(record, RunRecord):
                        weight += len(record.cells) + len(record.turns)
                    if len(batch) >= BATCH_RECORDS or weight >= BATCH_WEIGHT:
                        dump(("records", batch))
                        batch, weight = [], 0
                dump(("records", batch))
                dump(("end", None))
            except BrokenPipeError:
                raise
            except BaseException as e:
                dump(("records", batch))  # what was read before it, as in process
                dump(("error", _portable(e, name)))
    finally:
        close = getattr(records, "close", None)
        if close is not None:
            close()


Portable = tuple[type[BaseException], tuple[Any, ...], dict[str, Any]]


def _portable(error: BaseException, name: str) -> Portable:
    """An exception as its class, args and attributes: errors whose constructor takes
    other arguments than their args (InputFormatError) do not unpickle as themselves."""
    try:
        pickle.dumps((type(error), error.args, vars(error)))
    except Exception:
        error = InputFormatError(name, f"cannot be read: {type(error).__name__}: {error}")
    return type(error), error.args, dict(vars(error))


def _rebuilt(payload: Portable) -> BaseException:
    cls, args, state = payload
    error = cls.__new__(cls)
    error.args = args
    vars(error).update(state)
    return error
