"""The publishability gate: each published latest row, scanned as the orchestrator's
`validate-latest-publishability` scans a latest/ file, plus benchledger's extra checks.

What is scanned is the row as published: a directory's file as it is on disk, a ledger
row as `export-latest` would write it, so a ledger and its export give the same findings.
The orchestrator's findings name the file and the JSON path (`$.extra_config.sample`);
every marker is reported where it sits, not only the first of a row.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from benchledger.adapters.publication.export_files import file_names
from benchledger.adapters.publication.gate_findings import (
    Finding,
    finding,
    finite,
    named,
    short_value,
)
from benchledger.adapters.publication.publication import Publication, PublishedFile
from benchledger.domain.publication import (
    NON_REAL_FLAGS,
    TEXT_MARKERS,
    WARNING_MARKERS,
    agent_marker,
    identity_marker,
)

_FALSY: tuple[Any, ...] = (False, None, "", 0, [], {})
# Made once: `isinstance(x, dict | list)` builds the union anew at every call, and `scan`
# asks it of every value of every row.
_CONTAINER: tuple[type, ...] = (dict, list)


def published_files(pub: Publication) -> list[PublishedFile]:
    """The latest/ files the gate reads: a directory's own, or the ledger's latest rows as
    `export-latest` writes them (under the same file names)."""
    if pub.files is not None:
        return list(pub.files)
    from benchledger.adapters.publication.exports import LatestExport
    from benchledger.adapters.publication.queries import Queries

    # Writing one row's payload reads the publication only, never the queries.
    exporter = LatestExport(pub, cast(Queries, None), Path("latest"))
    names = file_names(sorted(pub.latest))
    return [
        PublishedFile(names[key], exporter.row_payload("latest", row), key=key)
        for key, row in sorted(pub.latest.items(), key=lambda item: names[item[0]])
    ]


def publishability(pub: Publication) -> list[Finding]:
    """The orchestrator's findings per latest file, then benchledger's extra ones."""
    out: list[Finding] = []
    selected = 0
    marked: dict[str, str | None] = {}  # texts already looked at: rows repeat most of theirs
    for published in published_files(pub):
        if published.error is not None:
            out.append(_file_finding(published))
            continue
        payload = published.payload
        assert isinstance(payload, dict)
        if not pub.selects(str(payload.get("benchmark_id") or "").strip()):
            continue
        selected += 1
        where = _where(published)
        for path, reason, value in (*_row_contract(payload), *scan(payload, marked=marked)):
            out.append(located(published.name, path, reason, value, **where))
    if pub.filtered and selected == 0:
        directory = pub.latest_dir or "latest"
        out.append(located(directory, ".", "no_selected_latest_rows", FILTERED_OUT))

    return out + extra_publishability(pub)


FILTERED_OUT = "filters excluded every latest row"


def located(file: str, path: str, reason: str, value: str, **detail: Any) -> Finding:
    """An orchestrator finding in a file at a JSON path; its scope is where it sits."""
    return named(f"{file}{path}", reason, value, file=file, path=path, **detail)


def _where(published: PublishedFile) -> dict[str, Any]:
    """The benchmark and agent a file's findings are about, where it is a row."""
    if published.key is None:
        return {}
    return {"benchmark_id": published.key[0], "agent": published.key[1]}


def _file_finding(published: PublishedFile) -> Finding:
    """A latest/ file that is no JSON object: the orchestrator names it by its full path
    when it is no JSON at all."""
    if published.error == "invalid_json":
        return located(str(published.full_path), ".", "invalid_json", str(published.payload))
    return located(published.name, ".", "non_object_json", short_value(published.payload))


def _row_contract(payload: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    status = payload.get("status")
    if status != "succeeded":
        yield "$.status", "latest_row_not_succeeded", short_value(status)
    score = payload.get("score")
    if not finite(score):
        yield "$.score", "latest_row_missing_numeric_score", short_value(score)


def scan(
    value: Any, json_path: str = "$", *, marked: dict[str, str | None] | None = None
) -> Iterator[tuple[str, str, str]]:
    """(path, reason, value) for every non-real marker in a payload, depth first.

    Scalars are checked where they stand, and a path is made only for what is reported
    or descended into: a payload holds thousands of scalars, and a generator or a path
    per value cost most of the gate. `marked`: each text's marker (or None) once looked
    at, kept by the caller across the payloads it scans."""
    if marked is None:
        marked = {}
    if isinstance(value, dict):
        for key, child in value.items():
            checks = _KEY_CHECKS.get(key)
            if checks is None:
                checks = _key_checks(key)
            if checks:
                yield from _checked(checks, f"{json_path}.{key}", child)
            if isinstance(child, _CONTAINER):
                yield from scan(child, f"{json_path}.{key}", marked=marked)
            elif isinstance(child, str):
                reason = _marker(marked, child)
                if reason is not None:
                    yield f"{json_path}.{key}", reason, short_value(child)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            if isinstance(child, _CONTAINER):
                yield from scan(child, f"{json_path}[{index}]", marked=marked)
            elif isinstance(child, str):
                reason = _marker(marked, child)
                if reason is not None:
                    yield f"{json_path}[{index}]", reason, short_value(child)
    elif isinstance(value, str):
        reason = _marker(marked, value)
        if reason is not None:
            yield json_path, reason, short_value(value)


# What a value is checked for by its key's name (bits, `_key_checks`): most keys ask for
# nothing, and payloads repeat their keys row after row, so each key's answer is kept.
_FLAG, _SOURCE, _WARNINGS = 1, 2, 4
_KEY_CHECKS: dict[Any, int] = {}
_KEYS_KEPT = 4096


def _key_checks(key: Any) -> int:
    name = str(key).strip().lower()
    checks = (
        (_FLAG if name in NON_REAL_FLAGS else 0)
        | (_SOURCE if name == "dataset_source" else 0)
        | (_WARNINGS if name == "publication_warnings" else 0)
    )
    if type(key) is str:  # kept for text only: 1 and True are one key to a dict
        if len(_KEY_CHECKS) >= _KEYS_KEPT:
            _KEY_CHECKS.clear()
        _KEY_CHECKS[key] = checks
    return checks


def _checked(checks: int, path: str, child: Any) -> Iterator[tuple[str, str, str]]:
    """What the checks of its key find in a value at `path`."""
    if checks & _FLAG and not _falsy(child):
        yield path, "truthy_non_real_flag", short_value(child)
    if checks & _SOURCE and _lower(child) == "sample":
        yield path, "sample_dataset_source", short_value(child)
    if checks & _WARNINGS and isinstance(child, list):
        for index, warning in enumerate(child):
            lowered = str(warning).strip().lower()
            if lowered == "sample_task_set" or any(m in lowered for m in WARNING_MARKERS):
                yield f"{path}[{index}]", "non_real_publication_warning", short_value(warning)


def _marker(marked: dict[str, str | None], value: str) -> str | None:
    """`_text_marker` of a text, each text looked at once (`marked` keeps the answers)."""
    if value in marked:
        return marked[value]
    reason = marked[value] = _text_marker(value)
    return reason


def _text_marker(value: str) -> str | None:
    """The reason a text is reported for, if any."""
    lowered = value.lower()  # no marker begins or ends with a space: no need to strip
    # The orchestrator's order: a string holding "mock runtime" is reported as "mock run".
    for marker in TEXT_MARKERS:
        if marker in lowered:
            return f"non_real_text_marker:{marker}"
    return None


def _lower(value: Any) -> str | None:
    return value.strip().lower() if isinstance(value, str) else None


def _falsy(value: Any) -> bool:
    """The orchestrator's `value in (False, None, "", 0, [], {})`: 0.0 too."""
    return value in _FALSY


def extra_publishability(pub: Publication) -> list[Finding]:
    """benchledger's own checks: every key has a publishable row (unless its agent cannot
    run the benchmark), no row names a stand-in (agent `mock`, a mock model), no row is
    demo data, and a scope without filters still has latest rows."""
    out: list[Finding] = []
    for key in sorted(set(pub.latest) | set(pub.quarantine)):
        scope = "::".join(key)
        where = {"benchmark_id": key[0], "agent": key[1]}
        row = pub.latest.get(key)
        if row is None:
            held = pub.quarantine[key]
            if held.get("quarantine_reason") == "incompatible_harness" or pub.unsupported(*key):
                continue  # the agent cannot run the benchmark: no row is expected
            out.append(
                finding(
                    scope,
                    "no_publishable_row",
                    held.get("quarantine_reason"),
                    run_id=held.get("run_id"),
                    **where,
                )
            )
            continue
        label = _label_marker(key[1], row)
        if label is not None:
            out.append(
                finding(scope, label, label_value(key[1], row), run_id=row["run_id"], **where)
            )
        demo = pub.group_marker(row)
        if demo is not None:
            group = f"run group {row.get('run_group_id')}"
            out.append(finding(scope, demo, group, run_id=row["run_id"], **where))
    if not pub.latest and not pub.filtered:
        out.append(finding("latest", "no_selected_latest_rows", "0 latest rows in scope"))
    return out


def _label_marker(agent: str, row: dict[str, Any]) -> str | None:
    """A label that names a stand-in: the agent's (`mock`, `smoke`...), or a mock model.
    The ledger's `latest` never holds such a row; a directory on disk may."""
    marker = agent_marker(agent)
    if marker is None and identity_marker("-", row.get("provider"), row.get("model")) == (
        "mock_model"
    ):
        marker = "mock_model"
    return marker


def label_value(agent: str, row: dict[str, Any]) -> str:
    if agent_marker(agent) is not None:
        return f"agent={agent}"
    return f"provider={row.get('provider')} model={row.get('model')}"
