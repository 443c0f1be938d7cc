"""Sits between `benchledger run` and one benchmark, so the benchmark dies with the run.

    python -I -S supervise.py CONTROL_FD STATUS_FD GRACE_SECONDS -- COMMAND...

The runner starts this script (standard library only, so it starts in a few
milliseconds) as the leader of a new process group. It launches the command in
that group, reports `started PID` (or `error MESSAGE`) on STATUS_FD and then
waits. CONTROL_FD is the read end of a pipe whose only write end the runner
holds: when the runner dies in any way, kill -9 included, the kernel closes it
and this process sees end of file. It then gives the group SIGTERM, waits up to
GRACE_SECONDS and kills whatever is left, itself included. A pipe rather than a
parent-death signal: it works whichever thread of the runner (`--jobs`) started
it, and cannot miss a parent that died before it was set up.

Signals sent to the whole group (a timeout's SIGTERM, a terminal's SIGINT) are
for the benchmark: this process ignores them and, when the benchmark ends,
exits the way it did (its exit code, or by the same signal).

A process can leave the group (`setsid`, a daemon's double fork), and its parent
can exit before it: a group kill misses it, and it was re-parented to init. On
Linux this process is therefore a child subreaper (prctl PR_SET_CHILD_SUBREAPER):
every orphan below it is re-parented to it, not to init, so its descendants are
all found by walking /proc's parent links down from it. Before it exits, in every
way but SIGKILL, it kills every descendant, again until none is left (one may
fork meanwhile). The runner writes `k` on CONTROL_FD to have everything killed at
once (a timeout's grace is over, or the run is cancelled). Where prctl or /proc is
missing, the group kill is all there is.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from typing import NoReturn

_GROUP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
_POLL_SECONDS = 0.05
# How often a waiting subreaper reaps the orphans that exited below it.
_REAP_SECONDS = 1.0
PR_SET_CHILD_SUBREAPER = 36
# Killing descendants until none is left gives up after this long (a process stuck in
# uninterruptible sleep ignores even SIGKILL until it wakes).
_KILL_SECONDS = 10.0
# What the runner writes on CONTROL_FD to have the benchmark and all below it killed now.
KILL_NOW = b"k"


def _ignore(_signum: int, _frame: object) -> None:
    """A handler, not SIG_IGN: handlers are reset at exec, so the benchmark gets defaults."""


def main(args: list[str]) -> NoReturn:
    control, status, grace = int(args[0]), int(args[1]), float(args[2])
    argv = args[4:] if args[3:4] == ["--"] else args[3:]
    for signum in _GROUP_SIGNALS:
        signal.signal(signum, _ignore)
    _become_subreaper()
    try:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, close_fds=True)
    except (OSError, ValueError) as error:
        _report(status, f"error {error}")
        os._exit(127)
    _report(status, f"started {child.pid}")
    _watch(control, child, grace)


def _report(fd: int, line: str) -> None:
    try:
        os.write(fd, line.encode("utf-8", "surrogateescape") + b"\n")
        os.close(fd)
    except OSError:
        pass  # the runner is gone already: the control pipe will say so


def _watch(control: int, child: subprocess.Popen[bytes], grace: float) -> NoReturn:
    # poll, not select: the descriptors keep the runner's numbers (`pass_fds`), which
    # are 1024 or more in a process with that many files open, beyond select's reach.
    pidfd = _pidfd(child.pid)
    watched = select.poll()
    watched.register(control, select.POLLIN)  # and its hang-up: the runner is gone
    if pidfd is not None:
        watched.register(pidfd, select.POLLIN)
    wait_ms = round(1000 * (_POLL_SECONDS if pidfd is None else _REAP_SECONDS))
    while True:
        ready = {fd for fd, _ in watched.poll(wait_ms)}
        if control in ready:
            said = os.read(control, 64)
            if not said:
                _orphaned(child, grace)
            if KILL_NOW in said:
                _kill_descendants(child.pid)
                _exit_like(child.wait())
        code = child.poll()
        if code is not None:
            _kill_descendants(None)  # what the benchmark left running, in its group or not
            _exit_like(code)
        _reap_orphans(child.pid)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None  # before Linux 5.3, or elsewhere: poll instead


def _orphaned(child: subprocess.Popen[bytes], grace: float) -> NoReturn:
    """The runner died: nobody will record this benchmark, so stop it and its children."""
    os.killpg(0, signal.SIGTERM)  # the group: the benchmark and its children; we ignore it
    _signal_descendants(signal.SIGTERM)  # and those that left the group
    deadline = time.monotonic() + grace
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(_POLL_SECONDS)
    _kill_descendants(child.pid)
    os.killpg(0, signal.SIGKILL)  # whatever is left, this process included
    os._exit(137)


def _become_subreaper() -> bool:
    """Have orphans below this process re-parented to it (Linux 3.4+); False elsewhere."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _descendants() -> list[int]:
    """The live processes below this one, from /proc's parent links ([] without /proc)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue  # it exited meanwhile
        if fields and fields[0] not in (b"Z", b"X"):  # a zombie is dead already
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [os.getpid()]
    while todo:
        below = children.get(todo.pop(), [])
        found += below
        todo += below
    return found


def _signal_descendants(signum: int) -> int:
    """Send `signum` to every live descendant; how many there were."""
    pids = _descendants()
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)
    return len(pids)


def _kill_descendants(benchmark: int | None) -> None:
    """SIGKILL every descendant, again until none is left (a process may fork before it
    dies, and its orphans come to this process), reaping those that were children but
    `benchmark` (see `_reap_orphans`)."""
    deadline = time.monotonic() + _KILL_SECONDS
    while _signal_descendants(signal.SIGKILL) and time.monotonic() < deadline:
        _reap_orphans(benchmark)
        time.sleep(0.001)
    _reap_orphans(benchmark)


def _reap_orphans(benchmark: int | None) -> None:
    """Reap the exited children of this process but `benchmark` (its status is read
    through its Popen): a subreaper's orphans would stay zombies otherwise."""
    while True:
        try:
            exited = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if exited is None or exited.si_pid == benchmark:
            return
        with contextlib.suppress(ChildProcessError):
            os.waitpid(exited.si_pid, 0)


def _exit_like(code: int) -> NoReturn:
    if code < 0:
        with contextlib.suppress(OSError, ValueError):  # SIGKILL has no handler to reset
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        code = 128 - code  # a signal whose default is not to end a process
    os._exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
