"""Running benchmark commands as real subprocesses: logs, secrets, timeouts, leftovers."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import resource
import signal
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.execution.process import (
    Artifact,
    Outcome,
    artifacts,
    execute,
    masked_copies,
)
from benchledger.adapters.execution.secrets import SECRET_NAME, Redactor, secret_values

SECRET = "sk-planted-0123456789abcdef"
ENV = {"BENCH_API_KEY": SECRET, "LANG": "C.UTF-8"}


def run_script(
    tmp_path: Path, source: str, redactor: Redactor | None = None, **options: Any
) -> Outcome:
    script = tmp_path / "bench.py"
    script.write_text(textwrap.dedent(source))
    return execute(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=ENV,
        stdout_path=tmp_path / "logs" / "stdout.log",
        stderr_path=tmp_path / "logs" / "stderr.log",
        redactor=redactor or Redactor([]),
        **options,
    )


def logs(tmp_path: Path) -> tuple[str, str]:
    return (
        (tmp_path / "logs" / "stdout.log").read_text(),
        (tmp_path / "logs" / "stderr.log").read_text(),
    )


def is_gone(pid: int) -> bool:
    """Dead, or a zombie: killed and waiting for an init that may never reap it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:  # reaped between the two looks
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def eventually_gone(pid: int, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if is_gone(pid):
            return True
        time.sleep(0.02)
    return is_gone(pid)


SPAWN_GRANDCHILD = """
    import os, subprocess, sys, time
    from pathlib import Path
    pid_file = Path("grandchild.pid")
    subprocess.Popen([sys.executable, "-c",
        "import os, time; open('grandchild.pid.tmp', 'w').write(str(os.getpid()));"
        "os.rename('grandchild.pid.tmp', 'grandchild.pid'); time.sleep(60)"])
    while not pid_file.exists():
        time.sleep(0.01)
    print("grandchild started", flush=True)
"""


class TestRunningACommand:
    def test_reports_the_exit_code_and_captures_both_streams(self, tmp_path: Path) -> None:
        outcome = run_script(
            tmp_path,
            """
            import sys
            print("accuracy 0.91")
            print("warming up", file=sys.stderr)
            sys.exit(3)
            """,
        )
        assert outcome.exit_code == 3
        assert not outcome.timed_out and outcome.launch_error is None
        assert 0 < outcome.duration_seconds < 10
        assert logs(tmp_path) == ("accuracy 0.91\n", "warming up\n")

    def test_on_start_receives_the_pid_of_the_child(self, tmp_path: Path) -> None:
        pids: list[int] = []
        run_script(tmp_path, "import os; print(os.getpid())", on_start=pids.append)
        assert pids == [int(logs(tmp_path)[0])]

    def test_on_tick_is_called_repeatedly_while_the_command_runs(self, tmp_path: Path) -> None:
        ticks: list[float] = []
        outcome = run_script(
            tmp_path,
            "import time; time.sleep(0.7)",
            on_tick=lambda: ticks.append(time.monotonic()),
            tick_seconds=0.1,
        )
        assert outcome.exit_code == 0
        assert len(ticks) >= 4
        assert all(later - earlier >= 0.09 for earlier, later in itertools.pairwise(ticks))

    def test_a_runner_with_over_1024_files_open_runs_its_command(self, tmp_path: Path) -> None:
        """The supervisor's descriptors keep the runner's numbers: in a process with that
        many files open (a long-lived API user, a test session) they are past 1023, which
        select() cannot watch. The command ran, timed out and was reported as ever."""
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < 1200:
            pytest.skip(f"this machine allows {hard} open files, fewer than the test needs")
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
        held: list[int] = []
        try:
            while not held or held[-1] < 1100:
                held.append(os.open(os.devnull, os.O_RDONLY))
            outcome = run_script(tmp_path, "import sys; print('ran'); sys.exit(3)")
            assert (outcome.exit_code, logs(tmp_path)[0]) == (3, "ran\n")
            slow = run_script(tmp_path, "import time; time.sleep(30)", timeout=0.5)
            assert slow.timed_out
        finally:
            for fd in held:
                os.close(fd)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    def test_a_missing_executable_is_a_launch_error_with_both_logs_written(
        self, tmp_path: Path
    ) -> None:
        outcome = execute(
            [str(tmp_path / "no-such-harness")],
            cwd=tmp_path,
            env=ENV,
            stdout_path=tmp_path / "logs" / "stdout.log",
            stderr_path=tmp_path / "logs" / "stderr.log",
            redactor=Redactor([]),
        )
        assert outcome.exit_code is None and not outcome.timed_out
        assert outcome.launch_error is not None and "no-such-harness" in outcome.launch_error
        stdout, stderr = logs(tmp_path)
        assert stdout == "" and stderr == outcome.launch_error + "\n"


class TestSecrets:
    def test_a_printed_secret_never_reaches_the_logs_and_the_output_is_copied_masked(
        self, tmp_path: Path
    ) -> None:
        redactor = Redactor(secret_values(ENV))
        outcome = run_script(
            tmp_path,
            """
            import os, sys
            from pathlib import Path
            key = os.environ["BENCH_API_KEY"]
            print(f"using key {key} for accuracy 0.91")
            print(f"auth failed once with {key}", file=sys.stderr)
            out = Path("out")
            (out / "nested").mkdir(parents=True)
            (out / "nested" / "config.json").write_text('{"key": "' + key + '", "score": 0.91}')
            (out / "results.json").write_text('{"score": 0.91}')
            """,
            redactor=redactor,
        )
        assert outcome.exit_code == 0
        stdout, stderr = logs(tmp_path)
        assert stdout == "using key [REDACTED] for accuracy 0.91\n"
        assert stderr == "auth failed once with [REDACTED]\n"

        out, masked = tmp_path / "out", tmp_path / "masked"
        original = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
        assert masked_copies(out, masked, redactor) == [masked / "nested" / "config.json"]
        assert (masked / "nested" / "config.json").read_text() == (
            '{"key": "[REDACTED]", "score": 0.91}'
        )
        # The benchmark's own files are its own: byte-identical.
        assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == original
        assert not any(SECRET.encode() in p.read_bytes() for p in masked.rglob("*.json"))

    def test_masked_copies_leave_symlinked_files_alone(self, tmp_path: Path) -> None:
        outside = tmp_path / "outside.txt"
        outside.write_text(f"not ours to touch: {SECRET}")
        out = tmp_path / "out"
        out.mkdir()
        (out / "link.txt").symlink_to(outside)
        assert masked_copies(out, tmp_path / "masked", Redactor([SECRET])) == []
        assert SECRET in outside.read_text()

    @pytest.mark.parametrize(
        "name",
        ["OPENAI_API_KEY", "HF_TOKEN", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY", "GITHUB_PAT",
         "openai_api_key", "PGPASSWD", "GPG_PASSPHRASE", "GOOGLE_CREDENTIALS", "BASIC_AUTH",
         "SSH_PRIVATE", "SESSION_COOKIE"],
    )  # fmt: skip
    def test_secret_looking_names_match(self, name: str) -> None:
        assert SECRET_NAME.match(name)

    @pytest.mark.parametrize(
        "name",
        ["HOME", "PATH", "LANG", "PWD", "SHELL", "USER", "PATHEXT", "XDG_SESSION_TYPE",
         "TOKENIZERS_PARALLELISM", "SSH_AUTH_SOCK"],
    )  # fmt: skip
    def test_ordinary_names_do_not_match(self, name: str) -> None:
        assert not SECRET_NAME.match(name)

    def test_secret_values_could_be_secrets_deduplicated_and_longest_first(self) -> None:
        env = {
            "HF_TOKEN": "hf_abcd1234",
            "OTHER_TOKEN": "hf_abcd1234",
            "OPENAI_API_KEY": "sk-0123456789",
            "SHORT_KEY": "abc1",
            "USE_AUTH": "true",
            "AUTH_MODE": "passed",
            "SESSION_KIND": "interactive-login",
            "KEY_COUNT": "12345678",
            "HOME": "/home/bench",
        }
        assert secret_values(env) == ["sk-0123456789", "hf_abcd1234"]


class TestRedactor:
    def test_redact_obj_masks_nested_values_and_keys_and_copies(self) -> None:
        redactor = Redactor(["hunter22"])
        data: dict[str, Any] = {
            "argv": ["--key", "hunter22", ("x", "pw=hunter22")],
            "hunter22": {"score": 0.5, "ok": True, "n": None},
        }
        assert redactor.redact_obj(data) == {
            "argv": ["--key", "[REDACTED]", ("x", "pw=[REDACTED]")],
            "[REDACTED]": {"score": 0.5, "ok": True, "n": None},
        }
        assert data["argv"][1] == "hunter22"

    def test_the_longest_secret_is_masked_whole(self) -> None:
        redactor = Redactor(["abcd", "abcdefgh"], mask="***")
        assert redactor.redact("xabcdefghx abcdx") == "x***x ***x"

    def test_redact_bytes_masks_the_utf8_encoding_of_a_secret(self) -> None:
        redactor = Redactor(["pässwörd"], mask=r"[\1]")
        assert redactor.redact_bytes("id pässwörd\n".encode()) == b"id [\\1]\n"

    def test_without_secrets_or_key_shapes_everything_is_returned_unchanged(self) -> None:
        data = {"a": ["b"]}
        redactor = Redactor([], shapes=False)
        assert redactor.redact_obj(data) is data
        assert redactor.redact("text") == "text"
        assert redactor.redact_bytes(b"bytes") == b"bytes"


class TestNothingIsLeftRunning:
    def test_a_timeout_kills_the_command_and_its_grandchild(self, tmp_path: Path) -> None:
        outcome = run_script(
            tmp_path,
            SPAWN_GRANDCHILD + "    time.sleep(60)\n",
            timeout=1.5,
            kill_grace_seconds=0.5,
        )
        assert outcome.timed_out
        assert outcome.exit_code == -signal.SIGTERM
        assert 1.5 <= outcome.duration_seconds < 5
        assert logs(tmp_path)[0] == "grandchild started\n"
        assert eventually_gone(int((tmp_path / "grandchild.pid").read_text()))

    def test_a_command_ignoring_sigterm_is_killed_after_the_grace_period(
        self, tmp_path: Path
    ) -> None:
        outcome = run_script(
            tmp_path,
            """
            import signal, time
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            print("ready", flush=True)
            time.sleep(60)
            """,
            timeout=0.5,
            kill_grace_seconds=0.3,
        )
        assert outcome.timed_out and outcome.exit_code == -signal.SIGKILL
        assert outcome.duration_seconds < 5

    def test_a_background_child_does_not_outlive_a_command_that_exited(
        self, tmp_path: Path
    ) -> None:
        # The grandchild also holds the stdout pipe open: execute must not wait for it.
        outcome = run_script(tmp_path, SPAWN_GRANDCHILD)
        assert outcome.exit_code == 0 and not outcome.timed_out
        assert outcome.duration_seconds < 5
        assert eventually_gone(int((tmp_path / "grandchild.pid").read_text()))

    @pytest.mark.parametrize("error", [RuntimeError("lease lost"), KeyboardInterrupt()])
    def test_an_interruption_kills_the_command_then_propagates(
        self, tmp_path: Path, error: BaseException
    ) -> None:
        pids: list[int] = []

        def interrupt() -> None:
            raise error

        with pytest.raises(type(error)):
            run_script(
                tmp_path,
                "import time; time.sleep(60)",
                on_start=pids.append,
                on_tick=interrupt,
                tick_seconds=0.2,
            )
        # SIGKILL has been sent to the whole group; the kernel finishes it asynchronously.
        assert eventually_gone(pids[0])


RUNNER = """
import sys, threading
from pathlib import Path
from benchledger.adapters.execution.process import execute
from benchledger.adapters.execution.secrets import Redactor

root = Path(sys.argv[1])

def one(name):
    execute(
        [sys.executable, str(root / "bench.py"), name],
        cwd=root,
        env={"LANG": "C.UTF-8"},
        stdout_path=root / name / "stdout.log",
        stderr_path=root / name / "stderr.log",
        redactor=Redactor([]),
        kill_grace_seconds=1.0,
    )

threads = [threading.Thread(target=one, args=(n,)) for n in ("a", "b")]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""

SLOW_BENCH = """
import os, subprocess, sys, time
from pathlib import Path
name = sys.argv[1]
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
Path(f"{name}.pids.tmp").write_text(f"{os.getpid()} {child.pid}")
os.replace(f"{name}.pids.tmp", f"{name}.pids")
time.sleep(60)
Path(f"{name}.late").write_text("a result nobody would record")
"""


class TestTheCommandDiesWithItsRunner:
    def test_kill_9_of_the_runner_stops_every_command_and_its_children(
        self, tmp_path: Path
    ) -> None:
        import subprocess

        (tmp_path / "bench.py").write_text(textwrap.dedent(SLOW_BENCH))
        runner = subprocess.Popen([sys.executable, "-c", RUNNER, str(tmp_path)])
        pid_files = [tmp_path / "a.pids", tmp_path / "b.pids"]
        try:
            deadline = time.monotonic() + 20
            while not all(p.exists() for p in pid_files) and time.monotonic() < deadline:
                time.sleep(0.02)
            pids = [int(pid) for p in pid_files for pid in p.read_text().split()]
            assert not any(is_gone(pid) for pid in pids)
            runner.kill()
            runner.wait(timeout=10)
            assert all(eventually_gone(pid, seconds=10) for pid in pids)
        finally:
            if runner.poll() is None:
                runner.kill()
                runner.wait()
            for p in pid_files:
                for pid in p.read_text().split() if p.exists() else ():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
        assert not list(tmp_path.glob("*.late"))

    def test_the_command_gets_default_signal_handling_not_the_supervisors(
        self, tmp_path: Path
    ) -> None:
        outcome = run_script(
            tmp_path,
            """
            import signal
            print(signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
                  signal.getsignal(signal.SIGHUP) == signal.SIG_DFL)
            """,
        )
        assert outcome.exit_code == 0
        assert logs(tmp_path)[0] == "True True\n"

    def test_the_exit_code_of_the_command_is_relayed(self, tmp_path: Path) -> None:
        assert run_script(tmp_path, "import sys; sys.exit(3)").exit_code == 3
        killed = run_script(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGUSR1)")
        assert killed.exit_code == -signal.SIGUSR1


class TestArtifacts:
    def test_lists_regular_files_relative_to_base_with_size_and_sha256(
        self, tmp_path: Path
    ) -> None:
        root = tmp_path / "runs" / "r1"
        (root / "sub").mkdir(parents=True)
        (root / "results.json").write_bytes(b'{"score": 1}')
        (root / "sub" / "b.bin").write_bytes(bytes(range(256)))
        (root / "link").symlink_to(root / "results.json")
        assert artifacts(root, tmp_path / "runs") == [
            Artifact("r1/results.json", 12, hashlib.sha256(b'{"score": 1}').hexdigest()),
            Artifact("r1/sub/b.bin", 256, hashlib.sha256(bytes(range(256))).hexdigest()),
        ]

    def test_a_base_that_is_not_an_ancestor_is_refused(self, tmp_path: Path) -> None:
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        with pytest.raises(ValueError):
            artifacts(tmp_path / "a", tmp_path / "b")
