"""Records with their secrets masked (`domain.secrets`), as every path into the ledger
takes them before they become events: import, a run's own results, the Python API.

What names a run or a cell is never changed: run keys, cell keys, outcomes, scores,
token counts and the identity fields (benchmark, agent, provider, model) stay as
stated, so masking never changes a score, a count or a key. The config stays too:
the run's signatures are computed from its real values, and its events store it
masked (`RunHeader.masked_config`). The values of a config's secret-named keys are
also hunted in the record's other text (an error that quotes the key it was given).
A record with nothing to mask is returned itself, so the common case costs one look
at each string and no copy.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain
from typing import Any, TypeVar

from benchledger.domain.cells import CellRows, Row, cells_value, metrics_of
from benchledger.domain.config_memo import Memo, flat_key
from benchledger.domain.records import (
    Cell,
    GroupRecord,
    Record,
    RunHeader,
    RunRecord,
    SkipRecord,
)
from benchledger.domain.secret_names import names_a_secret
from benchledger.domain.secrets import MASK, config_secrets, mask_value, masks_nothing

R = TypeVar("R")
M = TypeVar("M", bound=Record)


def masked_record(record: R) -> R:
    """The record (a run, skip or source group) with its secrets masked; anything else,
    such as a run already made into its events, as it is. A record that holds anything
    to mask loses the digest of its source row (`source_row_sha256`): that digest is of
    the row as its source states it, secrets included, and with every other value of
    the row in the ledger it would let anyone holding the ledger test guesses at what
    was masked. Such a row is read again by each import of its source."""
    if isinstance(record, RunRecord):
        return _masked_run(record)  # type: ignore[return-value]
    if isinstance(record, SkipRecord):
        return _masked_fields(record, ("detail", "provenance"))
    if isinstance(record, GroupRecord):
        fields = ("request", "selection", "repo_meta", "status", "facts")
        return _masked_fields(record, fields)
    return record


def masked_records(records: Iterable[R]) -> Iterator[R]:
    return (masked_record(record) for record in records)


def masked_cells(cells: Sequence[Cell], hunted: Sequence[str] = ()) -> Sequence[Cell]:
    """The cells with their metrics masked; `cells` itself when none holds a secret."""
    if not hunted and _all_plain_numbers(cells):
        return cells
    if isinstance(cells, CellRows):
        return _masked_rows(cells, hunted)
    out: list[Cell] | None = None
    for i, cell in enumerate(cells):
        masked = _masked_cell(cell, hunted)
        if masked is not cell and out is None:
            out = list(cells[:i])
        if out is not None:
            out.append(masked)
    return cells if out is None else out


def masked_values(values: Mapping[str, Any], hunted: Sequence[str] = ()) -> dict[str, Any]:
    """A mapping of named values (a run's outcome, metrics, facts) with secrets masked."""
    masked = mask_value(values)
    return dict(_hunt(masked, hunted) if hunted else masked)


def _masked_rows(cells: CellRows, hunted: Sequence[str]) -> CellRows:
    """`masked_cells` of cells kept as rows: a masked cell is a new row."""
    out: list[Row] | None = None
    for i, row in enumerate(cells.rows):
        metrics = _masked_metrics(row["metrics"], hunted)
        if metrics is not row["metrics"]:
            if out is None:
                out = list(cells.rows)
            out[i] = {**row, "metrics": metrics}
    return cells if out is None else CellRows(out)


def _masked_metrics(metrics: dict[str, Any], hunted: Sequence[str]) -> dict[str, Any]:
    if not metrics or (not hunted and _plain_numbers(metrics)):
        return metrics
    masked = mask_value(metrics)
    return _hunt(masked, hunted) if hunted else masked  # type: ignore[no-any-return]


def _masked_cell(cell: Cell, hunted: Sequence[str]) -> Cell:
    metrics = _masked_metrics(cell.metrics, hunted)
    return cell if metrics is cell.metrics else cell.model_copy(update={"metrics": metrics})


# Metric names under which a number is never masked, as cells repeat them (bounded).
_PLAIN_NAMES: set[str] = set()


_NUMBERS = frozenset({int, float})


def _all_plain_numbers(cells: Sequence[Cell]) -> bool:
    """`_plain_numbers` of every cell's metrics at once: their names and their values'
    types gathered in C (a large import's cells are mostly such), each new name then
    asked once whether it names a secret."""
    metrics = metrics_of(cells)
    if not set(map(type, chain.from_iterable(map(dict.values, metrics)))) <= _NUMBERS:
        return False
    return _plain_names(set(chain.from_iterable(metrics)))


def _plain_names(names: set[str]) -> bool:
    """Whether none of `names` names a secret (those that do not are remembered)."""
    for name in names - _PLAIN_NAMES:
        if names_a_secret(name):
            return False
        if len(_PLAIN_NAMES) < 10_000:
            _PLAIN_NAMES.add(name)
    return True


def _plain_numbers(metrics: dict[str, Any]) -> bool:
    """Whether the metrics are numbers only, under names that never mask one: most cells'
    (`total_tokens`, `latency_ms`), told without a call per value."""
    for name, value in metrics.items():
        kind = type(value)
        if kind is not int and kind is not float:
            return False
        if name not in _PLAIN_NAMES:
            if names_a_secret(name):
                return False
            if len(_PLAIN_NAMES) < 10_000:
                _PLAIN_NAMES.add(name)
    return True


# The secrets of each config, which a file's runs repeat (a few dozen configs in 10k rows).
_SECRETS = Memo()


def _masked_run(record: RunRecord) -> RunRecord:
    header = record.header
    config = header.config
    hunted: Sequence[str] = (
        _SECRETS.get(flat_key(config), lambda: tuple(config_secrets(config))) if config else ()
    )
    update: dict[str, Any] = {}
    supplement = record.supplement
    # Most runs hold nothing to mask: one look at all four tells so.
    plain = not hunted and masks_nothing(
        (header.metrics, header.provenance, header.error, supplement)
    )
    if not plain:
        for name in ("metrics", "provenance", "error"):
            value = getattr(header, name)
            masked = mask_value(value)
            if hunted:
                masked = _hunt(masked, hunted)
            if masked is not value:
                update[name] = masked
        supplement = mask_value(supplement)
        if hunted:
            supplement = _hunt(supplement, hunted)
    cells = masked_cells(record.cells, hunted)
    if not update and cells is record.cells and supplement is record.supplement:
        if record.source_row_sha256 is not None and not (plain and header.masked_config == config):
            return record.model_copy(update={"source_row_sha256": None})
        return record
    # Copied anew, not with `model_copy`: a copy would share what the stated header
    # derived from its fields (its JSON, its content hash).
    new_header = RunHeader.model_validate({**_fields(header), **update}) if update else header
    return RunRecord.model_validate(
        {
            **_fields(record),
            "header": new_header,
            "cells": cells_value(cells),
            "supplement": supplement,
            "source_row_sha256": None,
        }
    )


def _fields(record: Any) -> dict[str, Any]:
    """The record's fields as they are (not dumped), for a new record of the same kind;
    those a source left unset stay unset (a header's later fields)."""
    return {name: getattr(record, name) for name in record.model_fields_set}


def _masked_fields(record: M, names: Sequence[str]) -> M:
    if masks_nothing(getattr(record, name) for name in names):
        return record
    update: dict[str, Any] = {}
    if getattr(record, "source_row_sha256", None) is not None:
        update["source_row_sha256"] = None  # see `masked_record`
    for name in names:
        value = getattr(record, name)
        masked = mask_value(value)
        if masked is not value:
            update[name] = masked
    return record.model_copy(update=update) if update else record


def _hunt(value: Any, hunted: Sequence[str]) -> Any:
    """`value` with every literal occurrence of the hunted secrets masked in its text."""
    if isinstance(value, str):
        if not any(secret in value for secret in hunted):
            return value
        for secret in sorted(hunted, key=len, reverse=True):
            value = value.replace(secret, MASK)
        return value
    if isinstance(value, Mapping):
        masked = {k: _hunt(v, hunted) for k, v in value.items()}
        return value if all(masked[k] is v for k, v in value.items()) else masked
    if isinstance(value, list | tuple):
        items = [_hunt(item, hunted) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value
