"""Secrets are masked on every path into the ledger: a result file holding secrets in
every placement its format has is imported, and no secret appears in the stored events,
any read model, `export-latest`, `export-viewer-data` or a `publish` snapshot; the
scores, counts and cell keys are those of the same file holding none."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchledger.commands.cli import cli
from benchledger.domain.secrets import MASK
from tests.unit.test_format_orchestrator import db_row, make_db

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"

# Each kind of secret, with a stand-in of the same type that is none (the clean file).
SECRETS: dict[str, tuple[Any, Any]] = {
    "bearer": ("Zm9vYmFyYmF6cXV4MTIzNDU2", "public"),
    "basic": ("YWxpY2U6c2VjcmV0cGFzcw==", "public"),
    "x_api_key": ("xApiKeyValue0042", "public"),
    "openai": ("sk-proj-AbCdEf0123456789GhIjKlMn", "no key"),
    "anthropic": ("sk-ant-api03-Zz9Yy8Xx7Ww6Vv5Uu4Tt", "no key"),
    "github": ("ghp_0123456789abcdefghijABCDEFGHij", "no key"),
    "github_pat": ("github_pat_11ABCDEFG0123456789_abcdefXYZ", "no key"),
    "aws": ("AKIAQWERTYUIOP123456", "no key"),
    "google": ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "no key"),
    "hf": ("hf_aBcDeFgHiJ0123456789kLmN", "no key"),
    "slack": ("xoxb-123456789012-abcdefGHIJ", "no key"),
    "jwt": ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJzZWNyZXQxMjM0In0.c2lnbmF0dXJlMTIzNDU2Nzg", "none"),
    "url_password": ("urlPassw0rdXyz", "urlUserOnly"),
    "letters_password": ("correcthorsebatterystaple", "placeholder"),
    "password_number": (98765432, 12),
    "nested_token": ("nestedTok3nValue", "plain"),
    "listed_key": ("listedKeyValue55", "plain"),
    "cookie": ("cookieValue123abc", "plain"),
    "client_secret": ("clientSecretVal42", "plain"),
    "private_key": ("privKeyMaterial99", "plain"),
    "access_key": ("AccessKeyValue77x", "plain"),
    "args_api_key": ("apiKeyInArgs987", "dummy"),
    "argv_api_key": ("q1w2e3r4t5y6u7i8", "dummy"),
    "pem": (PEM_BODY, "no key"),
}


def value(name: str, secret: bool) -> Any:
    return SECRETS[name][0 if secret else 1]


def pem(secret: bool) -> str:
    if not secret:
        return "no key here"
    return f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----"


def url(secret: bool) -> str:
    if not secret:
        return "https://llm.example.com/v1"
    return f"https://alice:{value('url_password', True)}@llm.example.com/v1"


def native(path: Path, secret: bool) -> Path:
    """A native run with a secret in its config, metrics, provenance, error and cells."""
    s = lambda name: value(name, secret)  # noqa: E731
    doc = {
        "schema": "benchledger/run@1",
        "run_key": "native-1",
        "benchmark": "summaries",
        "agent": "writer",
        "provider": "vllm",
        "model": "Qwen/Qwen2.5-7B-Instruct",
        "config": {
            "prompts": 5,
            "db_password": s("letters_password"),
            "credentials": {"user": "bob", "token": s("nested_token")},
            "api_keys": [s("listed_key")],
            "client_secret": s("client_secret"),
            "base_url": url(secret),
            "max_tokens": 512,
        },
        "status": "failed",
        "score": 0.5,
        "unit": "ratio",
        "metrics": {
            "password": s("password_number"),
            "total_tokens": 1234,
            "cookie": s("cookie"),
            "log": f"calling with {s('openai')} and Authorization: Bearer {s('bearer')}",
        },
        "tokens": {"input_tokens": 100, "output_tokens": 20},
        "provenance": {
            "endpoint": url(secret),
            "request": f'curl -H "X-Api-Key: {s("x_api_key")}" -H "Proxy-Authorization: '
            f'Basic {s("basic")}"',
            "private_key": s("private_key"),
        },
        "error": f"refused token {s('jwt')}",
        "cells": [
            {"key": "c1", "outcome": "passed", "score": 1.0, "metrics": {"note": s("github")}},
            {"key": "c2", "outcome": "failed", "score": 0.0, "metrics": {"stderr": pem(secret)}},
            {
                "key": "c3",
                "outcome": "passed",
                "score": 0.5,
                "metrics": {"env": f"AWS={s('aws')} GOOGLE={s('google')}", "access_key": 7},
            },
            {
                "key": "c4",
                "outcome": "error",
                "metrics": {
                    "hf": s("hf"),
                    "slack": [s("slack")],
                    "aws_access_key": s("access_key"),
                },
            },
        ],
    }
    path.write_text(json.dumps(doc))
    return path


def lm_eval(directory: Path, secret: bool) -> Path:
    """lm-eval results with credentials in `model_args` and the config, and a key in a
    sample's response."""
    source = EXAMPLES / "lm_eval" / "Qwen2.5-7B-Instruct"
    shutil.copytree(source, directory)
    results = next(directory.glob("results_*.json"))
    doc = json.loads(results.read_text())
    doc["config"]["model_args"] = (
        f"pretrained=Qwen/Qwen2.5-7B-Instruct,base_url={url(secret)},"
        f"api_key={value('args_api_key', secret)}"
    )
    doc["config"]["gen_kwargs"] = {"anthropic_api_key": value("anthropic", secret)}
    results.write_text(json.dumps(doc))
    samples = next(directory.glob("samples_*.jsonl"))
    lines = samples.read_text().splitlines()
    first = json.loads(lines[0])
    first["resps"] = [[f"my key is {value('openai', secret)}"]]
    lines[0] = json.dumps(first)
    samples.write_text("\n".join(lines) + "\n")
    return directory


def inspect_ai(path: Path, secret: bool) -> Path:
    """An inspect_ai log with a credential URL, secret metadata and keys in messages."""
    source = next((EXAMPLES / "inspect_ai").glob("*_popularity_Qwen2.5-7B-Instruct.json"))
    doc = json.loads(source.read_text())
    doc["eval"]["model_base_url"] = url(secret)
    doc["eval"]["model_args"] = {"api_key": value("args_api_key", secret)}
    doc["eval"]["metadata"] = {"hf_token": value("hf", secret), "note": value("github", secret)}
    doc["eval"]["config"]["password"] = value("letters_password", secret)
    sample = doc["samples"][0]
    sample["messages"] = [
        {"role": "user", "content": f"use {value('anthropic', secret)}"},
        {"role": "assistant", "content": f"Authorization: Bearer {value('bearer', secret)}"},
    ]
    sample["metadata"] = {"secret": value("client_secret", secret)}
    path.write_text(json.dumps(doc))
    return path


def orchestrator(path: Path, secret: bool) -> Path:
    """An orchestrator.sqlite row with secrets in its config, command, metrics and error."""
    s = lambda name: value(name, secret)  # noqa: E731
    row = db_row(
        extra_config={"agent": "eliza", "api_key": s("args_api_key"), "hf_token": s("hf")},
        metrics={"n": 10, "return_code": 0, "password": s("password_number"), "log": s("slack")},
    )
    row["command_json"] = json.dumps(
        ["python", "-m", "bfcl", "--api-key", s("openai"), "--hf-token", s("argv_api_key")]
    )
    row["error"] = f"POST {url(secret)} failed: Authorization: Bearer {s('bearer')}"
    return make_db(path, [row])


FORMATS: dict[str, Callable[[Path, bool], Path]] = {
    "native.json": native,
    "lm_eval": lm_eval,
    "inspect.json": inspect_ai,
    "orchestrator/orchestrator.sqlite": orchestrator,
}


def spellings(secret: Any) -> Iterator[str]:
    text = str(secret)
    yield text
    yield json.dumps(text)[1:-1]


def texts_under(root: Path) -> Iterator[tuple[Path, str]]:
    for path in sorted(root.rglob("*")):
        if path.is_file():
            yield path, path.read_bytes().decode("utf-8", "replace")


def sqlite_text(db: Path) -> str:
    """Every table of the ledger file as text (events as stored included), and the raw
    bytes of the file and its WAL."""
    parts = []
    for path in db.parent.glob(db.name + "*"):
        try:
            parts.append(path.read_bytes().decode("latin-1"))
        except FileNotFoundError:  # a -shm or -wal removed as the last connection closed
            continue
    with sqlite3.connect(db) as conn:
        parts.extend(conn.iterdump())
    return "\n".join(parts)


def ledger_with(tmp_path: Path, secret: bool) -> tuple[Path, Callable[..., Any]]:
    base = tmp_path / ("secret" if secret else "clean")
    files = base / "files"
    for name, write in FORMATS.items():
        target = files / name
        target.parent.mkdir(parents=True, exist_ok=True)
        write(target, secret)
    db = base / "ledger.db"

    def invoke(*args: str) -> Any:
        result = CliRunner().invoke(cli, ["--db", str(db), *args])
        assert result.exit_code == 0, result.output + repr(result.exception)
        return result

    invoke("import", str(files))
    return db, invoke


def runs_and_cells(db: Path) -> tuple[list[Any], list[Any]]:
    with sqlite3.connect(db) as conn:
        runs = conn.execute(
            "SELECT run_key, benchmark, agent, model, status, score, signature "
            "FROM runs ORDER BY run_key"
        ).fetchall()
        cells = conn.execute(
            "SELECT r.run_key, c.key, c.outcome, c.score FROM cells c "
            "JOIN runs r USING (run_id) ORDER BY 1, 2"
        ).fetchall()
    return runs, cells


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("secrets")
    secret_db, invoke = ledger_with(tmp, secret=True)
    clean_db, _ = ledger_with(tmp, secret=False)
    out = tmp / "out"
    out.mkdir()
    invoke("export-latest", str(out / "latest"))
    invoke("export-viewer-data", "--out", str(out / "viewer_data.json"))
    invoke("publish", str(out / "snapshot.db"))
    return {"secret": secret_db, "clean": clean_db, "out": out, "invoke": invoke}


class TestImportedSecretsAreMaskedEverywhere:
    @pytest.mark.parametrize("name", sorted(SECRETS))
    def test_no_secret_in_the_ledger_file(self, ledgers: dict[str, Any], name: str) -> None:
        stored = sqlite_text(ledgers["secret"])
        for spelling in spellings(SECRETS[name][0]):
            assert spelling not in stored

    @pytest.mark.parametrize("name", sorted(SECRETS))
    def test_no_secret_in_exports_or_snapshots(self, ledgers: dict[str, Any], name: str) -> None:
        for path, text in texts_under(ledgers["out"]):
            for spelling in spellings(SECRETS[name][0]):
                assert spelling not in text, path
        snapshot = sqlite_text(ledgers["out"] / "snapshot.db")
        assert str(SECRETS[name][0]) not in snapshot

    def test_the_masks_are_where_the_secrets_were(self, ledgers: dict[str, Any]) -> None:
        stored = sqlite_text(ledgers["secret"])
        assert MASK in stored
        assert f"https://alice:{MASK}@llm.example.com/v1" in stored
        assert "Authorization: Bearer " + MASK in stored

    def test_scores_counts_and_cell_keys_are_those_of_the_clean_file(
        self, ledgers: dict[str, Any]
    ) -> None:
        secret_runs, secret_cells = runs_and_cells(ledgers["secret"])
        clean_runs, clean_cells = runs_and_cells(ledgers["clean"])
        assert len(secret_runs) == len(FORMATS)
        assert [r[:6] for r in secret_runs] == [r[:6] for r in clean_runs]
        assert secret_cells == clean_cells
        assert len(secret_cells) > len(FORMATS)

    def test_token_counts_and_counts_stay(self, ledgers: dict[str, Any]) -> None:
        with sqlite3.connect(ledgers["secret"]) as conn:
            metrics = conn.execute(
                "SELECT metrics FROM runs WHERE run_key = 'native-1'"
            ).fetchone()[0]
        held = json.loads(metrics)
        assert held["total_tokens"] == 1234
        assert held["password"] == MASK

    def test_the_ledger_verifies(self, ledgers: dict[str, Any]) -> None:
        ledgers["invoke"]("verify")


def test_a_ledger_written_before_masking_takes_its_files_again_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ledger whose imports stored the secrets as stated (written before imports
    masked them): the same files, read again, state them masked. That is the fact it
    holds, not a conflict: nothing is appended, and the ledger keeps what it recorded."""
    from benchledger.domain import importing

    with monkeypatch.context() as unmasked:
        unmasked.setattr(importing, "masked_record", lambda record: record)
        unmasked.setattr(importing, "masked_records", lambda records: records)
        db, invoke = ledger_with(tmp_path, secret=True)
    assert SECRETS["openai"][0] in sqlite_text(db), "the files were not imported unmasked"
    with sqlite3.connect(db) as conn:
        (before,) = conn.execute("SELECT count(*) FROM stored_events").fetchone()
    # Another file stating the same run's header (with a fact more): it is read, not
    # skipped as a file imported already. (Its cells, masked, would be other payloads than
    # those recorded: a conflict `import --amend` settles.)
    restated = tmp_path / "restated.json"
    document = json.loads((tmp_path / "secret" / "files" / "native.json").read_text())
    document["metrics"]["retries"] = 2
    del document["cells"]
    restated.write_text(json.dumps(document))
    [report] = json.loads(invoke("import", str(restated), "--json").stdout)
    assert (report["state"], report["new_runs"]) == ("imported", 0), report
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM stored_events").fetchone()[0] > before
        (metrics,) = conn.execute("SELECT metrics FROM runs WHERE run_key = 'native-1'").fetchone()
    assert json.loads(metrics)["retries"] == 2  # the fact it added
    assert SECRETS["openai"][0] in sqlite_text(db), "the recorded facts were changed"
