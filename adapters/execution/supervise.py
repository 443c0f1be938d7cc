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


def _ignore(_signum: int, _frame: object) -> None:
    """A handler, not SIG_IGN: handlers are reset at exec, so the benchmark gets defaults."""


def main(args: list[str]) -> NoReturn:
    control, status, grace = int(args[0]), int(args[1]), float(args[2])
    argv = args[4:] if args[3:4] == ["--"] else args[3:]
    for signum in _GROUP_SIGNALS:
        signal.signal(signum, _ignore)
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
    pidfd = _pidfd(child.pid)
    while True:
        watched = [control] if pidfd is None else [control, pidfd]
        ready, _, _ = select.select(watched, [], [], _POLL_SECONDS if pidfd is None else None)
        if control in ready and not os.read(control, 64):
            _orphaned(child, grace)
        code = child.poll()
        if code is not None:
            _exit_like(code)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None  # before Linux 5.3, or elsewhere: poll instead


def _orphaned(child: subprocess.Popen[bytes], grace: float) -> NoReturn:
    """The runner died: nobody will record this benchmark, so stop it and its children."""
    os.killpg(0, signal.SIGTERM)  # the group: the benchmark and its children; we ignore it
    deadline = time.monotonic() + grace
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(_POLL_SECONDS)
    os.killpg(0, signal.SIGKILL)  # whatever is left, this process included
    os._exit(137)


def _exit_like(code: int) -> NoReturn:
    if code < 0:
        with contextlib.suppress(OSError, ValueError):  # SIGKILL has no handler to reset
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        code = 128 - code  # a signal whose default is not to end a process
    os._exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
