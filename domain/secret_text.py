"""Secrets inside free text: credentials in URLs, header and `name=value` assignments of
secret-looking names, private key blocks and well-known key shapes, masked in one pass.

- A URL's password is masked and its user kept (`https://u:[REDACTED]@h/v1`): the
  user says whose account a run used, the password is the secret. A URL with a user
  only (`https://TOKEN@host`) has it masked when it could be a secret (`git@` stays).
- `Authorization:` and `Proxy-Authorization:` values are masked after their scheme
  (`Bearer`, `Basic`, ...), whatever their length; a bare `Bearer X` when X is 8
  characters or more (`the bearer of news` stays).
- `name=value`, `name: value`, `"name": "value"` and `--name value` where the name is
  secret-looking (`domain.secrets.masks_text`): `api_key=...` in lm-eval's
  `model_args`, `X-Api-Key: ...` in a logged request, `"password": "..."` in a JSON
  string. JSON-escaped quotes (`\\"password\\": \\"...\\"`) count as quotes.
- PEM private key blocks are masked whole, JWTs (`eyJ....eyJ....sig`) and provider
  key shapes (`sk-...`, `sk-ant-...`, `ghp_...`, `github_pat_...`, `hf_...`,
  `AKIA...`, `AIza...`, `xox[bp]-...`) wherever they stand.
"""

from __future__ import annotations

import re

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

# A quote as it stands in text, or escaped inside a JSON string.
_Q = r"(?:\\?[\"'])"
# The words that make a name worth a look; `_masks_assigned` decides.
_NAME = (
    r"[A-Za-z0-9_.-]*(?i:passw(?:or)?d|passphrase|secret|credential|api[_-]?key"
    r"|access[_-]?key|private[_-]?key|token|auth|cookie)[A-Za-z0-9_.-]*"
)
_PEM_END = r"-----END[A-Z ]{0,40} PRIVATE KEY(?: BLOCK)?-----"
_TEXT = re.compile(
    # A PEM private key block, whole; a block never closed, to the end of its body.
    r"(?P<pem>-----BEGIN[A-Z ]{0,40} PRIVATE KEY(?: BLOCK)?-----"
    rf"(?:[\s\S]{{0,20000}}?{_PEM_END}|[A-Za-z0-9+/=\s\\]*))"
    # A URL's user information: user:password@, or a lone user@.
    r"|(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]{1,20}://)(?P<user>[^\s:/?#@\"'<>\\]+)"
    r"(?::(?P<password>[^\s/?#@\"'<>\\]*))?@"
    # An Authorization header's value, after its scheme.
    rf"|(?P<auth>(?<![A-Za-z0-9_-]){_Q}?(?i:(?:proxy-)?authorization){_Q}?\s*[:=]\s*{_Q}?\s*"
    r"(?i:(?:bearer|basic|token|digest|negotiate|apikey)\s+)?)(?P<credential>[^\s\"'\\,;]+)"
    r"|(?P<bearer>\b(?i:bearer)\s+)(?P<token>[A-Za-z0-9._~+/=-]{8,})"
    # name=value, name: value, "name": "value", --name value.
    rf"|(?P<lead>(?<![A-Za-z0-9_.-])(?P<dashes>--?)?{_Q}?(?P<name>{_NAME}){_Q}?"
    rf"(?:\s*[:=]\s*|(?(dashes)\s+|(?!))){_Q}?)"
    r"(?:(?<=[\"'])(?P<quoted>[^\"'\\\r\n]{1,1000})|(?P<value>[^\s\"'\\,;&)}\]]+))"
    # A provider's key shape.
    r"|(?P<key>(?<![A-Za-z0-9_-])(?:" + "|".join(_KNOWN_KEYS) + r"))"
)
# What every secret `_TEXT` finds comes with, lower-cased: text without any is left as it
# is. One search of a lower-cased copy costs a fifth of a case-insensitive one.
_HINTS = (
    "://", "-----begin", "passw", "passphrase", "secret", "credential", "key", "token", "auth",
    "bearer", "cookie", "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
    "hf_", "xox", "akia", "asia", "aiza", "eyj",
)  # fmt: skip
_HINTED = re.compile("|".join(re.escape(hint) for hint in _HINTS))


def mask_text(text: str) -> str:
    """The text with every secret this module knows masked, in one pass; the text itself
    when it holds none of the words and prefixes a secret comes with (one quick search)."""
    if len(text) < 8:
        return text
    if _HINTED.search(text.lower()) is None:
        return text
    masked = _TEXT.sub(_replace, text)
    return text if masked == text else masked  # the same object: nothing to copy


def _replace(match: re.Match[str]) -> str:
    if match["pem"] is not None:
        return MASK
    if match["scheme"] is not None:
        user, password = match["user"], match["password"]
        if password is not None:
            return f"{match['scheme']}{user}:{MASK if password else ''}@"
        return f"{match['scheme']}{MASK if could_be_secret(user) else user}@"
    if match["auth"] is not None:
        return match["auth"] + MASK
    if match["bearer"] is not None:
        return match["bearer"] + MASK
    if match["lead"] is not None:
        value = match["quoted"] if match["quoted"] is not None else match["value"]
        if value.startswith(MASK[:-1]):  # masked already: `password=[REDACTED]` stays
            return match[0]
        if _masks_assigned(match["name"], value):
            return match["lead"] + MASK
        return match["lead"] + mask_text(value)
    return MASK


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
