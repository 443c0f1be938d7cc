"""Cohort-aware latest: what a benchmark whose required agents are known publishes.

Runs and skips are written through the ledger's own API (as an import or the runner
would), folded, and read as the publication commands read them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.execution.registry import load_registry
from benchledger.adapters.execution.runner import register
from benchledger.adapters.publication import gates
from benchledger.adapters.publication.exports import export_latest
from benchledger.adapters.publication.publication import Publication, Selection, load
from benchledger.adapters.publication.queries import Queries
from benchledger.adapters.store.bootstrap import Services, Settings, build
from benchledger.domain.errors import InputFormatError, RuleViolationError
from benchledger.domain.ledger_base import GroupHandle
from benchledger.domain.matrix import AgentRules, rules_from_matrix_contract
from benchledger.domain.records import RunHeader, RunRecord, SkipRecord, SourceFile
from benchledger.domain.signatures import sha256_hex
from tests.conftest import Invoke
from tests.unit import test_format_orchestrator as orchestrator

TRIO = ("eliza", "hermes", "openclaw")
WIDE = {"limit": 10}
NARROW = {"limit": 3}


def day(n: float) -> datetime:
    return datetime(2026, 3, 1, 9, tzinfo=UTC) + timedelta(days=n)


class Book:
    """A ledger written through its API and read as the publication commands read it."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.ledger = services.ledger
        self.keys = 0

    def _source(self, name: str, payload: Any) -> SourceFile:
        data = json.dumps(payload, sort_keys=True, default=str).encode()
        return SourceFile(path=name, sha256=sha256_hex(data), size=len(data), format="native")

    def run(
        self,
        agent: str,
        start: float,
        *,
        config: dict[str, Any] | None = None,
        end: float | None = None,
        benchmark: str = "bfcl",
        group: GroupHandle | None = None,
        run_key: str | None = None,
        **header: Any,
    ) -> str:
        """Record one finished run started on day `start`; its ledger run id."""
        self.keys += 1
        fields: dict[str, Any] = {
            "run_key": run_key or f"{benchmark}-{agent}-{self.keys}",
            "benchmark": benchmark,
            "agent": agent,
            "provider": "cerebras",
            "model": "gpt-oss-120b",
            "config": WIDE if config is None else config,
            "started_at": day(start),
            "ended_at": day(start + 0.1 if end is None else end),
            "status": "succeeded",
            "score": 0.5,
            "tokens": {"total_tokens": 900, "llm_call_count": 9},
            **header,
        }
        record = RunRecord(header=RunHeader.model_validate(fields))
        source = self._source(f"{fields['run_key']}.json", record.model_dump(mode="json"))
        outcome = self.ledger.import_runs("native", source, [record], group=group)
        return str(outcome.runs[0].run_id)

    def incompatible(
        self,
        agent: str,
        start: float,
        supported: list[str],
        *,
        benchmark: str = "bfcl",
        source_id: str | None = None,
        reason: str = "harness_not_in_compatibility",
    ) -> str:
        """Record the orchestrator's `incompatible` row as its importer does: a skip on the
        import's run group with the source's metrics; returns the source's row id."""
        self.keys += 1
        row_id = source_id or f"incompat_{benchmark}_{self.keys}"
        metrics = {"reason": reason, "harness": agent, "supported_harnesses": supported}
        skip = SkipRecord(
            benchmark=benchmark,
            agent=agent,
            provider="cerebras",
            model="gpt-oss-120b",
            reason="incompatible",
            detail=f"{reason}; Benchmark '{benchmark}' is not compatible with harness '{agent}'",
            provenance={"run_id": row_id, "status": "incompatible", "metrics": metrics},
            skipped_at=day(start),
            skip_key=row_id,
        )
        group = self.ledger.new_group(f"import {row_id}", "import")
        self.ledger.import_runs(
            "eliza-orchestrator",
            self._source(row_id, skip.model_dump(mode="json")),
            [skip],
            group=group,
        )
        self.ledger.close_group(group)
        return row_id

    def require(self, *agents: str, benchmark: str = "bfcl", **rules: Any) -> None:
        self.ledger.declare_required_agents(benchmark, agents, source="test", **rules)

    def publication(self, selection: Selection = "cohort") -> Publication:
        self.services.runner.catch_up()
        return load(Queries(self.services.store.conn), selection=selection)

    def latest(self, selection: Selection = "cohort") -> dict[str, str]:
        """agent -> published run id, for bfcl."""
        pub = self.publication(selection)
        return {a: r["run_id"] for (b, a), r in pub.latest.items() if b == "bfcl"}

    def table(self, name: str) -> list[dict[str, Any]]:
        self.services.runner.catch_up()
        return Queries(self.services.store.conn).publication(name)

    def table_rows(self, name: str) -> list[dict[str, Any]]:
        self.services.runner.catch_up()
        cursor = self.services.store.conn.execute(f"SELECT * FROM [{name}]")
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor]
        return sorted(rows, key=lambda row: json.dumps(row, sort_keys=True))


@pytest.fixture
def book(db: Path) -> Iterator[Book]:
    with build(Settings(db_path=db)) as services:
        yield Book(services)


class TestCohortPromotion:
    def test_a_newer_mixed_row_loses_to_the_older_complete_cohort(self, book: Book) -> None:
        book.require(*TRIO)
        eliza = book.run("eliza", 1, score=0.4)
        hermes = book.run("hermes", 2, score=0.5)
        openclaw = book.run("openclaw", 3, score=0.6)
        book.run("hermes", 4, config=NARROW, score=0.99)  # a narrower rerun of one agent
        assert book.latest() == {"eliza": eliza, "hermes": hermes, "openclaw": openclaw}
        [row] = [r for r in book.table("latest") if r["agent"] == "hermes"]
        assert (row["score"], row["selection"]) == (0.5, "cohort")

    def test_the_newest_complete_cohort_wins_whatever_the_scores(self, book: Book) -> None:
        book.require(*TRIO)
        for n, agent in enumerate(TRIO):
            book.run(agent, n, score=0.9)
        newer = {a: book.run(a, 10 + n, config=NARROW, score=0.1) for n, a in enumerate(TRIO)}
        book.run("eliza", 20, config={"limit": 7}, score=1.0)
        assert book.latest() == newer

    def test_the_cohort_with_the_later_earliest_row_is_the_newer(self, book: Book) -> None:
        book.require("eliza", "hermes")
        book.run("eliza", 1)
        later_eliza = book.run("eliza", 2, config=NARROW)
        later_hermes = book.run("hermes", 3, config=NARROW)
        book.run("hermes", 4)  # the newest row of all, but its cohort began on day 1
        assert book.latest() == {"eliza": later_eliza, "hermes": later_hermes}

    def test_with_equal_earliest_rows_the_later_latest_row_decides(self, book: Book) -> None:
        book.require("eliza", "hermes")
        wide_eliza = book.run("eliza", 1, end=5)
        book.run("eliza", 2, config=NARROW, end=5)
        book.run("hermes", 3, config=NARROW, end=6)
        wide_hermes = book.run("hermes", 4, end=7)
        assert book.latest() == {"eliza": wide_eliza, "hermes": wide_hermes}

    def test_without_a_complete_cohort_each_agent_keeps_its_newest(self, book: Book) -> None:
        book.require(*TRIO)
        book.run("eliza", 1)
        newest = {
            "eliza": book.run("eliza", 2, config=NARROW),
            "hermes": book.run("hermes", 3, config={"limit": 4}),
            "openclaw": book.run("openclaw", 4),
        }
        assert book.latest() == newest
        assert {r["selection"] for r in book.table("latest")} == {"newest"}

    def test_an_unpublishable_row_is_no_member_of_a_cohort(self, book: Book) -> None:
        book.require("eliza", "hermes")
        book.run("eliza", 1)
        book.run("hermes", 2, status="failed", score=None)
        newest = {
            "eliza": book.run("eliza", 3, config=NARROW),
            "hermes": book.run("hermes", 4, config={"limit": 4}),
        }
        assert book.latest() == newest

    def test_a_benchmark_without_known_required_agents_keeps_per_agent_newest(
        self, book: Book
    ) -> None:
        wide_eliza = book.run("eliza", 1)
        book.run("hermes", 2)
        newest = {"eliza": book.run("eliza", 3, config=NARROW), "hermes": book.run("hermes", 4)}
        assert book.latest() == newest
        book.require("eliza", "hermes")  # declared later: the cohort is published from then
        assert book.latest() == {"eliza": wide_eliza, "hermes": newest["hermes"]}

    def test_the_per_agent_newest_selection_leaves_cohorts_out(
        self, book: Book, invoke: Invoke, tmp_path: Path
    ) -> None:
        book.require("eliza", "hermes")
        cohort = {"eliza": book.run("eliza", 1), "hermes": book.run("hermes", 2)}
        narrow = book.run("hermes", 3, config=NARROW)
        assert book.latest() == cohort
        assert book.latest("newest") == {"eliza": cohort["eliza"], "hermes": narrow}
        book.services.close()
        out = tmp_path / "export"
        invoke("export-latest", str(out), "--selection", "newest")
        assert json.loads((out / "latest" / "bfcl__hermes.json").read_text())["run_id"] == narrow
        invoke("export-latest", str(out))
        assert (
            json.loads((out / "latest" / "bfcl__hermes.json").read_text())["run_id"]
            == (cohort["hermes"])
        )

    def test_the_gates_read_the_selection_from_the_environment_too(
        self, book: Book, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        book.require("eliza", "hermes")
        book.run("eliza", 1)
        book.run("hermes", 2)
        book.run("hermes", 3, config=NARROW)
        book.services.close()
        assert json.loads(invoke("gate", "comparability", "--json").stdout)["ok"] is True
        monkeypatch.setenv("BENCHLEDGER_LATEST_SELECTION", "newest")
        verdict = json.loads(invoke("gate", "comparability", "--json", expect=1).stdout)
        assert [f["reason"] for f in verdict["findings"]] == ["mixed_comparison_signatures"]


class TestSubscriptionCohorts:
    def test_rows_of_a_subscription_provider_come_from_one_run_group(self, book: Book) -> None:
        book.require("eliza", "hermes")
        first = book.ledger.new_group("first", "import")
        second = book.ledger.new_group("second", "import")
        sub = {"provider": "claude-subscription"}
        cohort = {
            "eliza": book.run("eliza", 1, group=first, **sub),
            "hermes": book.run("hermes", 2, group=first, **sub),
        }
        book.run("eliza", 3, group=second, **sub)  # same signature, another group
        assert book.latest("newest")["eliza"] != cohort["eliza"]
        assert book.latest() == cohort
        entry = book.publication().matrix()["benchmarks"]["bfcl"]
        assert (entry["cohort_run_group_id"], entry["cohort_reason"]) == (str(first.id), None)

    def test_rows_of_several_groups_make_the_benchmark_incomplete(self, book: Book) -> None:
        book.require("eliza", "hermes")
        sub = {"provider": "claude-subscription"}
        book.run("eliza", 1, group=book.ledger.new_group("a", "import"), **sub)
        book.run("hermes", 2, group=book.ledger.new_group("b", "import"), **sub)
        matrix = book.publication().matrix()
        entry = matrix["benchmarks"]["bfcl"]
        assert entry["cohort_reason"] == "subscription_rows_not_single_cohort"
        assert entry["cohort_run_group_id"] is None and entry["complete"] is False
        assert matrix["summary"]["invalid_subscription_cohort_benchmarks"] == 1
        findings = gates.comparability(book.publication())
        assert [f["reason"] for f in findings] == ["subscription_rows_not_single_cohort"]


class TestIncompatibleHarness:
    def test_an_incompatible_row_is_quarantined_as_incompatible_harness(self, book: Book) -> None:
        book.run("eliza", 1)
        row_id = book.incompatible("hermes", 2, ["eliza", "openclaw"])
        [held] = book.table("quarantine")
        assert (held["agent"], held["quarantine_reason"], held["status"]) == (
            "hermes",
            "incompatible_harness",
            "incompatible",
        )
        assert held["run_id"] == row_id and held["score"] is None
        assert held["metrics"]["supported_harnesses"] == ["eliza", "openclaw"]

    def test_the_newest_quarantined_row_of_a_key_is_its_quarantine_row(self, book: Book) -> None:
        book.incompatible("hermes", 1, ["eliza"])
        failed = book.run("hermes", 2, status="failed", score=None)
        assert [r["run_id"] for r in book.table("quarantine")] == [failed]
        newer = book.incompatible("hermes", 3, ["eliza"])
        assert [r["run_id"] for r in book.table("quarantine")] == [newer]

    def test_an_incompatible_row_never_displaces_a_good_latest_row(self, book: Book) -> None:
        good = book.run("hermes", 1)
        book.incompatible("hermes", 2, ["eliza"])
        assert [r["run_id"] for r in book.table("latest_per_agent")] == [good]

    def test_a_row_whose_harness_the_rules_allow_again_is_ignored(self, book: Book) -> None:
        failed = book.run("hermes", 1, status="failed", score=None)
        book.incompatible("hermes", 2, ["eliza"])
        assert book.table("quarantine")[0]["quarantine_reason"] == "incompatible_harness"
        book.require("eliza", "hermes")
        assert [r["run_id"] for r in book.table("quarantine")] == [failed]

    def test_a_newer_incompatible_row_of_another_agent_can_allow_this_one(self, book: Book) -> None:
        book.incompatible("hermes", 1, ["eliza"])
        book.incompatible("openclaw", 2, ["eliza", "hermes"])
        assert [r["agent"] for r in book.table("quarantine")] == ["openclaw"]

    def test_a_reason_other_than_compatibility_still_applies(self, book: Book) -> None:
        book.require("eliza", "hermes")
        book.incompatible("hermes", 1, ["eliza"], reason="missing_docker")
        assert [r["quarantine_reason"] for r in book.table("quarantine")] == [
            "incompatible_harness"
        ]

    def test_a_row_the_source_later_states_as_a_run_is_ignored(self, book: Book) -> None:
        row_id = book.incompatible("hermes", 1, ["eliza"])
        assert book.table("quarantine")
        restored = book.run("hermes", 1, run_key=row_id)
        assert book.table("quarantine") == []
        assert [r["run_id"] for r in book.table("latest")] == [restored]

    def test_the_runners_incompatible_agent_skip_is_quarantined_too(self, book: Book) -> None:
        group = book.ledger.new_group("run", "run")
        book.ledger.skip(
            group,
            reason="incompatible_agent",
            detail="agent 'hermes' is not among eliza",
            benchmark="bfcl",
            agent="hermes",
            provider="cerebras",
            model="gpt-oss-120b",
            config={},
        )
        book.ledger.close_group(group)
        [held] = book.table("quarantine")
        assert (held["agent"], held["quarantine_reason"]) == ("hermes", "incompatible_harness")
        assert held["run_id"].startswith("skip:")
        book.require("eliza", compatible=["eliza", "hermes"])
        assert book.table("quarantine") == []

    def test_the_exported_row_has_the_orchestrators_quarantine_keys(
        self, book: Book, tmp_path: Path
    ) -> None:
        book.run("eliza", 1)
        row_id = book.incompatible("hermes", 2, ["eliza"])
        pub = book.publication()
        export_latest(pub, Queries(book.services.store.conn), tmp_path)
        payload = json.loads((tmp_path / "quarantine" / "bfcl__hermes.json").read_text())
        assert set(payload) == {
            "updated_at",
            "benchmark_id",
            "benchmark_directory",
            "run_group_id",
            "run_id",
            "signature",
            "comparison_signature",
            "status",
            "agent",
            "provider",
            "model",
            "score",
            "unit",
            "higher_is_better",
            "metrics",
            "trajectory_summary",
            "token_metrics",
            "cache_metrics",
            "performance_metrics",
            "result_json_path",
            "artifacts",
            "error",
            "quarantine_reason",
        }
        assert payload["run_id"] == row_id
        assert (payload["status"], payload["quarantine_reason"]) == (
            "incompatible",
            "incompatible_harness",
        )
        assert payload["metrics"] == {
            "harness": "hermes",
            "reason": "harness_not_in_compatibility",
            "supported_harnesses": ["eliza"],
        }
        assert payload["updated_at"] == day(2).isoformat()


def cells(pub: Publication) -> dict[str, dict[str, Any]]:
    return dict(pub.matrix()["benchmarks"]["bfcl"]["cells"])


class TestMatrixContract:
    def test_rules_derived_from_incompatible_rows_make_required_and_unsupported_cells(
        self, book: Book
    ) -> None:
        eliza = book.run("eliza", 1, score=0.7)
        book.run("openclaw", 2, score=0.6)
        book.incompatible("hermes", 3, ["eliza", "openclaw"])
        pub = book.publication()
        matrix = pub.matrix()
        entry = matrix["benchmarks"]["bfcl"]
        assert entry["compatible_harnesses"] == ["eliza", "openclaw"]
        assert entry["complete"] is True and matrix["status"] == "complete"
        assert entry["cells"]["hermes"] == {
            "required": False,
            "state": "unsupported",
            "status": "unsupported",
            "score": None,
            "run_id": None,
            "reason": "harness 'hermes' not in adapter compatibility (eliza, openclaw)",
        }
        assert entry["cells"]["eliza"] == {
            "required": True,
            "state": "succeeded",
            "status": "succeeded",
            "score": 0.7,
            "run_id": eliza,
            "run_group_id": None,
        }
        summary = matrix["summary"]
        assert (summary["required_real_cells"], summary["unsupported_real_cells"]) == (2, 1)
        assert (entry["cohort_run_group_id"], entry["cohort_reason"]) == (None, None)
        [rules] = book.table_rows("required_agents")
        assert (json.loads(rules["required"]), rules["declared"]) == (["eliza", "openclaw"], 0)

    def test_a_required_agent_without_a_row_is_missing(self, book: Book) -> None:
        book.require(*TRIO)
        book.run("eliza", 1)
        book.run("hermes", 2, status="failed", score=None)
        states = {h: c["state"] for h, c in cells(book.publication()).items()}
        assert states == {"eliza": "succeeded", "hermes": "failed", "openclaw": "missing"}
        summary = book.publication().matrix()["summary"]
        assert summary["missing_required_real_cells"] == 1
        assert summary["failed_required_real_cells"] == 1

    def test_an_agent_that_may_run_but_is_not_required_is_no_required_cell(
        self, book: Book
    ) -> None:
        book.require("eliza")  # any agent may run it; only eliza is required
        book.run("eliza", 1)
        book.run("hermes", 2, status="failed", score=None)
        pub = book.publication()
        assert cells(pub)["hermes"]["required"] is False
        assert cells(pub)["hermes"]["state"] == "failed"
        assert pub.matrix()["benchmarks"]["bfcl"]["complete"] is True
        # Not a matrix finding; only publishability still says hermes has no good row.
        assert [f["scope"] for f in gates.readiness(pub)] == ["publishability:bfcl::hermes"]

    def test_an_imported_contract_keeps_its_reasons(self, book: Book) -> None:
        contract = {
            "benchmarks": {
                "bfcl": {
                    "compatible_harnesses": ["eliza"],
                    "cells": {
                        "eliza": {"required": True, "state": "missing"},
                        "hermes": {
                            "required": False,
                            "state": "unsupported",
                            "reason": "Docker is not available",
                        },
                    },
                },
                "osworld": {"compatible_harnesses": [], "cells": {}},
            }
        }
        for benchmark, rule in rules_from_matrix_contract(contract, "index.json").items():
            book.ledger.declare_required_agents(
                benchmark,
                rule.required,
                compatible=rule.compatible,
                unsupported=dict(rule.unsupported),
                source=rule.source,
            )
        book.run("eliza", 1)
        book.run("hermes", 2)
        matrix = book.publication().matrix()
        assert matrix["benchmarks"]["bfcl"]["cells"]["hermes"]["reason"] == (
            "Docker is not available"
        )
        osworld = matrix["benchmarks"]["osworld"]
        assert osworld["compatible_harnesses"] == [] and osworld["complete"] is False
        assert matrix["summary"]["no_required_real_harness_benchmarks"] == 1

    def test_declaring_the_same_rules_again_appends_nothing(self, book: Book) -> None:
        assert book.ledger.declare_required_agents("bfcl", TRIO, source="registry") is True
        assert book.ledger.declare_required_agents("bfcl", TRIO, source="registry") is False
        assert book.ledger.declare_required_agents("bfcl", TRIO[:2], source="registry") is True
        assert book.publication().registered == {"bfcl"}  # registered by its first rule

    @pytest.mark.parametrize(
        ("required", "compatible", "message"),
        [
            (("eliza", "hermes"), ("eliza",), "['hermes'] are not among the compatible ones"),
            (("eliza", "eliza"), None, "must be distinct names"),
        ],
    )
    def test_a_rule_that_contradicts_itself_is_refused(
        self,
        book: Book,
        required: tuple[str, ...],
        compatible: tuple[str, ...] | None,
        message: str,
    ) -> None:
        with pytest.raises(RuleViolationError, match=re.escape(message)):
            book.ledger.declare_required_agents(
                "bfcl", required, compatible=compatible, source="test"
            )
        assert book.publication().rules == {}

    def test_a_compare_run_is_no_harness_of_the_matrix(self, book: Book) -> None:
        """The orchestrator's `compare` rows are published but are nobody's cell."""
        book.run("eliza", 1)
        book.run("compare", 2, provider="vllm", model="qwen3")
        pub = book.publication()
        assert ("bfcl", "compare") in pub.latest
        assert pub.harnesses == ["eliza"]
        assert list(cells(pub)) == ["eliza"]
        assert pub.required_agents("bfcl") == []  # nothing states one
        assert pub.requiring(["eliza", "compare"]).required_agents("bfcl") == ["eliza", "compare"]

    def test_a_held_rows_cell_shows_its_score_and_why(self, book: Book) -> None:
        book.require(*TRIO[:2])
        book.run("eliza", 1)
        held = book.run("hermes", 2, score=0.4, metrics={"failed_scenarios": 3})
        cell = cells(book.publication())["hermes"]
        assert (cell["state"], cell["status"], cell["score"], cell["run_id"]) == (
            "failed_scenarios",
            "succeeded",
            0.4,
            held,
        )

    def test_a_contracts_required_env_is_kept_on_its_unsupported_cells(self, book: Book) -> None:
        gated = {"required": False, "state": "unsupported", "reason": "needs a live key"}
        contract = {
            "benchmarks": {
                "hyperliquid_bench": {
                    "compatible_harnesses": [],
                    "cells": {
                        "eliza": {**gated, "required_env": ["HL_PRIVATE_KEY", "CEREBRAS_KEY"]},
                        "hermes": gated,
                    },
                }
            }
        }
        rules = rules_from_matrix_contract(contract, "index.json")
        assert rules["hyperliquid_bench"].required_env == {
            "eliza": ("HL_PRIVATE_KEY", "CEREBRAS_KEY")
        }
        assert book.ledger.declare_rules(rules) == 1
        assert book.ledger.declare_rules(rules) == 0
        matrix = book.publication().matrix(["eliza", "hermes"])
        found = matrix["benchmarks"]["hyperliquid_bench"]["cells"]
        assert found["eliza"]["required_env"] == ["HL_PRIVATE_KEY", "CEREBRAS_KEY"]
        assert "required_env" not in found["hermes"]
        assert found["eliza"]["reason"] == "needs a live key"

    def test_several_rules_are_declared_all_or_none(self, book: Book) -> None:
        rules = {
            "bfcl": AgentRules(required=TRIO, compatible=TRIO, source="test"),
            "mint": AgentRules(required=("eliza",), compatible=("hermes",), source="test"),
        }
        with pytest.raises(RuleViolationError, match="not among the compatible"):
            book.ledger.declare_rules(rules)
        assert book.publication().rules == {} and book.publication().registered == set()
        del rules["mint"]
        assert book.ledger.declare_rules(rules) == 1
        assert book.publication().rules["bfcl"].required == TRIO


class TestGatesReadTheRequiredAgents:
    def test_an_incompatible_agent_blocks_only_readiness_as_the_orchestrators(
        self, book: Book
    ) -> None:
        book.run("eliza", 1, score=0.5)
        book.run("openclaw", 2, score=0.52)
        book.incompatible("hermes", 3, ["eliza", "openclaw"])
        pub = book.publication()
        assert gates.publishability(pub) == []
        assert gates.comparability(pub) == []
        # The orchestrator's readiness reports every cell that did not succeed, an
        # unsupported one too, and the contract's unsupported_real_cells counter.
        assert [(f["scope"], f["reason"]) for f in gates.readiness(pub)] == [
            ("matrix_contract.summary", "unsupported_real_cells"),
            (f"{pub.benchmark_ids[0]}::hermes", "unsupported"),
        ]

    def test_a_missing_required_agent_is_a_comparability_finding(self, book: Book) -> None:
        book.require(*TRIO)
        book.run("eliza", 1)
        findings = gates.comparability(book.publication())
        assert [(f["reason"], f["value"]) for f in findings] == [
            ("missing_required_latest_rows", "hermes, openclaw")
        ]


class TestPublicationWarningsExported:
    def test_latest_and_quarantine_rows_carry_them_and_baselines_do_not(
        self, book: Book, tmp_path: Path
    ) -> None:
        book.run("eliza", 1, tokens={}, metrics={"n": 2})
        book.run("hermes", 2)  # full telemetry: no warnings, no key
        book.run("openclaw", 3, tokens={}, metrics={"failed_scenarios": 1})  # quarantined
        book.run("perfect_v1", 4, tokens={}, score=1.0)
        export_latest(book.publication(), Queries(book.services.store.conn), tmp_path)

        def read(path: str) -> dict[str, Any]:
            return dict(json.loads((tmp_path / path).read_text()))

        missing = ["telemetry_missing_total_tokens", "telemetry_missing_llm_calls:0"]
        assert read("latest/bfcl__eliza.json")["publication_warnings"] == [
            *missing,
            "insufficient_n:2",
        ]
        assert "publication_warnings" not in read("latest/bfcl__hermes.json")
        assert read("quarantine/bfcl__openclaw.json")["publication_warnings"] == missing
        assert "publication_warnings" not in read("baselines/bfcl__perfect_v1.json")


class TestTheRegistryDeclaresRequiredAgents:
    def write(self, tmp_path: Path, table: str) -> Path:
        path = tmp_path / "benchledger.toml"
        path.write_text(f'[benchmarks.bfcl]\ncommand = ["true"]\n{table}\n')
        return path

    def test_required_agents_or_else_the_compatible_ones_are_recorded(
        self, book: Book, tmp_path: Path
    ) -> None:
        spec = load_registry(self.write(tmp_path, 'agents = ["eliza", "hermes"]')).get("bfcl")
        register(book.ledger, [spec])
        assert book.publication().rules["bfcl"] == AgentRules(
            required=("eliza", "hermes"), compatible=("eliza", "hermes"), source="registry"
        )
        table = 'agents = ["eliza", "hermes", "smithers"]\nrequired_agents = ["eliza", "hermes"]'
        spec = load_registry(self.write(tmp_path, table)).get("bfcl")
        register(book.ledger, [spec])
        rule = book.publication().rules["bfcl"]
        assert (rule.required, rule.compatible) == (
            ("eliza", "hermes"),
            ("eliza", "hermes", "smithers"),
        )
        assert register(book.ledger, [spec]) == 0  # unchanged: nothing appended

    def test_a_benchmark_any_agent_may_run_declares_nothing(
        self, book: Book, tmp_path: Path
    ) -> None:
        register(book.ledger, [load_registry(self.write(tmp_path, "")).get("bfcl")])
        assert book.publication().rules == {}

    @pytest.mark.parametrize(
        ("table", "message"),
        [
            ('agents = ["eliza"]\nrequired_agents = ["hermes"]', "hermes not among agents"),
            ('required_agents = ["eliza", "eliza"]', "lists an agent twice"),
        ],
    )
    def test_required_agents_must_be_compatible_and_distinct(
        self, tmp_path: Path, table: str, message: str
    ) -> None:
        with pytest.raises(InputFormatError) as raised:
            load_registry(self.write(tmp_path, table))
        assert raised.value.field == "benchmarks.bfcl.required_agents"
        assert message in str(raised.value)


class TestAnImportedOrchestratorDatabase:
    def test_its_incompatible_row_is_quarantined_and_its_harness_unsupported(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        incompat = "incompat_bfcl_20260513T080000Z_1_77aa01bc"
        rows = [
            orchestrator.db_row(),
            orchestrator.db_row(
                run_id="run_bfcl_20260512T111500Z_1_4fa9c2d2",
                agent="openclaw",
                extra_config_json=orchestrator.dumps({"harness": "openclaw", "limit": 10}),
                started_at="2026-05-12T11:15:00.000000+00:00",
                ended_at="2026-05-12T11:20:00.000000+00:00",
                score=0.78,
            ),
            orchestrator.db_row(
                run_id=incompat,
                agent="hermes",
                status="incompatible",
                score=None,
                unit=None,
                higher_is_better=None,
                extra_config_json=orchestrator.dumps({"harness": "hermes", "limit": 10}),
                started_at="2026-05-13T08:00:00.010000+00:00",
                ended_at="2026-05-13T08:00:00.020000+00:00",
                metrics={
                    "reason": "harness_not_in_compatibility",
                    "harness": "hermes",
                    "supported_harnesses": ["eliza", "openclaw"],
                },
                error="Benchmark 'bfcl' is not compatible with harness 'hermes' "
                "(supported: eliza, openclaw)",
            ),
        ]
        source = orchestrator.make_db(tmp_path / "results" / "orchestrator.sqlite", rows)
        invoke("import", str(source))
        out = tmp_path / "export"
        invoke("export-latest", str(out))
        held = json.loads((out / "quarantine" / "bfcl__hermes.json").read_text())
        assert (held["run_id"], held["status"], held["quarantine_reason"]) == (
            incompat,
            "incompatible",
            "incompatible_harness",
        )
        assert held["metrics"]["supported_harnesses"] == ["eliza", "openclaw"]
        index = json.loads((out / "latest" / "index.json").read_text())
        contract = index["matrix_contract"]
        entry = contract["benchmarks"]["bfcl"]
        assert entry["compatible_harnesses"] == ["eliza", "openclaw"]
        assert entry["cells"]["hermes"]["state"] == "unsupported"
        assert entry["cells"]["hermes"]["required"] is False
        assert contract["status"] == "complete"
        assert set(index["latest"]) == {"bfcl::eliza", "bfcl::openclaw"}
        found = json.loads(invoke("gate", "readiness", "--json", expect=1).stdout)["findings"]
        assert [(f["scope"], f["reason"], f["value"]) for f in found] == [
            ("matrix_contract.summary", "unsupported_real_cells", "1"),
            (
                "bfcl::hermes",
                "unsupported",
                "harness 'hermes' not in adapter compatibility (eliza, openclaw)",
            ),
        ]


class TestRebuild:
    def test_a_rebuild_gives_the_tables_folding_event_by_event_gave(self, book: Book) -> None:
        tables = (
            "candidates",
            "latest",
            "latest_per_agent",
            "quarantine",
            "baselines",
            "required_agents",
        )
        # One event per catch-up: each settles on its own.
        book.run("eliza", 1)
        book.services.runner.catch_up()
        book.run("hermes", 2)
        book.services.runner.catch_up()
        book.incompatible("openclaw", 3, ["eliza", "hermes"])
        book.services.runner.catch_up()
        book.run("hermes", 4, config=NARROW)
        book.services.runner.catch_up()
        book.require("eliza", "hermes", benchmark="gaia")
        book.run("eliza", 5, benchmark="gaia")
        book.services.runner.catch_up()
        folded = {t: book.table_rows(t) for t in tables}
        assert {r["selection"] for r in folded["latest"]} == {"cohort", "newest"}
        book.services.runner.rebuild()
        assert {t: book.table_rows(t) for t in tables} == folded


class TestDerivedRules:
    def test_an_agent_that_ran_after_the_incompatible_row_became_compatible(
        self, book: Book
    ) -> None:
        book.run("openclaw", 0.5, status="failed", score=None)  # before: no evidence
        book.run("eliza", 1)
        book.incompatible("hermes", 2, ["eliza"])
        assert book.publication().rules["bfcl"].required == ("eliza",)
        assert [r["agent"] for r in book.table("quarantine")] == ["hermes", "openclaw"]
        book.run("hermes", 3)  # the orchestrator let hermes run again
        rule = book.publication().rules["bfcl"]
        assert (rule.required, rule.compatible) == (("eliza", "hermes"), ("eliza", "hermes"))
        assert [r["agent"] for r in book.table("quarantine")] == ["openclaw"]

    def test_only_the_canonical_harnesses_among_the_supported_ones_are_required(
        self, book: Book
    ) -> None:
        book.incompatible("hermes", 1, ["openclaw", "smithers", "eliza"])
        rule = book.publication().rules["bfcl"]
        assert rule.required == ("eliza", "openclaw")
        assert rule.compatible == ("eliza", "openclaw", "smithers")
        assert rule.source.startswith("derived from incompat_bfcl_")


class TestAReviewSeesLaterRules:
    def test_later_required_agents_and_incompatible_rows_are_changes_in_scope(
        self, book: Book, invoke: Invoke, db: Path, tmp_path: Path
    ) -> None:
        book.run("eliza", 1)
        book.run("hermes", 2, score=0.52)
        book.services.close()
        out = tmp_path / "review"
        invoke("review", "--no-run", "--reviewer", "ana", "--note", "ok", "--out", str(out))
        with build(Settings(db_path=db)) as services:
            later = Book(services)
            later.require("eliza", "hermes")
            later.incompatible("openclaw", 3, ["eliza", "hermes"])
            later.incompatible("openclaw", 4, ["eliza"], benchmark="gaia")
        report = json.loads(invoke("verify-review", str(out), "--json", expect=1).stdout)
        assert [(c["type"], c["benchmark"]) for c in report["changes"]] == [
            ("RequiredAgentsDeclared", "bfcl"),
            ("BenchmarkSkipped", "bfcl"),
            ("BenchmarkSkipped", "gaia"),
        ]
