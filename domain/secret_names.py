"""Which names hold secrets, and which of their values could be one (`domain.secrets`)."""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import pairwise

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
        "authorization",
        "cookie",
        "cookies",
    }
)
_WEAK = frozenset({"key", "token", "auth", "bearer", "pat", "private"})
# Joined spellings of strong names that word splitting cannot see ("dbpassword").
_STRONG_PARTS = ("password", "passwd", "passphrase", "secret", "apikey", "credential")
# A key or token named for what it opens is a secret whatever it looks like
# (`access_key`, `private_key`, `refresh_token`, `hf_token`); a token named for its
# place in a vocabulary (`eos_token`, `tokenizer_pad_token`) is text.
_KEY_KINDS = frozenset({"access", "private", "secret", "api", "signing", "encryption", "master"})
_TOKEN_KINDS = frozenset(
    {"access", "refresh", "auth", "api", "bearer", "id", "session", "oauth", "hf", "github",
     "gh", "bot", "personal", "csrf", "xsrf"}
)  # fmt: skip
_VOCABULARY = frozenset(
    {"tokenizer", "pad", "eos", "bos", "unk", "sep", "cls", "eot", "mask", "special", "decoded"}
)
_FLAG_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null"})
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_PLAIN_WORD = re.compile(r"[A-Za-z]+(?:[-_.][A-Za-z]+)*")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
MIN_SECRET_LENGTH = 8


@lru_cache(maxsize=4096)
def name_strength(name: str) -> str | None:
    """ "strong", "opener" (a key or token named for what it opens) or "weak" for a
    secret-looking name, None for an ordinary one."""
    words = [w.lower() for w in _WORDS.findall(name)]
    joined = "".join(words)
    if any(w in _VOCABULARY for w in words):
        return None
    if any(w in _STRONG for w in words) or any(p in joined for p in _STRONG_PARTS):
        return "strong"
    if _named_for_what_it_opens(words):
        return "opener"
    if any(w in _WEAK for w in words):
        return "weak"
    return None


def _named_for_what_it_opens(words: list[str]) -> bool:
    for before, word in pairwise(words):
        if word == "key" and before in _KEY_KINDS:
            return True
        if word == "token" and before in _TOKEN_KINDS:
            return True
    return False


@lru_cache(maxsize=4096)
def names_a_secret(name: str) -> bool:
    """Whether the name is a secret's own (`db_password`, `api_key`, `hf_token`) rather
    than something about one (`password_length`, `secrets_found`): its last word says.
    Under such a name a number is masked too (a PIN); under the others it is a count."""
    if name_strength(name) not in ("strong", "opener"):
        return False
    words = [w.lower() for w in _WORDS.findall(name)]
    if not words:
        return False
    last = words[-1]
    return (
        last in _STRONG
        or any(last.endswith(p) for p in _STRONG_PARTS)
        or (last in ("key", "token") and _named_for_what_it_opens(words[-2:]))
    )


def could_be_secret(value: str) -> bool:
    """Long enough, no white space, not a plain word or number."""
    return (
        len(value) >= MIN_SECRET_LENGTH
        and not any(c.isspace() for c in value)
        and not _PLAIN_WORD.fullmatch(value)
        and not _NUMBER.fullmatch(value)
    )


def is_flag_or_number(value: str) -> bool:
    return value.lower() in _FLAG_WORDS or _NUMBER.fullmatch(value) is not None


def masks(name: str, value: object) -> bool:
    """Whether the value given under this name is masked where it stands (a config key,
    a metric, a command option): under a strong name every string but a flag word or a
    number, and a number too where the name is the secret's own (`names_a_secret`);
    under an opener every string without white space (`createAuthToken` may hold a
    function call); under a weak name a string that could be a secret. Booleans and
    null never."""
    strength = name_strength(name)
    if strength is None or value is None or isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return names_a_secret(name)
    if not isinstance(value, str) or not value:
        return False
    if is_flag_or_number(value):
        return names_a_secret(name) and _NUMBER.fullmatch(value) is not None
    if strength == "opener":  # a key or token holds no white space; a function call does
        return not any(c.isspace() for c in value)
    return strength == "strong" or could_be_secret(value)
