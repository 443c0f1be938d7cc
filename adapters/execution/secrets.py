"""Masking what a benchmark run must not record: secrets, and where the host keeps files.

Secrets come from three places: environment values under secret-looking names,
config values under secret-looking keys, and command options such as
`--api-key X` (the rule is in `benchledger.domain.secrets`). Well-known key
shapes (`sk-...`, `ghp_...`, `hf_...`, `AKIA...`, `Bearer ...`) are masked
wherever they appear. Masking applies to what the ledger records and to the logs
it writes; the benchmark's own files are never rewritten.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

from benchledger.domain.secret_names import is_flag_or_number, name_strength
from benchledger.domain.secrets import (
    MASK,
    MIN_SECRET_LENGTH,
    config_secrets,
    could_be_secret,
    mask_config,
    mask_text,
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
# A variable named for the secret it holds (`OPENAI_API_KEY`, `HF_TOKEN`, `DB_PASSWORD`,
# `GH_PAT`): its value is hunted whatever it looks like, letters only included, from
# MIN_SECRET_LENGTH characters (a shorter one, `key=dummy`, would mask ordinary words).
_OWN_NAME = re.compile(
    r"(?:^|_)(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|COOKIE|PAT|PWD)$",
    re.IGNORECASE,
)


def secret_values(env: Mapping[str, str]) -> list[str]:
    """Values of secret-looking names that could be secrets, longest first: any value of
    at least MIN_SECRET_LENGTH characters under a name that is a secret's own (not a
    flag word), else only one that is no plain word or number (`AUTH_MODE=disabled`
    stays)."""
    found = {
        value
        for name, value in env.items()
        if SECRET_NAME.match(name) and (could_be_secret(value) or _own_secret(name, value))
    }
    # A URL's password under any name (`DATABASE_URL=postgresql://u:pw@db/x`): masked in
    # place by the text rule, and hunted in its other spellings too.
    found.update(
        password
        for value in env.values()
        if "://" in value
        for password in _URL_PASSWORD.findall(value)
        if len(password) >= MIN_SECRET_LENGTH
    )
    return sorted(found, key=lambda value: (-len(value), value))


_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@]*:([^\s/?#@]+)@")


def _own_secret(name: str, value: str) -> bool:
    if len(value) < MIN_SECRET_LENGTH or value.lower() in ("true", "false", "none", "null"):
        return False
    named = _OWN_NAME.search(name) is not None or name_strength(name) == "strong"
    return named and (not is_flag_or_number(value) or value.isdigit())


def spellings(secret: str) -> set[str]:
    """The ways a secret may be written out: as it is, JSON-escaped, URL-encoded, and
    base64-encoded (standard and URL-safe) at each of the three alignments it may take
    inside a longer encoded text (only the characters that depend on the secret alone,
    when there are at least MIN_SECRET_LENGTH of them)."""
    found = {secret, _json_escaped(secret), quote(secret, safe=""), quote_plus(secret)}
    data = _encode(secret)
    for k in range(3):
        encoded = base64.b64encode(b"\0" * k + data).decode("ascii")
        core = encoded[-(-8 * k // 6) : (8 * (k + len(data))) // 6]
        if len(core) >= MIN_SECRET_LENGTH:
            found.add(core)
            found.add(core.translate(_URLSAFE))
    return {s for s in found if s}


_URLSAFE = str.maketrans("+/", "-_")
# A line break, which a program wrapping its output (base64 at 76 columns) may put
# anywhere inside a secret.
_BREAK = "(?:\r?\n)?"


def _broken(spelling: str) -> str:
    """A pattern of the spelling with a line break allowed between any two characters."""
    return _BREAK.join(re.escape(c) for c in spelling)


class Redactor:
    """Masks the given secrets, and every secret `domain.secrets` finds in text, in text
    and bytes: each secret in each of its spellings (`spellings`), also broken across
    lines."""

    def __init__(self, secrets: Sequence[str], mask: str = MASK, *, shapes: bool = True) -> None:
        # Longest first, so a secret that contains another is masked whole.
        written = set().union(*(spellings(s) for s in secrets if s)) if secrets else set()
        self.secrets = tuple(sorted(written, key=lambda s: (-len(s), s)))
        self.mask = mask
        self._shapes = shapes
        self._text: re.Pattern[str] | None = None
        self._bytes: re.Pattern[bytes] | None = None
        if self.secrets:
            pattern = "|".join(_broken(s) for s in self.secrets)
            self._text = re.compile(pattern)
            self._bytes = re.compile(_encode(pattern))
        # Backslashes are the only special characters in a replacement template.
        self._text_mask = mask.replace("\\", "\\\\")
        self._bytes_mask = _encode(self._text_mask)
        # How much of a stream's end may be the start of a secret (`StreamMask`).
        self.longest = 2 * max((len(_encode(s)) for s in self.secrets), default=0)

    def redact(self, text: str) -> str:
        """The text with every secret masked."""
        if self._text is not None:
            text = self._text.sub(self._text_mask, text)
        return self.redact_shapes(text) if self._shapes else text

    def redact_bytes(self, data: bytes) -> bytes:
        """The bytes with the UTF-8 encoding of every secret masked."""
        if self._bytes is not None:
            data = self._bytes.sub(self._bytes_mask, data)
        if self._shapes:
            text = data.decode("utf-8", "surrogateescape")
            masked = self.redact_shapes(text)
            if masked is not text:
                data = _encode(masked)
        return data

    def redact_shapes(self, text: str) -> str:
        """The text with every secret `domain.secrets` finds in text masked."""
        masked = mask_text(text)
        if masked is text or self.mask == MASK:
            return masked
        return masked.replace(MASK, self.mask)

    def stream(self) -> StreamMask:
        """A mask for text written in pieces (a log, line by line)."""
        return StreamMask(self)

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


class StreamMask:
    """Masks bytes written in pieces: a secret split across two pieces (two writes, two
    lines) is masked whole, since the end of what came so far that could be the start
    of a secret is held back until the next piece (or `end`)."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._held = b""

    def feed(self, data: bytes) -> bytes:
        """What may be written of everything fed so far, masked."""
        masked = self._redactor.redact_bytes(self._held + data)
        keep = self._redactor.longest
        if keep == 0:
            self._held = b""
            return masked
        cut = max(0, len(masked) - keep)
        self._held = masked[cut:]
        return masked[:cut]

    def end(self) -> bytes:
        """The rest, once nothing more comes."""
        held, self._held = self._held, b""
        return held


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
