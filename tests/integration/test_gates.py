"""The validation gates over real ledgers built through the CLI, and their recorded verdicts."""

from __future__ import annotations

import itertools
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from benchledger.adapters.publication import gates
from benchledger.adapters.publication.publication import Publication
from benchledger.domain.verdicts import unpack_findings
from tests.conftest import Invoke
from tests.helpers import create_empty_ledger, run_json, write_json

_keys = itertools.count()


def run(benchmark: str, agent: str, score: float | None = 0.5, **extra: Any) -> dict[str, Any]:
    """A native run with its own key, started a minute after the previous one."""
    n = next(_keys)
    return run_json(
        benchmark,
        agent,
        score=score,
        run_key=f"{benchmark}-{agent}-{n}",
        started_at=f"2026-05-12T10:{n % 60:02d}:00+00:00",
        ended_at=None,
        **extra,
    )


@pytest.fixture
def add(invoke: Invoke, tmp_path: Path, db: Path) -> Any:
    """Import these runs; return the ledger's head position afterwards."""

    def add(*docs: dict[str, Any]) -> int:
        paths = [str(write_json(tmp_path / f"run-{next(_keys)}.json", d)) for d in docs]
        invoke("import", *paths)
        return head(db)[0]

    return add


def head(db: Path, position: int | None = None) -> tuple[int, str]:
    with closing(sqlite3.connect(db)) as conn:
        if position is None:
            row = conn.execute("SELECT max(position) FROM chain").fetchone()
            position = int(row[0])
        found = conn.execute(
            "SELECT chain_sha256 FROM chain WHERE position = ?", (position,)
        ).fetchone()
        return position, str(found[0])


def gate(invoke: Invoke, *args: str, expect: int = 0) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(invoke("gate", *args, "--json", expect=expect).stdout)
    return result


ORCHESTRATOR_KEYS = {
    "publishability": {"latest_dir", "checked_files"},
    "comparability": {"latest_dir", "checked_benchmarks", "tolerance"},
    "readiness": {"latest_dir", "tolerance"},
    "calibration": set(),
}


# The agents these tests ask every benchmark for (nothing else states any).
BOTH = ("--required-agents", "eliza,hermes")


def both_required(tmp_path: Path, benchmark: str = "bfcl") -> Path:
    """A registry requiring eliza and hermes of `benchmark`."""
    registry = tmp_path / "benchledger.toml"
    registry.write_text(
        f'[benchmarks.{benchmark}]\ncommand = ["true"]\nagents = ["eliza", "hermes"]\n'
    )
    return registry


def reasons(verdict: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["scope"], f["reason"]) for f in verdict["findings"]]


class TestPublishability:
    def test_passes_when_every_agent_has_a_succeeded_scored_real_row(
        self, invoke: Invoke, add: Any
    ) -> None:
        add(run("bfcl", "eliza", 0.5), run("bfcl", "hermes", 0.6))
        verdict = gate(invoke, "publishability")
        assert (verdict["ok"], verdict["findings"]) == (True, [])

    def test_a_mock_run_is_quarantined_and_leaves_its_key_without_a_row(
        self, invoke: Invoke, add: Any
    ) -> None:
        add(run("bfcl", "eliza"), run("bfcl", "hermes", config={"mock": True}))
        verdict = gate(invoke, "publishability", expect=1)
        assert verdict["ok"] is False
        [item] = verdict["findings"]
        assert (item["scope"], item["reason"], item["value"]) == (
            "bfcl::hermes",
            "no_publishable_row",
            "truthy_non_real_flag",
        )

    def test_a_sample_task_config_is_published_and_flagged_where_it_sits(
        self, invoke: Invoke, add: Any
    ) -> None:
        """As the orchestrator's rebuild publishes it and its gate then flags it."""
        add(run("bfcl", "eliza"), run("bfcl", "hermes", config={"use_sample_tasks": True}))
        verdict = gate(invoke, "publishability", expect=1)
        [item] = verdict["findings"]
        assert item == {
            "scope": "bfcl__hermes.json$.extra_config.use_sample_tasks",
            "reason": "truthy_non_real_flag",
            "value": "true",
            "extra": False,
            "file": "bfcl__hermes.json",
            "path": "$.extra_config.use_sample_tasks",
            "benchmark_id": "bfcl",
            "agent": "hermes",
        }

    def test_a_key_with_only_a_sample_task_run_has_no_publishable_row(
        self, invoke: Invoke, add: Any
    ) -> None:
        add(run("bfcl", "eliza"), run("bfcl", "hermes", metrics={"sample": True}))
        verdict = gate(invoke, "publishability", expect=1)
        [item] = verdict["findings"]
        assert (item["scope"], item["reason"], item["value"]) == (
            "bfcl::hermes",
            "no_publishable_row",
            "sample_task_set",
        )

    def test_a_failed_run_alone_is_not_publishable(self, invoke: Invoke, add: Any) -> None:
        add(run("gaia", "eliza"), run("gaia", "hermes", None, status="failed"))
        verdict = gate(invoke, "publishability", expect=1)
        assert [(f["reason"], f["value"]) for f in verdict["findings"]] == [
            ("no_publishable_row", "unsucceeded_run")
        ]

    def test_filters_that_select_nothing_are_a_finding(self, invoke: Invoke, add: Any) -> None:
        add(run("bfcl", "eliza"))
        verdict = gate(invoke, "publishability", "--include-benchmarks", "gaia", expect=1)
        assert [(f["file"], f["path"], f["reason"], f["value"]) for f in verdict["findings"]] == [
            ("latest", ".", "no_selected_latest_rows", "filters excluded every latest row")
        ]
        assert gate(invoke, "publishability", "--exclude-benchmarks", "gaia")["ok"] is True

    def test_a_ledger_without_latest_rows_is_an_extra_finding(
        self, invoke: Invoke, db: Path
    ) -> None:
        create_empty_ledger(db)
        [item] = gate(invoke, "publishability", expect=1)["findings"]
        assert (item["scope"], item["reason"], item["extra"]) == (
            "latest",
            "no_selected_latest_rows",
            True,
        )

    def test_rechecks_latest_rows_the_projection_should_already_have_kept_out(self) -> None:
        def row(agent: str, **fields: Any) -> dict[str, Any]:
            base = {"benchmark": "bfcl", "agent": agent, "run_id": agent, "status": "succeeded"}
            return {**base, "score": 0.5, "config": {}, "metrics": {}, **fields}

        pub = Publication(
            position=7,
            head_sha256="0" * 64,
            latest={
                ("bfcl", "a"): row("a", status="failed"),
                ("bfcl", "b"): row("b", score=float("nan")),
                ("bfcl", "c"): row("c", config={"opts": {"dataset_source": "sample"}}),
                ("bfcl", "d"): row("d", metrics={"note": "x" * 300 + " mock run"}),
            },
            quarantine={},
            baselines={},
            benchmarks={},
            generated_at=None,
        )
        found = [(f["scope"], f["reason"], f["value"]) for f in gates.publishability(pub)]
        assert found[:3] == [
            ("bfcl__a.json$.status", "latest_row_not_succeeded", '"failed"'),
            ("bfcl__b.json$.score", "latest_row_missing_numeric_score", "null"),
            (
                "bfcl__c.json$.extra_config.opts.dataset_source",
                "sample_dataset_source",
                '"sample"',
            ),
        ]
        assert found[3][:2] == ("bfcl__d.json$.metrics.note", "non_real_text_marker:mock run")
        assert found[3][2].startswith('"xxx') and found[3][2].endswith("...")
        assert len(found[3][2]) == 180
        assert len(found) == 4  # the metrics note is copied into no other field


class TestComparability:
    def test_scores_further_apart_than_the_tolerance_are_a_finding(
        self, invoke: Invoke, add: Any
    ) -> None:
        add(run("bfcl", "eliza", 0.5), run("bfcl", "hermes", 0.7))
        verdict = gate(invoke, "comparability", *BOTH, expect=1)
        [item] = verdict["findings"]
        assert (item["scope"], item["reason"]) == ("bfcl", "score_spread_exceeds_tolerance")
        assert item["value"] == "hermes=0.7 eliza=0.5 spread=0.2 tolerance=0.08"
        assert gate(invoke, "comparability", *BOTH, "--tolerance", "0.25")["ok"] is True

    def test_different_configs_are_mixed_signatures_not_a_spread(
        self, invoke: Invoke, add: Any
    ) -> None:
        add(
            run("bfcl", "eliza", 0.1, config={"limit": 10}),
            run("bfcl", "hermes", 0.9, config={"limit": 20}),
        )
        [item] = gate(invoke, "comparability", *BOTH, expect=1)["findings"]
        assert (item["reason"], item["extra"]) == ("mixed_comparison_signatures", False)
        value = json.loads(item["value"])
        assert list(value) == ["derived_input_config", "recorded"]  # as the orchestrator's
        assert value["recorded"]["eliza"] != value["recorded"]["hermes"]
        assert value["derived_input_config"] == value["recorded"]

    def test_an_agent_required_but_missing_here_is_a_finding(
        self, invoke: Invoke, add: Any
    ) -> None:
        add(run("bfcl", "eliza"), run("bfcl", "hermes"), run("gaia", "eliza"))
        verdict = gate(invoke, "comparability", *BOTH, expect=1)
        assert [(f["scope"], f["reason"], f["value"]) for f in verdict["findings"]] == [
            ("gaia", "missing_required_latest_rows", "hermes")
        ]

    def test_an_agent_seen_elsewhere_is_not_required_where_nothing_states_it(
        self, invoke: Invoke, add: Any
    ) -> None:
        add(run("bfcl", "eliza", 0.5), run("bfcl", "hermes", 0.9), run("gaia", "eliza"))
        assert gate(invoke, "comparability")["findings"] == []
        assert gate(invoke, "readiness", "--skip-runtime-gates")["findings"] == []

    def test_the_registrys_required_agents_are_required(
        self, invoke: Invoke, add: Any, tmp_path: Path
    ) -> None:
        add(run("bfcl", "eliza"), run("gaia", "eliza"))
        invoke("benchmarks", "--registry", str(both_required(tmp_path, "gaia")))
        verdict = gate(invoke, "comparability", expect=1)
        assert reasons(verdict) == [("gaia", "missing_required_latest_rows")]

    def test_an_empty_scope_has_no_benchmarks(self, invoke: Invoke, db: Path) -> None:
        create_empty_ledger(db)
        verdict = gate(invoke, "comparability", expect=1)
        assert reasons(verdict) == [("benchmarks", "no_selected_benchmarks")]


class TestReadiness:
    def test_names_the_incomplete_cell_and_the_gates_it_includes(
        self, invoke: Invoke, add: Any
    ) -> None:
        add(
            run("bfcl", "eliza"),
            run("bfcl", "hermes"),
            run("gaia", "eliza"),
            run("gaia", "hermes", None, status="failed"),
        )
        verdict = gate(invoke, "readiness", *BOTH, expect=1)
        assert [(f["scope"], f["reason"], f["value"]) for f in verdict["findings"]] == [
            ("matrix_contract", "matrix_contract_incomplete", "incomplete"),
            ("matrix_contract.summary", "failed_required_real_cells", "1"),
            ("gaia::hermes", "failed", "failed"),
            # (no second finding of the cell: publishability's no_publishable_row)
            ("comparability:gaia", "missing_required_latest_rows", "hermes"),
        ]
        assert [f["extra"] for f in verdict["findings"]] == [False, False, False, False]
        publishable = gate(invoke, "publishability", expect=1)
        assert reasons(publishable) == [("gaia::hermes", "no_publishable_row")]
        assert all(f["metadata"] is None for f in verdict["findings"])
        assert gate(invoke, "readiness", *BOTH, "--include-benchmarks", "bfcl")["ok"] is True


def calibrated(benchmark: str, half: float = 0.5) -> list[dict[str, Any]]:
    return [
        run(benchmark, "perfect_v1", 1.0),
        run(benchmark, "wrong_v1", 0.0),
        run(benchmark, "half_v1", half),
    ]


class TestCalibration:
    def test_passes_when_baselines_score_as_designed_and_real_scores_differ(
        self, invoke: Invoke, add: Any
    ) -> None:
        add(*calibrated("bfcl"), run("bfcl", "eliza", 0.4), run("bfcl", "hermes", 0.6))
        assert gate(invoke, "calibration")["findings"] == []

    def test_a_baseline_off_its_expected_score_is_a_mismatch(
        self, invoke: Invoke, add: Any
    ) -> None:
        add(*calibrated("bfcl", half=0.4), run("bfcl", "eliza", 0.4), run("bfcl", "hermes", 0.6))
        [item] = gate(invoke, "calibration", expect=1)["findings"]
        assert (item["scope"], item["reason"], item["value"]) == (
            "bfcl::half_v1",
            "calibration_mismatch",
            "expected 0.5, got 0.4",
        )

    def test_a_benchmark_without_baselines_is_missing_each_of_them(
        self, invoke: Invoke, add: Any
    ) -> None:
        add(run("gaia", "eliza", 0.4), run("gaia", "hermes", 0.6))
        assert reasons(gate(invoke, "calibration", expect=1)) == [
            ("gaia::half_v1", "calibration_missing"),
            ("gaia::perfect_v1", "calibration_missing"),
            ("gaia::wrong_v1", "calibration_missing"),
        ]

    @pytest.mark.parametrize(
        ("scores", "pattern"),
        [
            ((0.0, 0.0), "all_real_zero"),
            ((1.0, 1.0), "all_real_one"),
            ((0.3, 0.3), "all_real_equal"),
        ],
    )
    def test_flat_real_scores_are_suspicious(
        self, invoke: Invoke, add: Any, scores: tuple[float, float], pattern: str
    ) -> None:
        add(*calibrated("bfcl"), run("bfcl", "eliza", scores[0]), run("bfcl", "hermes", scores[1]))
        [item] = gate(invoke, "calibration", expect=1)["findings"]
        assert (item["scope"], item["reason"]) == ("bfcl", pattern)
        assert item["value"].startswith("eliza=")


class TestVerdictsAreEvents:
    def test_each_gate_appends_a_verdict_naming_what_it_saw(
        self, invoke: Invoke, add: Any, db: Path
    ) -> None:
        seen = add(run("bfcl", "eliza", 0.5), run("bfcl", "hermes", 0.9))
        out = json.loads(
            invoke(
                "gate",
                "publishability",
                "comparability",
                *BOTH,
                "--tolerance",
                "0.1",
                "--json",
                expect=1,
            ).stdout
        )
        assert [(v["gate"], v["ok"]) for v in out] == [
            ("publishability", True),
            ("comparability", False),
        ]
        assert {(v["position"], v["head_sha256"]) for v in out} == {head(db, seen)}
        events = json.loads(invoke("events", "--since", str(seen), "--json").stdout)
        assert [e["type"] for e in events] == [
            "GateEvaluated",
            "GateFindingsRecorded",
            "GateEvaluated",
        ]
        recorded, stored = events[2]["data"], events[1]["data"]
        assert recorded["params"] == {
            "include": [],
            "exclude": [],
            "as_of": None,
            "selection": "cohort",
            "required_agents": ["eliza", "hermes"],
            "tolerance": 0.1,
        }
        # The findings are stored apart, compressed, named by their digest.
        assert (recorded["findings"], recorded["finding_count"]) == ([], 1)
        assert recorded["findings_sha256"] == stored["sha256"]
        assert stored["verdict_id"] == out[1]["verdict_id"] and stored["count"] == 1
        assert unpack_findings(stored["compressed"]) == out[1]["findings"]
        assert (recorded["position"], recorded["head_sha256"]) == head(db, seen)
        assert recorded["actor"]
        listed = json.loads(invoke("gates", "--json").stdout)
        assert [(v["verdict_id"], v["findings"]) for v in listed] == [
            (out[0]["verdict_id"], 0),
            (out[1]["verdict_id"], 1),
        ]

    def test_as_of_evaluates_an_earlier_position_and_records_it(
        self, invoke: Invoke, add: Any, db: Path
    ) -> None:
        before = add(run("bfcl", "eliza", 0.5), run("bfcl", "hermes", 0.52))
        add(run("bfcl", "hermes", 0.9))
        assert gate(invoke, "comparability", *BOTH, expect=1)["ok"] is False
        then = gate(invoke, "comparability", *BOTH, "--as-of", str(before))
        assert (then["ok"], then["position"], then["head_sha256"]) == (True, *head(db, before))
        [recorded] = [
            v for v in json.loads(invoke("gates", "--json").stdout) if v["position"] == before
        ]
        assert recorded["params"]["as_of"] == str(before) and recorded["ok"] is True

    def test_validators_and_dry_runs_check_without_appending_an_event(
        self, invoke: Invoke, add: Any, db: Path
    ) -> None:
        seen = add(run("bfcl", "eliza", 0.5), run("bfcl", "hermes", 0.9))
        for args in (
            ("validate-latest-readiness", "--skip-runtime-gates", *BOTH),
            ("validate-latest-comparability", *BOTH),
            ("validate-latest-publishability",),
            ("gate", "readiness", "comparability", "--dry-run", *BOTH),
        ):
            result = invoke(*args, expect=0 if args[0].endswith("publishability") else 1)
            assert "not recorded" in result.stdout.splitlines()[0]
        dry = gate(invoke, "comparability", "--dry-run", *BOTH, expect=1)
        assert (dry["verdict_id"], dry["ok"]) == (None, False)
        assert dry["findings"][0]["reason"] == "score_spread_exceeds_tolerance"
        assert head(db)[0] == seen
        assert json.loads(invoke("gates", "--json").stdout) == []

    def test_gates_lists_verdicts_filtered_by_gate(self, invoke: Invoke, add: Any) -> None:
        add(run("bfcl", "eliza"))
        invoke("gate", "publishability")
        invoke("gate", "comparability")
        invoke("validate-latest-comparability")  # a check: records nothing
        invoke("calibration-report", "--fail-on-suspicious", expect=1)
        table = invoke("gates").stdout.splitlines()
        assert table[0].split()[:4] == ["verdict", "gate", "ok", "findings"]
        assert [line.split()[1:3] for line in table[2:]] == [
            ["publishability", "yes"],
            ["comparability", "yes"],
            ["calibration", "no"],
        ]
        only = json.loads(invoke("gates", "--gate", "calibration", "--json").stdout)
        assert [(v["gate"], v["findings"]) for v in only] == [("calibration", 3)]


class TestCommandLine:
    def test_the_orchestrator_spellings_evaluate_the_same_gate(
        self, invoke: Invoke, add: Any, tmp_path: Path
    ) -> None:
        add(run("bfcl", "eliza", 0.5), run("bfcl", "hermes", 0.7))
        invoke("benchmarks", "--registry", str(both_required(tmp_path)))
        for name, gate_name, code in (
            ("validate-latest-publishability", "publishability", 0),
            ("validate-latest-comparability", "comparability", 1),
            ("validate-latest-readiness", "readiness", 1),
            ("calibration-report", "calibration", 1),
        ):
            flags = ("--fail-on-suspicious",) if name == "calibration-report" else ()
            verdict = json.loads(invoke(name, "--json", *flags, expect=code).stdout)
            recorded = {"gate", "ok", "findings", "position", "head_sha256", "verdict_id"}
            # The orchestrator's report keys of the same validator (no directory: null).
            assert set(verdict) == recorded | ORCHESTRATOR_KEYS[gate_name]
            assert verdict.get("latest_dir") is None
            assert verdict["gate"] == gate_name and verdict["ok"] is (code == 0)
            assert (verdict["verdict_id"] is None) is name.startswith("validate-")

    def test_calibration_report_exits_0_on_findings_unless_asked_to_fail(
        self, invoke: Invoke, add: Any
    ) -> None:
        """As the orchestrator's `calibration-report`: a report, not a gate that stops a
        script, unless --fail-on-suspicious; the verdict is recorded either way."""
        add(run("bfcl", "eliza", 0.5), run("bfcl", "hermes", 0.7))
        report = json.loads(invoke("calibration-report", "--json").stdout)
        assert report["ok"] is False and report["findings"]
        invoke("calibration-report", "--fail-on-suspicious", expect=1)
        invoke("gate", "calibration", expect=1)  # the gate itself still fails on findings
        recorded = json.loads(invoke("gates", "--gate", "calibration", "--json").stdout)
        assert [v["ok"] for v in recorded] == [False, False, False]

    def test_findings_print_as_a_table_and_exit_1(self, invoke: Invoke, add: Any) -> None:
        add(run("bfcl", "eliza", 0.5), run("bfcl", "hermes", 0.7))
        out = invoke("gate", "comparability", *BOTH, expect=1).stdout.splitlines()
        assert out[0].startswith("comparability: 0 findings + 1 extra at position ")
        assert out[1].split() == ["scope", "reason", "value", "extra"]
        assert out[3].split()[:2] == ["bfcl", "score_spread_exceeds_tolerance"]
        assert out[3].split()[-1] == "extra"
        assert invoke("gate", "publishability").stdout.startswith("publishability: ok at ")

    def test_the_table_lists_the_orchestrators_findings_before_the_extra_ones(
        self, invoke: Invoke, add: Any
    ) -> None:
        add(run("bfcl", "eliza", 0.5), run("bfcl", "hermes", 0.7), run("gaia", "eliza"))
        out = invoke("gate", "comparability", *BOTH, expect=1).stdout.splitlines()
        assert out[0].startswith("comparability: 1 findings + 1 extra at position ")
        assert out[3].split()[:2] == ["gaia", "missing_required_latest_rows"]
        assert out[3].split()[-1] != "extra"
        assert out[4].split()[1] == "score_spread_exceeds_tolerance"
        assert out[4].split()[-1] == "extra"

    def test_an_unknown_gate_or_a_missing_name_is_a_usage_error(self, invoke: Invoke) -> None:
        assert "'nonsense' is not one of" in invoke("gate", "nonsense", expect=2).stderr
        invoke("gate", expect=2)
        invoke("gate", "comparability", "--tolerance", "wide", expect=2)
