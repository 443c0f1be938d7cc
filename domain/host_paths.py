"""Host paths cut to the part a reader elsewhere can use: below an orchestrator results
root, else the base name. benchledger's own runs keep their host's paths out of events
this way; an import of a source's files kept them cut too before it kept them whole, so a
recorded text that is a stated one cut this way is the same fact (`domain.facts`)."""

from __future__ import annotations

import re
from typing import Any

RESULT_ROOTS = ("/benchmark_results/", "/test-results/benchmark-orchestrator/")
HOST_PATH = re.compile(r"(?<![\w.:/~-])(?:~/|/(?=[^/\s]+/)|[A-Za-z]:\\)[^\s'\"<>|,;)\]}]+")


def strip_host_paths(value: Any) -> Any:
    """Absolute host paths cut to their part below the results root, else their base name."""
    if isinstance(value, str):
        return strip_text(value)
    if isinstance(value, dict):
        return {k: strip_host_paths(v) for k, v in value.items()}
    if isinstance(value, list):
        return [strip_host_paths(v) for v in value]
    return value


# The ASCII characters that end a host path: HOST_PATH's last class (whitespace as `\s`
# knows it, quotes, brackets...) on ASCII text.
_PATH_ENDS = b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f '\"<>|,;)]}"


def strip_text(text: str) -> str:
    """`strip_host_paths` of one string.

    Most strings that hold a path are that path and nothing else (a log file, a working
    directory): ASCII text that starts with `/`, a name and another `/`, and holds none
    of the characters that end a path. HOST_PATH matches such a text whole, at its
    start, so it is cut without the search (a test checks this against the search).
    """
    if "/" not in text and "\\" not in text:
        return text
    if (
        text.startswith("/")
        and text.find("/", 1) > 1
        and text.isascii()
        and len(text.encode("ascii").translate(None, _PATH_ENDS)) == len(text)
    ):
        return _relative_path(text)
    return HOST_PATH.sub(_relative, text)


def _relative(match: re.Match[str]) -> str:
    return _relative_path(match.group(0))


def _relative_path(path: str) -> str:
    path = path.replace("\\", "/")
    for root in RESULT_ROOTS:
        if root in path:
            return path.split(root, 1)[1] or "."
    return path.rstrip("/").rsplit("/", 1)[-1] or "."
