"""Run a benchmark command as a subprocess: redacted logs, timeouts, no leftovers."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from benchledger.adapters.execution.secrets import Redactor

_JOIN_SECONDS = 5.0
# How long the supervisor may take to kill what is left of a benchmark once told to.
_STOP_SECONDS = 15.0
# `supervise.KILL_NOW`: supervise.py runs as a script, with the standard library only.
KILL_NOW = b"k"


def _regular_files(root: Path) -> Iterator[Path]:
    """Every regular file under root; symlinks are neither followed nor listed."""

    def fail(error: OSError) -> None:
        raise error  # an unreadable directory must not silently hide files

    for dirpath, _dirnames, filenames in os.walk(root, onerror=fail):
        for name in filenames:
            path = Path(dirpath, name)
            if stat.S_ISREG(os.lstat(path).st_mode):
                yield path


def masked_copies(root: Path, dest: Path, redactor: Redactor) -> list[Path]:
    """Write a masked copy under dest of every regular file under root that holds a
    secret; the files under root are never changed. The copies, sorted."""
    written = []
    for path in _regular_files(root):
        data = path.read_bytes()
        masked = redactor.redact_bytes(data)
        if masked != data:
            copy = dest / path.relative_to(root)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(masked)
            written.append(copy)
    return sorted(written)


@dataclass(frozen=True)
class Artifact:
    path: str  # POSIX, relative to the base given to artifacts()
    size: int
    sha256: str


def artifacts(root: Path, base: Path) -> list[Artifact]:
    """Every regular file under root, sorted by path, named relative to base (an ancestor)."""
    root, base = Path(os.path.abspath(root)), Path(os.path.abspath(base))
    root.relative_to(base)  # ValueError unless base is root or an ancestor of it
    found = []
    for path in _regular_files(root):
        digest, size = hashlib.sha256(), 0
        with path.open("rb") as file:
            while chunk := file.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
        found.append(Artifact(path.relative_to(base).as_posix(), size, digest.hexdigest()))
    return sorted(found, key=lambda artifact: artifact.path)


@dataclass(frozen=True)
class Outcome:
    exit_code: int | None  # negative signal number if a signal ended it; None if never launched
    timed_out: bool
    duration_seconds: float
    launch_error: str | None


class _Pump:
    """Copies one pipe into one log file line by line, redacted, on a daemon thread."""

    def __init__(self, source: IO[bytes], sink: IO[bytes], redactor: Redactor) -> None:
        self._source, self._sink, self._redactor = source, sink, redactor
        # A secret split across two writes or lines is masked whole (`StreamMask`).
        self._masking = redactor.stream()
        self._lock = threading.Lock()
        self._error: OSError | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with self._source:
            for line in iter(self._source.readline, b""):
                with self._lock:
                    self._write(self._masking.feed(line))
        with self._lock:
            self._write(self._masking.end())

    def _write(self, data: bytes) -> None:
        """Write under the lock what the mask lets through."""
        if self._sink.closed or self._error is not None:
            return  # keep draining so the child never blocks on a full pipe
        try:
            self._sink.write(data)
            self._sink.flush()
        except OSError as error:
            self._error = error

    def finish(self) -> None:
        """Wait for end of output, then close the log; a writer still holding the pipe
        (a process that escaped the group) is abandoned and its later output dropped."""
        self._thread.join(_JOIN_SECONDS)
        with self._lock:
            self._write(self._masking.end())  # what the mask held back, even if abandoned
            self._sink.close()
        if self._error is not None:
            raise self._error


def execute(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdout_path: Path,
    stderr_path: Path,
    redactor: Redactor,
    timeout: float | None = None,
    on_tick: Callable[[], None] | None = None,
    tick_seconds: float = 60.0,
    kill_grace_seconds: float = 5.0,
    on_start: Callable[[int], None] | None = None,
) -> Outcome:
    """Run argv in its own process group, logging redacted output, and leave nothing running.

    On timeout the group gets SIGTERM, then SIGKILL after kill_grace_seconds. Once the
    child has exited, whatever else is left in its group is killed. An exception from
    on_start or on_tick, or a KeyboardInterrupt, kills the group and then propagates.
    If this process dies (even by kill -9), the supervisor between it and the command
    (see `supervise.py`) stops the group within kill_grace_seconds. Processes that
    leave the group (setsid, daemonising) are killed by the supervisor too, as its
    descendants, where Linux lets it be their subreaper.
    """
    if not argv:
        raise ValueError("argv is empty")
    if on_tick is not None and tick_seconds <= 0:
        raise ValueError("tick_seconds must be positive")
    for path in (stdout_path, stderr_path):
        path.parent.mkdir(parents=True, exist_ok=True)
    # Opened before launching, so an unwritable log directory fails with nothing started.
    stdout_log, stderr_log = stdout_path.open("wb"), stderr_path.open("wb")
    started = time.monotonic()
    control_read, control_write = os.pipe()
    status_read, status_write = os.pipe()
    try:
        process = subprocess.Popen(
            [*_supervisor(control_read, status_write, kill_grace_seconds), *argv],
            cwd=cwd,
            env=dict(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            pass_fds=(control_read, status_write),
        )
    except OSError as error:
        os.close(control_write)
        os.close(status_read)
        return _not_launched(argv, error, stdout_log, stderr_log, redactor, started)
    finally:
        os.close(control_read)
        os.close(status_write)
    with os.fdopen(status_read, "rb") as status:
        report = status.readline().decode("utf-8", "surrogateescape").rstrip("\n")
    if not report.startswith("started "):
        process.wait()
        os.close(control_write)
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        error_text = report.removeprefix("error ") or "the supervisor ended before starting it"
        return _not_launched(argv, error_text, stdout_log, stderr_log, redactor, started)
    child_pid = int(report.split()[1])

    assert process.stdout is not None and process.stderr is not None
    pumps: list[_Pump] = []
    timed_out = False
    try:
        pumps.append(_Pump(process.stdout, stdout_log, redactor))
        pumps.append(_Pump(process.stderr, stderr_log, redactor))
        if on_start is not None:
            on_start(child_pid)
        deadline = None if timeout is None else started + timeout
        next_tick = started + tick_seconds if on_tick is not None else None
        while True:
            wakes = [t for t in (deadline, next_tick) if t is not None]
            if _wait_for_exit(process.pid, until=min(wakes) if wakes else None):
                break
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                timed_out = True
                _signal_group(process.pid, signal.SIGTERM)
                _wait_for_exit(process.pid, until=time.monotonic() + kill_grace_seconds)
                break
            if on_tick is not None and next_tick is not None and now >= next_tick:
                next_tick = now + tick_seconds
                on_tick()
    finally:
        if not _wait_for_exit(process.pid, until=time.monotonic()):
            # Still running (a timeout's grace is over, or the run is cancelled): the
            # supervisor kills the benchmark and everything below it, out of its group
            # too, then exits; the group kill below is for a supervisor that cannot.
            _tell(control_write, KILL_NOW)
            _wait_for_exit(process.pid, until=time.monotonic() + _STOP_SECONDS)
        # The supervisor (the group's leader, which relays the command's exit) is
        # exited-but-unreaped (or still running) here, so the group id cannot have been
        # reused: killing the group hits only its leftovers.
        _signal_group(process.pid, signal.SIGKILL)
        exit_code = process.wait()
        os.close(control_write)
        duration = time.monotonic() - started
        for pump in pumps:
            pump.finish()
    return Outcome(exit_code, timed_out, duration, None)


SUPERVISOR = Path(__file__).with_name("supervise.py")


def _supervisor(control: int, status: int, grace: float) -> list[str]:
    # -I -S: no site-packages, no user environment: the supervisor starts in milliseconds.
    return [
        sys.executable,
        "-I",
        "-S",
        str(SUPERVISOR),
        str(control),
        str(status),
        f"{grace}",
        "--",
    ]


def _not_launched(
    argv: Sequence[str],
    error: OSError | str,
    stdout_log: IO[bytes],
    stderr_log: IO[bytes],
    redactor: Redactor,
    started: float,
) -> Outcome:
    message = redactor.redact(f"cannot launch {argv[0]!r}: {error}")
    with stdout_log, stderr_log:
        stderr_log.write((message + "\n").encode("utf-8", "surrogateescape"))
    return Outcome(None, False, time.monotonic() - started, message)


def _wait_for_exit(pid: int, until: float | None) -> bool:
    """Wait until the child has exited, without reaping it, or until `until`; True if exited."""
    delay = 0.001
    while True:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
                return True
        except ChildProcessError:
            return True
        remaining = None if until is None else until - time.monotonic()
        if remaining is not None and remaining <= 0:
            return False
        time.sleep(delay if remaining is None else min(delay, remaining))
        delay = min(delay * 2, 0.05)


def _tell(control: int, message: bytes) -> None:
    with contextlib.suppress(OSError):  # a supervisor that is gone reads nothing
        os.write(control, message)


def _signal_group(pgid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def run_bounded(
    argv: list[str], cwd: Path | None, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[bytes]:
    """Run a short probe (a version, `git`, `docker info`) in its own process group,
    killed whole after `timeout` seconds, so that no child it left holding its output
    keeps us waiting. Raises FileNotFoundError, OSError or TimeoutExpired as
    `subprocess.run` does."""
    with subprocess.Popen(
        argv,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
        return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)
