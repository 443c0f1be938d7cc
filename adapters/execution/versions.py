"""The code versions of an executed run: what ran, at which commit and version.

Every executed run records, on its `RunStarted.code_versions`:

    benchledger_version   benchledger's own version
    benchmarks_commit     the commit (HEAD) of the git repository holding the benchmark's
                          cwd, as the orchestrator's `git_head`; absent when git is not
                          installed, the cwd is not in a repository or git does not answer
                          in time: never an error
    benchmarks_dirty      "true" when that repository's tracked files differ from the
                          commit (staged or not; untracked files do not count), else "false"

and each version the registry declares under `versions` (a benchmark's own table, over
the registry's top-level one):

    [benchmarks.bfcl.versions]
    benchmark_version = "1.2"                           # a literal
    agent_version = { command = ["{agent}", "--version"] }   # a command's stripped stdout
    agent_commit = { git = "../harnesses/{agent}" }     # the commit of a repository
    eliza_package = { package_json = "../eliza/package.json" }   # its "version"

A name is letters, digits, "_" and "-". `benchmark_version`, `agent_version` and
`agent_commit` are the ones the read models show in their own columns and the
orchestrator-shaped exports publish (as `benchmark_version`, `eliza_version` and
`eliza_commit`); other names are recorded alike. A command runs in the benchmark's cwd with
the run's environment, its arguments and the paths taking the placeholders {agent}
{provider} {model} {benchmark} {config} {config.KEY}; paths are relative to the registry
file's folder. A source that cannot say (a command that fails, prints nothing or outlasts
its timeout, a path that is not a repository or has no version) never stops the run: its
value is absent and `NAME.error` says why. Every value is at most 200 characters, with
secrets and host paths masked as everywhere in the ledger.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator, model_validator

from benchledger.domain.errors import RuleViolationError
from benchledger.domain.version import VERSION

# Recorded on every executed run; a registry cannot declare them.
AUTOMATIC = frozenset({"benchledger_version", "benchmarks_commit", "benchmarks_dirty"})
# The placeholders a version source may use (the run's own names, without its paths).
PLACEHOLDERS = frozenset({"agent", "provider", "model", "benchmark"})
NAME = re.compile(r"[A-Za-z0-9_-]+")
MAX_CHARS = 200
GIT_SECONDS = 5.0
COMMAND_SECONDS = 10.0
ERROR_SUFFIX = ".error"


class VersionSource(BaseModel):
    """Where a declared version comes from: exactly one of a literal (the registry's
    string), a command, a git repository or a package.json. Paths are made absolute
    against the registry file's folder."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    literal: str | None = None
    command: tuple[str, ...] | None = None
    git: str | None = None
    package_json: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _a_string_is_a_literal(cls, data: object) -> object:
        if isinstance(data, str):
            if not data.strip():
                raise ValueError("a version is not blank")
            return {"literal": data}
        if not isinstance(data, dict | VersionSource):
            raise ValueError("must be a string or a table")
        return data

    @field_validator("command", mode="before")
    @classmethod
    def _command_as_tuple(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                return tuple(shlex.split(value))
            except ValueError as e:
                raise ValueError(f"cannot split the command string: {e}") from None
        return tuple(value) if isinstance(value, list) else value

    @field_validator("command")
    @classmethod
    def _command_not_empty(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None and not value:
            raise ValueError("command is empty")
        return value

    @field_validator("git", "package_json")
    @classmethod
    def _under_registry_folder(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        if not value:
            raise ValueError("must be a path")
        folder = Path((info.context or {}).get("folder", "."))
        return os.path.normpath(folder / Path(value).expanduser())

    @model_validator(mode="after")
    def _exactly_one(self) -> VersionSource:
        given = [n for n in SOURCES if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(
                "give a string, or a table of exactly one of command, git or package_json"
            )
        return self

    def texts(self) -> tuple[str, ...]:
        """The strings that may hold placeholders (a literal holds none)."""
        if self.literal is not None:
            return ()
        return self.command or (self.git or self.package_json or "",)


SOURCES = ("literal", "command", "git", "package_json")
# A declared version: a literal, or where to read it.
Declared = VersionSource


def declared_name_problem(name: str) -> str | None:
    """Why `name` cannot be a declared version's name, if it cannot."""
    if not NAME.fullmatch(name):
        return "a version's name uses only letters, digits, '_' and '-'"
    if name in AUTOMATIC:
        return f"{name} is recorded on every run; it cannot be declared"
    return None


def benchledger_version() -> str:
    """The package's version (what its installed metadata states, see `domain.version`)."""
    return VERSION


@dataclass(frozen=True)
class Answer:
    value: str | None = None
    error: str | None = None


def git(path: Path, *args: str, timeout: float | None = None) -> Answer:
    """git's stripped output in `path`, or why it could not say (within `timeout`
    seconds, default `GIT_SECONDS`)."""
    timeout = GIT_SECONDS if timeout is None else timeout
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
    import subprocess  # loaded where one runs, as the runner is

    from benchledger.adapters.execution.process import run_bounded

    try:
        done = run_bounded(["git", "-C", str(path), *args], None, env, timeout)
    except FileNotFoundError:
        return Answer(error="git is not installed")
    except subprocess.TimeoutExpired:
        return Answer(error=f"git did not answer within {timeout:g}s")
    except OSError as e:
        return Answer(error=f"git failed: {e.strerror or e}")
    if done.returncode != 0:
        text = os.fsdecode(done.stderr)
        if "not a git repository" in text:
            return Answer(error="not a git repository")
        lines = text.strip().splitlines()
        return Answer(error=f"git failed: {lines[-1] if lines else f'exit {done.returncode}'}")
    return Answer(os.fsdecode(done.stdout).strip())


def head_commit(path: Path) -> Answer:
    """The commit HEAD names in the repository holding `path`."""
    if not path.is_dir():
        return Answer(error=f"{path.name or path} is not a directory")
    answer = git(path, "rev-parse", "--verify", "HEAD")
    if answer.value is None:
        return answer
    if not answer.value:
        return Answer(error="git named no commit")
    return answer


def working_tree(path: Path) -> dict[str, str]:
    """`benchmarks_commit` and `benchmarks_dirty` of the repository holding `path`; nothing
    when there is none (or git cannot say): a benchmark need not live in a repository."""
    commit = head_commit(path)
    if commit.value is None:
        return {}
    out = {"benchmarks_commit": commit.value}
    status = git(path, "status", "--porcelain", "--untracked-files=no")
    if status.value is not None:
        out["benchmarks_dirty"] = "true" if status.value else "false"
    return out


def run_command(argv: list[str], cwd: Path, env: Mapping[str, str]) -> Answer:
    """The stripped stdout of a version command, or why there is none."""
    shown = shlex.join(argv)
    import subprocess  # loaded where one runs, as the runner is

    from benchledger.adapters.execution.process import run_bounded

    try:
        done = run_bounded(argv, cwd, env, COMMAND_SECONDS)
    except FileNotFoundError:
        return Answer(error=f"{shown}: command not found")
    except subprocess.TimeoutExpired:
        return Answer(error=f"{shown}: no answer within {COMMAND_SECONDS:g}s")
    except OSError as e:
        return Answer(error=f"{shown}: cannot run it ({e.strerror or e})")
    if done.returncode != 0:
        lines = os.fsdecode(done.stderr).strip().splitlines()
        why = f": {lines[-1]}" if lines else ""
        return Answer(error=f"{shown} exited with code {done.returncode}{why}")
    text = os.fsdecode(done.stdout).strip()
    if not text:
        return Answer(error=f"{shown} printed nothing")
    return Answer(text)


def package_version(path: Path) -> Answer:
    """The `version` string of a package.json, as the orchestrator reads eliza's."""
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return Answer(error=f"{path.name} does not exist")
    except OSError as e:
        return Answer(error=f"cannot read {path.name}: {e.strerror or e}")
    except ValueError:
        return Answer(error=f"{path.name} is not JSON")
    version = data.get("version") if isinstance(data, dict) else None
    if not isinstance(version, str) or not version.strip():
        return Answer(error=f"{path.name} states no version string")
    return Answer(version.strip())


Render = Callable[[str], str]


def read_source(source: VersionSource, render: Render, cwd: Path, env: Mapping[str, str]) -> Answer:
    if source.literal is not None:
        return Answer(source.literal.strip())
    try:
        if source.command is not None:
            return run_command([render(a) for a in source.command], cwd, env)
        if source.git is not None:
            return head_commit(Path(render(source.git)))
        return package_version(Path(render(source.package_json or "")))
    except RuleViolationError as e:  # a placeholder this run has no value for
        return Answer(error=str(e))


def code_versions(
    cwd: Path,
    declared: Mapping[str, Declared],
    render: Render,
    env: Mapping[str, str],
    scrub: Callable[[Any], Any] = lambda value: value,
) -> dict[str, str]:
    """Everything `RunStarted.code_versions` records of a run about to start in `cwd`."""
    out = {"benchledger_version": benchledger_version(), **working_tree(cwd)}
    for name, source in declared.items():
        answer = read_source(source, render, cwd, env)
        if answer.value is not None:
            out[name] = answer.value
        else:
            out[name + ERROR_SUFFIX] = answer.error or "no value"
    return {name: _bounded(str(scrub(value))) for name, value in out.items()}


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"
