"""Terminal-Bench harness run folders (`tb run`): results.json + run_metadata.json.

The fixtures rebuild the shapes the harness's pydantic models dump (values made up):

- `BenchmarkResults`, `TrialResults`, `RunMetadata` in `terminal_bench/harness/models.py`
  and the writers in `terminal_bench/harness/harness.py` (`_write_results`,
  `_write_run_metadata`, `_update_metadata_on_end`, `_get_trial_name`, `_run_trial`), as
  carried by copies of the upstream harness: Ogak-AI/parsewave-contributor at
  cc8036fae00ece605e229c76574732c59464ad47 (trials with `n_commands`; pass@k for powers
  of two, 5 and 10) and finyorko/longcli-bench at 82c7eb3b3b1c0d2aff312292575182ab9df03fcf
  (pass@k for every k up to the fewest attempts; extra trial keys such as `pass_rate`).
  laude-institute/terminal-bench itself is not in the index searched.
- Real run folders in laude-institute/terminal-bench-leaderboard at
  8e1925a397d7ed859c027cc19b3a3d90c16ef8df (`results/terminal-bench-core@0.1.1/...`: 44
  results.json, 39 with run_metadata.json), which show what the models allow:
  `is_resolved: null` with `parser_results: null` for parse errors and test timeouts,
  `model_name: null` for agents that choose their own model, `end_time: null` for runs
  that were resumed, token counts of 0 from agents that do not count them, and an older
  writer (`uuid` instead of `id`, no timestamps, no top-level `id`, trial names
  `<task>.<k>-of-<n>` without the run id).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import NAMESPACE_URL, uuid5

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.adapters import formats
from benchledger.adapters.formats import terminal_bench, terminal_bench_harness
from benchledger.commands.cli import cli
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord, RunStatus

RUN_ID = "2025-06-02__10-00-00"


def trial(
    task: str,
    resolved: bool | None,
    attempt: int = 1,
    attempts: int = 1,
    run_id: str = RUN_ID,
    **extra: Any,
) -> dict[str, Any]:
    """One TrialResults as `model_dump_json` writes it (every key, nulls included)."""
    graded = resolved is not None
    name = f"{task}.{attempt}-of-{attempts}.{run_id}"
    body: dict[str, Any] = {
        "id": str(uuid5(NAMESPACE_URL, f"{run_id}/{task}/{attempt}")),
        "trial_name": name,
        "task_id": task,
        "instruction": f"Do {task}.",
        "is_resolved": resolved,
        "failure_mode": "unset" if graded else "test_timeout",
        "parser_results": (
            {"test_one": "passed", "test_two": "passed" if resolved else "failed"}
            if graded
            else None
        ),
        "recording_path": f"{run_id}/{task}/{name}/sessions/agent.cast",
        "total_input_tokens": 1000,
        "total_output_tokens": 100,
        "n_commands": 4,
        "trial_started_at": "2025-06-02T10:00:00.000000+00:00",
        "trial_ended_at": "2025-06-02T10:05:00.000000+00:00",
        "agent_started_at": "2025-06-02T10:00:05.000000+00:00",
        "agent_ended_at": "2025-06-02T10:04:00.000000+00:00",
        "test_started_at": "2025-06-02T10:04:10.000000+00:00",
        "test_ended_at": "2025-06-02T10:04:40.500000+00:00",
    }
    return {**body, **extra}


TRIALS = [
    trial("hello-world", True, 1, 2),
    trial("hello-world", False, 2, 2, failure_mode="agent_timeout"),
    trial("fix-git", True, 1, 2, total_input_tokens=3000, total_output_tokens=300),
    trial("fix-git", None, 2, 2, total_input_tokens=None, total_output_tokens=None),
]


def benchmark_results(trials: list[dict[str, Any]], **changes: Any) -> dict[str, Any]:
    """BenchmarkResults with its computed fields, worked out as the harness does."""
    resolved = [t["task_id"] for t in trials if t["is_resolved"]]
    unresolved = [t["task_id"] for t in trials if not t["is_resolved"]]
    doc = {
        "id": "11111111-2222-4333-8444-555555555555",
        "results": trials,
        "pass_at_k": {"2": 1.0} if trials else {},
        "n_resolved": len(resolved),
        "n_unresolved": len(unresolved),
        "resolved_ids": resolved,
        "unresolved_ids": unresolved,
        "accuracy": len(resolved) / len(trials) if trials else 0.0,
    }
    return {**doc, **changes}


def run_metadata(**changes: Any) -> dict[str, Any]:
    doc = {
        "run_id": RUN_ID,
        "uuid": "99999999-8888-4777-8666-555555555555",
        "dataset_path": None,
        "dataset_name": "terminal-bench-core",
        "dataset_version": "0.1.1",
        "output_path": "/home/someone/terminal-bench/runs",
        "agent_name": "terminus",
        "no_rebuild": False,
        "cleanup": True,
        "log_level": 20,
        "task_ids": ["hello-world", "fix-git"],
        "exclude_task_ids": None,
        "n_tasks": None,
        "n_concurrent_trials": 4,
        "n_attempts": 2,
        "dataset_size": 2,
        "accuracy": 0.5,
        "model_name": "anthropic/claude-sonnet-4-20250514",
        "start_time": "2025-06-02T09:59:59.000000+00:00",
        "end_time": "2025-06-02T10:20:00.000000+00:00",
        "commit_hash": "0123456789abcdef0123456789abcdef01234567",
        "username": "someone",
        "s3_bucket": None,
        "agent_kwargs": {"temperature": 0.2},
        "pass_at_k": {"2": 1.0},
        "resumed_at": None,
    }
    return {**doc, **changes}


def write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=4))
    return path


def run_folder(
    root: Path,
    trials: list[dict[str, Any]] | None = None,
    metadata: dict[str, Any] | None = None,
    results: dict[str, Any] | None = None,
    name: str = RUN_ID,
) -> Path:
    """A run folder as `tb run` leaves it; returns its results.json."""
    trials = TRIALS if trials is None else trials
    run = root / name
    run.mkdir(parents=True)
    for t in trials:  # each trial's folder holds its own results.json and logs
        folder = run / t["task_id"] / t["trial_name"]
        write(folder / "results.json", t)
        (folder / "panes").mkdir()
        (folder / "panes" / "post-test.txt").write_text("===== 2 passed =====\n")
        (folder / "sessions").mkdir()
        (folder / "sessions" / "agent.cast").write_text('{"version": 2}\n')
    (run / "run.log").write_text("Starting harness run\n")
    if metadata is not None:
        write(run / "run_metadata.json", metadata)
    return write(run / "results.json", benchmark_results(trials) if results is None else results)


def parse(path: Path, **defaults: Any) -> RunRecord:
    [record] = terminal_bench_harness.parse(path, path.read_bytes(), defaults or None)
    assert isinstance(record, RunRecord)
    return record


def broken(path: Path) -> InputFormatError:
    with pytest.raises(InputFormatError) as e:
        parse(path)
    return e.value


def claimed(root: Path) -> dict[str, list[str]]:
    """The files under `root` some format claims, by the formats that claim them."""
    found = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        names = [f.NAME for f in formats.all_formats() if f.detect(path, path.read_bytes()[:4096])]
        if names:
            found[path.relative_to(root).as_posix()] = names
    return found


class TestDetectingARunFolder:
    def test_only_the_runs_results_json_is_claimed(self, tmp_path: Path) -> None:
        run_folder(tmp_path, metadata=run_metadata())
        assert claimed(tmp_path) == {f"{RUN_ID}/results.json": ["terminal_bench_harness"]}

    def test_run_metadata_is_a_member_when_present(self, tmp_path: Path) -> None:
        primary = run_folder(tmp_path / "a", metadata=run_metadata())
        assert terminal_bench_harness.members(primary) == [primary.parent / "run_metadata.json"]
        assert terminal_bench_harness.members(run_folder(tmp_path / "b")) == []

    def test_a_results_json_listing_trials_is_claimed_whatever_comes_first(
        self, tmp_path: Path
    ) -> None:
        # Keys sorted: the long id lists come before the trials, past the sniffed head.
        many = [trial(f"a-task-with-a-rather-long-name-{i:03d}", i % 2 == 0) for i in range(300)]
        doc = benchmark_results(many)
        path = tmp_path / "results.json"
        path.write_text(json.dumps(doc, sort_keys=True))
        head = path.read_bytes()[:4096]
        assert b'"results"' not in head and b'"trial_name"' not in head
        assert formats.detect(path, head).NAME == "terminal_bench_harness"

    def test_the_vendor_submission_layout_is_not_taken_for_a_run_folder(
        self, tmp_path: Path
    ) -> None:
        results = tmp_path / "20250501_acme" / "results"
        write(results / "results.json", {"resolved": ["fix-git"], "unresolved": ["hello-world"]})
        write(
            results / "detailed_results.json",
            [
                {"task_id": "fix-git", "resolved": True},
                {"task_id": "hello-world", "resolved": False},
            ],
        )
        assert claimed(tmp_path) == {
            "20250501_acme/results/detailed_results.json": ["terminal_bench"]
        }

    def test_a_trial_list_under_another_name_is_not_claimed(self, tmp_path: Path) -> None:
        path = write(tmp_path / "summary.json", benchmark_results(TRIALS))
        assert not terminal_bench_harness.detect(path, path.read_bytes()[:4096])

    def test_a_swebench_report_with_resolved_ids_is_not_claimed(self, tmp_path: Path) -> None:
        report = {
            "total_instances": 2,
            "resolved_instances": 1,
            "resolved_ids": ["astropy__astropy-12907"],
            "unresolved_ids": ["django__django-11099"],
        }
        path = write(tmp_path / "results.json", report)
        assert not terminal_bench_harness.detect(path, path.read_bytes()[:4096])

    def test_a_run_folder_named_results_is_still_a_run_folder(self, tmp_path: Path) -> None:
        # A tb run of an adapted SWE-bench dataset: instance ids as task ids.
        trials = [trial("astropy__astropy-12907", True, run_id="results")]
        primary = run_folder(tmp_path / "x", trials, name="results")
        assert formats.detect(primary, primary.read_bytes()[:4096]).NAME == "terminal_bench_harness"
        assert not terminal_bench.detect(primary, primary.read_bytes()[:4096])


class TestReadingARun:
    def test_each_trial_is_a_cell_keyed_by_its_trial_name(self, tmp_path: Path) -> None:
        record = parse(run_folder(tmp_path, metadata=run_metadata()))
        assert [(c.key, c.outcome, c.score) for c in record.cells] == [
            (f"hello-world.1-of-2.{RUN_ID}", "passed", 1.0),
            (f"hello-world.2-of-2.{RUN_ID}", "failed", 0.0),
            (f"fix-git.1-of-2.{RUN_ID}", "passed", 1.0),
            # Tests timed out: never graded, and the harness counts it unresolved.
            (f"fix-git.2-of-2.{RUN_ID}", "error", 0.0),
        ]
        first, _, _, ungraded = record.cells
        assert first.metrics == {
            "task_id": "hello-world",
            "attempt": 1,
            "attempts": 2,
            "trial_id": TRIALS[0]["id"],
            "failure_mode": "unset",
            "parser_results": {"test_one": "passed", "test_two": "passed"},
            "input_tokens": 1000,
            "output_tokens": 100,
            "n_commands": 4,
            "recording_path": TRIALS[0]["recording_path"],
            "instruction": "Do hello-world.",
            "trial_started_at": "2025-06-02T10:00:00.000000+00:00",
            "trial_ended_at": "2025-06-02T10:05:00.000000+00:00",
            "trial_seconds": 300.0,
            "agent_started_at": "2025-06-02T10:00:05.000000+00:00",
            "agent_ended_at": "2025-06-02T10:04:00.000000+00:00",
            "agent_seconds": 235.0,
            "test_started_at": "2025-06-02T10:04:10.000000+00:00",
            "test_ended_at": "2025-06-02T10:04:40.500000+00:00",
            "test_seconds": 30.5,
        }
        assert ungraded.metrics["failure_mode"] == "test_timeout"
        assert "parser_results" not in ungraded.metrics and "input_tokens" not in ungraded.metrics

    def test_the_figures_results_json_states_are_recorded(self, tmp_path: Path) -> None:
        record = parse(run_folder(tmp_path, metadata=run_metadata()))
        header = record.header
        passed = sum(1 for c in record.cells if c.outcome == "passed")
        assert (header.score, header.unit) == (0.5, "accuracy")
        assert header.metrics["n_resolved"] == passed == 2
        assert header.metrics == {
            "n_resolved": 2,
            "n_unresolved": 2,
            "trials": 4,
            "tasks": 2,
            "failure_modes": {"agent_timeout": 1, "test_timeout": 1, "unset": 2},
            "pass_at_k": {"2": 1.0},
            "trials_with_tokens": 3,
        }
        assert header.tokens == {"input_tokens": 5000, "output_tokens": 500}
        assert sum(c.score or 0.0 for c in record.cells) / len(record.cells) == header.score
        assert "mismatch" not in header.provenance

    def test_the_header_follows_run_metadata(self, tmp_path: Path) -> None:
        header = parse(run_folder(tmp_path, metadata=run_metadata())).header
        assert header.run_key == RUN_ID
        assert (header.benchmark, header.agent, header.provider, header.model) == (
            "terminal-bench-core@0.1.1",
            "terminus",
            "anthropic",
            "claude-sonnet-4-20250514",
        )
        assert header.status is RunStatus.SUCCEEDED
        assert header.started_at == datetime(2025, 6, 2, 9, 59, 59, tzinfo=UTC)
        assert header.ended_at == datetime(2025, 6, 2, 10, 20, tzinfo=UTC)
        assert header.config == {
            "dataset_name": "terminal-bench-core",
            "dataset_version": "0.1.1",
            "n_attempts": 2,
            "dataset_size": 2,
            "task_ids": ["fix-git", "hello-world"],
            "agent_kwargs": {"temperature": 0.2},
        }
        assert header.provenance == {
            "layout": "tb_run",
            "run_id": RUN_ID,
            "uuid": "99999999-8888-4777-8666-555555555555",
            "model_name": "anthropic/claude-sonnet-4-20250514",
            "commit_hash": "0123456789abcdef0123456789abcdef01234567",
            "username": "someone",
            "log_level": 20,
            "no_rebuild": False,
            "cleanup": True,
            "n_concurrent_trials": 4,
            "output_path": "runs",  # no host path
            "results_id": "11111111-2222-4333-8444-555555555555",
            "quirks": [
                "1 trial was never graded (is_resolved null): error cells, counted "
                "unresolved as the harness counts them"
            ],
        }

    def test_a_run_without_a_model_name_names_no_model_it_was_not_told(
        self, tmp_path: Path
    ) -> None:
        primary = run_folder(tmp_path, metadata=run_metadata(model_name=None))
        header = parse(primary).header
        assert (header.provider, header.model) == ("", "unknown")
        assert (
            "run_metadata.json names no model_name: the model is 'unknown'"
            in (header.provenance["quirks"])
        )
        given_ = parse(primary, model="claude-opus-4-1", provider="anthropic").header
        assert (given_.provider, given_.model) == ("anthropic", "claude-opus-4-1")
        assert (
            parse(
                run_folder(tmp_path / "b", metadata=run_metadata(model_name="ob1-sdk"))
            ).header.model
            == "ob1-sdk"
        )

    def test_without_run_metadata_results_json_still_states_the_run(self, tmp_path: Path) -> None:
        primary = run_folder(tmp_path, name="run1_renamed")
        header = parse(primary).header
        assert header.run_key == RUN_ID  # the trial names say which run they belong to
        assert (header.benchmark, header.agent, header.model) == (
            "terminal-bench",
            "unknown",
            "unknown",
        )
        assert header.config == {"n_attempts": 2}
        assert header.started_at == datetime(2025, 6, 2, 10, tzinfo=UTC)  # from the trials
        assert header.ended_at == datetime(2025, 6, 2, 10, 5, tzinfo=UTC)
        assert (header.score, header.metrics["n_resolved"]) == (0.5, 2)
        assert header.provenance["quirks"][0] == (
            "no run_metadata.json: the dataset, agent and model are not stated"
        )
        given_ = parse(primary, benchmark="terminal-bench-core@0.1.1", agent="terminus").header
        assert (given_.benchmark, given_.agent) == ("terminal-bench-core@0.1.1", "terminus")

    def test_an_older_writer_reads_the_same(self, tmp_path: Path) -> None:
        old = []
        for t in TRIALS:
            t = {k: v for k, v in t.items() if not k.endswith(("_started_at", "_ended_at"))}
            t["uuid"] = t.pop("id")
            t.pop("n_commands")
            t["trial_name"] = t["trial_name"].removesuffix(f".{RUN_ID}")
            old.append(t)
        results = benchmark_results(old)
        del results["id"]
        record = parse(run_folder(tmp_path, old, run_metadata(), results=results))
        assert [c.key for c in record.cells][:2] == ["hello-world.1-of-2", "hello-world.2-of-2"]
        assert record.cells[0].metrics["trial_id"] == TRIALS[0]["id"]
        assert "trial_seconds" not in record.cells[0].metrics
        assert (record.header.score, record.header.metrics["n_resolved"]) == (0.5, 2)
        assert "results_id" not in record.header.provenance
        assert "mismatch" not in record.header.provenance

    def test_unknown_keys_are_kept(self, tmp_path: Path) -> None:
        trials = [trial("hello-world", True, pass_rate=1.0)]
        results = benchmark_results(trials, long_cli_n_attempts_compact="k=1")
        record = parse(run_folder(tmp_path, trials, run_metadata(harness_note="x"), results))
        assert record.cells[0].metrics["pass_rate"] == 1.0
        assert record.header.metrics["long_cli_n_attempts_compact"] == "k=1"
        assert record.header.provenance["harness_note"] == "x"

    def test_figures_that_disagree_with_the_trials_are_flagged_not_fixed(
        self, tmp_path: Path
    ) -> None:
        results = benchmark_results(
            TRIALS, n_resolved=3, accuracy=0.75, resolved_ids=["hello-world", "fix-git", "oom"]
        )
        meta = run_metadata(accuracy=0.6, run_id="another-run")
        header = parse(run_folder(tmp_path, metadata=meta, results=results)).header
        assert (header.score, header.metrics["n_resolved"]) == (0.75, 3)
        assert header.provenance["mismatch"] == {
            "n_resolved": {"stated": 3, "trials": 2},
            "resolved_ids": {"only_stated": ["oom"], "only_trials": []},
            "accuracy": {"stated": 0.75, "trials": 0.5},
            "run_metadata_accuracy": 0.6,
            "trial_names_run_id": RUN_ID,
        }

    def test_zero_tokens_from_an_agent_that_does_not_count_them_are_not_recorded(
        self, tmp_path: Path
    ) -> None:
        trials = [trial("hello-world", True, total_input_tokens=0, total_output_tokens=0)]
        record = parse(run_folder(tmp_path, trials, run_metadata(dataset_size=1, n_attempts=1)))
        assert record.header.tokens == {}
        assert record.cells[0].metrics["input_tokens"] == 0
        assert (
            "every trial states 0 tokens: the agent does not report its usage"
            in (record.header.provenance["quirks"])
        )

    def test_a_partial_or_resumed_run_is_flagged(self, tmp_path: Path) -> None:
        meta = run_metadata(end_time=None, accuracy=None, pass_at_k=None, dataset_size=3)
        header = parse(run_folder(tmp_path, metadata=meta)).header
        assert header.ended_at == datetime(2025, 6, 2, 10, 5, tzinfo=UTC)  # the last trial's end
        assert header.provenance["quirks"][:2] == [
            "partial run: 4 of the 6 trials planned",
            "run_metadata.json has no end_time (a resumed or unfinished run)",
        ]

    def test_a_run_on_a_local_dataset_is_terminal_bench(self, tmp_path: Path) -> None:
        meta = run_metadata(dataset_name=None, dataset_version=None, dataset_path="/srv/tasks")
        header = parse(run_folder(tmp_path, metadata=meta)).header
        assert header.benchmark == "terminal-bench"
        assert header.provenance["dataset_path"] == "tasks"

    def test_a_run_without_trials_is_an_error_run(self, tmp_path: Path) -> None:
        header = parse(run_folder(tmp_path, [], run_metadata(dataset_size=0))).header
        assert (header.status, header.score, header.error) == (
            RunStatus.ERROR,
            None,
            "results.json holds no trials",
        )

    def test_the_same_files_give_identical_records(self, tmp_path: Path) -> None:
        primary = run_folder(tmp_path, metadata=run_metadata())
        assert parse(primary).json_bytes() == parse(primary).json_bytes()


class TestImportingWithTheCli:
    def invoke(self, db: Path, *args: str) -> Any:
        result = CliRunner().invoke(cli, ["--db", str(db), *args])
        assert result.exit_code in (0, 1), result.output
        return result

    def imported(self, db: Path, folder: Path, *extra: str) -> list[dict[str, Any]]:
        return [
            r
            for r in json.loads(self.invoke(db, "import", str(folder), "--json", *extra).stdout)
            if r["state"] != "ignored"
        ]

    def test_a_run_folder_imports_once_and_again_appends_nothing(self, tmp_path: Path) -> None:
        db = tmp_path / "tmp" / "ledger.db"
        db.parent.mkdir()
        run_folder(tmp_path / "runs", metadata=run_metadata())
        [first] = self.imported(db, tmp_path / "runs")
        assert (first["state"], first["format"], first["new_runs"]) == (
            "imported",
            "terminal_bench_harness",
            1,
        )
        position = self.invoke(db, "verify", "--json").stdout
        [again] = self.imported(db, tmp_path / "runs")
        assert (again["state"], again["new_runs"]) == ("unchanged", 0)
        assert self.invoke(db, "verify", "--json").stdout == position
        [run] = json.loads(self.invoke(db, "runs", "--json").stdout)
        assert (run["benchmark"], run["score"], run["cells"], run["cells_passed"]) == (
            "terminal-bench-core@0.1.1",
            0.5,
            4,
            2,
        )
        assert (run["cells_failed"], run["cells_error"]) == (1, 1)

    def test_a_changed_run_metadata_is_a_new_version_of_the_run(self, tmp_path: Path) -> None:
        db = tmp_path / "ledger.db"
        primary = run_folder(tmp_path / "runs", metadata=run_metadata())
        self.imported(db, tmp_path / "runs")
        write(primary.parent / "run_metadata.json", run_metadata(username="someone-else"))
        [conflict] = self.imported(db, tmp_path / "runs")
        assert conflict["state"] == "conflict"
        [amended] = self.imported(db, tmp_path / "runs", "--amend")
        assert amended["state"] == "amended"

    def test_a_secret_among_the_agent_kwargs_is_not_kept(self, tmp_path: Path) -> None:
        db = tmp_path / "ledger.db"
        secret = "sk-abcdefghijklmnop1234567890"
        meta = run_metadata(agent_kwargs={"api_key": secret, "temperature": 0.2})
        run_folder(tmp_path / "runs", metadata=meta)
        self.imported(db, tmp_path / "runs")
        [run] = json.loads(self.invoke(db, "runs", "--json").stdout)
        assert run["config"]["agent_kwargs"] == {"api_key": "[REDACTED]", "temperature": 0.2}
        assert secret.encode() not in db.read_bytes()

    def test_a_malformed_results_json_is_refused_naming_file_and_field(
        self, tmp_path: Path
    ) -> None:
        db = tmp_path / "ledger.db"
        results = benchmark_results(TRIALS)
        del results["results"]
        run_folder(tmp_path / "runs", metadata=run_metadata(), results=results)
        [failed] = self.imported(db, tmp_path / "runs")
        assert failed["state"] == "failed"
        assert f"{RUN_ID}/results.json: field 'results': Field required" in failed["message"]
        assert json.loads(self.invoke(db, "runs", "--json").stdout) == []


class TestRefusingBrokenRuns:
    def test_results_json_without_results_names_the_field(self, tmp_path: Path) -> None:
        results = benchmark_results(TRIALS)
        del results["results"]
        primary = run_folder(tmp_path, metadata=run_metadata(), results=results)
        error = broken(primary)
        assert (error.path, error.field) == (str(primary), "results")

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            (lambda t: t.pop("is_resolved"), "results[1].is_resolved"),
            (lambda t: t.update(is_resolved="yes"), "results[1].is_resolved"),
            (lambda t: t.pop("trial_name"), "results[1].trial_name"),
            (lambda t: t.update(task_id=""), "results[1].task_id"),
            (lambda t: t.update(total_input_tokens=-1), "results[1].total_input_tokens"),
            (lambda t: t.update(parser_results=["passed"]), "results[1].parser_results"),
            (lambda t: t.update(trial_name=TRIALS[0]["trial_name"]), "results[1].trial_name"),
        ],
    )
    def test_a_bad_trial_names_the_field(self, tmp_path: Path, change: Any, field: str) -> None:
        trials = json.loads(json.dumps(TRIALS))
        change(trials[1])
        results = benchmark_results(TRIALS, results=trials)
        primary = run_folder(tmp_path, TRIALS, run_metadata(), results=results)
        error = broken(primary)
        assert (error.path, error.field) == (str(primary), field)

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"agent_name": None}, "agent_name"),
            ({"model_name": 5}, "model_name"),
            ({"n_attempts": 0}, "n_attempts"),
            ({"start_time": "yesterday"}, "start_time"),
        ],
    )
    def test_a_bad_run_metadata_names_that_file(
        self, tmp_path: Path, change: dict[str, Any], field: str
    ) -> None:
        primary = run_folder(tmp_path, metadata=run_metadata(**change))
        error = broken(primary)
        assert (error.path, error.field) == (str(primary.parent / "run_metadata.json"), field)

    def test_truncated_json_names_the_file_and_line(self, tmp_path: Path) -> None:
        primary = run_folder(tmp_path, metadata=run_metadata())
        primary.write_text(primary.read_text()[:500])
        error = broken(primary)
        assert error.path == str(primary) and error.line is not None
        (primary.parent / "run_metadata.json").write_text("[]")
        primary.write_text(json.dumps(benchmark_results(TRIALS)))
        assert broken(primary).path == str(primary.parent / "run_metadata.json")


KEYS = ["trial_name", "task_id", "is_resolved", "failure_mode", "total_input_tokens",
        "parser_results", "trial_started_at", "id"]  # fmt: skip
junk = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(), st.text(max_size=5), st.just([])
)


class TestFuzzing:
    @settings(
        max_examples=150,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(
        edits=st.lists(
            st.tuples(st.integers(0, 3), st.sampled_from(KEYS), st.booleans(), junk), max_size=4
        ),
        top=st.one_of(st.none(), st.tuples(st.sampled_from(["accuracy", "n_resolved"]), junk)),
    )
    def test_mutated_runs_parse_or_are_refused(
        self,
        tmp_path_factory: pytest.TempPathFactory,
        edits: list[tuple[int, str, bool, Any]],
        top: tuple[str, Any] | None,
    ) -> None:
        trials = json.loads(json.dumps(TRIALS))
        for index, key, drop, value in edits:
            if drop:
                trials[index].pop(key, None)
            else:
                trials[index][key] = value
        results = benchmark_results(TRIALS, results=trials)
        if top is not None:
            results[top[0]] = top[1]
        root = tmp_path_factory.mktemp("fuzz")
        primary = write(root / RUN_ID / "results.json", results)
        write(root / RUN_ID / "run_metadata.json", run_metadata())
        try:
            record = parse(primary)
        except InputFormatError as e:
            assert e.path.endswith(".json") and e.field
            return
        assert len({c.key for c in record.cells}) == len(record.cells) == len(trials)
        assert record.header.metrics["trials"] == len(trials)
