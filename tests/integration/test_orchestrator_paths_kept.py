"""A ledger imported before the orchestrator importer kept host paths whole holds them
cut below the results root (or to their base name): importing the same rows again states
the same facts, whole, and is no conflict; another path still is one."""

from __future__ import annotations

import json
from pathlib import Path

from benchledger.domain.host_paths import strip_host_paths
from tests.conftest import Invoke
from tests.unit.test_format_orchestrator import HOST, db_row, make_db

PATHS = ("cwd", "stdout_path", "stderr_path", "result_json_path", "artifacts_json")


def cut(row: dict[str, object]) -> dict[str, object]:
    """The row as an earlier import recorded it: its paths cut."""
    out = dict(row)
    for name in PATHS:
        value = out[name]
        if name.endswith("_json"):
            out[name] = json.dumps(strip_host_paths(json.loads(str(value))))
        else:
            out[name] = strip_host_paths(value)
    return out


def test_whole_paths_of_a_run_recorded_with_cut_ones_are_the_same_facts(
    invoke: Invoke, tmp_path: Path
) -> None:
    row = db_row()
    assert (
        cut(row)["stdout_path"]
        == "rg_20260512T101455Z_9b1e7a40/bfcl__bfcl/" + HOST.rsplit("/", 1)[-1] + "/stdout.log"
    )
    invoke("import", str(make_db(tmp_path / "then" / "orchestrator.sqlite", [cut(row)])))
    report = json.loads(
        invoke(
            "import", str(make_db(tmp_path / "now" / "orchestrator.sqlite", [row])), "--json"
        ).stdout
    )
    assert [r["state"] for r in report] == ["unchanged"]


def test_a_path_stated_otherwise_is_still_a_conflict(invoke: Invoke, tmp_path: Path) -> None:
    row = db_row()
    invoke("import", str(make_db(tmp_path / "then" / "orchestrator.sqlite", [cut(row)])))
    moved = {**row, "stdout_path": "/srv/elsewhere/other.log"}
    result = invoke(
        "import", str(make_db(tmp_path / "now" / "orchestrator.sqlite", [moved])), expect=1
    )
    assert "provenance.source_columns.stdout_path" in result.stderr
