"""Placeholder filled in by the export work."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
