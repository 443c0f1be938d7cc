"""Credential pools: accounts are directories under a root the registry declares.

    [accounts.codex]             # the pool `--agent codex` uses (or `--account-pool codex`)
    root = "~/.local/state/eliza/auth/_codex-home"   # `~` expanded; relative to the file's folder
    env = "CODEX_HOME"           # each run gets one account's home in this variable
    pool_env = "CODEX_HOMES"     # optional, default env + "S": every selected home,
                                 # os.pathsep-separated, for harnesses that rotate per turn
    auth_file = "auth.json"      # optional; the file a logged-in home holds (default by
                                 # env: CODEX_HOME auth.json, CLAUDE_CONFIG_DIR
                                 # .credentials.json, else none); "" checks none

An account's id is its directory's name under the root. Its home is that directory,
or, when it holds an `active-home` file (the elizaOS runtime's pointer to the current
credential generation, e.g. `generations/<hash>`), the directory that names, relative
to it and inside it. `--accounts N` selects the first N ids in sorted order,
`--accounts a,c` those ids in that order, nothing all of them. A selected account whose
home lacks its auth file (or holds an empty one, or not a regular file) cannot be used:
`run` refuses, `preflight` blocks. Only whether the file is there is checked: it is
never opened. Run i of an invocation gets `accounts[i % N]`. Only ids are ever
recorded: a home's path, files and tokens stay out of the ledger, and the string values
of the JSON files at a home's top level (`auth.json`) are masked wherever a run writes.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator, model_validator

from benchledger.domain.secrets import could_be_secret

# A home's JSON files bigger than this are not read for secrets: credentials are small.
MAX_SECRET_FILE = 1 << 20
# The file a logged-in home holds, by the pool's variable: Codex's and Claude Code's.
AUTH_FILES = {"CODEX_HOME": "auth.json", "CLAUDE_CONFIG_DIR": ".credentials.json"}
# The elizaOS runtime's pointer, in an account's directory, to its current home.
ACTIVE_HOME = "active-home"


class AccountPool(BaseModel):
    """One pool of accounts as the registry declares it, its root made absolute."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    name: str
    root: Path
    env: str
    pool_env: str = ""
    auth_file: str | None = None

    @field_validator("root", mode="before")
    @classmethod
    def _under_registry_folder(cls, value: object, info: ValidationInfo) -> object:
        folder = Path((info.context or {}).get("folder", "."))
        if isinstance(value, str | Path):
            return (folder / Path(value).expanduser()).absolute()
        return value

    @field_validator("auth_file")
    @classmethod
    def _auth_file_inside_the_home(cls, value: str | None) -> str | None:
        if value and (Path(value).is_absolute() or ".." in Path(value).parts):
            raise ValueError("must be a path inside the account's home")
        return value

    @model_validator(mode="after")
    def _defaults(self) -> AccountPool:
        if not self.pool_env:
            object.__setattr__(self, "pool_env", f"{self.env}S")
        if self.auth_file is None:
            object.__setattr__(self, "auth_file", AUTH_FILES.get(self.env, ""))
        return self

    def ids(self) -> list[str]:
        """The account ids under the root, sorted; none when the root is missing."""
        try:
            entries = list(self.root.iterdir())
        except OSError:
            return []
        return sorted(p.name for p in entries if p.is_dir() and not p.name.startswith("."))


@dataclass(frozen=True)
class Account:
    id: str
    home: Path


@dataclass(frozen=True)
class AccountChoice:
    """The accounts a selection names, and what keeps any of them from being used."""

    pool: AccountPool
    accounts: tuple[Account, ...]
    problems: tuple[str, ...]

    def env(self, index: int) -> dict[str, str]:
        """The variables of run `index`: its account's home, and the whole pool."""
        homes = os.pathsep.join(str(a.home) for a in self.accounts)
        account = self.at(index)
        return {self.pool.env: str(account.home), self.pool.pool_env: homes}

    def at(self, index: int) -> Account:
        return self.accounts[index % len(self.accounts)]

    def root_spellings(self) -> list[str]:
        """The pool's root as given and as resolved: masked like a secret where a run writes."""
        return sorted({str(self.pool.root), str(self.pool.root.resolve())})


def choose(pool: AccountPool, wanted: str | None) -> AccountChoice:
    """The accounts `--accounts` selects: a count, a list of ids, or (None) all of them."""
    available = pool.ids()
    problems: list[str] = []
    text = (wanted or "").strip()
    if not text:
        ids = available
        if not ids:
            problems.append(f"no account homes under {pool.root}")
    elif text.isdigit():
        count = int(text)
        ids = available[:count]
        if count < 1:
            problems.append("--accounts needs at least 1 account")
        elif len(available) < count:
            problems.append(
                f"{count} accounts asked for, {len(available)} under {pool.root}"
                + (f" ({', '.join(available)})" if available else "")
            )
    else:
        ids = list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
        problems += [
            f"account '{i}' has no home at {pool.root / i}" for i in ids if i not in available
        ]
    homes = [(i, active_home(i, pool.root / i)) for i in ids]
    problems += [home for _, home in homes if isinstance(home, str)]
    accounts = tuple(Account(i, home) for i, home in homes if isinstance(home, Path))
    problems += [
        p for a in accounts if (p := unreadable(a) or unauthenticated(a, pool)) is not None
    ]
    return AccountChoice(pool, accounts, tuple(dict.fromkeys(problems)))


def active_home(account_id: str, directory: Path) -> Path | str:
    """The account's home: its directory, or where its `active-home` pointer leads
    (inside it); why the pointer cannot be followed, if it cannot."""
    pointer = directory / ACTIVE_HOME
    if not os.path.lexists(pointer):
        return directory
    try:
        target = pointer.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return f"account '{account_id}' {ACTIVE_HOME} pointer {pointer} cannot be read"
    home = (directory / target).resolve()
    inside = not Path(target).is_absolute() and home.is_relative_to(directory.resolve())
    if not target or not inside or not home.is_dir():
        return (
            f"account '{account_id}' {ACTIVE_HOME} pointer {pointer} names no directory "
            "inside the account's"
        )
    return directory / target if target != "." else directory


def unreadable(account: Account) -> str | None:
    """Why an account's home cannot be used, if it cannot."""
    if not account.home.is_dir():
        return None  # named as missing already
    if not os.access(account.home, os.R_OK | os.X_OK):
        return f"account '{account.id}' home {account.home} is not readable"
    return None


def unauthenticated(account: Account, pool: AccountPool) -> str | None:
    """Why the home holds no usable auth file, if it does not: only its kind and size
    are looked at, never its contents."""
    if not pool.auth_file or not account.home.is_dir():
        return None
    path = account.home / pool.auth_file
    try:
        info = path.stat()
    except OSError:
        return f"account '{account.id}' home {account.home} holds no {pool.auth_file}"
    if not stat.S_ISREG(info.st_mode):
        return f"account '{account.id}' {pool.auth_file} in {account.home} is not a regular file"
    if info.st_size == 0:
        return f"account '{account.id}' {pool.auth_file} in {account.home} is empty"
    return None


def home_secrets(accounts: Sequence[Account]) -> list[str]:
    """The secret-looking string values of the JSON files at each home's top level."""
    found: set[str] = set()
    for account in accounts:
        try:
            files = [p for p in account.home.iterdir() if p.suffix == ".json" and p.is_file()]
        except OSError:
            continue
        for path in files:
            try:
                if path.stat().st_size > MAX_SECRET_FILE:
                    continue
                found.update(_strings(json.loads(path.read_bytes())))
            except (OSError, ValueError):
                continue
    return sorted((s for s in found if could_be_secret(s)), key=lambda s: (-len(s), s))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
