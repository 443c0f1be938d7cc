"""SWE-bench results: experiments submissions, harness and sb-cli run reports, harness
log directories, and the leaderboard site's data files.

A file's layout follows from its place and shape (../shared/corpus/swebench/FORMAT.md):
a submission is claimed through `results/results.json` (metadata.yaml and the
per-instance reports are its members); a harness log directory standing alone through
its first instance's `report.json`. A member imported alone is no run of its own: `owner`
names the result it is part of, so the import says what to import instead (a second,
different run of the same instances would contradict the one its folder records).
Scores are resolved fractions; what a source publishes (percentages, counts) stays in
metrics, and disagreements are flagged in provenance (`mismatch`, `quirks`), never
"fixed". `preds.json` files are predictions, not results, and are not recognised.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchledger.adapters.formats import swebench_experiments as experiments
from benchledger.adapters.formats import swebench_harness as harness
from benchledger.adapters.formats import swebench_logs as logs
from benchledger.adapters.formats.common import Owner, read_head, read_json
from benchledger.adapters.formats.swebench_leaderboard import (
    INFO_FILE,
    parse_info,
    parse_leaderboards,
)
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord, SkipRecord

NAME = "swebench"
SYSTEM = "swebench"
HEAD = 4096

LEADERBOARDS = re.compile(rb'\s*\{\s*"leaderboards"\s*:')


def _layout(path: Path, head: bytes) -> str | None:
    if path.suffix.lower() != ".json" or not head.lstrip().startswith(b"{"):
        return None
    if path.name == "results.json" and path.parent.name == "results":
        return "experiments" if experiments.claims(path, head) else None
    if path.name == "report.json":
        parents = path.parents
        return "logs" if len(parents) > 3 and parents[3].name == "run_evaluation" else None
    if LEADERBOARDS.match(head):
        return "leaderboards"
    if path.name == INFO_FILE:
        return "info"
    if b'"total_instances"' in head and b'"resolved_instances"' in head:
        return "report"
    return None


def detect(path: Path, head: bytes) -> bool:
    layout = _layout(path, head)
    if layout == "logs":
        return logs.is_primary_instance_report(path)
    return layout is not None


def members(path: Path) -> list[Path]:
    layout = _layout(path, read_head(path, HEAD) or b"")
    if layout == "experiments":
        return experiments.members(path)
    if layout == "report":
        return harness.report_members(path)
    if layout == "logs":
        return logs.logs_members(path)
    return []


def owner(path: Path) -> Owner | None:
    """The run or submission a file `members` lists is part of: a per-instance report of
    a harness run, or a submission's metadata, derived results or instance report."""
    parents = path.parents
    if path.name == "report.json" and len(parents) > 3 and parents[3].name == "run_evaluation":
        return logs.logs_owner(path)
    if path.name == "report.json" and len(parents) > 2 and parents[1].name == "logs":
        folder = parents[2]
    elif path.name in experiments.METADATA_NAMES:
        folder = path.parent
    elif path.parent.name == "results" and path.name != "results.json":
        folder = path.parent.parent
    else:
        return None
    results = folder / "results" / "results.json"
    if results.is_file() and _layout(results, read_head(results, HEAD) or b"") == "experiments":
        return Owner(results, "a SWE-bench submission", folder)
    return None


def parse(
    path: Path, data: bytes, defaults: dict[str, Any] | None = None
) -> Iterator[RunRecord | SkipRecord]:
    layout = _layout(path, data[:HEAD])
    if layout == "experiments":
        yield experiments.parse(path, data, defaults)
    elif layout == "logs":
        yield logs.parse_logs(path, defaults)
    elif layout is None:
        raise InputFormatError(
            str(path),
            "not a SWE-bench result (expected results/results.json of a submission, a "
            "harness or sb-cli report, a run_evaluation report.json or leaderboards.json)",
        )
    else:
        document = read_json(path, data)
        if layout == "leaderboards":
            yield from parse_leaderboards(path, document, defaults)
        elif layout == "info":
            yield from parse_info(path, document, defaults)
        else:
            yield harness.parse_report(path, defaults, document)
