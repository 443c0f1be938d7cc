"""The README's commands and session are run, so they cannot rot."""

from __future__ import annotations

import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
BIN = Path(sys.executable).parent
EVENT_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+\+00:00")
HASH = re.compile(r"\b[0-9a-f]{64}\b")
COMPARISON_ID = re.compile(r"\bcmp_\d{8}T\d{6}Z_[0-9a-f]{8}\b")


def block_after(marker: str) -> str:
    match = re.search(rf"<!-- {marker} -->\n```\w*\n(.*?)```", README, re.S)
    assert match, f"README has no code block after <!-- {marker} -->"
    return match.group(1)


def benchledger_steps(command: str) -> list[list[str]]:
    steps = [shlex.split(part) for part in command.strip().split("&&")]
    return [s[1:] for s in steps if s[0].endswith("benchledger")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_first_screen_gives_exactly_the_two_commands() -> None:
    first_screen = README.split("## ")[0]
    assert first_screen.count("```bash") == 2
    assert "python3.11 -m venv" in block_after("main-command")
    assert "python3.11 -m venv" in block_after("test-command")


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    assert block_after("test-command").strip() in (ROOT / ".ci" / "run").read_text()


def test_ci_fails_when_a_step_of_the_test_command_fails(tmp_path: Path) -> None:
    """`set -e` ignores a failure inside an && list: CI must stop there, with its status."""
    command = block_after("test-command").strip()
    [line] = [x for x in (ROOT / ".ci" / "run").read_text().splitlines() if command in x]
    steps = line.replace(command, "true && (exit 3) && touch ran-on")
    script = tmp_path / "run"
    script.write_text(f"set -euo pipefail\ncd {tmp_path}\n{steps}\ntouch went-on\n")
    done = subprocess.run(["bash", str(script)], check=False)
    assert done.returncode == 3
    assert not (tmp_path / "ran-on").exists() and not (tmp_path / "went-on").exists()


def test_the_main_command_builds_the_demo_and_serves_it(tmp_path: Path) -> None:
    steps = benchledger_steps(block_after("main-command"))
    assert [s[0] for s in steps] == ["demo", "serve"]
    subprocess.run([BIN / "benchledger", *steps[0]], cwd=tmp_path, check=True, timeout=120)
    port = free_port()
    server = subprocess.Popen(
        [BIN / "benchledger", *steps[1], "--port", str(port)],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
    )
    try:
        body = b""
        for _ in range(100):
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/ledger/runs.json?_shape=array&_size=max", timeout=2
                ) as response:
                    body = response.read()
                break
            except OSError:
                time.sleep(0.2)
        assert body.count(b'"run_id"') == 79
    finally:
        server.terminate()
        server.wait(10)


def normalise(text: str) -> str:
    text = COMPARISON_ID.sub("<comparison id>", EVENT_TIME.sub("<event time>", text))
    return HASH.sub("<sha256>", text).rstrip()


def session() -> list[tuple[str, str]]:
    steps = []
    for chunk in block_after("session").split("$ ")[1:]:
        command, _, output = chunk.partition("\n")
        steps.append((command, output))
    return steps


def test_the_session_imports_three_harnesses_results_and_compares_two_models() -> None:
    commands = [command for command, _ in session()]
    imported = " ".join(c for c in commands if c.startswith("benchledger import "))
    for harness in ("examples/lm_eval", "examples/inspect_ai", "examples/swebench/"):
        assert harness in imported
    [compare] = [c for c in commands if c.startswith("benchledger compare ")]
    assert "--a " in compare and "--b " in compare


def test_the_session_prints_what_the_readme_shows(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    for command, expected in session():
        argv = shlex.split(command)
        assert argv[0] == "benchledger"
        result = subprocess.run(
            [BIN / "benchledger", *argv[1:]],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        assert normalise(result.stdout) == normalise(expected), command
