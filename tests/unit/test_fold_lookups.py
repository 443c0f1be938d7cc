"""A table filled from empty (a first build, a rebuild) gets most of its indexes once it
is full; the folds that fill it must then find what they look up by an index it has from
the start (`Table.lookups`), or each such statement scans the table: quadratic."""

from __future__ import annotations

import re
import sys

from benchledger.projections.base import Table
from benchledger.projections.registry import all_projections

# `... FROM [{table}] WHERE column = ?` and `UPDATE [{table}] SET ... WHERE column = ?`.
_FROM = re.compile(r"FROM \[\{(\w+)\}\](?: AS \w+)? WHERE (\w+) = \?")
_UPDATE = re.compile(r"^UPDATE \[\{(\w+)\}\] SET .* WHERE (\w+) = \?$", re.S)
# The settle's statements run once the tables are indexed.
SETTLED_AFTER_INDEXING = {"benchledger.projections.latest_select"}


def fold_statements() -> list[str]:
    """The statements the projections' modules define (module-level text)."""
    modules = {type(p.resolved()).__module__ for p in all_projections()} - SETTLED_AFTER_INDEXING
    return [
        value
        for name in sorted(modules)
        for value in vars(sys.modules[name]).values()
        if isinstance(value, str) and "[{" in value
    ]


def looked_up(statements: list[str]) -> set[tuple[str, str]]:
    found = set()
    for sql in statements:
        found |= set(_FROM.findall(sql))
        found |= set(_UPDATE.findall(sql))
    return found


def test_the_scan_finds_the_lookups_it_is_for() -> None:
    sql = "UPDATE [{a}] SET n = (SELECT count(*) FROM [{b}] WHERE c = ?) WHERE d = ?"
    assert looked_up([sql]) == {("b", "c"), ("a", "d")}


def test_every_fold_lookup_by_a_column_other_than_the_key_has_an_index_from_the_start() -> None:
    tables: dict[str, Table] = {t.name: t for p in all_projections() for t in p.tables}
    lookups = looked_up(fold_statements())
    assert ("candidates", "benchmark") in lookups  # the scan sees what it must
    missing = []
    for table_name, column in sorted(lookups):
        table = tables[table_name]
        if table.pk[:1] == (column,):
            continue
        if not any(index[0] == column for index in table.lookups):
            missing.append(f"{table_name}.{column}")
    assert missing == []


def test_lookups_are_among_the_table_s_indexes() -> None:
    for p in all_projections():
        for table in p.tables:
            assert set(table.lookups) <= set(table.indexes), table.name
