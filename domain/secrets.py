"""Which values are secrets: by the name they are given and by what they look like.

The rule, for config keys, metrics, provenance, command options and environment names:

- A *name* looks secret when one of its words (split at `_`, `-`, `.` and case
  changes) is `password`, `secret`, `credential`, `authorization`, `cookie`, an
  api key, `key`, `token`, `auth`... (`api_key`, `hfToken`, `--auth-token`,
  `DB_PASSWORD`). `max_tokens`, `total_tokens`, `tokenizer`, `eos_token` and
  `keyword` do not: "tokens" counts tokens, the others name a model's vocabulary.
  The rule is in `secret_names`.
- Under a *strong* name (password, secret, passphrase, credential, api key,
  authorization, cookie) every string but the flag words true/false/yes/no/none/null
  is masked where it stands; under a key or token named for what it opens
  (`access_key`, `private_key`, `hf_token`, `refresh_token`) every string without
  white space; under a *weak* one (`key`, `token`, `auth`, ...) only a value that
  could be a secret: `sort_key = "score"` stays.
- A number is masked only under a secret's own name (`password = 1234`, `api_key`:
  the last word says), never under one about a secret (`password_length`,
  `token_limit = 4096`, `secrets_found`). Booleans and null never are. A masked
  number becomes the mask, a string: the value is gone, its type with it.
- Under a secret's own name, a nested object or list is masked leaf by leaf (its keys
  and shape stay); elsewhere each nested key is judged by its own name.
- A command kept as a list (`["run", "--api-key", "X"]`): the value after an option
  alone is judged under the option's name, as `mask_argv` judges a command line.
- In any string (`secret_text`): a URL's password (`https://user:[REDACTED]@host`,
  the user kept), `Authorization:` and `X-Api-Key:` values, `name=value` of a
  secret-looking name (lm-eval's `model_args`), private key blocks, JWTs and the
  key shapes of well-known providers (`sk-...`, `ghp_...`, `hf_...`, `AKIA...`).
- A value *could be a secret* when it is at least 8 characters without white space
  and is neither a plain word (letters, perhaps joined by `-`, `_` or `.`) nor a
  number. Only such values are also masked wherever else they appear (logs, result
  text, error messages): masking a short or plain word there would mangle ordinary
  text (`AUTH_MODE=passed` must not turn every "passed" into a mask).

A masked value still counts for the work's signature, which is computed from the
real value before masking: different secrets are different work.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from benchledger.domain.secret_names import (
    MIN_SECRET_LENGTH,
    could_be_secret,
    masks,
    name_strength,
    names_a_secret,
)
from benchledger.domain.secret_text import KNOWN_KEY, MASK, any_hinted, mask_text

__all__ = [
    "KNOWN_KEY",
    "MASK",
    "MIN_SECRET_LENGTH",
    "config_secrets",
    "could_be_secret",
    "mask_config",
    "mask_text",
    "mask_value",
    "masks",
    "masks_nothing",
    "name_strength",
]


def mask_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy with every secret-looking value, and every secret in any string, masked."""
    return {key: mask_value(value, str(key)) for key, value in config.items()}


def mask_value(value: Any, name: str = "") -> Any:
    """`value` given under `name`, with its secrets masked: the value itself (not a copy)
    when it holds none, so that what has nothing to mask costs no copy. Concrete types
    are tested first: this runs on every value an import records."""
    return _masked(value, name, True)


def _masked(value: Any, name: str, quick: bool) -> Any:
    """`mask_value`; `quick`: an object is first looked at whole (`_masked_items`)."""
    kind = type(value)
    if kind is int or kind is float:
        return MASK if name and names_a_secret(name) else value
    if kind is str:
        return MASK if name and masks(name, value) else mask_text(value)
    if value is None or kind is bool:
        return value
    if kind is dict or isinstance(value, Mapping):
        if name and names_a_secret(name) and name_strength(name) == "strong":
            return _every_leaf(value)
        return _masked_items(value, quick)
    if kind is list or kind is tuple:
        items = [_masked(item, name, quick) for item in value]
        for i in _secret_option_values(value):  # a command kept as a list
            items[i] = MASK
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items if kind is list else tuple(items)
    if isinstance(value, str):  # an enum's value, say
        return MASK if name and masks(name, value) else mask_text(value)
    return value


def _secret_option_values(value: list[Any] | tuple[Any, ...]) -> list[int]:
    """Where in `value` a string follows an option alone (`["--api-key", "X"]`, as a
    command kept as a list holds it) whose name masks it, as it would under that name
    (`--api-key=X` is masked within its string)."""
    return [
        i + 1
        for i in _options_naming_secrets(value)
        if i + 1 < len(value)
        and type(following := value[i + 1]) is str
        and not following.startswith("-")
        and masks(value[i], following)
    ]


def _options_naming_secrets(value: list[Any] | tuple[Any, ...]) -> list[int]:
    """Where `value` holds an option alone (`--token`, not `--token=X`) whose name could
    name a secret."""
    return [
        i
        for i, item in enumerate(value)
        if type(item) is str
        and item[:1] == "-"
        and "=" not in item
        and name_strength(item) is not None
    ]


def _masked_items(value: Mapping[Any, Any], quick: bool) -> Mapping[Any, Any]:
    """The object with its secrets masked. Most objects an import records have none: one
    walk over it (`_names_mask_nothing`) and one search of its strings tell so, where a
    value-by-value masking costs several calls each. When they cannot tell, the values
    inside are masked one by one, without a second such look."""
    if quick and type(value) is dict:
        texts: list[str] = []
        if _names_mask_nothing(value, texts) and not any_hinted(texts):
            return value
    changed: dict[Any, Any] | None = None
    for key, item in value.items():
        masked = _masked(item, key if type(key) is str else str(key), False)
        if masked is not item:
            if changed is None:
                changed = dict(value)
            changed[key] = masked
    return value if changed is None else changed


def masks_nothing(values: Iterable[Any]) -> bool:
    """Whether `mask_value` would return each of the values itself, told by one look at
    them all (`_masked_items`); False only means: mask them."""
    texts: list[str] = []
    return all(_names_nothing("", value, texts) for value in values) and not any_hinted(texts)


def _names_mask_nothing(value: dict[Any, Any], texts: list[str]) -> bool:
    """Whether no name in `value` masks what it names (nested objects and lists of plain
    data included), gathering its strings into `texts`: then only a secret inside one of
    them could be masked (`mask_text`), and all of them are searched at once. False for
    anything else (a name that could mask, a key that is not a string, a subclass): then
    each value is masked one by one."""
    kinds = set(map(type, value.values()))
    if kinds <= _NUMBERS and value.keys() <= _NOT_OWN_NAMES:
        return True  # a group of counts (a run's token metrics), told in C
    if kinds <= _FLAT and value.keys() <= _PLAIN_NAMES:
        texts += [item for item in value.values() if type(item) is str]
        return True
    for key, item in value.items():
        kind = type(item)
        if kind is int or kind is float:
            if key in _NOT_OWN_NAMES:
                continue
        elif kind is str:
            if key in _PLAIN_NAMES:
                texts.append(item)
                continue
        elif kind is dict:
            if key in _NOT_OWN_NAMES:
                if _names_mask_nothing(item, texts):
                    continue
                return False
        elif (
            kind is list
            and key in _PLAIN_NAMES
            and set(map(type, item)) <= _STR
            and not _options_naming_secrets(item)
        ):
            texts.extend(item)
            continue
        elif item is None or kind is bool:
            continue
        if type(key) is not str or not _names_nothing(key, item, texts):
            return False
    return True


def _names_nothing(name: str, item: Any, texts: list[str]) -> bool:
    """`_names_mask_nothing` of one value given under `name` (as `mask_value` judges it),
    remembering the names found to mask nothing."""
    plain = not name or name_strength(name) is None
    own = not plain and names_a_secret(name)
    if len(_NOT_OWN_NAMES) < 10_000:
        if plain:
            _PLAIN_NAMES.add(name)
        if not own:
            _NOT_OWN_NAMES.add(name)
    kind = type(item)
    if kind is str:
        if plain:
            texts.append(item)
        return plain
    if kind is int or kind is float:
        return not own
    if item is None or kind is bool:
        return True
    if kind is dict:
        return not own and _names_mask_nothing(item, texts)
    if kind is list or kind is tuple:
        return not _options_naming_secrets(item) and all(
            _names_nothing(name, x, texts) for x in item
        )
    return False


# Names under which no value is masked (`name_strength` None), and those under which no
# number or object is (not `names_a_secret`), as an import's objects repeat them.
_PLAIN_NAMES: set[str] = set()
_NOT_OWN_NAMES: set[str] = set()
_STR = frozenset({str})
_NUMBERS = frozenset({int, float, bool, type(None)})
_FLAT = _NUMBERS | _STR


def _every_leaf(value: Any) -> Any:
    """Every string and number inside masked, booleans and null kept (they hold no secret)."""
    if isinstance(value, Mapping):
        return {k: _every_leaf(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_every_leaf(item) for item in value]
    if value is None or isinstance(value, bool):
        return value
    return MASK


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
        yield from (value[i] for i in _secret_option_values(value) if could_be_secret(value[i]))
    elif isinstance(value, str) and masks(name, value) and could_be_secret(value):
        yield value
