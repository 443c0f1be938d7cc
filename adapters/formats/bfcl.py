"""BFCL (Berkeley Function-Calling Leaderboard) score directories, as `bfcl evaluate`
writes them (../shared/corpus/bfcl/FORMAT.md): per-category score files and the
leaderboard tables beside them.

Benchmarks. A score file `BFCL_v4_<category>_score.json` is one run of benchmark
`bfcl_<category>` (`bfcl_simple_python`, `bfcl_live_parallel`, `bfcl_multi_turn_base`):
BFCL scores each category on its own dataset and reports them side by side, so one
benchmark `bfcl` with the category in its config would let `latest` (one run per
benchmark and agent) keep a single category of each model. The BFCL version named by
the file (`v4`, `v3`...) is config: v3's and v4's datasets differ, so those runs are
not the same work and are never compared. `data_overall.csv` rows are benchmark `bfcl`
(its `Overall Acc`), a section table's rows `bfcl_<section>` (`bfcl_live` from
`data_live.csv`, scored by `Live Overall Acc`; `bfcl_format_sensitivity` has no score).

Who. A score file names its model by the directory BFCL writes it under (the model
registry name, `/` written as `_`; entries' `model_name` is checked against it); the
tables name it only by its display name (`Claude-Sonnet-4-5-20250929 (FC)`), and the
mapping between the two is in BFCL's code, not in its files, so a table's runs carry
the display name. The agent is the model's registry entry (BFCL calls the model through
that entry's handler, FC or prompt mode) unless `--agent` names one; no file names a
provider. Nothing in these files says when the evaluation ran.

Runs and cells. A score file's run scores its `accuracy`; its metrics keep the summary
line (`correct_count`, `total_count`, and what else it states) and the category. Only
failed entries are listed: each is a cell keyed by its `id` (failed, with `error_type`,
`error` and every other field the entry states: the prompt, the model's raw and decoded
output, the expected answer, an inference log). The passing
cases are not in the file, so no cell is made up for them: `correct_count` says how
many there were, and provenance says the cells cover failures only. A table row is a
run without cells whose metrics keep every column (see bfcl_tables).

Run keys: `<score dir>/<model dir>/BFCL_<version>_<category>` for a score file and
`<score dir>/<table file>#<display name>` for a table row, so two evaluations in two
score directories stay apart, a re-import appends nothing, and the tables and the
score files never state the same run. Whatever does not add up (accuracy against the
counts, listed failures against total - correct, entries naming another model or
category, overall accuracies counting unevaluated categories as 0) is listed in
provenance `quirks`, never "fixed".
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchledger.adapters.formats import bfcl_scores, bfcl_tables
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord, SkipRecord

NAME = "bfcl"
SYSTEM = "bfcl"


def detect(path: Path, head: bytes) -> bool:
    return bfcl_scores.claims(path, head) or bfcl_tables.claims(path, head)


def parse(
    path: Path, data: bytes, defaults: dict[str, Any] | None = None
) -> Iterator[RunRecord | SkipRecord]:
    """A score file's one run, or a table's run per row; `defaults` name the agent and
    provider (the files do not)."""
    if bfcl_scores.FILE_NAME.match(path.name):
        yield bfcl_scores.parse(path, data, defaults or {})
    elif bfcl_tables.FILE_NAME.match(path.name):
        yield from bfcl_tables.parse(path, data, defaults or {})
    else:
        raise InputFormatError(
            str(path),
            "not a BFCL result (expected BFCL_v<N>_<category>_score.json or a "
            "data_<table>.csv leaderboard table)",
        )
