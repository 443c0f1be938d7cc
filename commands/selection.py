"""The option that chooses which latest rows the publication commands read."""

from __future__ import annotations

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
