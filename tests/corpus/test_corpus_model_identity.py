"""The shared corpus in one ledger: each model's spellings resolve to one model_id."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from benchledger.domain.model_identity import resolve_model
from tests.conftest import CORPUS

pytestmark = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"the shared corpus is not at {CORPUS} (it lives beside the repo)"
)


@pytest.fixture(scope="module")
def corpus_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from click.testing import CliRunner

    from benchledger.commands.cli import cli

    db = tmp_path_factory.mktemp("corpus") / "corpus.db"
    # `--amend`: newer leaderboard snapshots restate entries an older one recorded.
    result = CliRunner().invoke(cli, ["--db", str(db), "import", str(CORPUS), "--amend"])
    assert result.exit_code == 0, result.stderr
    return db


def ids_of(db: Path, names: tuple[str, ...]) -> dict[str, set[str]]:
    marks = ", ".join("?" * len(names))
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            f"SELECT model, model_id FROM runs WHERE model IN ({marks})", names
        ).fetchall()
    found: dict[str, set[str]] = {}
    for model, model_id in rows:
        found.setdefault(model, set()).add(model_id)
    return found


@pytest.mark.parametrize(
    "names",
    [
        ("Qwen/Qwen2.5-1.5B", "qwen/qwen2.5-1.5B"),
        (
            "meta-llama/Meta-Llama-3-8B",
            "/data/public_models/huggingface/meta-llama/Meta-Llama-3-8B",
        ),
        (
            "Claude 3.5 Sonnet (20241022)",
            "Claude-3.5 Sonnet (20241022)",
            "claude-3-5-sonnet-20241022",
        ),
        ("Claude-Sonnet-4-5-20250929 (FC)", "claude-sonnet-4-5-20250929-FC"),
    ],
)
def test_each_name_group_resolves_to_one_model_id(corpus_db: Path, names: tuple[str, ...]) -> None:
    found = ids_of(corpus_db, names)
    # A leaderboard's display name read as a model is a placeholder that a file stating
    # the model's id fills (`domain.facts`): the runs keep the spellings stated as models.
    assert found, "some spelling is a run's model"
    assert len(set().union(*found.values())) == 1, found
    assert len({resolve_model(name).model_id for name in names}) == 1


def test_an_undated_gpt_4o_stays_apart_from_the_dated_release(corpus_db: Path) -> None:
    # inspect's logs state `gpt-4o` (OpenAI's moving alias); the SWE-bench board states the
    # 2024-05-13 release: no rule may say which release the alias served.
    found = ids_of(corpus_db, ("gpt-4o", "GPT 4o (2024-05-13)"))
    assert found["gpt-4o"] == {"gpt-4o"}
    assert found.get("GPT 4o (2024-05-13)", {"gpt-4o-2024-05-13"}) == {"gpt-4o-2024-05-13"}
    assert resolve_model("GPT 4o (2024-05-13)").model_id == "gpt-4o-2024-05-13"


def test_bfcl_s_two_spellings_of_an_entry_are_one_agent(corpus_db: Path) -> None:
    with sqlite3.connect(corpus_db) as conn:
        agents = conn.execute(
            "SELECT DISTINCT agent FROM runs WHERE source_format = 'bfcl' AND model IN "
            "('Claude-Sonnet-4-5-20250929 (FC)', 'claude-sonnet-4-5-20250929-FC')"
        ).fetchall()
    assert agents == [("claude-sonnet-4-5-20250929-FC",)]


def test_lm_eval_is_the_harness_of_its_runs_and_no_agent(corpus_db: Path) -> None:
    with sqlite3.connect(corpus_db) as conn:
        rows = conn.execute(
            "SELECT DISTINCT agent_id, harness FROM runs WHERE source_format = 'lm_eval'"
        ).fetchall()
    assert rows == [(None, "lm-evaluation-harness")]
