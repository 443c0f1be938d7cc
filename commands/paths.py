"""Paths a command writes: their parent folder must exist, unless -p/--parents is given.

One rule for every command that writes a file or a folder the user names (`publish OUT`,
`export-latest DIRECTORY`, `--out`, ...): a mistyped path fails, naming the folder that is
missing, instead of a tree of new folders appearing somewhere unexpected.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click


def ensure_parent(path: Path, label: str, *, parents: bool) -> None:
    """Refuse `path` when its parent folder is missing; with `parents`, create it."""
    parent = path.parent if str(path.parent) else Path(".")
    if parent.is_dir():
        return
    if parent.exists():
        raise click.ClickException(f"{label} {path}: {parent} is not a folder")
    if parents:
        parent.mkdir(parents=True, exist_ok=True)
        return
    missing = parent
    while not missing.parent.exists() and missing.parent != missing:
        missing = missing.parent
    raise click.ClickException(
        f"{label} {path}: the folder {missing} does not exist; create it, or pass "
        "--parents (-p) to create the missing folders"
    )


def writes_paths(**labels: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add -p/--parents to a command and check the parent folder of each path parameter
    named in `labels` (parameter name -> how the user wrote it, e.g. out="--out")."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @click.option(
            "-p",
            "--parents",
            is_flag=True,
            help="Create the missing parent folders of the paths it writes",
        )
        @functools.wraps(fn)
        def checked(*args: Any, parents: bool, **kwargs: Any) -> Any:
            for name, label in labels.items():
                if kwargs.get(name) is not None:
                    ensure_parent(Path(kwargs[name]), label, parents=parents)
            return fn(*args, **kwargs)

        return checked

    return decorate
