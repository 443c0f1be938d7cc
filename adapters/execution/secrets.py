"""Masking what a benchmark run must not record: secrets, and where the host keeps files.

Secrets come from three places: environment values under secret-looking names,
config values under secret-looking keys, and command options such as
`--api-key X` (the rule is in `benchledger.domain.secrets`). Well-known key
shapes (`sk-...`, `ghp_...`, `hf_...`, `AKIA...`, `Bearer ...`) are masked
wherever they appear. Masking applies to what the ledger records and to the logs
it writes; the benchmark's own files are never rewritten.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchledger.domain.secrets import (
    BEARER,
    KNOWN_KEY,
    MASK,
    config_secrets,
    could_be_secret,
    mask_config,
    masks,
)

# Common names that contain a secret-looking word but hold paths, ids or flags; redacting
# their values ("wayland", "false", "user") would mask ordinary words in every log.
_HARMLESS_NAMES = (
    r"SSH_AUTH_SOCK|XAUTHORITY|DESKTOP_SESSION|SESSION_MANAGER|DBUS_SESSION_BUS_ADDRESS"
    r"|XDG_SESSION_\w+|GNOME_KEYRING_\w+|TOKENIZERS_PARALLELISM|GIT_AUTHOR_(?:NAME|EMAIL|DATE)"
)
SECRET_NAME = re.compile(
    rf"^(?!(?:{_HARMLESS_NAMES})$)"
    r".*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|PRIVATE|COOKIE|SESSION"
    r"|_PAT$).*",
    re.IGNORECASE,
)


def secret_values(env: Mapping[str, str]) -> list[str]:
    """Values of secret-looking names that could be secrets, longest first."""
    found = {
        value for name, value in env.items() if SECRET_NAME.match(name) and could_be_secret(value)
    }
    return sorted(found, key=lambda value: (-len(value), value))


class Redactor:
    """Masks the given secrets, and every well-known key shape, in text and bytes."""

    def __init__(self, secrets: Sequence[str], mask: str = MASK, *, shapes: bool = True) -> None:
        # Longest first, so a secret that contains another is masked whole; each also
        # as JSON escapes it, which is how a result file may hold it.
        spellings = {s for s in secrets if s} | {_json_escaped(s) for s in secrets if s}
        self.secrets = tuple(sorted(spellings, key=lambda s: (-len(s), s)))
        self.mask = mask
        self._shapes = shapes
        self._text: re.Pattern[str] | None = None
        self._bytes: re.Pattern[bytes] | None = None
        if self.secrets:
            self._text = re.compile("|".join(re.escape(s) for s in self.secrets))
            self._bytes = re.compile(b"|".join(re.escape(_encode(s)) for s in self.secrets))
        # Backslashes are the only special characters in a replacement template.
        self._text_mask = mask.replace("\\", "\\\\")
        self._bytes_mask = _encode(self._text_mask)
        self._known = re.compile(KNOWN_KEY.pattern.encode())
        self._bearer = re.compile(BEARER.pattern.encode())

    def redact(self, text: str) -> str:
        """The text with every secret masked."""
        if self._text is not None:
            text = self._text.sub(self._text_mask, text)
        if self._shapes:
            text = KNOWN_KEY.sub(self._text_mask, text)
            text = BEARER.sub(lambda m: m[1] + self.mask, text)
        return text

    def redact_bytes(self, data: bytes) -> bytes:
        """The bytes with the UTF-8 encoding of every secret masked."""
        if self._bytes is not None:
            data = self._bytes.sub(self._bytes_mask, data)
        if self._shapes:
            data = self._known.sub(self._bytes_mask, data)
            data = self._bearer.sub(lambda m: m[1] + _encode(self.mask), data)
        return data

    def redact_obj(self, value: Any) -> Any:
        """A copy of nested dicts, lists, tuples and strings with every secret masked, keys too."""
        if self._text is None and not self._shapes:
            return value
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, bytes):
            return self.redact_bytes(value)
        if isinstance(value, dict):
            return {self.redact_obj(k): self.redact_obj(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact_obj(item) for item in value]
        if isinstance(value, tuple):
            return tuple(self.redact_obj(item) for item in value)
        return value


def _json_escaped(text: str) -> str:
    return json.dumps(text)[1:-1]


def _encode(text: str) -> bytes:
    # surrogateescape round-trips environment values that were not valid UTF-8.
    return text.encode("utf-8", "surrogateescape")


_OPTION = re.compile(r"(-{1,2}[A-Za-z][\w.-]*)(=)(.*)", re.DOTALL)
_ASSIGNMENT = re.compile(r"([A-Za-z_][\w.-]*)(=)(.*)", re.DOTALL)


def mask_argv(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """The arguments with secret option values masked, and the values that could be
    secrets (to mask wherever else they appear).

    `--api-key X`, `--api-key=X`, `api_key=X` (override syntax) and JSON objects
    (a rendered `{config}`) are masked by the name rule; key shapes anywhere.
    """
    masked: list[str] = []
    found: list[str] = []
    pending: str | None = None
    for argument in argv:
        if pending is not None and not argument.startswith("-"):
            name, pending = pending, None
            if masks(name, argument):
                masked.append(MASK)
                found.append(argument)
                continue
        pending = None
        option = _OPTION.fullmatch(argument) or _ASSIGNMENT.fullmatch(argument)
        if option and masks(option[1], option[3]):
            masked.append(option[1] + "=" + MASK)
            found.append(option[3])
        elif argument.startswith("{") and isinstance(config := _json_object(argument), dict):
            masked.append(json.dumps(mask_config(config), separators=(",", ":")))
            found.extend(config_secrets(config))
        else:
            if argument.startswith("-") and "=" not in argument:
                pending = argument
            masked.append(argument)
    return masked, [value for value in found if could_be_secret(value)]


def _json_object(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


class HostPaths:
    """Rewrites absolute paths under the working directory (relative), the results root
    (`<results>`) and the home directory (`~`), so no event names a host path."""

    def __init__(self, cwd: Path, results_root: Path | None = None) -> None:
        prefixes: dict[str, str] = {}
        cwds = {os.path.abspath(cwd), str(Path(cwd).resolve())}
        for path in cwds:
            prefixes[path] = ""
        if results_root is not None:
            for path in {os.path.abspath(results_root), str(Path(results_root).resolve())}:
                if not any(path.startswith(c.rstrip("/") + "/") for c in cwds):
                    prefixes.setdefault(path, "<results>")
        home = os.path.expanduser("~")
        if home not in ("", "/") and home != "~":
            prefixes.setdefault(home, "~")
        ordered = sorted((p for p in prefixes if p != "/"), key=len, reverse=True)
        self._names = prefixes
        self._pattern = (
            re.compile(
                r"(?<![\w./-])(" + "|".join(re.escape(p) for p in ordered) + r")(?:(/)|(?![\w.-]))"
            )
            if ordered
            else None
        )

    def scrub(self, text: str) -> str:
        if self._pattern is None:
            return text

        def rewrite(match: re.Match[str]) -> str:
            name = self._names[match[1]]
            if match[2]:  # followed by a separator: what comes after is relative
                return f"{name}/" if name else ""
            return name or "."

        return self._pattern.sub(rewrite, text)

    def scrub_obj(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {self.scrub_obj(k): self.scrub_obj(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.scrub_obj(item) for item in value]
        if isinstance(value, tuple):
            return tuple(self.scrub_obj(item) for item in value)
        return value
