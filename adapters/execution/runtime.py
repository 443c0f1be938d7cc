"""Runtime gates: what a benchmark needs on this host before it can run for real.

A registry entry lists them in `requires`; each item is one requirement:

    docker          a Docker daemon that answers `docker info` within
                    BENCHLEDGER_DOCKER_TIMEOUT seconds (default 10): the
                    docker command on PATH is not enough, the daemon must reply
    env:NAME        the environment variable NAME is set and not empty (a
                    credential such as HL_PRIVATE_KEY, or a model name such as
                    VISION_LANGUAGE_MODEL for a multimodal benchmark)
    command:NAME    the program NAME is on PATH, or NAME is a path to a file
    path:PATH       the file or directory PATH exists (a dataset, a model
                    bundle); relative to the benchmark's cwd, `~` expanded

or alternatives joined by `|`, met when any one is met, e.g.
`"env:MODAL_TOKEN_ID|docker"` (a sandbox in the cloud, or a local Docker).

So that a sample or demo fallback is never mistaken for a result, a benchmark whose
requirement is not met is refused before it launches, `preflight` blocks on it, and
`gate runtime` records which requirement is missing on this host and why.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

KINDS = ("docker", "env", "command", "path")
DOCKER_TIMEOUT_ENV = "BENCHLEDGER_DOCKER_TIMEOUT"
DEFAULT_DOCKER_TIMEOUT = 10.0


def parse(requirement: str) -> list[tuple[str, str]]:
    """The (kind, value) alternatives of one requirement; a ValueError naming the part
    when it is not in the vocabulary above."""
    if not isinstance(requirement, str) or not requirement.strip():
        raise ValueError("a requirement is a non-empty string")
    out = []
    for part in requirement.split("|"):
        text = part.strip()
        kind, colon, value = text.partition(":")
        kind, value = kind.strip(), value.strip()
        if kind == "docker" and not colon:
            out.append(("docker", ""))
        elif kind in ("env", "command", "path") and colon and value:
            out.append((kind, value))
        elif kind in ("env", "command", "path"):
            raise ValueError(f"requirement '{text}' names no {kind} (write {kind}:NAME)")
        else:
            raise ValueError(
                f"unknown requirement '{text}' (known: docker, env:NAME, command:NAME, "
                "path:PATH; alternatives joined by '|')"
            )
    return out


@dataclass(frozen=True)
class Missing:
    """A requirement of a benchmark this host does not meet, and why."""

    benchmark: str
    requirement: str
    why: str


def docker_timeout(environ: Mapping[str, str]) -> float:
    raw = environ.get(DOCKER_TIMEOUT_ENV, "")
    try:
        value = float(raw) if raw.strip() else DEFAULT_DOCKER_TIMEOUT
    except ValueError:
        return DEFAULT_DOCKER_TIMEOUT
    return value if value > 0 else DEFAULT_DOCKER_TIMEOUT


def docker_problem(environ: Mapping[str, str]) -> str | None:
    """Why no Docker daemon answers here, if none does: `docker info`, bounded in time."""
    path = environ.get("PATH")
    program = shutil.which("docker", path=path)
    if program is None:
        return "the docker command is not on PATH"
    timeout = docker_timeout(environ)
    # The bounded runner (and the output redaction it loads) only where a probe runs one.
    import subprocess

    from benchledger.adapters.execution.process import run_bounded

    try:
        done = run_bounded(
            [program, "info", "--format", "{{.ServerVersion}}"], None, environ, timeout
        )
    except subprocess.TimeoutExpired:
        return f"the Docker daemon did not answer `docker info` within {timeout:g}s"
    except OSError as e:
        return f"cannot run docker: {e.strerror or e}"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = f": {said[-1][:120]}" if said else ""
        return f"`docker info` exited {done.returncode}, no reachable Docker daemon{detail}"
    return None


@dataclass
class Probe:
    """Probes requirements on this host; the Docker daemon is asked once per probe.

    `given`: environment variable names a run provides itself (an account pool's)."""

    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    docker: Callable[[Mapping[str, str]], str | None] = docker_problem
    _docker_seen: list[str | None] = field(default_factory=list)

    def problem(self, kind: str, value: str, cwd: Path, given: Collection[str] = ()) -> str | None:
        if kind == "docker":
            if not self._docker_seen:
                self._docker_seen.append(self.docker(self.environ))
            return self._docker_seen[0]
        if kind == "env":
            if value in given or self.environ.get(value):
                return None
            return f"environment variable {value} is not set"
        if kind == "command":
            if shutil.which(value, path=self.environ.get("PATH")) is not None:
                return None
            candidate = Path(value).expanduser()
            if ("/" in value or candidate.is_absolute()) and (cwd / candidate).is_file():
                return None
            return f"command '{value}' is not on PATH"
        target = cwd / Path(value).expanduser()
        return None if target.exists() else f"path {value} does not exist (under {cwd})"

    def unmet(self, requirement: str, cwd: Path, given: Collection[str] = ()) -> str | None:
        """Why the requirement is not met, or None when one of its alternatives is."""
        problems = []
        for kind, value in parse(requirement):
            problem = self.problem(kind, value, cwd, given)
            if problem is None:
                return None
            problems.append(problem)
        return "; ".join(problems)

    def missing(
        self, benchmark: str, requires: Iterable[str], cwd: Path, given: Collection[str] = ()
    ) -> list[Missing]:
        """The requirements of one benchmark this host does not meet, in their order."""
        out = []
        for requirement in requires:
            why = self.unmet(requirement, cwd, given)
            if why is not None:
                out.append(Missing(benchmark, requirement, why))
        return out
