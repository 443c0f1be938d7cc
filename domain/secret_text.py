"""Secrets inside free text: credentials in URLs, header and `name=value` assignments of
secret-looking names, private key blocks and well-known key shapes, masked in place.

- A URL's password is masked and its user kept (`https://u:[REDACTED]@h/v1`): the
  user says whose account a run used, the password is the secret. A URL with a user
  only (`https://TOKEN@host`) has it masked when it could be a secret (`git@` stays).
- `Authorization:` and `Proxy-Authorization:` values are masked after their scheme
  (`Bearer`, `Basic`, ...), whatever their length; a bare `Bearer X` when X is 8
  characters or more (`the bearer of news` stays).
- `name=value`, `name: value`, `"name": "value"` and `--name value` where the name is
  secret-looking (`_masks_assigned`): `api_key=...` in lm-eval's
  `model_args`, `X-Api-Key: ...` in a logged request, `"password": "..."` in a JSON
  string. JSON-escaped quotes (`\\"password\\": \\"...\\"`) count as quotes.
- PEM private key blocks are masked whole, JWTs (`eyJ....eyJ....sig`) and provider
  key shapes (`sk-...`, `sk-ant-...`, `ghp_...`, `github_pat_...`, `hf_...`,
  `AKIA...`, `AIza...`, `xox[bp]-...`) wherever they stand.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from benchledger.domain.secret_names import (
    could_be_secret,
    is_flag_or_number,
    name_strength,
    names_a_secret,
)

MASK = "[REDACTED]"

# Key shapes of well-known providers; the body must hold a digit, so words such as
# "sk-learn-tutorials" are left alone.
_BODY = r"(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]"
_KNOWN_KEYS = (
    rf"sk-ant-{_BODY}{{16,}}",
    rf"sk-{_BODY}{{16,}}",
    rf"(?:ghp|gho|ghu|ghs|ghr)_{_BODY}{{20,}}",
    rf"github_pat_{_BODY}{{20,}}",
    rf"glpat-{_BODY}{{16,}}",
    r"hf_(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{20,}",
    rf"xox[abposr]-{_BODY}{{10,}}",
    r"(?:AKIA|ASIA)[0-9A-Z]{16}",
    r"AIza[0-9A-Za-z_-]{35}",
    r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
)
KNOWN_KEY = re.compile(r"(?<![A-Za-z0-9_-])(?:" + "|".join(_KNOWN_KEYS) + r")")

# Where a pattern below says "lower-cased", it runs on the text lower-cased (same length
# for all but a few non-ASCII letters, see `_lowered`): Python's case-insensitive matching
# costs several times a case-sensitive one, on every string an import records.
_PEM = re.compile(
    # A PEM private key block, whole; a block never closed, to the end of its body.
    r"-----BEGIN[A-Z ]{0,40} PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[\s\S]{0,20000}?-----END[A-Z ]{0,40} PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\]*)"
)
# A URL's user information: user:password@, or a lone user@.
_URL = re.compile(
    r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://(?P<user>[^\s:/?#@\"'<>\\]+)"
    r"(?::(?P<password>[^\s/?#@\"'<>\\]*))?@"
)
# A quote as it stands in text, or escaped inside a JSON string.
_Q = r"(?:\\?[\"'])"
# An Authorization header's value, after its scheme (lower-cased).
_AUTH = re.compile(
    rf"(?<![a-z0-9_-]){_Q}?(?:proxy-)?authorization{_Q}?\s*[:=]\s*{_Q}?\s*"
    r"(?:(?:bearer|basic|token|digest|negotiate|apikey)\s+)?(?P<credential>[^\s\"'\\,;]+)"
)
_BEARER = re.compile(r"\bbearer\s+(?P<credential>[a-z0-9._~+/=-]{8,})")  # lower-cased
# The words that make a name worth a look (lower-cased); `_masks_assigned` decides.
_KEYWORD = re.compile(
    r"passw(?:or)?d|passphrase|secret|credential|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|token|auth|cookie"
)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
# After a name: = or : (or white space after an option's dashes), then its value.
_SEP = re.compile(rf"{_Q}?\s*[:=]\s*(?P<quote>{_Q})?")
_OPTION_SEP = re.compile(rf"\s+(?P<quote>{_Q})?")
_QUOTED = re.compile(r"[^\"'\\\r\n]{1,1000}")
_BARE = re.compile(r"[^\s\"'\\,;&)}\]]+")
# What every secret comes with, lower-cased: text without any is left as it is.
_HINTS = (
    "://", "-----begin", "passw", "passphrase", "secret", "credential", "key", "token", "auth",
    "bearer", "cookie", "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
    "hf_", "xox", "akia", "asia", "aiza", "eyj",
)  # fmt: skip


def _any_of(words: Iterable[str]) -> str:
    """A pattern matching any of `words`, with the prefixes they share written once
    (`pass(?:phrase|w)`): Python's re tries each alternative of a group at each place
    in the text, so a group of twenty-five words costs twice one of their first letters."""
    tree: dict[str, Any] = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def pattern(node: dict[str, Any]) -> str:
        if "" in node:
            return ""  # a word ends here: what follows it holds it too
        branches = [re.escape(char) + pattern(node[char]) for char in sorted(node)]
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    return pattern(tree)


_HINTED = re.compile(_any_of(_HINTS))
_SHAPE_HINTS = re.compile(r"sk-|gh[pousr]_|github_pat_|glpat-|hf_|xox|AKIA|ASIA|AIza|eyJ")

Span = tuple[int, int, str]


def mask_text(text: str) -> str:
    """The text with every secret this module knows masked; the text itself when it holds
    none (most text: one search of its lower-cased copy for the words and prefixes every
    secret comes with). Each kind of secret is looked for only where its own word is."""
    if len(text) < 8:
        return text
    lowered = _lowered(text)
    if _HINTED.search(lowered) is None:
        return text
    spans: list[Span] = []
    if "-----begin" in lowered:
        spans.extend((m.start(), m.end(), MASK) for m in _PEM.finditer(text))
    if "://" in lowered:
        spans.extend(_url_spans(text))
    if "authorization" in lowered:
        spans.extend(_credential(m) for m in _AUTH.finditer(lowered))
    if "bearer" in lowered:
        spans.extend(_credential(m) for m in _BEARER.finditer(lowered))
    spans.extend(_assigned_spans(text, lowered))
    if _SHAPE_HINTS.search(text):
        spans.extend((m.start(), m.end(), MASK) for m in KNOWN_KEY.finditer(text))
    return _replaced(text, spans) if spans else text


def any_hinted(texts: list[str]) -> bool:
    """Whether `mask_text` could mask anything in any of the texts: one search of them
    joined (a line break is in no hint, so joining makes no hint that was not there);
    long texts one by one, rather than copied twice more.

    Without `://` among them, no hint holds a slash either: the texts are cut at their
    slashes and line breaks, and only the pieces not known to be free of hints are
    searched, each once. A record's texts are mostly paths that share their folders
    with one another and with other records' (`/srv/.../run_x/stdout.log`): what is
    searched is then the few pieces new to it (the run's folder, its times)."""
    if sum(map(len, texts)) > _JOINED_AT_MOST:
        return any(_HINTED.search(_lowered(text)) is not None for text in texts)
    joined = "\n".join(texts)
    if "://" in joined:
        return _HINTED.search(_lowered(joined)) is not None
    pieces = set(joined.replace("/", "\n").split("\n"))
    pieces -= _CLEAN.known
    if not pieces:
        return False
    if _HINTED.search(_lowered("\n".join(pieces))) is not None:
        return True
    _CLEAN.remember(pieces)
    return False


_JOINED_AT_MOST = 1 << 20


class _CleanPieces:
    """Pieces of text (`any_hinted`) found to hold no hint, as records repeat them: at
    most `CHARS` characters of them, then forgotten and found again."""

    CHARS = 1 << 18

    def __init__(self) -> None:
        self.known: set[str] = set()
        self.chars = 0

    def remember(self, pieces: set[str]) -> None:
        size = sum(map(len, pieces))
        if self.chars + size > self.CHARS:
            if size > self.CHARS:
                return
            self.known.clear()
            self.chars = 0
        self.known |= pieces
        self.chars += size


_CLEAN = _CleanPieces()


def _lowered(text: str) -> str:
    """The text lower-cased, each character in its place (a letter whose lower case is
    longer, as `İ`, is kept as it is)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _credential(match: re.Match[str]) -> Span:
    return match.start("credential"), match.end("credential"), MASK


def _url_spans(text: str) -> list[Span]:
    spans: list[Span] = []
    for match in _URL.finditer(text):
        password = match["password"]
        if password:
            spans.append((match.start("password"), match.end("password"), MASK))
        elif password is None and could_be_secret(match["user"]):
            spans.append((match.start("user"), match.end("user"), MASK))
    return spans


def _assigned_spans(text: str, lowered: str) -> list[Span]:
    """The values assigned to secret-looking names: `name=value`, `name: value`,
    `"name": "value"`, `--name value`."""
    spans: list[Span] = []
    after = 0  # a name holding two keywords (`auth_token`) is looked at once
    for hit in _KEYWORD.finditer(lowered):
        if hit.start() < after:
            continue
        start, end = hit.start(), hit.end()
        while start > 0 and lowered[start - 1] in _NAME_CHARS:
            start -= 1
        while end < len(lowered) and lowered[end] in _NAME_CHARS:
            end += 1
        after = end
        name = text[start:end]
        bare = name.lstrip("-")
        if "authorization" in lowered[start:end]:
            continue  # its value follows its scheme (`_AUTH`)
        sep = (_OPTION_SEP if bare != name else _SEP).match(text, end)
        if sep is None and bare != name:
            sep = _SEP.match(text, end)
        if sep is None:
            continue
        value = (_QUOTED if sep["quote"] else _BARE).match(text, sep.end())
        if value is None or value[0].startswith(MASK[:-1]):  # masked already
            continue
        if _masks_assigned(bare, value[0]):
            spans.append((value.start(), value.end(), MASK))
    return spans


def _replaced(text: str, spans: list[Span]) -> str:
    """The text with each span replaced; of overlapping spans, the first to start (the
    longest of those starting together) wins."""
    parts: list[str] = []
    at = 0
    for start, end, replacement in sorted(spans, key=lambda s: (s[0], -s[1])):
        if start < at:
            continue
        parts.append(text[at:start])
        parts.append(replacement)
        at = end
    parts.append(text[at:])
    masked = "".join(parts)
    return text if masked == text else masked  # the same object: nothing to copy


def _masks_assigned(name: str, value: str) -> bool:
    """Whether a value assigned to a name in text is masked: as `secret_names.masks`
    would mask it, numbers included only under a secret's own name."""
    strength = name_strength(name)
    if strength is None or not value.strip():
        return False
    if is_flag_or_number(value.strip()):
        return names_a_secret(name) and not value.strip().lower().isalpha()
    if strength == "strong":
        return True
    if strength == "opener":
        return not any(c.isspace() for c in value)
    return could_be_secret(value)
