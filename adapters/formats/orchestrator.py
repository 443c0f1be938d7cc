"""The ElizaOS benchmark orchestrator's results (ORCHESTRATOR.md), and HyperliquidBench runs.

Files read: `orchestrator.sqlite` (or any SQLite file with a `benchmark_runs`
table: every vintage, with or without the migration columns; its `-wal` file is
part of it), `latest/`, `quarantine/` and `baselines/` row files (wherever they
sit: a row is a JSON object with run_id, benchmark_id, agent, provider, model and
status), `viewer_data.json`, `comparisons/compare-<id>.json`, and
HyperliquidBench `eval_score.json` (with its `run_meta.json`).

`latest/index.json` states no runs (it repeats its rows' run_id, status and score
without provider or model), but its `matrix_contract` states each benchmark's
rules: the harnesses a complete row needs (its required cells), the compatible
ones and why the others cannot run it. Importing the index (alone, or in its
latest/ folder) declares those rules (`declares`, `rules`); an index without a
matrix contract, or whose contract knows no benchmark ("adapter discovery
unavailable"), declares nothing. A row that sits beside the index is checked
against it: the same run_id with another status (after the orchestrator's own
nonzero-return-code repair) or score is an error naming both.

The run key is the orchestrator's run_id, whichever file states the run, and
every file states it with the same record (see `orchestrator_rows`), so
importing the database, the latest rows and viewer_data.json gives one run each.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchledger.adapters.formats import orchestrator_hyperliquid as hyperliquid
from benchledger.adapters.formats.common import Units, loads, read_bytes
from benchledger.adapters.formats.common import read_json as load_json
from benchledger.adapters.formats.orchestrator_sources import (
    SQLITE_MAGIC,
    parse_comparison,
    parse_row_file,
    parse_sqlite,
    parse_unit,
    parse_viewer,
    stream_sqlite,
    stream_units,
    unit_digest,
    unit_key,
    unit_weight,
    wal_file,
)
from benchledger.domain.errors import InputFormatError
from benchledger.domain.matrix import AgentRules, rules_from_matrix_contract
from benchledger.domain.records import GroupRecord, RunRecord, SkipRecord

NAME = "orchestrator"
SYSTEM = "eliza-orchestrator"
DB_NAME = "orchestrator.sqlite"
ROW_KEYS = frozenset({"run_id", "benchmark_id", "agent", "provider", "model", "status"})
INDEX_NAME = "index.json"
# Where declared rules say they come from: the same contract imported from anywhere is
# the same rule, so importing it again appends nothing.
CONTRACT_SOURCE = "orchestrator latest/index.json matrix_contract"


def detect(path: Path, head: bytes) -> bool:
    if head.startswith(SQLITE_MAGIC):
        return path.name == DB_NAME or _has_runs_table(path)
    if path.suffix.lower() != ".json" or path.name == "index.json":
        return False
    if path.name == hyperliquid.SCORE_FILE:
        return b'"finalScore"' in head
    if not head.lstrip().startswith(b"{"):
        return False
    start = head[:512]
    if b'"comparison_id"' in start:
        return True
    if b'"generated_at"' in start and b'"runs"' in head:
        return True
    if b'"benchmark_id"' in head and b'"agent"' in head:
        return _is_row(path)
    return False


def _has_runs_table(path: Path) -> bool:
    try:
        conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return False
    try:
        found = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'benchmark_runs'"
        ).fetchone()
        return found is not None
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def _sniffed(path: Path) -> Any:
    """The JSON of a file being recognised: a key stated twice does not hide what the
    file is (reading it then refuses the key, by name)."""
    return loads(str(path), read_bytes(path), unique_keys=False)


def _is_row(path: Path) -> bool:
    try:
        doc = _sniffed(path)
    except (OSError, InputFormatError):
        return False
    return isinstance(doc, dict) and doc.keys() >= ROW_KEYS


def members(path: Path) -> list[Path]:
    """The database's write-ahead log, a score file's run_meta.json: part of the result."""
    if path.name == hyperliquid.SCORE_FILE:
        meta = hyperliquid.meta_file(path)
        return [meta] if meta.is_file() else []
    wal = wal_file(path)
    return [wal] if path.suffix != ".json" and wal.is_file() else []


def parse(
    path: Path, data: bytes, defaults: dict[str, Any] | None = None
) -> Iterator[RunRecord | SkipRecord | GroupRecord]:
    """Runs and skips of one orchestrator file; `defaults` only fill what a
    HyperliquidBench run leaves unsaid (its model and provider)."""
    if data.startswith(SQLITE_MAGIC):
        yield from parse_sqlite(path, data)
        return
    if path.name == hyperliquid.SCORE_FILE:
        yield hyperliquid.parse(path, data, defaults or {})
        return
    doc = load_json(path, data)
    if not isinstance(doc, dict):
        raise InputFormatError(str(path), "expected a JSON object")
    if "comparison_id" in doc:
        yield from parse_comparison(path, doc)
    elif "generated_at" in doc and "runs" in doc:
        yield from parse_viewer(path, doc)
    else:
        yield from parse_row_file(path, doc)


def stream(
    path: Path, defaults: dict[str, Any] | None = None
) -> Iterator[RunRecord | SkipRecord | GroupRecord]:
    """`parse`, reading an orchestrator.sqlite in batches of rows from a copy of its file
    (a 50,000-row database is hundreds of MiB); other files are small and read whole."""
    with path.open("rb") as f:
        head = f.read(len(SQLITE_MAGIC))
    if head == SQLITE_MAGIC:
        yield from stream_sqlite(path)
    else:
        yield from parse(path, read_bytes(path), defaults)


def units(path: Path) -> Units | None:
    """An orchestrator.sqlite as units a child process may read while either process
    parses them (`stream_units`, `parse_unit`); None for the other files."""
    with path.open("rb") as f:
        head = f.read(len(SQLITE_MAGIC))
    if head != SQLITE_MAGIC:
        return None
    name = str(path)
    return Units(
        lambda: stream_units(path),
        lambda unit: parse_unit(name, unit),
        unit_weight,
        key=unit_key,
        digest=unit_digest,
    )


def declares(path: Path, head: bytes) -> bool:
    """An orchestrator index (`latest/index.json`: an object whose `latest` is an object,
    or with a `matrix_contract`); `rules` reads what it declares. One that is not JSON
    but opens as the orchestrator writes it (keys sorted) is one, so that it fails."""
    if path.name != INDEX_NAME or not head.lstrip().startswith(b"{"):
        return False
    try:
        doc = _sniffed(path)
    except (OSError, InputFormatError):
        return b'"benchmark_comparability"' in head[:512]
    return isinstance(doc, dict) and (
        "matrix_contract" in doc or isinstance(doc.get("latest"), dict)
    )


def rules(path: Path, data: bytes) -> dict[str, AgentRules] | None:
    """Each benchmark's rules as the index's matrix contract states them (None: the index
    has no matrix contract); a malformed contract is an InputFormatError naming the field."""
    doc = load_json(path, data)
    name = str(path)
    if not isinstance(doc, dict):
        raise InputFormatError(name, "expected a JSON object (an orchestrator index)")
    if "matrix_contract" not in doc:
        return None
    contract = doc["matrix_contract"]
    if not isinstance(contract, dict):
        raise InputFormatError(name, "must be an object", field="matrix_contract")
    benchmarks = contract.get("benchmarks", {})
    if not isinstance(benchmarks, dict):
        raise InputFormatError(name, "must be an object", field="matrix_contract.benchmarks")
    for benchmark, entry in benchmarks.items():
        where = f"matrix_contract.benchmarks.{benchmark}"
        if not benchmark:
            raise InputFormatError(name, "a benchmark id must not be empty", field=where)
        if not isinstance(entry, dict):
            raise InputFormatError(name, "must be an object", field=where)
        listed = entry.get("compatible_harnesses", [])
        if not isinstance(listed, list) or not all(isinstance(h, str) and h for h in listed):
            raise InputFormatError(
                name, "must be a list of harness names", field=f"{where}.compatible_harnesses"
            )
        cells = entry.get("cells")
        if not isinstance(cells, dict):
            raise InputFormatError(name, "must be an object", field=f"{where}.cells")
        for harness, cell in cells.items():
            at = f"{where}.cells.{harness}"
            if not harness:
                raise InputFormatError(name, "a harness name must not be empty", field=at)
            if not isinstance(cell, dict):
                raise InputFormatError(name, "must be an object", field=at)
            if not isinstance(cell.get("required"), bool):
                raise InputFormatError(name, "must be true or false", field=f"{at}.required")
            reason = cell.get("reason")
            if reason is not None and not isinstance(reason, str):
                raise InputFormatError(name, "must be a string", field=f"{at}.reason")
    return rules_from_matrix_contract(contract, CONTRACT_SOURCE)
