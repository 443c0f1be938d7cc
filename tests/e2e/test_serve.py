"""`serve` as a user starts it: a real process, a real port."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import run_json, write_json

CLI = [sys.executable, "-c", "from benchledger.commands.cli import cli; cli()"]


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    db = tmp_path / "ledger.db"
    path = write_json(tmp_path / "run.json", run_json())
    subprocess.run([*CLI, "--db", str(db), "import", str(path)], check=True, capture_output=True)
    return db


def serve(db: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, "--db", str(db), "serve", *args], stderr=subprocess.PIPE, text=True
    )


class TestServe:
    @pytest.mark.parametrize("port", ["99999", "-1", "http"])
    def test_a_port_outside_0_to_65535_is_a_usage_error(self, ledger: Path, port: str) -> None:
        server = serve(ledger, "--port", port)
        _, err = server.communicate(timeout=60)
        assert server.returncode == 2
        assert err.startswith("Usage:") and "Error: Invalid value for '--port'" in err
        assert "Traceback" not in err and "Serving" not in err

    def test_a_busy_port_is_an_error_and_never_says_serving(self, ledger: Path) -> None:
        with socket.create_server(("127.0.0.1", 0)) as taken:
            port = taken.getsockname()[1]
            server = serve(ledger, "--port", str(port))
            _, err = server.communicate(timeout=60)
        assert server.returncode == 1
        assert err.startswith(f"Error: cannot listen on 127.0.0.1:{port}:")
        assert "Serving" not in err and "Traceback" not in err

    def test_serving_is_announced_once_it_listens_on_the_port_it_names(self, ledger: Path) -> None:
        server = serve(ledger, "--port", "0")
        try:
            assert server.stderr is not None
            line = server.stderr.readline()
            match = re.search(r"Serving .* at http://127\.0\.0\.1:(\d+)/ledger ", line)
            assert match, line
            url = f"http://127.0.0.1:{match.group(1)}/ledger/runs.json?_shape=array"
            # Announced only once listening: the first request is answered, no retries.
            with urllib.request.urlopen(url, timeout=30) as response:
                assert b'"run_id"' in response.read()
        finally:
            server.terminate()
            server.wait(10)
