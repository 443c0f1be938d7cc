"""The options that choose which latest rows the publication commands read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from benchledger.adapters.publication.publication import SELECTIONS

selection_option = click.option(
    "--selection",
    type=click.Choice(SELECTIONS),
    default="cohort",
    show_default=True,
    envvar="BENCHLEDGER_LATEST_SELECTION",
    show_envvar=True,
    help="Latest rows: the newest complete cohort of each benchmark's required agents "
    "where their own newest rows mix comparison signatures, or each agent's newest row",
)


F = TypeVar("F", bound=Callable[..., Any])


def benchmark_filters(fn: F) -> F:
    fn = click.option(
        "--exclude-benchmarks", default="", metavar="A,B", help="Leave these benchmarks out"
    )(fn)
    fn = click.option(
        "--include-benchmarks", default="", metavar="A,B", help="Only these benchmarks"
    )(fn)
    return fn


def split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]
