"""`run` masks the secrets its environment holds in every spelling a benchmark may print
or write them in (as they are, JSON-escaped, URL-encoded, base64 at each alignment, split
across two writes or two lines), in logs, metrics, cells, exports and snapshots; the
benchmark's own files are never rewritten and its scores never change."""

from __future__ import annotations

import base64
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.conftest import Invoke
from tests.e2e.test_run import Workspace, files_holding, ledger_holding

ENV = {
    "DB_PASSWORD": "correcthorsebatterystaple",  # letters only
    "OPENAI_API_KEY": "sk-proj-Run0123456789abcdefXYZ",
    "HF_TOKEN": "hf_RunAbCdEf0123456789xyz",
    "MY_SERVICE_SECRET": 'qu"ote\\slash-Secret99',  # JSON escapes it
    "DATABASE_URL": "postgresql://bench:pgPassw0rd99@db.internal:5432/results",
}
# What each variable's secret is: the value, or a URL's password.
SECRETS = {**ENV, "DATABASE_URL": "pgPassw0rd99"}

LEAK_SCRIPT = """
import base64, json, os, sys, time, urllib.parse
from pathlib import Path

out = Path(sys.argv[1])
secrets = json.loads(os.environ["LEAK_SECRETS"])
forms = []
for s in secrets:
    forms += [s, json.dumps({"v": s}), urllib.parse.quote(s, safe="")]
    for pad in ("", "a", "ab"):
        data = (pad + s).encode()
        forms += [base64.b64encode(data).decode(), base64.urlsafe_b64encode(data).decode()]
for stream in (sys.stdout, sys.stderr):
    for form in forms:
        print(form, file=stream, flush=True)
    for s in secrets:
        stream.write("split " + s[:4])
        stream.flush()
        time.sleep(0.01)
        stream.write(s[4:] + " end\\n")
        stream.flush()
        half = len(s) // 2
        print(s[:half], file=stream, flush=True)
        print(s[half:], file=stream, flush=True)
print("url", os.environ["DATABASE_URL"], flush=True)
doc = {
    "schema": "benchledger/run@1",
    "score": 0.75,
    "unit": "accuracy",
    "metrics": {"leaked": " ".join(forms), "total_tokens": 321},
    "cells": [
        {"key": "q1", "outcome": "passed", "score": 1.0, "metrics": {"log": forms}},
        {"key": "q2", "outcome": "failed", "score": 0.0, "metrics": {"env": dict(os.environ)}},
    ],
    "error": None,
}
(out / "notes.txt").write_text("\\n".join(forms))
(out / "result.json").write_text(json.dumps(doc))
"""


def written_forms(secret: str) -> Iterator[str]:
    """What the leaking benchmark writes of a secret, as a reader would look for it."""
    yield secret
    yield json.dumps(secret)[1:-1]
    yield quote(secret, safe="")
    for pad in ("", "a", "ab"):
        data = (pad + secret).encode()
        yield base64.b64encode(data).decode()
        yield base64.urlsafe_b64encode(data).decode()
    half = len(secret) // 2
    yield secret[:half] + "\n" + secret[half:]


@pytest.fixture
def leaked(tmp_path: Path, invoke: Invoke) -> Iterator[tuple[Workspace, Path]]:
    ws = Workspace(tmp_path, invoke)
    (tmp_path / "bench.py").write_text(textwrap.dedent(LEAK_SCRIPT))
    env = {**ENV, "LEAK_SECRETS": json.dumps(list(SECRETS.values()))}
    try:
        ws.run(env=env)
        out = tmp_path / "exports"
        out.mkdir()
        invoke("export-latest", str(out / "latest"))
        invoke("export-viewer-data", "--out", str(out / "viewer_data.json"))
        invoke("publish", str(out / "snapshot.db"))
        yield ws, out
    finally:
        ws.cleanup()


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_no_spelling_of_an_env_secret_is_recorded_logged_or_exported(
    leaked: tuple[Workspace, Path], name: str
) -> None:
    ws, exports = leaked
    for form in written_forms(SECRETS[name]):
        assert ledger_holding(ws.db, form) == [], form
        assert ledger_holding(exports / "snapshot.db", form) == [], form
        needle = form.encode()
        logged = [p for p in files_holding(ws.results, needle) if "/output/" not in p]
        assert logged == [], (form, logged)
        assert files_holding(exports, needle) == [], form


def test_the_logs_hold_masks_and_the_benchmark_files_stay_whole(
    leaked: tuple[Workspace, Path],
) -> None:
    ws, _ = leaked
    [run] = ws.runs()
    run_dir = ws.results / run["run_dir"]
    stdout = (run_dir / "stdout.log").read_text()
    assert "[REDACTED]" in stdout
    assert "url postgresql://bench:[REDACTED]@db.internal:5432/results" in stdout
    assert "split [REDACTED] end" in stdout
    notes = (run_dir / "output" / "notes.txt").read_text()
    assert SECRETS["DB_PASSWORD"] in notes  # never rewritten; the masked copy is apart
    assert SECRETS["DB_PASSWORD"] not in (run_dir / "masked" / "notes.txt").read_text()


def test_scores_counts_and_cell_keys_are_as_the_benchmark_states_them(
    leaked: tuple[Workspace, Path],
) -> None:
    ws, _ = leaked
    [run] = ws.runs()
    assert (run["status"], run["score"]) == ("succeeded", 0.75)
    assert run["metrics"]["total_tokens"] == 321
    cells = ws.read_json("show", run["run_id"], "--cells", "5")["cells"]
    assert [(c["key"], c["outcome"], c["score"]) for c in cells] == [
        ("q1", "passed", 1.0),
        ("q2", "failed", 0.0),
    ]
