"""A placeholder is no fact: a later source that states the field fills it, unopposed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from benchledger.domain.signatures import comparison_signature, signature
from tests.conftest import Invoke


def native(path: Path, **fields: Any) -> Path:
    """A native result file of run `r1`: bfcl by eliza, with `fields` over these."""
    run = {
        "schema": "benchledger/run@1",
        "run_key": "r1",
        "benchmark": "bfcl",
        "agent": "eliza",
        "model": "gpt-oss-120b",
        "status": "succeeded",
        "score": 0.5,
        **fields,
    }
    path.write_text(json.dumps(run))
    return path


def events(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [t for (t,) in conn.execute("SELECT topic FROM stored_events ORDER BY rowid")]


def runs(invoke: Invoke) -> list[dict[str, Any]]:
    return json.loads(invoke("runs", "--json").stdout)  # type: ignore[no-any-return]


class TestAPlaceholderModelThenTheStatedOne:
    def test_the_stated_model_fills_it_and_history_shows_the_facts_added(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        invoke("import", str(native(tmp_path / "a.json", model="unknown")))
        invoke("import", str(native(tmp_path / "b.json", model="gpt-5", provider="openai")))
        [run] = runs(invoke)
        assert (run["provider"], run["model"], run["score"]) == ("openai", "gpt-5", 0.5)
        history = json.loads(invoke("history", run["run_id"], "--json").stdout)
        added = [e for e in history if e["type"] == "RunFactsAdded"]
        assert [sorted(e["data"]["facts"]) for e in added] == [["model", "provider"]]

    def test_the_runs_model_id_follows_the_stated_model(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        invoke("import", str(native(tmp_path / "a.json", model="unknown")))
        invoke("import", str(native(tmp_path / "b.json", model="Claude 3.5 Sonnet (20241022)")))
        [run] = runs(invoke)
        assert run["model_id"] == "claude-3-5-sonnet-20241022"
        listed = {m["name"]: m for m in json.loads(invoke("models", "--json").stdout)}
        assert listed["Claude 3.5 Sonnet (20241022)"]["runs"] == 1
        assert "unknown" not in listed  # no run is counted under the placeholder any more

    def test_the_runs_signature_is_the_one_of_the_work_it_now_names(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        invoke("import", str(native(tmp_path / "a.json", model="unknown")))
        [before] = runs(invoke)
        invoke("import", str(native(tmp_path / "b.json", model="gpt-5")))
        [run] = runs(invoke)
        assert run["signature"] != before["signature"]
        assert run["signature"] == signature("bfcl", "eliza", "", "gpt-5", {})
        assert run["comparison_signature"] == comparison_signature("bfcl", "", "gpt-5", {})

    def test_the_run_leaves_quarantine_for_latest_once_its_model_is_named(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        invoke("import", str(native(tmp_path / "a.json", model="unknown")))
        assert json.loads(invoke("latest", "--json").stdout) == []
        invoke("import", str(native(tmp_path / "b.json", model="gpt-5")))
        [row] = json.loads(invoke("latest", "--json").stdout)
        assert (row["model"], row["score"]) == ("gpt-5", 0.5)
        assert json.loads(invoke("latest", "--quarantine", "--json").stdout) == []

    def test_a_named_agent_takes_the_row_the_placeholder_agent_held(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        invoke("import", str(native(tmp_path / "a.json", agent="unknown")))
        [held] = json.loads(invoke("latest", "--quarantine", "--json").stdout)
        assert held["agent"] == "unknown"
        invoke("import", str(native(tmp_path / "b.json", agent="eliza")))
        assert json.loads(invoke("latest", "--quarantine", "--json").stdout) == []
        [row] = json.loads(invoke("latest", "--json").stdout)
        assert (row["agent"], row["model"]) == ("eliza", "gpt-oss-120b")

    def test_importing_either_file_again_appends_nothing(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        first = native(tmp_path / "a.json", model="unknown")
        second = native(tmp_path / "b.json", model="gpt-5")
        invoke("import", str(first))
        invoke("import", str(second))
        before = events(db)
        invoke("import", str(first))
        invoke("import", str(second))
        invoke("import", str(native(tmp_path / "c.json", model="unknown", score=0.5)))
        assert events(db) == before

    def test_a_rebuilt_read_model_agrees(self, invoke: Invoke, tmp_path: Path) -> None:
        invoke("import", str(native(tmp_path / "a.json", model="unknown")))
        invoke("import", str(native(tmp_path / "b.json", model="gpt-5")))
        folded = runs(invoke)
        invoke("rebuild")
        assert runs(invoke) == folded


class TestTheStatedModelThenAPlaceholder:
    def test_is_no_conflict_and_the_stated_model_stays(
        self, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        invoke("import", str(native(tmp_path / "a.json", model="gpt-5")))
        before = events(db)
        result = invoke("import", str(native(tmp_path / "b.json", model="unknown")), "--json")
        [report] = json.loads(result.stdout)
        assert report["state"] == "unchanged"  # it states nothing the run lacks
        assert events(db)[: len(before)] == before
        assert not any(t.endswith("RunFactsAdded") for t in events(db))
        [run] = runs(invoke)
        assert run["model"] == "gpt-5"

    def test_what_else_it_states_is_added_under_the_runs_own_signature(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        invoke("import", str(native(tmp_path / "a.json", model="gpt-5")))
        [before] = runs(invoke)
        invoke("import", str(native(tmp_path / "b.json", model="unknown", config={"limit": 5})))
        [run] = runs(invoke)
        assert (run["model"], run["config"]) == ("gpt-5", {"limit": 5})
        # Signed with the run's model, not the file's placeholder.
        assert run["signature"] == signature("bfcl", "eliza", "", "gpt-5", {"limit": 5})
        assert run["signature"] != before["signature"]


class TestAStatedValueThatDiffers:
    def test_is_still_a_conflict(self, invoke: Invoke, db: Path, tmp_path: Path) -> None:
        invoke("import", str(native(tmp_path / "a.json", model="unknown")))
        invoke("import", str(native(tmp_path / "b.json", model="gpt-5")))
        before = events(db)
        result = invoke("import", str(native(tmp_path / "c.json", model="o3")), expect=1)
        assert "model: recorded 'gpt-5', this file states 'o3'" in result.stderr
        assert events(db) == before
