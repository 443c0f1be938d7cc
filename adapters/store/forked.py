"""Work done in a forked child process while this one uses what it sends.

An import parses a file and appends it; a catch-up folds events and writes rows. Each
half keeps one core busy: with one half in a child that sends its results through a
pipe, the two overlap (`read_ahead`, `fold_ahead`).

The child only reads; it never touches what it inherited (it ends with `os._exit`,
running none of the parent's cleanup, so no inherited connection is ever closed,
rolled back or checkpointed). It stops when the parent stops reading (a broken pipe),
and so dies with it: a parent killed mid-way leaves a child whose next write fails. An
error in the child is sent back and raised in the parent as it was raised; what the
child's share of the spare work refuses is done again, and refused, in the parent.
"""

from __future__ import annotations

import collections
import contextlib
import marshal
import math
import os
import pickle
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO, TypeVar

T = TypeVar("T")
# The pipe holds this much, so that the child is not held up by a parent still busy.
PIPE_BYTES = 1 << 20
F_SETPIPE_SZ = 1031  # Linux's fcntl to resize a pipe
# Made and not yet written, at most (see `_Writer`).
AHEAD_BYTES = 64 << 20
# With this much made and not yet written, the parent is the slower half: the child
# does the `spare` work of what it sends next.
SPARE_WHEN_WAITING = PIPE_BYTES

Portable = tuple[type[BaseException], tuple[Any, ...], dict[str, Any]]


# How much of a core's load others may put on the cores this process and its child leave
# them, and a core still count as free.
FREE_CORE_LOAD = 0.5
# The load average's window: a process busy for `t` seconds shows in it as 1 - e^(-t/60).
LOAD_WINDOW = 60.0
# How long the cores are watched to tell how busy they are now (`busy_cores`): a tenth
# of a second of wall time, no CPU, before work that runs for seconds.
SAMPLE_SECONDS = 0.1


def can_fork() -> bool:
    """Forking is safe only without other threads (they would be copied mid-work), and
    pays only on a core to spare (`core_to_spare`)."""
    return hasattr(os, "fork") and threading.active_count() == 1 and core_to_spare()


def core_to_spare() -> bool:
    """Whether a child would have a core of its own: this process may run on two or
    more, and what else runs leaves one idle. On a busy machine the child takes its
    time from others, and only adds its work (its messages through the pipe, the
    pages both fold) to the CPU the work costs."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    if cores < 2:
        return False
    busy = busy_cores()
    if busy is not None:  # this process slept while they were watched: all of it is others'
        return spare_core(cores, busy)
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average: the cores alone tell
        load = 0.0
    return spare_core(cores, load, own_load())


def busy_cores() -> float | None:
    """How many cores are busy now: over `SAMPLE_SECONDS`, from the kernel's count of
    each core's busy and idle time (/proc/stat); None where it cannot be read. The
    load average would tell later: it still counts, for a minute, a process that has
    just finished (an import right after another command would never fork)."""
    try:
        first = _core_times()
        time.sleep(SAMPLE_SECONDS)
        second = _core_times()
    except (OSError, ValueError, IndexError):
        return None
    busy, total, cores = second[0] - first[0], second[1] - first[1], second[2]
    return cores * busy / total if total > 0 else None


def _core_times() -> tuple[int, int, int]:
    """The busy and the total time of all cores so far (clock ticks), and how many
    cores the kernel counts: from /proc/stat's `cpu` and `cpuN` lines. Idle and waiting
    for the disk are not busy; everything else (a guest's stolen time too) is."""
    with open("/proc/stat", "rb") as f:
        lines = f.read().split(b"\n")
    ticks = [int(t) for t in lines[0].split()[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    total = sum(ticks[:8])  # guest time is counted in user time already
    cores = sum(1 for line in lines[1:] if line.startswith(b"cpu"))
    return total - idle, total, cores


def own_load() -> float:
    """This process's (and its finished children's) part of the one-minute load
    average: its CPU per second since it began, weighed as the average weighs the
    time it has been busy (0 where /proc does not tell when it began)."""
    try:
        with open("/proc/uptime", "rb") as f:
            now = float(f.read().split()[0])
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        began = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # starttime, field 22
    except (OSError, ValueError, IndexError):
        return 0.0
    elapsed = now - began
    if elapsed <= 0:
        return 0.0
    t = os.times()
    busy = (t.user + t.system + t.children_user + t.children_system) / elapsed
    return busy * (1 - math.exp(-elapsed / LOAD_WINDOW))


def spare_core(cores: int, load: float, own: float = 0.0) -> bool:
    """Whether `cores` with `load` of them busy (now, or the one-minute average), `own`
    of it this process's, leave a child a core of its own: what others load fits in the
    cores this process and the child leave them."""
    return cores >= 2 and load - own < cores - 2 + FREE_CORE_LOAD


def forked(
    produce: Callable[[], Iterable[T]],
    *,
    batch: Callable[[list[T], T], bool],
    died: Callable[[], BaseException],
    unportable: Callable[[BaseException], BaseException],
    plain: bool = False,
    waited: Callable[[float], None] | None = None,
    spare: Callable[[T, int], Any] | None = None,
    ahead: Callable[[list[T], int], list[Any]] | None = None,
) -> Iterator[Any]:
    """What `produce()` yields, made in a child process; `batch(sent, item)`: whether the
    items waiting (`item` the last) go now. `died()`: the error when the child ends
    without a word; `unportable(e)`: what to raise for an error that cannot be sent.
    `plain`: the items are mostly plain data (tuples, lists, dicts of str, bytes,
    numbers, None), which `marshal` writes and reads in about half the time `pickle`
    takes; items it cannot write go by pickle. `waited(seconds)`: told, for each batch,
    how long this process took to receive it (mostly waiting for the child).

    `spare(item, index)`: work on each item that either process may do, giving what to
    yield in its place (None: nothing), raising to refuse it (a check, a parse);
    `index`: how many were yielded before it. The child does it to a batch when it is
    the faster half (more than `SPARE_WHEN_WAITING` of its messages wait for this
    process to read them), else this process does, as it receives the items: the two
    share the work as their speeds allow. `ahead(items, first)`: what the child does
    instead, to a whole batch (by default `spare` to each); it may do more than `spare`
    where that saves this process work. When it raises, the child sends the batch as
    it is, and this process does `spare` to each item: what is refused is refused here,
    after the items before it, as in one process."""
    read_fd, write_fd = os.pipe()
    with contextlib.suppress(OSError, AttributeError):  # only Linux resizes pipes
        import fcntl

        fcntl.fcntl(write_fd, F_SETPIPE_SZ, PIPE_BYTES)
    pid = os.fork()
    if pid == 0:  # the child: nothing but producing and writing, then out
        code = 1
        try:
            os.close(read_fd)
            _send(produce, write_fd, batch, unportable, plain, spare, ahead)
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb", buffering=PIPE_BYTES) as reader:
        try:
            yield from _received(reader, died, waited, spare)
        finally:
            reader.close()  # a child still writing gets a broken pipe and stops
            os.waitpid(pid, 0)


def _received(
    reader: BinaryIO,
    died: Callable[[], BaseException],
    waited: Callable[[float], None] | None = None,
    spare: Callable[[Any, int], Any] | None = None,
) -> Iterator[Any]:
    count = 0  # items yielded
    while True:
        try:
            if waited is None:
                kind, payload, pending = pickle.load(reader)
            else:
                began = time.perf_counter()
                kind, payload, pending = pickle.load(reader)  # a batch is one bytes object
                waited(time.perf_counter() - began)
        except EOFError:
            raise died() from None
        if kind in ("items", "marshalled"):
            items = marshal.loads(payload) if kind == "marshalled" else payload
            if spare is not None and pending:  # the child left their spare work
                for item in items:
                    done = spare(item, count)
                    if done is not None:
                        count += 1
                        yield done
            else:
                count += len(items)
                yield from items
        elif kind == "error":
            raise _rebuilt(payload)
        else:
            return


def _send(
    produce: Callable[[], Iterable[T]],
    write_fd: int,
    batch: Callable[[list[T], T], bool],
    unportable: Callable[[BaseException], BaseException],
    plain: bool = False,
    spare: Callable[[T, int], Any] | None = None,
    ahead: Callable[[list[T], int], list[Any]] | None = None,
) -> None:
    """Items in batches, then the end (or the error that stopped them). A broken pipe
    (the parent stopped reading) ends the child; what produces the items is closed
    either way, so that what it holds (a copy of a database) is cleaned up."""
    items = iter(produce())
    count = 0  # items sent
    try:
        with _Writer(write_fd) as out:

            def dump(kind: str, payload: Any, pending: bool = False) -> None:
                """A message: its kind, payload and whether the spare work of its items
                is still to do."""
                out.put(pickle.dumps((kind, payload, pending), pickle.HIGHEST_PROTOCOL))

            def send(waiting: list[T], *, sparing: bool = True) -> None:
                """Send `waiting`, its spare work done here when the parent is the slower
                half (or left to the parent when that work refuses an item)."""
                nonlocal count
                sent: list[Any] = waiting
                pending = spare is not None
                if pending and sparing and out.size >= SPARE_WHEN_WAITING:
                    try:
                        sent = _ahead(waiting, count)
                    except Exception:  # the parent does it again, and refuses it there
                        pass
                    else:
                        pending = False
                count += len(sent)
                if plain:
                    try:
                        data = marshal.dumps(sent)
                    except ValueError:  # an object marshal does not know
                        pass
                    else:
                        dump("marshalled", data, pending)
                        return
                dump("items", sent, pending)

            def _ahead(waiting: list[T], first: int) -> list[Any]:
                if ahead is not None:
                    return ahead(waiting, first)
                assert spare is not None
                done = [spare(item, first + i) for i, item in enumerate(waiting)]
                return [item for item in done if item is not None]

            waiting: list[T] = []
            try:
                for item in items:
                    waiting.append(item)
                    if batch(waiting, item):
                        sent, waiting = waiting, []
                        send(sent)
                sent, waiting = waiting, []
                send(sent)
                dump("end", None)
            except BrokenPipeError:
                raise
            except BaseException as e:
                # What was made before it, as in process: the parent does their spare
                # work, and raises what that finds first.
                send(waiting, sparing=False)
                dump("error", _portable(e, unportable))
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()


class _Writer:
    """The child's messages written to the pipe by a thread of its own, so that the
    child goes on making them while the pipe is full: the parent, busy a moment (or
    not given the CPU), finds them waiting rather than a child held up. At most
    `AHEAD_BYTES` wait; a write the parent no longer reads (a broken pipe) is raised
    where the next message is put, and at the end."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.waiting: collections.deque[bytes] = collections.deque()
        self.size = 0
        self.done = False
        self.failed: OSError | None = None
        self.changed = threading.Condition()
        self.thread = threading.Thread(target=self._write, daemon=True)

    def __enter__(self) -> _Writer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self.changed:
            self.done = True
            self.changed.notify_all()
        self.thread.join()
        os.close(self.fd)
        if self.failed is not None and exc[0] is None:
            raise self.failed

    def put(self, data: bytes) -> None:
        with self.changed:
            while self.failed is None and self.waiting and self.size + len(data) > AHEAD_BYTES:
                self.changed.wait()
            if self.failed is not None:
                raise self.failed
            self.waiting.append(data)
            self.size += len(data)
            self.changed.notify_all()

    def _write(self) -> None:
        try:
            while True:
                with self.changed:
                    while not self.waiting and not self.done:
                        self.changed.wait()
                    if not self.waiting:
                        return
                    data = self.waiting[0]
                view = memoryview(data)
                while view:
                    view = view[os.write(self.fd, view) :]
                with self.changed:
                    self.waiting.popleft()
                    self.size -= len(data)
                    self.changed.notify_all()
        except OSError as e:  # EPIPE: the parent stopped reading
            with self.changed:
                self.failed = e
                self.changed.notify_all()


def _portable(
    error: BaseException, unportable: Callable[[BaseException], BaseException]
) -> Portable:
    """An exception as its class, args and attributes: errors whose constructor takes
    other arguments than their args (InputFormatError) do not unpickle as themselves."""
    try:
        pickle.dumps((type(error), error.args, vars(error)))
    except Exception:
        error = unportable(error)
    return type(error), error.args, dict(vars(error))


def _rebuilt(payload: Portable) -> BaseException:
    cls, args, state = payload
    error = cls.__new__(cls)
    error.args = args
    vars(error).update(state)
    return error
