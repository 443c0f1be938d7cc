"""Reads a JUnit XML report into typed suites and testcases, refusing DTDs and entities.

Only what the ledger needs is kept: per testcase its outcome (from a `failure`,
`error` or `skipped` child; several children count as the most severe), time,
message and rerun marks; per suite its name, timestamp, time, published counts
and properties. Suites may nest (a flattened list is returned, read without
recursion so a deeply nested file cannot exhaust the stack).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from xml.etree.ElementTree import Element, ParseError

import defusedxml
import defusedxml.ElementTree as SafeET

from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import CellOutcome

MESSAGE_LIMIT = 500
MAX_SECONDS = 1e10  # three centuries: anything longer is a corrupt attribute
COUNTS = ("tests", "failures", "errors", "skipped")
# Most severe first: a testcase with several outcome children (or a test reported
# twice, as pytest does for a failure in call plus an error in teardown) is the worst.
SEVERITY: tuple[CellOutcome, ...] = ("error", "failed", "passed", "skipped")
_CHILD_OUTCOMES: dict[str, CellOutcome] = {
    "error": "error",
    "failure": "failed",
    "skipped": "skipped",
}
_NOT_RUN = frozenset({"notrun", "skipped", "disabled", "suppressed"})
_NUMBER = re.compile(r"[+]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_COUNT = re.compile(r"\d{1,12}")


@dataclass(frozen=True)
class Case:
    suite: str
    classname: str
    name: str
    outcome: CellOutcome
    time: float | None
    message: str | None
    kind: str | None
    reruns: int
    flaky: bool
    properties: dict[str, str]


@dataclass(frozen=True)
class Suite:
    ident: str
    name: str | None
    top_level: bool
    started: datetime | None
    time: float | None
    published: dict[str, int]
    properties: dict[str, tuple[str, str]]  # name -> (value, field it came from)
    cases: list[Case] = field(default_factory=list)


@dataclass(frozen=True)
class Report:
    name: str | None
    started: datetime | None
    time: float | None
    published: dict[str, int]
    properties: dict[str, tuple[str, str]]
    suites: list[Suite]
    naive_timestamps: bool


def tag(element: Element) -> str:
    """The element's local name (a namespace, if any, is ignored)."""
    return str(element.tag).rsplit("}", 1)[-1]


def read_report(name: str, data: bytes) -> Report:
    root = _parse_xml(name, data)
    root_tag = tag(root)
    if root_tag not in ("testsuites", "testsuite"):
        raise InputFormatError(name, f"the root element is <{root_tag}>, not <testsuites>")
    reader = _Reader(name)
    if root_tag == "testsuite":
        suites = reader.suites([(root, "testsuite", True)])
        return Report(None, None, None, {}, {}, suites, reader.naive)
    top = [c for c in root if tag(c) == "testsuite"]
    suites = reader.suites([(s, f"testsuite[{i}]", True) for i, s in enumerate(top)])
    return Report(
        name=_text_attr(root, "name"),
        started=reader.timestamp(root, "testsuites.timestamp"),
        time=seconds(name, root.get("time"), "testsuites.time"),
        published=_counts(name, root, "testsuites"),
        properties=_properties(root, "testsuites"),
        suites=suites,
        naive_timestamps=reader.naive,
    )


def _parse_xml(name: str, data: bytes) -> Element:
    try:
        return SafeET.fromstring(data, forbid_dtd=True)
    except defusedxml.DTDForbidden:
        raise InputFormatError(name, "a DTD is not allowed in a JUnit report") from None
    except defusedxml.DefusedXmlException as e:
        raise InputFormatError(name, f"refused unsafe XML ({type(e).__name__})") from None
    except ParseError as e:
        raise InputFormatError(name, f"invalid XML: {e}", line=e.position[0]) from None
    except (ValueError, LookupError) as e:
        raise InputFormatError(name, f"invalid XML: {e}") from None


class _Reader:
    def __init__(self, name: str) -> None:
        self.name = name
        self.naive = False

    def suites(self, pending: list[tuple[Element, str, bool]]) -> list[Suite]:
        found: list[Suite] = []
        stack = list(reversed(pending))
        while stack:
            element, where, top_level = stack.pop()
            found.append(self.suite(element, where, top_level))
            nested = [c for c in element if tag(c) == "testsuite"]
            stack.extend(
                (child, f"{where}.testsuite[{i}]", False)
                for i, child in reversed(list(enumerate(nested)))
            )
        return found

    def suite(self, element: Element, where: str, top_level: bool) -> Suite:
        suite_name = _text_attr(element, "name")
        ident = suite_name or where
        suite = Suite(
            ident=ident,
            name=suite_name,
            top_level=top_level,
            started=self.timestamp(element, f"{where}.timestamp"),
            time=seconds(self.name, element.get("time"), f"{where}.time"),
            published=_counts(self.name, element, where),
            properties=_properties(element, where),
        )
        cases = (c for c in element if tag(c) == "testcase")
        suite.cases.extend(
            self.case(c, f"{where}.testcase[{i}]", ident) for i, c in enumerate(cases)
        )
        return suite

    def case(self, element: Element, where: str, suite: str) -> Case:
        name = element.get("name", "")
        if not name.strip():
            raise InputFormatError(self.name, "a testcase needs a name", field=f"{where}.name")
        outcome: CellOutcome | None = None  # no outcome child: passed
        message = kind = None
        reruns = 0
        flaky = False
        for child in element:
            child_tag = tag(child)
            lowered = child_tag.lower()
            if lowered.startswith(("flaky", "rerun")):
                reruns += 1
                flaky = flaky or lowered.startswith("flaky")
            elif child_tag in _CHILD_OUTCOMES:
                found = _CHILD_OUTCOMES[child_tag]
                if outcome is None or SEVERITY.index(found) < SEVERITY.index(outcome):
                    outcome = found
                    message = _message(child)
                    kind = _text_attr(child, "type")
        props = {k: v for k, (v, _) in _properties(element, where).items()}
        return Case(
            suite=suite,
            classname=element.get("classname", ""),
            name=name,
            outcome=outcome or _unrun(element) or "passed",
            time=seconds(self.name, element.get("time"), f"{where}.time"),
            message=message,
            kind=kind,
            reruns=reruns,
            flaky=flaky,
            properties=props,
        )

    def timestamp(self, element: Element, where: str) -> datetime | None:
        text = (element.get("timestamp") or "").strip()
        if not text:
            return None
        try:
            moment = datetime.fromisoformat(text)
            if moment.tzinfo is None:
                self.naive = True  # JUnit timestamps are usually local and naive: read as UTC
                return moment.replace(tzinfo=UTC)
            return moment.astimezone(UTC)
        except (ValueError, OverflowError):
            raise InputFormatError(
                self.name, f"not an ISO 8601 timestamp: {text[:40]!r}", field=where
            ) from None


def seconds(name: str, text: str | None, where: str) -> float | None:
    """A duration attribute; Surefire writes thousands separators ("1,234.5")."""
    if text is None or not text.strip():
        return None
    cleaned = text.strip().replace(",", "")
    value = float(cleaned) if _NUMBER.fullmatch(cleaned) else math.nan
    if not value < MAX_SECONDS:  # also false for NaN
        raise InputFormatError(name, f"not a duration in seconds: {text[:40]!r}", field=where)
    return value


def _counts(name: str, element: Element, where: str) -> dict[str, int]:
    counts = {}
    for key in COUNTS:
        text = element.get(key)
        if text is None or not text.strip():
            continue
        if not _COUNT.fullmatch(text.strip()):
            raise InputFormatError(name, f"not a count: {text[:40]!r}", field=f"{where}.{key}")
        counts[key] = int(text)
    return counts


def _properties(element: Element, where: str) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for block in (c for c in element if tag(c) == "properties"):
        for i, prop in enumerate(p for p in block if tag(p) == "property"):
            key = (prop.get("name") or "").strip()
            value = prop.get("value")
            value = (value if value is not None else prop.text or "").strip()
            if key and key not in found:
                found[key] = (value[:MESSAGE_LIMIT], f"{where}.properties.property[{i}]")
    return found


def _unrun(element: Element) -> CellOutcome | None:
    """GoogleTest marks a disabled test with status="notrun" and no <skipped> child."""
    status = (element.get("status") or "").strip().lower()
    result = (element.get("result") or "").strip().lower()
    return "skipped" if status in _NOT_RUN or result in _NOT_RUN else None


def _message(element: Element) -> str | None:
    text = element.get("message")
    if text is None or not text.strip():
        lines = (element.text or "").strip().splitlines()
        text = lines[0] if lines else ""
    text = text.strip()
    return _truncate(text) if text else None


def _truncate(text: str) -> str:
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"


def _text_attr(element: Element, key: str) -> str | None:
    value = (element.get(key) or "").strip()
    return value or None
