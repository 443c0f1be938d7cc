"""Model identity through the whole path: import, the runs and models read models,
declared aliases, `--as-of`, rebuilds and comparisons."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from benchledger.adapters.store.bootstrap import Settings, build
from tests.conftest import Invoke
from tests.helpers import run_json, write_json


def import_runs(invoke: Invoke, tmp_path: Path, *runs: tuple[str, str, str]) -> None:
    """Import one native run per (run_key, provider, model)."""
    for key, provider, model in runs:
        doc = run_json("swe_bench_lite", "SWE-agent", run_key=key, provider=provider, model=model)
        invoke("import", str(write_json(tmp_path / f"{key}.json", doc)))


def model_ids(invoke: Invoke, *args: str) -> dict[str, str]:
    rows: list[dict[str, Any]] = json.loads(invoke("runs", "--json", *args).stdout)
    return {row["model"]: row["model_id"] for row in rows}


def table(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


class TestRunsCarryTheirModelId:
    def test_runs_json_has_the_model_as_stated_beside_its_id(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        import_runs(
            invoke,
            tmp_path,
            ("a", "", "Claude 3.5 Sonnet (20241022)"),
            ("b", "anthropic", "claude-3-5-sonnet-20241022"),
            ("c", "", "GPT4o"),
        )
        assert model_ids(invoke) == {
            "Claude 3.5 Sonnet (20241022)": "claude-3-5-sonnet-20241022",
            "claude-3-5-sonnet-20241022": "claude-3-5-sonnet-20241022",
            "GPT4o": "GPT4o",
        }

    def test_models_lists_every_stated_name_under_its_id_and_what_joined_it(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        import_runs(
            invoke,
            tmp_path,
            ("a", "", "Claude 3.5 Sonnet (20241022)"),
            ("b", "", "Claude 3.5 Sonnet (20241022)"),
            ("c", "anthropic", "claude-3-5-sonnet-20241022"),
        )
        rows = json.loads(invoke("models", "claude-3-5-sonnet-20241022", "--json").stdout)
        assert [(r["name"], r["provider"], r["joined_by"], r["runs"]) for r in rows] == [
            ("Claude 3.5 Sonnet (20241022)", "anthropic", "display_name", 2),
            ("claude-3-5-sonnet-20241022", "anthropic", "stated", 1),
        ]
        assert "display_name" in invoke("models").stdout


class TestDeclaredAliases:
    def test_an_alias_declared_after_the_runs_rejoins_them(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        import_runs(invoke, tmp_path, ("a", "", "GPT4o"), ("b", "", "GPT 4o (2024-05-13)"))
        before = int(table(tmp_path / "ledger.db", "SELECT max(position) FROM events")[0][0])

        receipt = invoke("alias-model", "GPT4o", "gpt-4o-2024-05-13", "--reason", "board note")

        assert receipt.stdout == "Aliased model 'GPT4o' to gpt-4o-2024-05-13\n"
        assert set(model_ids(invoke).values()) == {"gpt-4o-2024-05-13"}
        rows = json.loads(invoke("models", "GPT4o", "--json").stdout)
        assert [(r["model_id"], r["joined_by"], r["alias_reason"]) for r in rows] == [
            ("gpt-4o-2024-05-13", "alias", "board note")
        ]
        # As of before the alias, the name was its own id.
        assert model_ids(invoke, "--as-of", str(before))["GPT4o"] == "GPT4o"

    def test_an_alias_declared_first_is_found_by_the_runs_that_come_later(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        invoke("alias-model", "GPT4o", "gpt-4o-2024-05-13")
        import_runs(invoke, tmp_path, ("a", "", "GPT4o"))
        assert model_ids(invoke) == {"GPT4o": "gpt-4o-2024-05-13"}

    def test_an_alias_follows_every_spelling_the_rules_join(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        import_runs(
            invoke,
            tmp_path,
            ("a", "", "Claude 3.5 Sonnet (20241022)"),
            ("b", "", "Claude-3.5 Sonnet (20241022)"),
        )
        invoke("alias-model", "claude-3-5-sonnet-20241022", "claude-3-5-sonnet-v2")
        assert set(model_ids(invoke).values()) == {"claude-3-5-sonnet-v2"}

    def test_an_alias_naming_no_model_is_refused(self, invoke: Invoke) -> None:
        result = invoke("alias-model", "unknown", "gpt-4o", expect=1)
        assert result.stderr.startswith("Error: name: 'unknown' names no model")

    def test_a_rebuild_gives_the_tables_the_events_gave(
        self, invoke: Invoke, tmp_path: Path, db: Path
    ) -> None:
        import_runs(invoke, tmp_path, ("a", "", "GPT4o"))
        invoke("alias-model", "GPT4o", "gpt-4o-2024-05-13")
        import_runs(invoke, tmp_path, ("b", "", "gpt4o"))
        sql = "SELECT * FROM models ORDER BY name"
        runs_sql = "SELECT run_id, model, model_id FROM runs ORDER BY run_id"
        first = (table(db, sql), table(db, runs_sql))
        with build(Settings(db_path=db)) as services:
            services.runner.rebuild()
        assert (table(db, sql), table(db, runs_sql)) == first
        assert {r[2] for r in first[1]} == {"gpt-4o-2024-05-13", "gpt4o"}


class TestComparisonsAddressAModelId:
    def test_a_side_finds_runs_of_every_spelling_and_of_the_provider_the_id_implies(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        import_runs(invoke, tmp_path, ("a", "", "Claude 3.5 Sonnet (20241022)"))
        doc = run_json(
            "swe_bench_lite", "SWE-agent", run_key="b", provider="", model="GPT 4o (2024-05-13)"
        )
        doc["score"] = 0.25
        invoke("import", str(write_json(tmp_path / "b.json", doc)))

        result = invoke(
            "compare",
            "--a",
            "anthropic:claude-3-5-sonnet-20241022",
            "--b",
            "openai:gpt-4o-2024-05-13",
            "--json",
        )

        rows = json.loads(result.stdout)["rows"]
        assert [(r["benchmark_id"], r["a_score"], r["b_score"]) for r in rows] == [
            ("swe_bench_lite", 0.5, 0.25)
        ]
