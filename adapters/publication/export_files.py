"""Shared pieces of the exports: no host paths, atomic files, token counts."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO, Any

from benchledger.adapters.publication.publication import Key

# An absolute POSIX path of two or more segments inside free text (not part of a URL).
PATH_IN_TEXT = re.compile(r"(?<![\w:/.~-])/(?:[\w.@+-]+/)+[\w.@+-]*")
SUB_OBJECTS = ("trajectory_summary", "token_metrics", "cache_metrics", "performance_metrics")
TOKEN_ALIASES = {
    "input_tokens": ("input_tokens", "prompt_tokens", "total_prompt_tokens"),
    "output_tokens": ("output_tokens", "completion_tokens", "total_completion_tokens"),
    "total_tokens": ("total_tokens",),
    "cached_tokens": ("cached_tokens", "cache_read_input_tokens", "total_cache_read_input_tokens"),
    "cache_creation_input_tokens": (
        "cache_creation_input_tokens",
        "total_cache_creation_input_tokens",
    ),
    "llm_call_count": ("llm_call_count", "call_count", "llm_calls", "calls"),
}


# Made once: `isinstance(x, int | float)` builds the union anew at every call, and the
# token counts of every published row ask it of each alias.
_NUMBER = int | float
# Values `PathScrubber.clean` gives back as they are, whatever they hold.
_AS_IS = frozenset({int, bool, type(None)})


class PathScrubber:
    """Keeps host paths out of an export: an absolute path becomes relative to the export
    root when it lies under it, else just its file name; paths inside text likewise.
    Non-finite numbers, which JSON cannot carry, become null."""

    def __init__(self, root: Path) -> None:
        self.root = PurePosixPath(root.resolve().as_posix())
        self._root_names = list(self.root.parts[1:])

    def path(self, text: str) -> str:
        # A plain absolute path (no empty or `.` name between its slashes, which pathlib
        # would drop) is its names split at the slashes, as pathlib reads it: compared
        # with the root's names without making paths of it (a few µs each, for every
        # path of every published row).
        names = text.split("/")
        if len(names) > 1 and not names[0] and "" not in names[1:] and "." not in names[1:]:
            under = len(self._root_names) + 1
            if names[1:under] == self._root_names:
                return "/".join(names[under:]) or "."
            return names[-1]
        return self._as_pathlib_reads_it(text)

    def _as_pathlib_reads_it(self, text: str) -> str:
        path = PurePosixPath(text)
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return path.name

    def clean(self, value: Any) -> Any:
        if isinstance(value, str):
            if "/" not in value:  # no path, absolute or within text
                return value
            if value.startswith("/") and not any(c.isspace() for c in value):
                return self.path(value)
            return PATH_IN_TEXT.sub(lambda m: self.path(m.group(0)), value)
        # What `clean` returns as it is (a number, a flag, null, text without a path, a
        # finite float: `v - v` is 0 only for those) is kept without a call: a row holds
        # thousands of such values.
        if isinstance(value, dict):
            return {
                k: v
                if (t := type(v)) in _AS_IS
                or (t is str and "/" not in v)
                or (t is float and v - v == 0)
                else self.clean(v)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [
                v
                if (t := type(v)) in _AS_IS
                or (t is str and "/" not in v)
                or (t is float and v - v == 0)
                else self.clean(v)
                for v in value
            ]
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return value


def sanitise(name: str) -> str:
    """The orchestrator's file-name rule: lowercase, [a-z0-9._-] kept, others become '-'."""
    cleaned = re.sub(r"[^a-z0-9._-]", "-", name.lower()).strip("-")
    return cleaned or "item"


def file_names(keys: list[Key]) -> dict[Key, str]:
    """`<b>__<a>.json` per key; keys that sanitise alike get a short hash of the real key."""
    plain = {key: f"{sanitise(key[0])}__{sanitise(key[1])}" for key in keys}
    clashes = Counter(plain.values())
    names = {}
    for key, stem in plain.items():
        if clashes[stem] > 1:
            stem += "-" + hashlib.sha256(f"{key[0]}::{key[1]}".encode()).hexdigest()[:8]
        names[key] = stem + ".json"
    return names


def dumps_sorted(payload: Any) -> bytes:
    return (json.dumps(payload, sort_keys=True, indent=2) + "\n").encode()


def write_atomically(path: Path, data: bytes) -> bool:
    """Replace `path` with `data`; False, and nothing written, if it holds them already."""
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    with atomic_file(path, "wb") as handle:
        handle.write(data)
    return True


@contextmanager
def atomic_file(path: Path, mode: str) -> Iterator[IO[Any]]:
    """A file written beside `path` and renamed over it only once complete."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def sub_objects(metrics: dict[str, Any], tokens: dict[str, Any]) -> dict[str, Any]:
    """The orchestrator's split-out metric objects: `metrics.<name>` when it is an object,
    else {}; token_metrics falls back to the token counts the ledger recorded, if any."""
    out = {n: metrics[n] if isinstance(metrics.get(n), dict) else {} for n in SUB_OBJECTS}
    if not out["token_metrics"]:
        counts = token_counts(tokens, {}, known_only=True)
        if "llm_call_count" in counts:
            counts["call_count"] = counts["llm_call_count"]
        out["token_metrics"] = counts
    return out


def token_counts(
    tokens: dict[str, Any], metrics: dict[str, Any], *, known_only: bool = False
) -> dict[str, int]:
    """Flattened token counts from the run's tokens, else its metrics.token_metrics;
    an unknown count is 0, or left out with `known_only`."""
    nested = metrics.get("token_metrics")
    sources = [tokens, nested if isinstance(nested, dict) else {}]
    counts = {}
    for name, aliases in TOKEN_ALIASES.items():
        found = [
            source[alias]
            for source in sources
            for alias in aliases
            if isinstance(source.get(alias), _NUMBER) and not isinstance(source.get(alias), bool)
        ]
        if found or not known_only:
            counts[name] = int(found[0]) if found else 0
    if not counts.get("total_tokens") and ("input_tokens" in counts or not known_only):
        counts["total_tokens"] = counts.get("input_tokens", 0) + counts.get("output_tokens", 0)
    return counts


def result_path(row: dict[str, Any]) -> str | None:
    return row.get("source_path") or row.get("run_dir") or None
