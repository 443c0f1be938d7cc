"""JUnit XML reports (pytest `--junitxml`, Maven Surefire, Terminal-Bench-style suites).

One file is one run: a harness writes one report per invocation, and its
`<testsuite>` elements group tests (modules, classes), they are not separate runs.
Testcases are the cells, keyed `classname::name` (the name alone without a
classname). When the same test appears in several suites (one suite per Python
version or per attempt) every key is qualified as `suite::classname::name`;
a testcase repeated within one suite (pytest reports a failure in call plus an
error in teardown as two testcases; parametrised tests may share a name) stays
its own cell, keyed `#2`, `#3`... in document order, so no result is lost.
Score = passed / (passed + failed + error): skipped tests are left out, and a
report with no test that ran has no score.

JUnit says nothing of benchmark, agent or model: `<property>` elements named
benchmark / agent / provider / model (and run_id) say it when present, else the
caller's defaults, else benchmark = the suite's name (or the `<testsuites>` name,
or the file name), agent = "junit", model = "unknown". Times come from suite
`timestamp`s (naive ones read as UTC); the end is the latest timestamp + time.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchledger.adapters.formats.common import DistinctKeys
from benchledger.adapters.formats.junit_xml import Case, Report, read_report
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell, RunHeader, RunRecord, SkipRecord
from benchledger.domain.signatures import canonical_json, sha256_hex, work_key

NAME = "junit"
SYSTEM = "junit"
IDENTITY = ("benchmark", "agent", "provider", "model")
FALLBACK = {"agent": "junit", "provider": "", "model": "unknown"}
_ROOT = re.compile(rb"<(?:[\w.-]+:)?testsuites?[\s>/]")
_SCORES = {"passed": 1.0, "failed": 0.0, "error": 0.0}


def detect(path: Path, head: bytes) -> bool:
    return path.suffix.lower() == ".xml" and _ROOT.search(head) is not None


def parse(
    path: Path, data: bytes, defaults: dict[str, Any] | None = None
) -> Iterator[RunRecord | SkipRecord]:
    """The file's one run; `defaults` name what the report does not (the runner knows)."""
    name = str(path)
    report = read_report(name, data)
    quirks: list[str] = []
    cells = _cells([c for s in report.suites for c in s.cases], quirks)
    counts = Counter(cell.outcome for cell in cells)
    ran = counts["passed"] + counts["failed"] + counts["error"]
    metrics: dict[str, Any] = {
        "tests": len(cells),
        "passed": counts["passed"],
        "failures": counts["failed"],
        "errors": counts["error"],
        "skipped": counts["skipped"],
    }
    duration = _duration(report)
    if duration is not None:
        metrics["time"] = duration
    published = _published(report)
    for key, value in published.items():
        if metrics[key] != value:
            quirks.append(f"published {key}={value} but the testcases give {metrics[key]}")
    if report.naive_timestamps:
        quirks.append("timestamps have no time zone: read as UTC")
    fields, run_id = _identity(name, report, defaults or {}, path)
    started, ended = _times(name, report)
    provenance: dict[str, Any] = {"suites": [s.ident for s in report.suites if s.top_level]}
    if report.name:
        provenance["testsuites"] = report.name
    if run_id:
        provenance["run_id"] = run_id
    if published:
        provenance["published"] = published
    if quirks:
        provenance["quirks"] = quirks
    header: dict[str, Any] = {
        **fields,
        "started_at": started,
        "ended_at": ended,
        "status": "succeeded" if cells else "error",
        "score": counts["passed"] / ran if ran else None,
        "unit": "pass_rate",
        "higher_is_better": True,
        "metrics": metrics,
        "error": None if cells else "the report holds no testcases",
        "provenance": provenance,
    }
    try:
        run = RunHeader.model_validate(header)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or None
        raise InputFormatError(name, first["msg"], field=where) from None
    key = run_id or _run_key(report, run, cells)
    yield RunRecord(header=run.model_copy(update={"run_key": key}), cells=tuple(cells))


def _cells(cases: list[Case], quirks: list[str]) -> list[Cell]:
    suites_of: dict[str, set[str]] = {}
    for case in cases:
        suites_of.setdefault(_key(case), set()).add(case.suite)
    by_suite = any(len(suites) > 1 for suites in suites_of.values())
    if by_suite:
        quirks.append("the same tests appear in several suites: cell keys name the suite")
    keys = DistinctKeys()
    cells = []
    for case in cases:
        base = f"{case.suite}::{_key(case)}" if by_suite else _key(case)
        cells.append(_cell(keys.key(base), case))
    repeated = keys.repeated()
    if repeated:
        quirks.append(
            f"{repeated} testcases reported more than once: each kept, keys numbered #2, #3..."
        )
    return cells


def _key(case: Case) -> str:
    return f"{case.classname}::{case.name}" if case.classname else case.name


def _cell(key: str, case: Case) -> Cell:
    metrics: dict[str, Any] = {}
    if case.time is not None:
        metrics["time"] = case.time
    if case.message:
        metrics["message"] = case.message
    if case.kind:
        metrics["type"] = case.kind
    if case.reruns:
        metrics["reruns"] = case.reruns
    if case.flaky:
        metrics["flaky"] = True
    if case.properties:
        metrics["properties"] = case.properties
    outcome = case.outcome
    return Cell(key=key, outcome=outcome, score=_SCORES.get(outcome), metrics=metrics)


def _published(report: Report) -> dict[str, int]:
    """The totals the report states: on `<testsuites>`, else summed over its suites."""
    if report.published:
        return report.published
    top = [s for s in report.suites if s.top_level]
    keys = ("tests", "failures", "errors", "skipped")
    return {
        key: sum(s.published[key] for s in top)
        for key in keys
        if top and all(key in s.published for s in top)
    }


def _duration(report: Report) -> float | None:
    if report.time is not None:
        return report.time
    top = [s.time for s in report.suites if s.top_level]
    if top and all(t is not None for t in top):
        return sum(t for t in top if t is not None)
    times = [c.time for s in report.suites for c in s.cases if c.time is not None]
    return sum(times) if times else None


def _times(name: str, report: Report) -> tuple[datetime | None, datetime | None]:
    spans = [(report.started, report.time, "testsuites")]
    spans += [(s.started, s.time, s.ident) for s in report.suites]
    starts = [start for start, _, _ in spans if start is not None]
    ends = []
    for start, time, where in spans:
        if start is not None and time is not None:
            try:
                ends.append(start + timedelta(seconds=time))
            except OverflowError:
                raise InputFormatError(
                    name, f"timestamp plus time is out of range in suite {where!r}", field="time"
                ) from None
    return (min(starts) if starts else None), (max(ends) if ends else None)


def _identity(
    name: str, report: Report, defaults: dict[str, Any], path: Path
) -> tuple[dict[str, Any], str | None]:
    """Who ran what: properties, else the caller's defaults, else what the suites say."""
    named: dict[str, tuple[str, str]] = dict(report.properties)
    for suite in report.suites:
        for key in (*IDENTITY, "run_id"):
            if key not in suite.properties or not suite.properties[key][0]:
                continue
            value, where = suite.properties[key]
            if key in named and named[key][0] and named[key][0] != value:
                raise InputFormatError(
                    name,
                    f"names {key} {value!r} but another suite names {named[key][0]!r}",
                    field=where,
                )
            named.setdefault(key, (value, where))
    fields: dict[str, Any] = {}
    for key in IDENTITY:
        fallback = FALLBACK[key] if key in FALLBACK else _suite_label(report, path)
        fields[key] = named.get(key, ("", ""))[0] or defaults.get(key) or fallback
    fields["config"] = defaults.get("config") or {}
    run_id = named.get("run_id", ("", ""))[0] or None
    return fields, run_id


def _suite_label(report: Report, path: Path) -> str:
    names = {s.name for s in report.suites if s.top_level and s.name}
    if len(names) == 1:
        return names.pop()
    return report.name or path.stem or "junit"


def _run_key(report: Report, header: RunHeader, cells: list[Cell]) -> str:
    """Who ran which suites when; without timestamps the content is the only identity."""
    suites = [s.ident for s in report.suites if s.top_level]
    label = report.name or (suites[0] if len(set(suites)) == 1 else "")
    label = label or (f"{suites[0]}+{len(suites) - 1}" if suites else "junit")
    if header.started_at is not None:
        when = header.started_at.isoformat()
    else:
        content = [[c.model_dump(mode="json") for c in cells], header.metrics]
        when = "content:" + sha256_hex(canonical_json(content))[:16]
    work = work_key(header.benchmark, header.agent, header.provider, header.model, header.config)
    return f"{label}@{when}/{sha256_hex(canonical_json([work, suites]))[:12]}"
