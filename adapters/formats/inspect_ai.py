"""UK AISI inspect_ai eval logs: the JSON format (`*.json`) and the zip format (`*.eval`).

One log is one run (task x model), keyed by inspect's `eval.eval_id` (older logs:
`run_id:task_id`), so the same eval read from its `.json` and its `.eval` form is
one run with identical content. Each sample-epoch is a cell scored by the
headline scorer (the first of `results.scores`), letter grades read as inspect's
`value_to_float` reads them (C 1, P 0.5, I and N 0): full credit passes, less
fails, an errored sample is an error, and a sample with no readable value (none,
NaN, a list or dict) is `skipped`, i.e. has no verdict. The run's score is that
scorer's accuracy (else its first non-spread metric), its unit the metric's name;
every scorer's metrics are in `metrics.scores`, token usage per model in
`metrics.model_usage` and summed over models in `tokens`.
The benchmark is the task's own name (`eval.task`): the registry entry that built it
(`task_registry_name`, which a bridge or a `@task` factory taking a split shares among
all the tasks it builds) and the display name stay in provenance.
The agent is the plan's name when it has one, else its solver chain
(`system_message+generate`), else `inspect_ai`. Logs written without samples get
their cells from the epoch-reduced `reductions`. A log that never finished
(status `started`, or a `.eval` with no header.json) is recorded as recovered.
What the log states wins over `defaults`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from benchledger.adapters.formats.common import loads
from benchledger.adapters.formats.inspect_ai_cells import reduction_cells, sample_cells
from benchledger.adapters.formats.inspect_ai_header import headline_scorer, run_header
from benchledger.adapters.formats.inspect_ai_models import LogHeader, Reduction, Sample
from benchledger.adapters.formats.inspect_ai_zip import EvalArchive
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell, RunHeader, RunRecord, SkipRecord

NAME = "inspect_ai"
SYSTEM = "inspect_ai"

ZIP_MAGIC = b"PK\x03\x04"
# inspect writes `version` then `status` first; nothing else we read starts that way.
JSON_HEAD = re.compile(rb'\A\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:\s*"')
# Where a RunHeader field comes from, to name it when the derived value is refused.
SOURCE_FIELDS = {
    "benchmark": "eval.task",
    "provider": "eval.model",
    "model": "eval.model",
    "agent": "plan.steps",
    "run_key": "eval.eval_id",
}
REDUCTIONS = TypeAdapter(list[Reduction])
Model = TypeVar("Model", bound=BaseModel)
Samples = list[tuple[str, Sample]]


def detect(path: Path, head: bytes) -> bool:
    suffix = path.suffix.lower()
    if suffix == ".eval":
        return head.startswith(ZIP_MAGIC)
    if suffix == ".json":
        return JSON_HEAD.match(head) is not None and b'"eval"' in head
    return False


def parse(
    path: Path, data: bytes, defaults: dict[str, Any] | None = None
) -> Iterator[RunRecord | SkipRecord]:
    name = str(path)
    if path.suffix.lower() == ".eval" or data.startswith(ZIP_MAGIC):
        log, samples, cells_from = _read_eval(name, data)
    else:
        log, samples, cells_from = _read_json(name, data)
    yield _record(name, log, samples, cells_from, defaults or {})


def _field(prefix: str, loc: tuple[int | str, ...]) -> str:
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
    return f"{prefix}{where}" if where else prefix.rstrip(".:")


def _validate(name: str, model: type[Model], raw: Any, prefix: str) -> Model:
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        raise InputFormatError(name, first["msg"], field=_field(prefix, first["loc"])) from None


def _read_json(name: str, data: bytes) -> tuple[LogHeader, Samples, str]:
    document = loads(name, data)
    if not isinstance(document, dict):
        raise InputFormatError(name, "expected a JSON object (an inspect eval log)")
    log = _validate(name, LogHeader, document, "")
    raw_samples = document.get("samples")
    raw_samples = [] if raw_samples is None else raw_samples
    if not isinstance(raw_samples, list):
        raise InputFormatError(name, "must be an array", field="samples")
    samples = [
        (f"samples[{i}]", _validate(name, Sample, raw, f"samples[{i}]."))
        for i, raw in enumerate(raw_samples)
    ]
    return log, samples, "samples"


def _read_eval(name: str, data: bytes) -> tuple[LogHeader, Samples, str]:
    archive = EvalArchive(name, data)
    if "header.json" in archive:
        entry, document = "header.json", archive.json("header.json")
    elif "_journal/start.json" in archive:
        # Written when the eval starts; header.json only when it ends.
        entry, document = "_journal/start.json", archive.json("_journal/start.json")
        if isinstance(document, dict):
            document = {**document, "status": "started"}
    else:
        raise InputFormatError(
            name, "no header.json or _journal/start.json: not an inspect log", field="header.json"
        )
    if not isinstance(document, dict):
        raise InputFormatError(name, "expected a JSON object", field=entry)
    log = _validate(name, LogHeader, document, f"{entry}:")
    if log.reductions is None and "reductions.json" in archive:
        try:
            reductions = REDUCTIONS.validate_python(archive.json("reductions.json"))
        except ValidationError as e:
            first = e.errors()[0]
            field = _field("reductions.json:", first["loc"])
            raise InputFormatError(name, first["msg"], field=field) from None
        log = log.model_copy(update={"reductions": reductions})
    # One entry at a time: only the small validated sample outlives its JSON.
    entries = [n for n in archive.names() if n.startswith("samples/") and n.endswith(".json")]
    if entries:
        samples = [(n, _validate(name, Sample, archive.json(n), f"{n}:")) for n in entries]
        return log, samples, "samples"
    return log, _summaries(name, archive), "summaries"


def _summaries(name: str, archive: EvalArchive) -> Samples:
    """A .eval written without sample entries still lists each sample's summary."""
    if "summaries.json" in archive:
        chunks = ["summaries.json"]
    else:
        journal = [n for n in archive.names() if re.fullmatch(r"_journal/summaries/\d+\.json", n)]
        chunks = sorted(journal, key=lambda n: int(n.rsplit("/", 1)[1].split(".")[0]))
    samples: Samples = []
    for chunk in chunks:
        items = archive.json(chunk)
        if not isinstance(items, list):
            raise InputFormatError(name, "must be an array of sample summaries", field=chunk)
        samples.extend(
            (f"{chunk}:[{i}]", _validate(name, Sample, raw, f"{chunk}:[{i}]."))
            for i, raw in enumerate(items)
        )
    return samples


def _record(
    name: str, log: LogHeader, samples: Samples, cells_from: str, defaults: dict[str, Any]
) -> RunRecord:
    scorer = headline_scorer(log)
    epochs = log.eval.config.epochs or 1
    clash: str | None = None
    source: str | None = None
    cells: list[Cell] = []
    try:
        if samples:
            with_epoch = epochs > 1 or any(sample.epoch != 1 for _, sample in samples)
            cells, clash = sample_cells(samples, scorer, with_epoch)
            source = cells_from
        elif reductions := log.reductions or (log.results and log.results.sample_reductions):
            cells, clash = reduction_cells(reductions, scorer)
            source = "reductions"
    except ValidationError as e:
        raise InputFormatError(name, e.errors()[0]["msg"], field=source or "samples") from None
    if clash is not None:
        raise InputFormatError(name, "a sample appears twice with different content", field=clash)
    fields = run_header(log, cells, source)
    try:
        header = RunHeader.model_validate({**defaults, **fields})
    except ValidationError as e:
        first = e.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else None
        raise InputFormatError(
            name, first["msg"], field=SOURCE_FIELDS.get(field or "", field)
        ) from None
    return RunRecord(header=header, cells=tuple(cells))
