"""benchledger's `validate-latest-*` name and count findings as the orchestrator's own
validators do on the same latest/ directory.

A results folder is written with the orchestrator's own code
(`benchmarks/orchestrator_parity.py`, from BENCHLEDGER_ORCHESTRATOR_CHECKOUT); its latest/
is then varied the ways the orchestrator's tests vary one (required rows removed, demo,
mock and sample markers, a failed, unscored or differently set-up row, an unsupported
cell naming its required env, files that are no JSON object, no index.json) and each
variant is checked, with and without benchmark filters, by the orchestrator's
validators (imported from a private copy of its code, in a child process) and by
benchledger's; so is the ledger the whole folder was imported into (`gate NAME`).
benchledger's findings not labelled `extra` must equal the orchestrator's: the same
reasons, counts, scopes, values and order.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchledger.commands.cli import cli

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
CHECKOUT = os.environ.get("BENCHLEDGER_ORCHESTRATOR_CHECKOUT", "")
ROWS = 130
GATES = ("publishability", "comparability", "readiness")
pytestmark = pytest.mark.skipif(
    not CHECKOUT,
    reason="set BENCHLEDGER_ORCHESTRATOR_CHECKOUT to a checkout of elizaOS/benchmarks",
)

# Run in the child, with the private copy on its path: each job through the
# orchestrator's own validator, its report as its `--json` prints it.
CHILD = """
import json, sys
from pathlib import Path
from benchmarks.suites.orchestrator.latest_comparability import validate_latest_comparability
from benchmarks.suites.orchestrator.latest_publishability import validate_latest_publishability
from benchmarks.suites.orchestrator.latest_readiness import validate_latest_readiness

out = []
for job in json.load(sys.stdin):
    where = Path(job["dir"])
    kw = {
        "latest_dir": where,
        "include_benchmarks": set(job["include"]) or None,
        "exclude_benchmarks": set(job["exclude"]) or None,
    }
    if job["gate"] == "publishability":
        report = validate_latest_publishability(where, **kw)
    elif job["gate"] == "comparability":
        report = validate_latest_comparability(where, **kw)
    else:
        report = validate_latest_readiness(where, check_runtime_gates=False, **kw)
    out.append(json.loads(report.to_json()))
json.dump(out, sys.stdout)
"""
# What identifies a finding in each gate's report, as the orchestrator's keys name it.
KEYS = {
    "publishability": ("file", "path", "reason", "value"),
    "comparability": ("benchmark_id", "reason", "value"),
    "readiness": ("scope", "reason", "value", "metadata"),
}
REPORT_KEYS = {
    "publishability": ("latest_dir", "checked_files"),
    "comparability": ("latest_dir", "checked_benchmarks", "tolerance"),
    "readiness": ("latest_dir", "tolerance"),
}


def read(path: Path) -> Any:
    return json.loads(path.read_text())


def write(path: Path, payload: Any) -> None:
    path.write_text(json.dumps(payload, indent=2, sort_keys=True))


def complete_benchmarks(latest: Path) -> list[str]:
    contract = read(latest / "index.json")["matrix_contract"]
    return sorted(b for b, e in contract["benchmarks"].items() if e.get("complete"))


def variant(base: Path, root: Path, name: str) -> Path:
    """A copy of the orchestrator's results folder (latest/ and its siblings)."""
    target = root / name
    for folder in ("latest", "quarantine", "baselines"):
        if (base / folder).is_dir():
            shutil.copytree(base / folder, target / folder)
    return target / "latest"


def rows_removed(latest: Path) -> None:
    first, second = complete_benchmarks(latest)[:2]
    for agent in ("hermes", "openclaw"):
        (latest / f"{first}__{agent}.json").unlink()
    (latest / f"{second}__eliza.json").unlink()


def markers(latest: Path) -> None:
    """Demo, mock and sample markers where the orchestrator's tests put them, and rows
    that are failed, unscored or set up differently."""
    a, b, c = complete_benchmarks(latest)[:3]
    path = latest / f"{a}__eliza.json"
    row = read(path)
    row["extra_config"] = {**row.get("extra_config", {}), "use_sample_tasks": True}
    row["metrics"] = {
        **row.get("metrics", {}),
        "dataset_source": "sample",
        "nested": {"mock_mode": "yes", "fixtures": [], "sample": 0, "sampleCount": 5},
        "notes": ["fixture dataset loaded", "mock runtime engaged", {"oracle": 1.0}],
    }
    row["publication_warnings"] = ["single_llm_call", "demo_mode", "stub_runtime"]
    row["error"] = "Mock runtime used: using sample tasks for a dry run"
    write(path, row)
    path = latest / f"{a}__hermes.json"
    row = read(path)
    row["status"], row["score"] = "failed", float("nan")
    write(path, row)
    path = latest / f"{b}__openclaw.json"
    row = read(path)
    row["comparison_signature"] = "0" * 64
    row["extra_config"] = {**row.get("extra_config", {}), "limit": 3}
    write(path, row)
    path = latest / f"{c}__eliza.json"
    row = read(path)
    row["score"] = None
    write(path, row)


def unsupported_env(latest: Path) -> None:
    index = read(latest / "index.json")
    contract = index["matrix_contract"]
    first = sorted(contract["benchmarks"])[0]
    cell = contract["benchmarks"][first]["cells"]["hermes"]
    cell.update(
        required=False,
        state="unsupported",
        status="unsupported",
        reason="hermes needs a live key",
        required_env=["HL_PRIVATE_KEY", " "],
    )
    write(latest / "index.json", index)


def bad_files(latest: Path) -> None:
    (latest / "aaa_broken.json").write_text("{not json")
    (latest / "zzz_list.json").write_text("[1, 2]")


def no_index(latest: Path) -> None:
    (latest / "index.json").unlink()


VARIANTS = {
    "as_written": lambda latest: None,
    "rows_removed": rows_removed,
    "markers": markers,
    "unsupported_env": unsupported_env,
    "bad_files": bad_files,
    "no_index": no_index,
}


def filters(base: Path) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """(include, exclude): none, two benchmarks (one complete, one not), all but one
    complete benchmark, and a benchmark that is nowhere."""
    contract = read(base / "latest" / "index.json")["matrix_contract"]["benchmarks"]
    done = complete_benchmarks(base / "latest")
    pending = sorted(b for b, e in contract.items() if not e.get("complete"))
    return [((), ()), ((done[0], pending[0]), ()), ((), (done[1],)), (("nowhere",), ())]


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    from orchestrator_import import orchestrator_copy

    root = tmp_path_factory.mktemp("gates")
    out = root / "parity"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "orchestrator_parity.py"),
            "--orchestrator",
            CHECKOUT,
            "--rows",
            str(ROWS),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stderr
    base = out / "orchestrator"
    jobs = []
    for name, change in VARIANTS.items():
        latest = variant(base, root / "variants", name)
        change(latest)
        for include, exclude in filters(base):
            for gate in GATES:
                jobs.append(
                    {"variant": name, "gate": gate, "dir": str(latest)}
                    | {"include": list(include), "exclude": list(exclude)}
                )
    package = orchestrator_copy(Path(CHECKOUT), root / "orchestrator")
    child = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        cwd=package.parent,
        env={**os.environ, "PYTHONPATH": str(package.parent)},
        timeout=600,
    )
    assert child.returncode == 0, child.stderr[-3000:]
    theirs = json.loads(child.stdout)
    db = root / "ledger.db"
    # The ledger the parity script imported the whole results folder into: `gate NAME`
    # over it is checked against the orchestrator's validators on the folder's latest/.
    imported = root / "imported.db"
    shutil.copy2(out / "ledger.db", imported)
    for job in [j for j in jobs if j["variant"] == "as_written"]:
        jobs.append(job | {"variant": "imported_ledger", "db": str(imported)})
        theirs.append(theirs[jobs.index(job)])
    for job, their in zip(jobs, theirs, strict=True):
        args = [f"validate-latest-{job['gate']}", "--latest-dir", job["dir"], "--json"]
        if "db" in job:
            args = ["gate", job["gate"], "--json"]
        args += ["--include-benchmarks", ",".join(job["include"])] if job["include"] else []
        args += ["--exclude-benchmarks", ",".join(job["exclude"])] if job["exclude"] else []
        args += ["--skip-runtime-gates"] if job["gate"] == "readiness" else []
        result = CliRunner().invoke(cli, ["--db", job.get("db", str(db)), *args])
        assert result.exit_code in (0, 1), (job, result.stderr, result.exception)
        job.update(theirs=their, ours=json.loads(result.stdout), exit_code=result.exit_code)
    return jobs


def described(job: dict[str, Any]) -> str:
    return f"{job['variant']} {job['gate']} include={job['include']} exclude={job['exclude']}"


def as_ledger(item: dict[str, Any], directory: str) -> dict[str, Any]:
    """An orchestrator finding naming its directory, as one over the ledger names it."""
    out = dict(item)
    if out.get("file") == directory:
        out["file"] = "latest"
    if str(out.get("scope", "")).startswith(f"publishability:{directory}"):
        out["scope"] = out["scope"].replace(directory, "latest", 1)
    return out


def identities(gate: str, findings: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [tuple(json.dumps(f[k], sort_keys=True) for k in KEYS[gate]) for f in findings]


class TestTheSameDirectory:
    def test_every_variant_gives_findings_of_both_kinds(
        self, reports: list[dict[str, Any]]
    ) -> None:
        reasons = Counter(f["reason"] for job in reports for f in job["theirs"]["findings"])
        for reason in (
            "missing_required_latest_rows",
            "truthy_non_real_flag",
            "sample_dataset_source",
            "non_real_publication_warning",
            "non_real_text_marker:mock run",  # for "mock runtime", as its order has it
            "non_real_text_marker:dry run",
            "non_real_text_marker:fixture dataset",
            "latest_row_not_succeeded",
            "latest_row_missing_numeric_score",
            "hermes_not_succeeded",
            "eliza_missing_numeric_score",
            "mixed_comparison_signatures",
            "unsupported",
            "missing",
            "unsupported_real_cells",
            "matrix_contract_incomplete",
            "missing_matrix_contract",
            "invalid_json",
            "non_object_json",
            "no_selected_benchmarks",
            "no_selected_latest_rows",
        ):
            assert reasons[reason] > 0, reason

    def test_the_orchestrators_findings_are_named_counted_and_ordered_alike(
        self, reports: list[dict[str, Any]]
    ) -> None:
        for job in reports:
            gate = job["gate"]
            ours = [f for f in job["ours"]["findings"] if not f["extra"]]
            theirs = job["theirs"]["findings"]
            if job["variant"] == "imported_ledger":  # no directory: the ledger's latest rows
                theirs = [as_ledger(f, job["dir"]) for f in theirs]
            assert Counter(f["reason"] for f in ours) == Counter(f["reason"] for f in theirs), (
                described(job)
            )
            assert identities(gate, ours) == identities(gate, theirs), described(job)

    def test_the_ledger_that_imported_the_folder_is_checked_too(
        self, reports: list[dict[str, Any]]
    ) -> None:
        over_ledger = [job for job in reports if job["variant"] == "imported_ledger"]
        assert len(over_ledger) == len(GATES) * 4
        assert any(job["theirs"]["findings"] for job in over_ledger)

    def test_the_report_carries_the_orchestrators_keys_and_values(
        self, reports: list[dict[str, Any]]
    ) -> None:
        for job in reports:
            if job["variant"] == "imported_ledger":
                assert job["ours"]["latest_dir"] is None  # no directory was read
                continue
            for key in (*REPORT_KEYS[job["gate"]], "ok", "findings"):
                assert key in job["ours"], (described(job), key)
            for key in REPORT_KEYS[job["gate"]]:
                assert job["ours"][key] == job["theirs"][key], (described(job), key)

    def test_extra_findings_are_labelled_and_findings_of_either_kind_exit_1(
        self, reports: list[dict[str, Any]]
    ) -> None:
        extra = [f for job in reports for f in job["ours"]["findings"] if f["extra"]]
        assert {f["reason"] for f in extra} >= {"score_spread_exceeds_tolerance"}
        assert not {f["reason"] for f in extra} & {
            f["reason"] for job in reports for f in job["theirs"]["findings"]
        } - {"no_selected_latest_rows", "no_selected_benchmarks"}
        for job in reports:
            assert job["ours"]["ok"] is (not job["ours"]["findings"])
            assert job["exit_code"] == (0 if job["ours"]["ok"] else 1)
            if not any(f["extra"] for f in job["ours"]["findings"]):
                assert job["ours"]["ok"] is job["theirs"]["ok"], described(job)
