"""results-matrix: a published number only where a current review signs it off."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Invoke
from tests.helpers import run_json, write_json

SCORES = {("bfcl", "codex"): 0.8, ("bfcl", "eliza"): 0.82, ("gaia", "codex"): 0.4}
SCORES[("gaia", "eliza")] = 0.41


def import_runs(invoke: Invoke, tmp_path: Path, *docs: dict[str, Any]) -> None:
    paths = [str(write_json(tmp_path / f"{d['run_key']}.json", d)) for d in docs]
    invoke("import", *paths)


def review(invoke: Invoke, tmp_path: Path, name: str, *args: str) -> str:
    """Record a review and return its id (from the ledger, not from the receipt line)."""
    invoke(
        "review",
        "--no-run",
        "--reviewer",
        "ana",
        "--note",
        "ok",
        "--out",
        str(tmp_path / name),
        *args,
    )
    events = json.loads(invoke("events", "--json").stdout)
    return str([e for e in events if e["type"] == "ReviewRecorded"][-1]["stream"])


def newer(benchmark: str, agent: str, score: float) -> dict[str, Any]:
    """A later run of the same work, so it becomes the latest row."""
    return run_json(
        benchmark,
        agent,
        score=score,
        run_key=f"{benchmark}-{agent}-later",
        started_at="2026-05-13T10:15:00+00:00",
        ended_at="2026-05-13T10:21:41+00:00",
    )


def run_ids(invoke: Invoke) -> dict[tuple[str, str], str]:
    rows = json.loads(invoke("latest", "--json").stdout)
    return {(r["benchmark"], r["agent"]): r["run_id"] for r in rows}


def matrix_rows(text: str) -> dict[str, list[str]]:
    """The matrix table's rows by benchmark (the first table of the file)."""
    table = text.split("\n\n")[3].splitlines()
    return {
        line.split(" | ")[0][2:]: [c.strip(" |") for c in line.split(" | ")[1:]]
        for line in table[2:]
    }


def reasons(text: str) -> list[str]:
    table = text.split("## Why a cell is not run\n\n")[1]
    return [line for line in table.splitlines() if not line.startswith(("| benchmark", "|---"))]


@pytest.fixture
def ledger(invoke: Invoke, tmp_path: Path) -> Invoke:
    """Two benchmarks x two agents, every row publishable."""
    docs = [run_json(b, a, score=score, run_key=f"{b}-{a}") for (b, a), score in SCORES.items()]
    import_runs(invoke, tmp_path, *docs)
    return invoke


@pytest.fixture
def reviewed(ledger: Invoke, tmp_path: Path) -> str:
    """Only bfcl reviewed."""
    return review(ledger, tmp_path, "bfcl-review", "--include-benchmarks", "bfcl")


class TestOnlyReviewedCellsShowNumbers:
    def test_only_the_reviewed_benchmarks_cells_show_their_scores(
        self, ledger: Invoke, reviewed: str
    ) -> None:
        text = ledger("results-matrix").stdout
        runs = run_ids(ledger)
        rows = matrix_rows(text)
        assert text.splitlines()[0] == "# Results matrix"
        assert text.count("| benchmark | codex | eliza |") == 1
        assert rows["bfcl"] == [
            f"0.8 accuracy (run {runs[('bfcl', 'codex')][:8]}, review {reviewed[:8]})",
            f"0.82 accuracy (run {runs[('bfcl', 'eliza')][:8]}, review {reviewed[:8]})",
        ]
        assert rows["gaia"] == ["not-run (not reviewed)", "not-run (not reviewed)"]
        assert reasons(text) == [
            "| gaia | codex | not reviewed: no passing review covers gaia |",
            "| gaia | eliza | not reviewed: no passing review covers gaia |",
        ]
        assert "0.4" not in text and "0.41" not in text

    def test_nothing_reviewed_shows_no_number_at_all(self, ledger: Invoke) -> None:
        rows = matrix_rows(ledger("results-matrix").stdout)
        assert rows == {
            "bfcl": ["not-run (not reviewed)"] * 2,
            "gaia": ["not-run (not reviewed)"] * 2,
        }

    def test_is_stamped_with_the_ledger_position_and_head_hash(
        self, ledger: Invoke, reviewed: str, db: Path
    ) -> None:
        text = ledger("results-matrix").stdout
        with closing(sqlite3.connect(db)) as conn:
            position, head = conn.execute(
                "SELECT position, chain_sha256 FROM chain ORDER BY position DESC LIMIT 1"
            ).fetchone()
        assert position == json.loads(ledger("events", "--json").stdout)[-1]["position"]
        assert f"- Ledger position: `{position}`\n- Ledger head sha256: `{head}`\n" in text

    def test_a_blocked_review_signs_nothing_off(self, ledger: Invoke, tmp_path: Path) -> None:
        ledger(
            "review",
            "--no-run",
            "--reviewer",
            "ana",
            "--note",
            " ",
            "--out",
            str(tmp_path / "r"),
            expect=1,
        )
        text = ledger("results-matrix").stdout
        assert matrix_rows(text)["bfcl"] == ["not-run (not reviewed)"] * 2
        assert " was blocked)" in reasons(text)[0]

    def test_a_review_of_each_agents_newest_rows_does_not_vouch_for_the_latest_table(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        review(ledger, tmp_path, "newest", "--include-benchmarks", "bfcl", "--selection", "newest")
        text = ledger("results-matrix").stdout
        assert matrix_rows(text)["bfcl"] == ["not-run (not reviewed)"] * 2
        assert "signed off --selection newest rows)" in reasons(text)[0]

    def test_cells_are_gated_with_the_tolerance_their_review_used(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        import_runs(ledger, tmp_path, newer("bfcl", "codex", 0.5))
        review(ledger, tmp_path, "wide", "--include-benchmarks", "bfcl", "--tolerance", "0.5")
        assert matrix_rows(ledger("results-matrix").stdout)["bfcl"][0].startswith("0.5 accuracy")

    def test_a_gate_finding_keeps_an_unreviewed_cell_out_with_that_finding(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        import_runs(ledger, tmp_path, newer("bfcl", "codex", 0.1))
        text = ledger("results-matrix", "--required-agents", "codex,eliza").stdout
        assert matrix_rows(text)["bfcl"][0] == "not-run (gate finding, not reviewed)"
        assert any(
            "| bfcl | codex | gate finding: comparability/score_spread_exceeds_tolerance: " in r
            for r in reasons(text)
        )

    def test_columns_follow_harnesses_and_a_missing_agent_reads_no_run(
        self, ledger: Invoke, reviewed: str
    ) -> None:
        text = ledger("results-matrix", "--harnesses", "eliza,hermes").stdout
        assert "| benchmark | eliza | hermes |" in text
        assert matrix_rows(text)["bfcl"][1] == "not-run (no run)"
        assert "| bfcl | hermes | no run |" in reasons(text)

    def test_every_registered_benchmark_is_a_row(self, ledger: Invoke, reviewed: str) -> None:
        ledger("high-score", "set", "hellaswag", "--label", "sota", "--value", "0.9")
        rows = matrix_rows(ledger("results-matrix").stdout)
        assert list(rows) == ["bfcl", "gaia", "hellaswag"]
        assert rows["hellaswag"] == ["", ""]  # no run, and no agent required of it
        required = ledger("results-matrix", "--required-agents", "codex,eliza").stdout
        assert matrix_rows(required)["hellaswag"] == ["not-run (no run, not reviewed)"] * 2

    def test_only_agents_with_a_row_or_required_have_a_cell(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        import_runs(ledger, tmp_path, newer("mmlu", "lm-eval", 0.6))
        text = ledger("results-matrix").stdout
        assert "| benchmark | codex | eliza | lm-eval |" in text
        rows = matrix_rows(text)
        assert rows["mmlu"] == ["", "", "not-run (not reviewed)"]
        assert rows["bfcl"][2] == ""
        assert not [r for r in reasons(text) if "| lm-eval |" in r and "| mmlu |" not in r]


class TestAnInvalidatedReviewedRun:
    def test_reads_not_run_review_out_of_date_and_check_of_the_old_file_names_it(
        self, ledger: Invoke, reviewed: str, tmp_path: Path
    ) -> None:
        committed = tmp_path / "RESULTS_MATRIX.md"
        written = ledger("results-matrix", "--out", str(committed))
        assert "Wrote " in written.stderr and "2 of 4 cells with a reviewed score" in written.stderr
        assert written.stdout == ""
        assert ledger("results-matrix", "--check", str(committed)).stdout == ""

        run = run_ids(ledger)[("bfcl", "codex")]
        ledger("invalidate", run, "--reason", "leaked test set")
        text = ledger("results-matrix").stdout
        assert matrix_rows(text)["bfcl"][0] == "not-run (quarantined, review out of date)"
        found = [r for r in reasons(text) if r.startswith("| bfcl | codex | review out of date")]
        assert len(found) == 1 and f"review {reviewed[:8]} at position " in found[0]
        assert "RunInvalidated)" in found[0]

        result = ledger("results-matrix", "--check", str(committed), expect=1)
        lines = result.stdout.splitlines()
        assert lines[0].startswith(
            f"bfcl/codex: 0.8 accuracy (run {run[:8]}, review {reviewed[:8]}) -> "
            "not-run (quarantined, review out of date) because quarantined: invalidated_run; "
            f"review out of date: review {reviewed[:8]}"
        )
        # The review covers the whole of bfcl, so its other cell is out of date as well.
        assert [line.split(":")[0] for line in lines] == ["bfcl/codex", "bfcl/eliza"]
        assert "Error: 2 cells of " in result.stderr and "no longer match" in result.stderr
        assert "Stamp differs: ledger position " in result.stderr

    def test_a_newer_review_that_went_stale_gives_way_to_an_older_current_one(
        self, ledger: Invoke, reviewed: str, tmp_path: Path
    ) -> None:
        everything = review(ledger, tmp_path, "all", "--tolerance", "0.5")
        rows = matrix_rows(ledger("results-matrix").stdout)
        assert all(f"review {everything[:8]})" in c for c in rows["bfcl"] + rows["gaia"])
        ledger("high-score", "set", "gaia", "--label", "sota", "--value", "0.9")
        text = ledger("results-matrix").stdout
        rows = matrix_rows(text)
        assert all(f"review {reviewed[:8]})" in c for c in rows["bfcl"])
        assert rows["gaia"] == ["not-run (review out of date)"] * 2
        assert "(first: position " in text and "HighScoreReferenced)" in text

    def test_a_log_rewritten_under_the_review_takes_its_numbers_back(
        self, ledger: Invoke, reviewed: str, db: Path
    ) -> None:
        with closing(sqlite3.connect(db)) as conn, conn:
            [position] = conn.execute("SELECT position FROM reviews").fetchone()
            conn.execute(
                "UPDATE chain SET chain_sha256 = ? WHERE position = ?", ("f" * 64, position)
            )
        text = ledger("results-matrix").stdout
        assert matrix_rows(text)["bfcl"] == ["not-run (review out of date)"] * 2
        assert "the ledger's hash there is not the one it saw (the log was rewritten)" in text


class TestCheck:
    def test_a_changed_stamp_with_the_same_cells_is_reported_and_passes(
        self, ledger: Invoke, reviewed: str, tmp_path: Path
    ) -> None:
        committed = tmp_path / "M.md"
        ledger("results-matrix", "--out", str(committed))
        ledger("high-score", "set", "gaia", "--label", "sota", "--value", "0.9")
        result = ledger("results-matrix", "--check", str(committed))
        assert result.stdout == ""
        assert "Stamp differs: ledger position " in result.stderr
        assert "Stamp differs: ledger head sha256 " in result.stderr
        assert "OK: every cell of " in result.stderr

    def test_a_number_edited_into_the_file_is_named(
        self, ledger: Invoke, reviewed: str, tmp_path: Path
    ) -> None:
        committed = tmp_path / "M.md"
        ledger("results-matrix", "--out", str(committed))
        text = committed.read_text()
        committed.write_text(
            text.replace("| gaia | not-run (not reviewed) |", "| gaia | 1.00 accuracy |")
        )
        result = ledger("results-matrix", "--check", str(committed), expect=1)
        assert result.stdout.startswith(
            "gaia/codex: 1.00 accuracy -> not-run (not reviewed) because not reviewed: "
        )
        assert "Stamp differs" not in result.stderr

    def test_a_file_that_is_no_results_matrix_is_an_error(
        self, ledger: Invoke, tmp_path: Path
    ) -> None:
        other = tmp_path / "README.md"
        other.write_text("# Something else\n")
        result = ledger("results-matrix", "--check", str(other), expect=1)
        assert "Error: " in result.stderr and "not a results matrix" in result.stderr

    def test_out_and_check_together_is_a_usage_error(self, ledger: Invoke, tmp_path: Path) -> None:
        committed = tmp_path / "M.md"
        ledger("results-matrix", "--out", str(committed))
        result = ledger(
            "results-matrix", "--out", str(committed), "--check", str(committed), expect=2
        )
        assert "give --out or --check, not both" in result.stderr

    def test_as_of_a_position_gives_the_file_written_then(
        self, ledger: Invoke, reviewed: str, tmp_path: Path
    ) -> None:
        committed = tmp_path / "M.md"
        ledger("results-matrix", "--out", str(committed))
        position = committed.read_text().split("- Ledger position: `")[1].split("`")[0]
        ledger("invalidate", run_ids(ledger)[("bfcl", "codex")], "--reason", "leaked")
        assert ledger("results-matrix", "--as-of", position).stdout == committed.read_text()

    def test_the_same_position_gives_the_same_bytes(self, ledger: Invoke, reviewed: str) -> None:
        assert ledger("results-matrix").stdout == ledger("results-matrix").stdout
