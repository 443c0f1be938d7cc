"""A latest/ directory on disk, in the orchestrator's shape, read as a `Publication`.

So that the gates check a directory with the same finding functions as the ledger
(`gates.py`), not a second implementation of them. The directory holds one row per
file, `<benchmark>__<agent>.json` (any `*.json` but `index.json`), and optionally
`index.json` (its `matrix_contract` states each benchmark's required and compatible
harnesses; its `demo_data` the rows that are demo data). A directory named `latest`
(as `export-latest` and the orchestrator write it) also brings in its siblings
`quarantine/` and `baselines/`, when present. A calibration harness's row (agent
`*_v1`, or `synthetic: true`) is a baseline wherever it sits, as the orchestrator
files it.

What is on disk is taken as it is: every row in latest/ is a latest row, whatever it
says of itself; the gates then say what is wrong with it. A latest/ file that is no
JSON, or no JSON object, is a publishability finding (`invalid_json`,
`non_object_json`), as in the orchestrator's validators; any other file that cannot be
read as a row is an error naming the file and the field. The index's matrix contract is
kept as stated: the readiness gate reads its cells and counters as they are written.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchledger.adapters.publication import code_agent_contract
from benchledger.adapters.publication.publication import Key, Publication, PublishedFile
from benchledger.domain.errors import InputFormatError
from benchledger.domain.matrix import CANONICAL_HARNESSES, AgentRules, rules_from_matrix_contract
from benchledger.domain.publication import DEMO_GROUP_KIND, is_synthetic

INDEX = "index.json"
UNSTATED = "latest/ without a matrix contract for it: the real harnesses"
SIBLINGS = ("quarantine", "baselines")
# What a row may hold, and the JSON type each field must have when present.
_TEXT = ("benchmark_id", "agent", "run_id")
_OPTIONAL_TEXT = (
    "run_group_id",
    "signature",
    "comparison_signature",
    "status",
    "provider",
    "model",
    "unit",
    "quarantine_reason",
    "updated_at",
)
_OBJECTS = ("metrics", "extra_config")


@dataclass(frozen=True)
class LatestDir:
    """What one read of the directory saw: the publication, the findings the directory
    itself gives (no index, no matrix contract), and a digest of every file read."""

    publication: Publication
    findings: list[dict[str, Any]] = field(default_factory=list)
    files: int = 0
    sha256: str = ""
    index: dict[str, Any] = field(default_factory=dict)

    def params(self, directory: Path) -> dict[str, Any]:
        """What a verdict over the directory records of it."""
        return {
            "latest_dir": str(directory),
            "files": self.files,
            "files_sha256": self.sha256,
            "index_ledger_position": self.index.get("ledger_position"),
            "index_ledger_head_sha256": self.index.get("ledger_head_sha256"),
        }


def load(
    directory: Path,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    *,
    position: int,
    head_sha256: str,
) -> LatestDir:
    """The directory as a Publication; `position` and `head_sha256` are the ledger's,
    where the verdict is recorded."""

    def keep(name: str) -> bool:
        return (not include or name in include) and name not in exclude

    digest = hashlib.sha256()
    latest: dict[Key, dict[str, Any]] = {}
    quarantine: dict[Key, dict[str, Any]] = {}
    baselines: dict[Key, dict[str, Any]] = {}
    group_kinds: dict[str, str] = {}
    where: dict[tuple[str, Key], Path] = {}
    read: list[PublishedFile] = []
    folders = [("latest", directory)]
    if directory.name == "latest":
        folders += [(name, directory.parent / name) for name in SIBLINGS]
    files = 0
    for table, folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.json")):
            if path.name == INDEX or not path.is_file():
                continue
            data = path.read_bytes()
            files += 1
            digest.update(f"{table}/{path.name}\0{len(data)}\0".encode())
            digest.update(data)
            if table == "latest":
                published = _published(path, data)
                read.append(published)
                if published.error is not None:
                    continue  # a publishability finding, as the orchestrator's
                payload = published.payload
            else:
                payload = _json(path, data)
            row = _row(path, payload, table)
            if table == "latest":
                read[-1] = replace(read[-1], key=(row["benchmark"], row["agent"]))
            key = (row["benchmark"], row["agent"])
            if not keep(key[0]):
                continue
            kind = "baselines" if row["synthetic"] else table
            target = {"latest": latest, "quarantine": quarantine, "baselines": baselines}[kind]
            if key in target:
                first = where[(kind, key)]
                raise InputFormatError(
                    str(path),
                    f"a second row of {key[0]}::{key[1]} (the first is {first})",
                    field="benchmark_id",
                )
            target[key], where[(kind, key)] = row, path
            if row.get("demo_data") is True and target is latest:
                group_kinds[str(row.get("run_group_id"))] = DEMO_GROUP_KIND
    index = _index(directory / INDEX, digest)
    files += (directory / INDEX).is_file()
    contract = index.get("matrix_contract")
    rules = _rules(contract) if isinstance(contract, dict) else {}
    listed = contract.get("benchmarks") if isinstance(contract, dict) else None
    registered = {str(b) for b in listed} if isinstance(listed, dict) else set()
    stated = None
    if isinstance(contract, dict):
        stated = {**contract, "benchmarks": {b: e for b, e in (listed or {}).items() if keep(b)}}
    # A benchmark the contract does not state (or a directory without one), or whose
    # entry states no cells, needs a row of each real harness, as the orchestrator's
    # validators require: never of an agent that only happens to have a row there (a
    # mock, a calibration baseline).
    # A benchmark benchledger's export states no required agents of needs none.
    unstated = {
        str(b)
        for b, e in (listed if isinstance(listed, dict) else {}).items()
        if isinstance(e, dict) and e.get("required_agents_stated") is False
    }
    for benchmark in (*(b for b, _ in (*latest, *quarantine)), *registered):
        if benchmark not in rules and benchmark not in unstated:
            rules[benchmark] = AgentRules(required=CANONICAL_HARNESSES, source=UNSTATED)
    for name in index.get("demo_data") or []:
        benchmark, _, agent = str(name).partition("::")
        marked = latest.get((benchmark, agent))
        if marked is not None:
            group_kinds[str(marked.get("run_group_id"))] = DEMO_GROUP_KIND
    publication = Publication(
        position=position,
        head_sha256=head_sha256,
        latest=latest,
        quarantine=quarantine,
        baselines=baselines,
        benchmarks={},
        generated_at=index.get("updated_at") if isinstance(index.get("updated_at"), str) else None,
        registered=frozenset(b for b in registered if keep(b)),
        rules={b: r for b, r in rules.items() if keep(b)},
        group_kinds=group_kinds,
        include=tuple(include),
        exclude=tuple(exclude),
        latest_dir=str(directory),
        files=tuple(read),
        stated_contract=stated,
    )
    return LatestDir(publication, [], files, digest.hexdigest(), index)


def _rules(contract: dict[str, Any]) -> dict[str, AgentRules]:
    """The contract's rules; every harness of a cell that is not `unsupported` may run
    the benchmark (the contract lists only the required ones as compatible)."""
    out = {}
    benchmarks = contract.get("benchmarks") or {}
    for benchmark, rule in rules_from_matrix_contract(contract, "latest_dir").items():
        cells = benchmarks[benchmark]["cells"]
        runnable = [h for h, c in cells.items() if c.get("state") != "unsupported"]
        compatible = tuple(dict.fromkeys([*(rule.compatible or ()), *runnable]))
        out[benchmark] = replace(rule, compatible=compatible)
    return out


def _json(path: Path, data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise InputFormatError(
            str(path), f"not UTF-8 text ({e.reason} at byte {e.start})"
        ) from None
    except json.JSONDecodeError as e:
        raise InputFormatError(str(path), f"invalid JSON: {e.msg}", line=e.lineno) from None


def _published(path: Path, data: bytes) -> PublishedFile:
    """A latest/ file as the publishability gate reads it: invalid JSON and a JSON value
    that is no object are its findings (as the orchestrator's), not errors."""
    try:
        payload = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise InputFormatError(
            str(path), f"not UTF-8 text ({e.reason} at byte {e.start})"
        ) from None
    except json.JSONDecodeError as e:
        return PublishedFile(path.name, str(e), error="invalid_json", full_path=path)
    if not isinstance(payload, dict):
        return PublishedFile(path.name, payload, error="non_object_json", full_path=path)
    return PublishedFile(path.name, payload, full_path=path)


def _row(path: Path, payload: Any, table: str) -> dict[str, Any]:
    """One row file as the gates read a row (the ledger's column names)."""
    if not isinstance(payload, dict):
        raise InputFormatError(str(path), "a latest row must be a JSON object")
    if code_agent_contract.is_code_agent_row(payload, path.name):
        return code_agent_contract.gate_row(path, payload, table)
    for name in _TEXT:
        value = payload.get(name)
        if not isinstance(value, str) or not value.strip():
            raise InputFormatError(str(path), "must be a non-empty string", field=name)
    for name in _OPTIONAL_TEXT:
        if payload.get(name) is not None and not isinstance(payload[name], str):
            raise InputFormatError(str(path), "must be a string or null", field=name)
    for name in _OBJECTS:
        if payload.get(name) is not None and not isinstance(payload[name], dict):
            raise InputFormatError(str(path), "must be an object or null", field=name)
    score = payload.get("score")
    if isinstance(score, str | list | dict):
        raise InputFormatError(str(path), "must be a number or null", field="score")
    agent = payload["agent"]
    return {
        "benchmark": payload["benchmark_id"],
        "agent": agent,
        "run_id": payload["run_id"],
        "run_group_id": payload.get("run_group_id"),
        "benchmark_directory": payload.get("benchmark_directory"),
        "signature": payload.get("signature"),
        "comparison_signature": payload.get("comparison_signature"),
        "status": payload.get("status"),
        "provider": payload.get("provider"),
        "model": payload.get("model"),
        "score": score,
        "unit": payload.get("unit"),
        "config": payload.get("extra_config") or {},
        "metrics": payload.get("metrics") or {},
        "error": payload.get("error"),
        "quarantine_reason": payload.get("quarantine_reason"),
        "updated_at": payload.get("updated_at"),
        "demo_data": payload.get("demo_data"),
        "synthetic": table == "baselines"
        or payload.get("synthetic") is True
        or is_synthetic(agent),
        "file": f"{table}/{path.name}",
    }


def _index(path: Path, digest: Any) -> dict[str, Any]:
    """index.json, or {} without one (readiness then finds `missing_matrix_contract`)."""
    if not path.is_file():
        return {}
    data = path.read_bytes()
    digest.update(f"latest/{INDEX}\0{len(data)}\0".encode())
    digest.update(data)
    index = _json(path, data)
    if not isinstance(index, dict):
        raise InputFormatError(str(path), "the index must be a JSON object")
    contract = index.get("matrix_contract")
    if contract is not None and not isinstance(contract, dict):
        raise InputFormatError(str(path), "must be an object", field="matrix_contract")
    benchmarks = (contract or {}).get("benchmarks")
    if benchmarks is not None and not isinstance(benchmarks, dict):
        raise InputFormatError(str(path), "must be an object", field="matrix_contract.benchmarks")
    demo = index.get("demo_data")
    if demo is not None and not isinstance(demo, list):
        raise InputFormatError(str(path), "must be a list of benchmark::agent", field="demo_data")
    return index
