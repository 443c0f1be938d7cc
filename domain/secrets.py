"""Which values are secrets: by the name they are given and by what they look like.

The rule, for config keys, command options and environment names alike:

- A *name* looks secret when one of its words (split at `_`, `-`, `.` and case
  changes) is `key`, `token`, `secret`, `password`, ... (`api_key`, `hfToken`,
  `--auth-token`, `DB_PASSWORD`). `max_tokens`, `tokenizer` and `keyword` do not:
  "tokens" counts tokens, "tokenizer" names a model.
- Only a *string* under such a name is masked: numbers, booleans and null are
  counts, limits and flags (`token_limit = 4096`), never secrets. Nor are the flag
  words true/false/yes/no/none/null.
- Under a *strong* name (password, secret, passphrase, credential, api key) every
  other string is masked where it stands. Under a *weak* one (`key`, `token`,
  `auth`, ...) only a value that could be a secret is: `sort_key = "score"` stays.
- Well-known key shapes (`sk-...`, `ghp_...`, `hf_...`, `AKIA...`, `Bearer ...`) are
  masked in any string, whatever its name.
- A value *could be a secret* when it is at least 8 characters without white space
  and is neither a plain word (letters, perhaps joined by `-`, `_` or `.`) nor a
  number. Only such values are also masked wherever else they appear (logs, result
  text, error messages): masking a short or plain word there would mangle ordinary
  text (`AUTH_MODE=passed` must not turn every "passed" into a mask).

A masked value still counts for the work's signature, which is computed from the
real value before masking: different secrets are different work.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

MASK = "[REDACTED]"

_STRONG = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "secret",
        "secrets",
        "credential",
        "credentials",
        "apikey",
    }
)
_WEAK = frozenset({"key", "token", "auth", "authorization", "bearer", "pat", "cookie", "private"})
# Joined spellings of strong names that word splitting cannot see ("dbpassword").
_STRONG_PARTS = ("password", "passwd", "passphrase", "secret", "apikey", "credential")
_FLAG_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null"})
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_PLAIN_WORD = re.compile(r"[A-Za-z]+(?:[-_.][A-Za-z]+)*")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
MIN_SECRET_LENGTH = 8

# Key shapes of well-known providers, masked wherever they appear; the body must hold a
# digit, so words such as "sk-learn-tutorials" are left alone.
_BODY = r"(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]"
_KNOWN_KEYS = (
    rf"sk-ant-{_BODY}{{16,}}",
    rf"sk-{_BODY}{{16,}}",
    rf"(?:ghp|gho|ghu|ghs|ghr)_{_BODY}{{20,}}",
    rf"github_pat_{_BODY}{{20,}}",
    rf"glpat-{_BODY}{{16,}}",
    rf"hf_{_BODY}{{16,}}",
    rf"xox[abposr]-{_BODY}{{10,}}",
    r"(?:AKIA|ASIA)[0-9A-Z]{16}",
    r"AIza[0-9A-Za-z_-]{35}",
)
KNOWN_KEY = re.compile(r"(?<![A-Za-z0-9_-])(?:" + "|".join(_KNOWN_KEYS) + r")")
# "Authorization: Bearer X", "Bearer X", "Authorization: Basic X": the credential after it.
BEARER = re.compile(
    r"(?i)(\b(?:authorization\s*[:=]\s*(?:bearer|basic|token)?|bearer)\s+)"
    r"([A-Za-z0-9._~+/=-]{8,})"
)


def mask_shapes(text: str) -> str:
    """The text with every well-known key shape and bearer credential masked."""
    return BEARER.sub(lambda m: m[1] + MASK, KNOWN_KEY.sub(MASK, text))


def name_strength(name: str) -> str | None:
    """ "strong" or "weak" for a secret-looking name, None for an ordinary one."""
    words = [w.lower() for w in _WORDS.findall(name)]
    joined = "".join(words)
    if any(w in _STRONG for w in words) or any(p in joined for p in _STRONG_PARTS):
        return "strong"
    if "api" in words and "key" in words:
        return "strong"
    if any(w in _WEAK for w in words):
        return "weak"
    return None


def could_be_secret(value: str) -> bool:
    """Long enough, no white space, not a plain word or number."""
    return (
        len(value) >= MIN_SECRET_LENGTH
        and not any(c.isspace() for c in value)
        and not _PLAIN_WORD.fullmatch(value)
        and not _NUMBER.fullmatch(value)
    )


def masks(name: str, value: object) -> bool:
    """Whether the value given under this name is masked where it stands."""
    strength = name_strength(name)
    if strength is None or not isinstance(value, str) or not value:
        return False
    if value.lower() in _FLAG_WORDS or _NUMBER.fullmatch(value):
        return False
    return strength == "strong" or could_be_secret(value)


def mask_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy with every secret-looking value, and every key shape in any string, masked."""
    return {key: _mask_value(str(key), value) for key, value in config.items()}


def _mask_value(name: str, value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _mask_value(str(k), v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask_value(name, item) for item in value]
    if masks(name, value):
        return MASK
    return mask_shapes(value) if isinstance(value, str) else value


def config_secrets(config: Mapping[str, Any]) -> list[str]:
    """The masked values of a config that could be secrets, to hunt for elsewhere."""
    return sorted(set(_found(config)))


def _found(value: Any, name: str = "") -> Iterator[str]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _found(item, str(key))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _found(item, name)
    elif isinstance(value, str) and masks(name, value) and could_be_secret(value):
        yield value
