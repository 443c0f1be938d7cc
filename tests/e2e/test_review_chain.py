"""The operator's review chain end to end: preflight, run across a credential pool, gates,
the review package and verify-artifacts, with real benchmark scripts and account homes.

Each test works in its own directory (the working directory, as for an operator):
a registry with a `codex` account pool of three homes, each holding an `auth.json`
with a planted token, and benchmark scripts that read their account's token the way
a harness would, and print it (a leak benchledger must mask).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchledger.adapters.execution import preflight as checks
from benchledger.adapters.publication.browse import datasette_for
from benchledger.adapters.publication.head_to_head import EXIT_CODES
from tests.conftest import Invoke
from tests.helpers import run_json, write_json

ACCOUNTS = ("acct-a", "acct-b", "acct-c")
AGENT = "codex"

BENCH_SCRIPT = """
import json, os, sys
from pathlib import Path

out = Path(sys.argv[1])
home = Path(os.environ["CODEX_HOME"])
token = json.loads((home / "auth.json").read_text())["tokens"]["access_token"]
print("calling the model as", home, "with", token, flush=True)
print("debug: bearer", token, file=sys.stderr, flush=True)
doc = {
    "schema": "benchledger/run@1",
    "score": 0.5,
    "unit": "accuracy",
    "metrics": {
        "account_seen": home.name,
        "pool_size": len(os.environ["CODEX_HOMES"].split(os.pathsep)),
        "home": str(home),
    },
    "cells": [
        {"key": "q1", "outcome": "passed", "score": 1.0},
        {"key": "q2", "outcome": "failed", "score": 0.0},
    ],
}
(out / "result.json").write_text(json.dumps(doc))
"""


class Operator:
    """One operator's directory: registry, benchmark script, account homes, ledger."""

    def __init__(self, root: Path, invoke: Invoke) -> None:
        self.root = root
        self.invoke = invoke
        self.db = root / "ledger.db"
        self.out = root / "review" / "codex"
        self.out.parent.mkdir(parents=True)  # `--out` makes its folder, never its parent
        self.pool = root / "auth" / "_codex-home"
        self.tokens: dict[str, str] = {}
        for account in ACCOUNTS:
            self.add_account(account)
        (root / "bench.py").write_text(textwrap.dedent(BENCH_SCRIPT))
        command = json.dumps([sys.executable, "bench.py", "{output_dir}"])
        benchmarks = "".join(
            f'[benchmarks.{name}]\ncommand = {command}\nunit = "accuracy"\n\n'
            for name in ("alpha", "beta", "gamma", "delta")
        )
        (root / "benchledger.toml").write_text(
            textwrap.dedent(
                """\
                [accounts.codex]
                root = "auth/_codex-home"
                env = "CODEX_HOME"

                [profiles."gpt-5.5"]
                provider = "openai"
                model = "gpt-5.5"

                [benchmarks.keyed]
                command = {command}
                required_env = ["BENCH_REQUIRED_TOKEN"]

                [benchmarks.homed]
                command = {command}
                required_env = ["CODEX_HOME"]

                [benchmarks.failing]
                command = ["{python}", "-c", "import sys; sys.exit(3)"]

                """
            ).format(command=command, python=sys.executable)
            + benchmarks
        )

    def add_nobin(self) -> None:
        """A registered benchmark whose command is not installed: an inventory gap."""
        registry = self.root / "benchledger.toml"
        nobin = '[benchmarks.nobin]\ncommand = ["no-such-harness-7f3a", "{output_dir}"]\n'
        registry.write_text(registry.read_text() + "\n" + nobin)

    def add_account(self, account: str) -> None:
        home = self.pool / account
        home.mkdir(parents=True)
        token = f"tok-{account}-{uuid.uuid4().hex}"
        self.tokens[account] = token
        auth = {"auth_mode": "chatgpt", "tokens": {"access_token": token, "account_id": account}}
        (home / "auth.json").write_text(json.dumps(auth))
        (home / "config.toml").write_text('model = "gpt-5.5"\n')

    def review(self, *options: str, benchmarks: str = "alpha,beta", expect: int = 0) -> Any:
        return self.invoke(
            "review",
            "--benchmarks",
            benchmarks,
            "--agent",
            AGENT,
            "--model-profile",
            "gpt-5.5",
            "--reviewer",
            "ana",
            "--reviewer-note",
            "opened the trajectories per account and spot-checked tool calls",
            "--out",
            str(self.out),
            *options,
            expect=expect,
        )

    def runs(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = json.loads(self.invoke("runs", "--json").stdout)
        return rows

    def accounts_by_benchmark(self) -> list[tuple[str, str | None, str]]:
        return [
            (r["benchmark"], r["account"], r["metrics"]["account_seen"])
            for r in sorted(self.runs(), key=lambda r: r["started_at"])
        ]

    def preflight_report(self) -> dict[str, Any]:
        report: dict[str, Any] = json.loads((self.out / "preflight.json").read_text())
        return report

    def every_file(self) -> list[Path]:
        """The ledger with its -wal/-shm, the results and the review package."""
        ledger = [p for p in self.root.glob("ledger.db*") if p.is_file()]
        produced = [p for d in ("results", "review") for p in (self.root / d).rglob("*")]
        return ledger + [p for p in produced if p.is_file()]


@pytest.fixture
def operator(tmp_path: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch) -> Operator:
    monkeypatch.chdir(tmp_path)
    for name in ("CODEX_HOME", "CODEX_HOMES", "BENCH_REQUIRED_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return Operator(tmp_path, invoke)


def run_events(invoke: Invoke) -> list[str]:
    result = invoke("events", "--json", expect=None)
    if result.exit_code != 0:
        return []  # no ledger was even created
    return [e["type"] for e in json.loads(result.stdout) if e["type"].startswith("Run")]


class TestTheWholeChain:
    def test_runs_both_benchmarks_across_the_accounts_and_packages_a_passing_review(
        self, operator: Operator
    ) -> None:
        result = operator.review("--accounts", "3")
        lines = result.stdout.splitlines()
        assert [line.split(":")[0] for line in lines] == [
            "preflight",
            "run",
            "gates",
            "package",
            "verify-artifacts",
        ]
        assert lines[0].startswith("preflight: ok (2 benchmarks, accounts acct-a, acct-b, acct-c")
        assert lines[1].startswith("run: ok (run group rg_") and "2 succeeded" in lines[1]
        assert lines[4] == "verify-artifacts: not checked (not a git repository)"
        # run i used accounts[i % 3]; the benchmark itself saw that home and the whole pool
        assert operator.accounts_by_benchmark() == [
            ("alpha", "acct-a", "acct-a"),
            ("beta", "acct-b", "acct-b"),
        ]
        assert {r["metrics"]["pool_size"] for r in operator.runs()} == {3}

        manifest = json.loads((operator.out / "manifest.json").read_text())
        assert (operator.out / "scorecard.md").is_file()
        summary = manifest["summary"]
        assert (summary["ok"], summary["latest_rows"], summary["blocking_findings"]) == (True, 2, 0)
        assert summary["inventory_gaps"] == 0
        assert manifest["filters"]["scoped_partial_matrix"] is False
        assert summary["artifact_offenders"] == {"not checked": "not a git repository"}
        assert manifest["checks"]["preflight"]["plan"] == [
            {"benchmark": "alpha", "account": "acct-a"},
            {"benchmark": "beta", "account": "acct-b"},
        ]
        assert [o["account"] for o in manifest["checks"]["run"]["outcomes"]] == [
            "acct-a",
            "acct-b",
        ]
        assert json.loads((operator.out / "preflight.json").read_text())["exit_code"] == 0
        assert str(operator.root) not in (operator.out / "manifest.json").read_text()
        card = (operator.out / "scorecard.md").read_text()
        assert "- Preflight: `ok`" in card and "- Inventory gaps: `0`" in card

    def test_no_planted_token_or_account_path_reaches_the_ledger_logs_results_or_package(
        self, operator: Operator
    ) -> None:
        operator.review("--accounts", "3")
        files = operator.every_file()
        names = {p.name for p in files}
        assert {"stdout.log", "stderr.log", "manifest.json", "scorecard.md"} <= names
        assert any(p.name == "ledger.db" for p in files)
        for path in files:
            data = path.read_bytes()
            for token in operator.tokens.values():
                assert token.encode() not in data, f"{token} in {path}"
        ledger = b"".join(p.read_bytes() for p in files if p.name.startswith("ledger.db"))
        assert str(operator.pool).encode() not in ledger
        logged = b"".join(p.read_bytes() for p in files if p.name == "stdout.log")
        assert b"calling the model as" in logged  # the line was logged, masked

    def test_the_account_shows_in_runs_show_and_datasette(self, operator: Operator) -> None:
        operator.review("--accounts", "acct-c,acct-a")
        listing = operator.invoke("runs").stdout.splitlines()
        assert listing[0].split()[:5] == ["run", "attempt", "benchmark", "agent", "account"]
        assert [line.split()[4] for line in listing[2:]] == ["acct-c", "acct-a"]
        run_id = operator.runs()[0]["run_id"]
        shown = operator.invoke("show", run_id).stdout
        assert any(line.split() == ["account", "acct-c"] for line in shown.splitlines())

        async def fetch() -> list[dict[str, Any]]:
            ds = datasette_for(operator.db)
            await ds.invoke_startup()
            response: httpx.Response = await ds.client.get(
                "/ledger/runs.json?_shape=array&_col=account&_sort=started_at"
            )
            assert response.status_code == 200
            rows: list[dict[str, Any]] = response.json()
            return rows

        assert [r["account"] for r in asyncio.run(fetch())] == ["acct-c", "acct-a"]

    def test_a_second_review_skips_what_succeeded_and_still_passes(
        self, operator: Operator
    ) -> None:
        operator.review("--accounts", "2")
        again = operator.review("--accounts", "2").stdout
        assert "run: ok (run group" in again and "2 skipped" in again
        assert len(operator.runs()) == 2

    def test_the_steps_as_json(self, operator: Operator) -> None:
        result = operator.review("--accounts", "1", "--json")
        report = json.loads(result.stdout)
        assert (report["ok"], report["exit_code"]) == (True, 0)
        assert [s["step"] for s in report["steps"]] == [
            "preflight",
            "run",
            "gates",
            "package",
            "verify-artifacts",
        ]
        assert result.stderr.startswith("preflight: ok (")


class TestTheChainStopsAtTheFirstStepThatCannotProceed:
    def test_a_failed_benchmark_stops_it_at_the_run(self, operator: Operator) -> None:
        result = operator.review(benchmarks="alpha,failing", expect=4)
        lines = result.stdout.splitlines()
        assert [line.split(":")[0] for line in lines] == ["preflight", "run"]
        assert "failing failed: exited with code 3" in lines[1]
        assert not (operator.out / "manifest.json").exists()

    def test_gate_findings_stop_it_at_the_gates(self, operator: Operator, tmp_path: Path) -> None:
        mock = run_json("alpha", "hermes", score=1.0, config={"mock": True})
        other = write_json(tmp_path / "h.json", mock)
        operator.invoke("import", str(other))
        result = operator.review(benchmarks="alpha", expect=5)
        assert result.stdout.splitlines()[-1].startswith("gates: blocked (")
        assert "latest_readiness: " in result.stderr
        assert not (operator.out / "manifest.json").exists()

    def test_a_blank_note_stops_it_at_the_package(self, operator: Operator) -> None:
        result = operator.invoke(
            "review",
            "--benchmarks",
            "alpha",
            "--agent",
            AGENT,
            "--model",
            "gpt-5.5",
            "--reviewer",
            "ana",
            "--note",
            "  ",
            "--out",
            str(operator.out),
            expect=6,
        )
        last = result.stdout.splitlines()[-1]
        assert last.startswith("package: blocked (missing_reviewer_note; package in ")
        manifest = json.loads((operator.out / "manifest.json").read_text())
        assert manifest["summary"]["ok"] is False

    def test_the_chain_needs_a_selection_or_no_run(self, operator: Operator) -> None:
        result = operator.invoke(
            "review", "--reviewer", "ana", "--note", "n", "--out", str(operator.out), expect=2
        )
        assert "give --benchmarks A,B,... or --all, or --no-run" in result.stderr


class TestRotation:
    def test_run_i_gets_account_i_mod_n(self, operator: Operator) -> None:
        operator.invoke(
            "run",
            "--benchmarks",
            "alpha,beta,gamma,delta",
            "--agent",
            AGENT,
            "--model-profile",
            "gpt-5.5",
            "--accounts",
            "3",
        )
        assert operator.accounts_by_benchmark() == [
            ("alpha", "acct-a", "acct-a"),
            ("beta", "acct-b", "acct-b"),
            ("gamma", "acct-c", "acct-c"),
            ("delta", "acct-a", "acct-a"),
        ]

    def test_named_accounts_rotate_in_the_order_given(self, operator: Operator) -> None:
        operator.invoke(
            "run",
            "--benchmarks",
            "alpha,beta,gamma",
            "--agent",
            AGENT,
            "--model-profile",
            "gpt-5.5",
            "--accounts",
            "acct-c,acct-a",
        )
        assert [a for _, a, _ in operator.accounts_by_benchmark()] == ["acct-c", "acct-a", "acct-c"]
        assert {r["metrics"]["pool_size"] for r in operator.runs()} == {2}

    def test_a_required_account_variable_is_given_by_the_pool(self, operator: Operator) -> None:
        result = operator.review("--accounts", "acct-b", benchmarks="homed")
        assert "run: ok (" in result.stdout and "1 succeeded" in result.stdout
        assert operator.accounts_by_benchmark() == [("homed", "acct-b", "acct-b")]

    def test_run_refuses_a_missing_account_and_runs_nothing(self, operator: Operator) -> None:
        result = operator.invoke(
            "run",
            "--benchmarks",
            "alpha",
            "--agent",
            AGENT,
            "--model",
            "gpt-5.5",
            "--accounts",
            "acct-a,acct-z",
            expect=1,
        )
        assert "account 'acct-z' has no home at" in result.stderr
        assert run_events(operator.invoke) == []


class TestPreflightStops:
    def assert_stopped_at_preflight(self, operator: Operator, result: Any) -> dict[str, Any]:
        assert result.stdout.splitlines()[0].startswith("preflight: blocked (")
        assert len(result.stdout.splitlines()) == 1
        assert run_events(operator.invoke) == []
        assert not (operator.out / "manifest.json").exists()
        report = operator.preflight_report()
        assert (report["ok"], report["exit_code"], report["exit_reason"]) == (
            False,
            2,
            "preflight_failed",
        )
        assert (operator.out / "preflight.md").is_file()
        return report

    def test_a_missing_account_home(self, operator: Operator) -> None:
        shutil.rmtree(operator.pool / "acct-b")
        result = operator.review("--accounts", "acct-a,acct-b", expect=2)
        report = self.assert_stopped_at_preflight(operator, result)
        [blocker] = report["blockers"]
        assert blocker["check"] == "account" and "'acct-b' has no home" in blocker["problem"]
        assert "available: acct-a, acct-c" in report["unblock"][0]
        assert "acct-b" in report["reason"]

    def test_an_account_home_without_its_auth_file_blocks_naming_it(
        self, operator: Operator
    ) -> None:
        (operator.pool / "acct-b" / "auth.json").unlink()
        (operator.pool / "acct-c" / "auth.json").write_text("")
        result = operator.review(expect=2)
        report = self.assert_stopped_at_preflight(operator, result)
        assert [b["problem"] for b in report["blockers"]] == [
            f"account 'acct-b' home {operator.pool / 'acct-b'} holds no auth.json",
            f"account 'acct-c' auth.json in {operator.pool / 'acct-c'} is empty",
        ]
        assert report["checks"]["accounts"]["auth_file"] == "auth.json"
        assert "and holds its auth.json" in report["unblock"][0]
        # Selecting only the logged-in account unblocks it.
        operator.review("--accounts", "acct-a")

    def test_run_refuses_an_account_without_its_auth_file_and_runs_nothing(
        self, operator: Operator
    ) -> None:
        (operator.pool / "acct-b" / "auth.json").unlink()
        args = ("run", "--benchmarks", "alpha", "--agent", AGENT, "--model", "m")
        result = operator.invoke(*args, expect=1)
        assert "cannot use the accounts: account 'acct-b' home" in result.stderr
        assert "holds no auth.json" in result.stderr and run_events(operator.invoke) == []
        operator.invoke(*args, "--accounts", "acct-a,acct-c")

    def test_the_blocked_code_is_the_one_the_head_to_head_contract_names(self) -> None:
        assert checks.BLOCKED == EXIT_CODES["preflight_failed"] == 2

    def test_the_home_an_active_home_pointer_names_is_checked_and_used(
        self, operator: Operator
    ) -> None:
        account = operator.pool / "acct-b"
        generation = account / "generations" / ("0" * 24)
        generation.mkdir(parents=True)
        (account / "auth.json").rename(generation / "auth.json")
        (account / "active-home").write_text(f"generations/{'0' * 24}\n")
        operator.review("--accounts", "acct-b", benchmarks="alpha")
        # The benchmark read auth.json from the generation: CODEX_HOME was that folder.
        assert operator.accounts_by_benchmark() == [("alpha", "acct-b", "0" * 24)]
        events = operator.invoke("events", "--json").stdout
        assert operator.tokens["acct-b"] not in events
        (generation / "auth.json").unlink()
        operator.review("--accounts", "acct-b", "--force", benchmarks="alpha", expect=2)
        [blocker] = operator.preflight_report()["blockers"]
        assert blocker["problem"] == f"account 'acct-b' home {generation} holds no auth.json"
        (account / "active-home").write_text("../acct-a\n")
        operator.review("--accounts", "acct-b", "--force", benchmarks="alpha", expect=2)
        [blocker] = operator.preflight_report()["blockers"]
        assert blocker["problem"].startswith("account 'acct-b' active-home pointer")

    def test_more_accounts_than_the_pool_has(self, operator: Operator) -> None:
        result = operator.review("--accounts", "4", expect=2)
        report = self.assert_stopped_at_preflight(operator, result)
        assert report["blockers"][0]["problem"].startswith("4 accounts asked for, 3 under")

    def test_a_missing_required_env_var(self, operator: Operator) -> None:
        result = operator.review(benchmarks="alpha,keyed", expect=2)
        report = self.assert_stopped_at_preflight(operator, result)
        assert report["unblock"] == [
            "export BENCH_REQUIRED_TOKEN=... before running (needed by keyed)"
        ]
        assert report["checks"]["environment"]["missing"] == ["BENCH_REQUIRED_TOKEN"]
        assert "BENCH_REQUIRED_TOKEN" in (operator.out / "preflight.md").read_text()

    def test_a_missing_executable(self, operator: Operator) -> None:
        operator.add_nobin()
        result = operator.review(benchmarks="nobin", expect=2)
        report = self.assert_stopped_at_preflight(operator, result)
        [blocker] = report["blockers"]
        assert blocker["check"] == "executable"
        assert blocker["unblock"].startswith("install 'no-such-harness-7f3a' or put it on PATH")

    def test_an_unknown_benchmark_is_reported_not_raised(self, operator: Operator) -> None:
        result = operator.review(benchmarks="alpha,nope", expect=2)
        report = self.assert_stopped_at_preflight(operator, result)
        assert report["blockers"][0]["check"] == "registry"
        assert "unknown benchmarks: nope" in report["reason"]

    def test_preflight_alone_checks_without_running(self, operator: Operator) -> None:
        ok = operator.invoke(
            "preflight",
            "--benchmarks",
            "alpha",
            "--agent",
            AGENT,
            "--model",
            "m",
            "--out",
            str(operator.out),
        )
        assert ok.stdout.startswith("preflight: ok (1 benchmarks, accounts acct-a, acct-b")
        blocked = operator.invoke(
            "preflight",
            "--benchmarks",
            "keyed",
            "--agent",
            AGENT,
            "--model",
            "m",
            "--out",
            str(operator.out),
            expect=2,
        )
        assert "to unblock: export BENCH_REQUIRED_TOKEN=..." in blocked.stderr
        assert not operator.db.exists()


class TestTheInventoryRule:
    """The package needs zero inventory gaps in the whole registry, unless it is a
    declared scoped partial matrix; then only gaps in its scope block it."""

    def test_a_gap_outside_the_selection_stops_it_before_the_run(self, operator: Operator) -> None:
        operator.add_nobin()
        result = operator.review("--accounts", "3", expect=6)
        lines = result.stdout.splitlines()
        assert [line.split(":")[0] for line in lines] == ["preflight", "inventory"]
        assert lines[1] == (
            "inventory: blocked (registry entries benchledger cannot run as declared: nobin; "
            "fix them, or declare a scoped partial matrix with --include-benchmarks or "
            "--exclude-benchmarks)"
        )
        assert run_events(operator.invoke) == []
        assert not (operator.out / "manifest.json").exists()

    def test_a_scoped_partial_matrix_is_packaged_with_the_gap_outside_it_recorded(
        self, operator: Operator
    ) -> None:
        operator.add_nobin()
        result = operator.review("--accounts", "3", "--include-benchmarks", "alpha,beta")
        assert result.stdout.splitlines()[-1].startswith("verify-artifacts: ")
        manifest = json.loads((operator.out / "manifest.json").read_text())
        assert manifest["filters"]["scoped_partial_matrix"] is True
        assert manifest["filters"]["include_benchmarks"] == ["alpha", "beta"]
        assert (manifest["summary"]["ok"], manifest["summary"]["inventory_gaps"]) == (True, 1)
        [gap] = manifest["checks"]["inventory"]["gap_list"]
        assert gap["benchmark"] == "nobin"
        assert (
            gap["problem"] == "command 'no-such-harness-7f3a' is not on PATH and not a file under ."
        )
        assert manifest["blocking_findings"] == []
        [review] = [
            e["data"]
            for e in json.loads(operator.invoke("events", "--json").stdout)
            if e["type"] == "ReviewRecorded"
        ]
        assert review["scope"]["scoped_partial_matrix"] is True

    def test_a_gap_inside_the_declared_scope_still_stops_it(self, operator: Operator) -> None:
        operator.add_nobin()
        result = operator.review("--include-benchmarks", "alpha,beta,nobin", expect=6)
        assert result.stdout.splitlines()[-1].startswith(
            "inventory: blocked (registry entries benchledger cannot run as declared: nobin;"
        )
        assert run_events(operator.invoke) == []


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@needs_git
class TestVerifyArtifacts:
    def test_fails_naming_a_staged_ledger(self, operator: Operator) -> None:
        operator.review("--accounts", "1")
        git(operator.root, "init", "-q")
        git(operator.root, "add", "benchledger.toml", "ledger.db", "review/codex/manifest.json")
        result = operator.invoke("verify-artifacts", "--review-dir", str(operator.out), expect=7)
        assert result.stdout.splitlines() == ["ledger.db"]
        assert "verify-artifacts: failed (generated outputs tracked or staged in" in result.stderr

    def test_a_tracked_result_or_package_file_fails_the_chain_last(
        self, operator: Operator
    ) -> None:
        git(operator.root, "init", "-q")
        operator.review("--accounts", "1")
        git(operator.root, "add", "results", "review/codex/preflight.json")
        git(operator.root, "commit", "-qm", "oops")
        result = operator.review("--accounts", "1", "--force", expect=7)
        last = result.stdout.splitlines()[-1]
        assert last.startswith("verify-artifacts: failed (")
        assert "review/codex/preflight.json" in last and "results/" in last
        manifest = json.loads((operator.out / "manifest.json").read_text())
        offenders = manifest["checks"]["verify_artifacts"]["offenders"]
        assert "review/codex/preflight.json" in offenders
        assert manifest["summary"]["artifact_offenders"] == len(offenders)

    def test_a_clean_repository_passes(self, operator: Operator) -> None:
        git(operator.root, "init", "-q")
        git(operator.root, "add", "benchledger.toml", "bench.py")
        result = operator.invoke("verify-artifacts")
        assert result.stdout == "" and "verify-artifacts: ok (" in result.stderr

    def test_outside_a_repository_nothing_is_checked(self, operator: Operator) -> None:
        result = operator.invoke("verify-artifacts", "--json")
        assert json.loads(result.stdout) == {"not checked": "not a git repository", "exit_code": 0}
