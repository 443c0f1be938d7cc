"""`serve` stopped by a signal leaves nothing behind: a real process, real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
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


class TestServeStoppedBySignal:
    @pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
    def test_the_as_of_snapshot_folder_is_removed(
        self, ledger: Path, tmp_path: Path, signum: signal.Signals
    ) -> None:
        temp = tmp_path / "temp"
        temp.mkdir()
        server = subprocess.Popen(
            [*CLI, "--db", str(ledger), "serve", "--port", "0", "--as-of", "1"],
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "TMPDIR": str(temp)},
        )
        try:
            assert server.stderr is not None
            line = server.stderr.readline()
            assert "Serving" in line and "as of position 1" in line, line
            assert [p.name.startswith("benchledger-serve-") for p in temp.iterdir()] == [True]
            server.send_signal(signum)
            _, err = server.communicate(timeout=60)
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
        assert list(temp.iterdir()) == []
        assert "Traceback" not in err
        assert server.returncode == 1  # as Ctrl-C ends it: click's "Aborted!"
