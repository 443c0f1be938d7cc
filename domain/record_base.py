"""What every record is built on: its base model and the typed values records share."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
NonEmptyStr = Annotated[str, Field(min_length=1)]
# What a result states as a score: a number, never a boolean or a numeric string.
Score = Annotated[float, Field(strict=True, allow_inf_nan=False)]
TokenCount = Annotated[int, Field(strict=True, ge=0)]

# A plain string literal, not an enum: cells are the hot path and enum access is slow.
CellOutcome = Literal["passed", "failed", "error", "skipped"]
CELL_OUTCOMES: tuple[CellOutcome, ...] = ("passed", "failed", "error", "skipped")


class Record(BaseModel):
    # Non-finite floats inside metrics are written as "NaN" / "Infinity" strings,
    # so every stored payload is valid JSON that SQLite's JSON functions can read.
    # Built on first use, as events are (see `domain.base.Immutable`).
    model_config = ConfigDict(
        extra="forbid", frozen=True, ser_json_inf_nan="strings", defer_build=True
    )

    def json_bytes(self) -> bytes:
        return self.__pydantic_serializer__.to_json(self)
