from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import settings

from benchledger.commands.cli import cli

# No per-example deadline: it is a wall-clock assertion, and these machines are shared.
settings.register_profile("benchledger", deadline=None)
settings.load_profile("benchledger")

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "ledger.db"


Invoke = Callable[..., Result]


@pytest.fixture
def invoke(db: Path) -> Invoke:
    """Run the CLI in-process against the test's own ledger file."""

    def run(*args: str, expect: int | None = 0, input: str | None = None) -> Result:
        result = CliRunner().invoke(cli, ["--db", str(db), *args], input=input)
        if expect is not None:
            assert result.exit_code == expect, (
                f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
                + (f"\n{result.exception!r}" if result.exception else "")
            )
        return result

    return run
