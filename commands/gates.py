"""Placeholder filled in by the gates work."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
