"""verify-artifacts: generated outputs must never be committed.

Generated are the results folder, the ledger file with its -wal/-shm/-journal,
exports (latest/, viewer_data.json), any `trajectories` folder, and a review
package's folder except `scorecard.md` and `manifest.json`, which are meant to be
committed. A file is an offender when the git repository of the working directory
tracks it or has it staged. Without git, or outside a repository, nothing is
checked, and the result says so rather than passing.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The exit code of a failed check, in `verify-artifacts` and in the `review` chain.
OFFENDERS = 7
COMMITTED_PACKAGE_FILES = ("scorecard.md", "manifest.json")
LEDGER_SUFFIXES = ("", "-wal", "-shm", "-journal")
DEFAULT_EXPORTS = ("latest", "viewer_data.json")


@dataclass(frozen=True)
class Generated:
    """The generated outputs of one setup: paths, folders, and the files allowed in them."""

    paths: tuple[Path, ...]
    allowed: tuple[Path, ...] = ()

    @classmethod
    def of(
        cls,
        *,
        results_root: Path,
        ledger: Path | None,
        review_dir: Path | None = None,
        exports: Iterable[Path] = (),
    ) -> Generated:
        paths = [results_root, *exports]
        if ledger is not None:
            paths += [ledger.with_name(ledger.name + suffix) for suffix in LEDGER_SUFFIXES]
        allowed: list[Path] = []
        if review_dir is not None:
            paths.append(review_dir)
            allowed += [review_dir / name for name in COMMITTED_PACKAGE_FILES]
        return cls(tuple(_absolute(p) for p in paths), tuple(_absolute(p) for p in allowed))

    def covers(self, path: Path) -> bool:
        if path in self.allowed:
            return False
        if "trajectories" in path.parts:
            return True
        return any(path == p or p in path.parents for p in self.paths)


@dataclass(frozen=True)
class ArtifactCheck:
    checked: bool
    reason: str | None = None  # why nothing was checked
    repository: str | None = None
    offenders: list[str] = field(default_factory=list)  # relative to the repository

    @property
    def exit_code(self) -> int:
        return OFFENDERS if self.offenders else 0

    def as_json(self) -> dict[str, Any]:
        if not self.checked:
            return {"not checked": self.reason}
        return {"repository": self.repository, "offenders": self.offenders}


def verify(cwd: Path, generated: Generated) -> ArtifactCheck:
    """The generated files the git repository of `cwd` tracks or has staged."""
    top = _git(cwd, "rev-parse", "--show-toplevel")
    if isinstance(top, str):
        return ArtifactCheck(False, top)
    root = Path(os.fsdecode(top).strip())
    names: set[str] = set()
    for args in (("ls-files", "-z"), ("diff", "--cached", "--name-only", "--diff-filter=d", "-z")):
        listing = _git(root, *args)
        if isinstance(listing, str):
            return ArtifactCheck(False, listing)
        names.update(_names(listing))
    offenders = sorted(n for n in names if generated.covers(_absolute(root / n)))
    return ArtifactCheck(True, repository=root.name, offenders=offenders)


def _names(listing: bytes) -> Sequence[str]:
    return [os.fsdecode(n) for n in listing.split(b"\0") if n]


def _git(cwd: Path, *args: str) -> bytes | str:
    """git's output, or why it could not say (not installed, not a repository)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(cwd), *args], capture_output=True, timeout=30, check=False
        )
    except FileNotFoundError:
        return "git is not installed"
    except (OSError, subprocess.SubprocessError) as e:
        return f"git failed: {e}"
    if done.returncode != 0:
        if b"not a git repository" in done.stderr:
            return "not a git repository"
        lines = os.fsdecode(done.stderr).strip().splitlines()
        return f"git failed: {lines[-1] if lines else f'exit {done.returncode}'}"
    return done.stdout


def _absolute(path: Path) -> Path:
    return Path(os.path.realpath(path))
