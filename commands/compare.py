"""Placeholder filled in by the compare work."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
