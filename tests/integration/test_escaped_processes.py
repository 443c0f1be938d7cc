"""Processes that leave the benchmark's group (setsid, a daemon's double fork) die with it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.execution.process import Outcome, execute
from benchledger.adapters.execution.secrets import Redactor

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="finding descendants needs Linux's /proc"
)

# Writes its pid to the file it is given, then sleeps long: a process that must not survive.
SLEEPER = (
    "import os, sys, time; tmp = sys.argv[1] + '.tmp'; open(tmp, 'w').write(str(os.getpid()));"
    "os.replace(tmp, sys.argv[1]); time.sleep(1000)"
)

# A benchmark that starts `setsid ... &` and a double-forked daemon, then does as told:
# `exit` at once, `hang`, or `ignore` SIGTERM and hang.
BENCH = f"""
import os, signal, subprocess, sys, time
from pathlib import Path
SLEEPER = {SLEEPER!r}
mode = sys.argv[1]
subprocess.Popen(["setsid", sys.executable, "-c", SLEEPER, "setsid.pid"])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", SLEEPER, "daemon.pid"])
    os._exit(0)
os.wait()
while not (Path("setsid.pid").exists() and Path("daemon.pid").exists()):
    time.sleep(0.01)
print("escaped", flush=True)
if mode == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if mode != "exit":
    time.sleep(1000)
"""
ESCAPED = ("setsid.pid", "daemon.pid")


def is_gone(pid: int) -> bool:
    """Dead, or a zombie: killed and waiting for an init that may never reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def eventually_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if is_gone(pid):
            return True
        time.sleep(0.02)
    return is_gone(pid)


def escaped_pids(root: Path) -> list[int]:
    return [int((root / name).read_text()) for name in ESCAPED if (root / name).exists()]


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "bench.py").write_text(BENCH)
    yield tmp_path
    for pid in escaped_pids(tmp_path):  # never leave one behind, whatever failed
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def run_bench(root: Path, mode: str, **options: Any) -> Outcome:
    return execute(
        [sys.executable, str(root / "bench.py"), mode],
        cwd=root,
        env={"LANG": "C.UTF-8", "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        stdout_path=root / "logs" / "stdout.log",
        stderr_path=root / "logs" / "stderr.log",
        redactor=Redactor([]),
        **options,
    )


def all_gone(root: Path) -> bool:
    pids = escaped_pids(root)
    assert len(pids) == 2, "the benchmark did not start both escapees"
    return all(eventually_gone(pid) for pid in pids)


class TestEscapedProcessesDieWithTheBenchmark:
    def test_when_it_exits(self, root: Path) -> None:
        outcome = run_bench(root, "exit")
        assert outcome.exit_code == 0 and not outcome.timed_out
        assert (root / "logs" / "stdout.log").read_text() == "escaped\n"
        assert all_gone(root)

    def test_when_it_times_out(self, root: Path) -> None:
        outcome = run_bench(root, "hang", timeout=2.0, kill_grace_seconds=0.3)
        assert outcome.timed_out and outcome.exit_code == -signal.SIGTERM
        assert all_gone(root)

    def test_when_it_ignores_the_timeout_s_sigterm(self, root: Path) -> None:
        outcome = run_bench(root, "ignore", timeout=2.0, kill_grace_seconds=0.3)
        assert outcome.timed_out and outcome.exit_code == -signal.SIGKILL
        assert all_gone(root)

    def test_when_the_run_is_cancelled(self, root: Path) -> None:
        def cancel() -> None:
            if len(escaped_pids(root)) == len(ESCAPED):
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            run_bench(root, "hang", on_tick=cancel, tick_seconds=0.1)
        assert all_gone(root)


RUNNER = """
import os, sys
from pathlib import Path
from benchledger.adapters.execution.process import execute
from benchledger.adapters.execution.secrets import Redactor

root = Path(sys.argv[1])
execute(
    [sys.executable, str(root / "bench.py"), "ignore"],
    cwd=root,
    env={"LANG": "C.UTF-8", "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    stdout_path=root / "logs" / "stdout.log",
    stderr_path=root / "logs" / "stderr.log",
    redactor=Redactor([]),
    kill_grace_seconds=0.5,
)
"""


class TestEscapedProcessesDieWithTheRunner:
    @pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
    def test_when_the_runner_is_killed(self, root: Path, signum: signal.Signals) -> None:
        runner = subprocess.Popen([sys.executable, "-c", textwrap.dedent(RUNNER), str(root)])
        try:
            deadline = time.monotonic() + 30
            while len(escaped_pids(root)) < len(ESCAPED) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert not any(is_gone(pid) for pid in escaped_pids(root))
            runner.send_signal(signum)
            runner.wait(timeout=10)
            assert all_gone(root)
        finally:
            if runner.poll() is None:
                runner.kill()
                runner.wait()


SHORT_DAEMONS = """
import os, sys, time
for n in range(6):  # daemons, each an orphan of the supervisor: five end on their own
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            if n == 5:
                os.execv(sys.executable, [sys.executable, "-c", SLEEPER, "daemon.pid"])
            time.sleep(0.05)
            os._exit(0)
        os._exit(0)
    os.wait()
print("started", flush=True)
time.sleep(1000)
"""


def zombie_children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[0] == "Z" and int(fields[1]) == pid:
                found.append(int(stat.parent.name))
    return found


class TestOrphansAreReaped:
    def test_an_orphan_that_ends_is_not_left_a_zombie_while_the_benchmark_runs(
        self, root: Path
    ) -> None:
        (root / "bench.py").write_text(f"SLEEPER = {SLEEPER!r}\n{SHORT_DAEMONS}")
        started: list[int] = []
        zombies: list[list[int]] = []
        parents: list[int] = []
        ticks = iter(range(1000))

        def look() -> None:
            # The supervisor reaps once a second: look after three.
            if next(ticks) == 15:
                supervisor = int(Path(f"/proc/{started[0]}/stat").read_text().split()[3])
                zombies.append(zombie_children(supervisor))
                daemon = int((root / "daemon.pid").read_text())
                parents.extend(
                    [supervisor, int(Path(f"/proc/{daemon}/stat").read_text().split()[3])]
                )
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            execute(
                [sys.executable, str(root / "bench.py")],
                cwd=root,
                env={"LANG": "C.UTF-8"},
                stdout_path=root / "stdout.log",
                stderr_path=root / "stderr.log",
                redactor=Redactor([]),
                on_start=started.append,
                on_tick=look,
                tick_seconds=0.2,
            )
        supervisor, daemon_parent = parents
        assert daemon_parent == supervisor  # re-parented to the subreaper, not to init
        assert zombies == [[]]
        assert eventually_gone(int((root / "daemon.pid").read_text()))
