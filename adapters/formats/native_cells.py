"""Cell lines of the native JSONL form, read into rows (`CellRows`), not Cell models.

A row is checked by a schema made of Cell's own fields (and the line's `type` tag), so
it takes exactly what Cell takes, with the same values; a line it refuses goes the way
it always went, through Cell, whose error names the field. Fields a line leaves out are
left out of its row, so the row's size is how many keys the line states.
"""

from __future__ import annotations

from collections import deque
from functools import cache
from itertools import repeat
from typing import Annotated, Any

from pydantic import TypeAdapter
from pydantic.fields import FieldInfo
from pydantic_core import CoreSchema, SchemaValidator, core_schema

from benchledger.domain.cells import Cell, Row


def _field_schema(field: FieldInfo) -> CoreSchema:
    kind: Any = field.annotation
    if field.metadata:
        kind = Annotated[(kind, *field.metadata)]
    return TypeAdapter(kind).core_schema


def _line_schema() -> CoreSchema:
    """A cell line: Cell's fields, checked as Cell checks them, and its `type` tag."""
    fields = {
        name: core_schema.typed_dict_field(_field_schema(field), required=field.is_required())
        for name, field in Cell.model_fields.items()
    }
    fields["type"] = core_schema.typed_dict_field(core_schema.literal_schema(["cell"]))
    return core_schema.typed_dict_schema(fields, extra_behavior="forbid")


@cache
def validators() -> tuple[SchemaValidator, SchemaValidator]:
    """The validators of a cell line and of a list of them, built on first use (12 ms:
    a type adapter per field of Cell): a process that reads no native JSONL file, or
    none with cells, never builds them. One line schema serves both."""
    line = _line_schema()
    return SchemaValidator(line), SchemaValidator(core_schema.list_schema(line))


_TYPE = repeat("type")


def untagged(rows: list[Row]) -> list[Row]:
    """The rows of cell lines without their `type` tag (which no cell stores)."""
    deque(map(dict.pop, rows, _TYPE), maxlen=0)  # each row's tag popped, in C
    return rows


def row_of(cell: Cell) -> Row:
    """The row of a Cell read the long way (strict JSON, then Cell), as a row is kept."""
    row: Row = cell.model_dump()
    return row
