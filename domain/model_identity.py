"""One model, one identity: the rules that resolve a stated model name to its `model_id`.

A source's name is kept as stated; these rules only say which stated names are spellings
of one model, as data (the tables below) and small functions. They never join two models:
a date, a size, a version or a mode that differs keeps names apart, and a name no rule
covers is its own id, unchanged. A user's alias (`ModelAliasDeclared`) can join what
the rules leave apart; it is applied over these rules by the read models.

The shapes follow the namers of the sources: Hugging Face repo ids (`org/name`, which the
Hub resolves without regard to case; Every Eval Ever and HELM name models the same way,
`developer/model`), vendor API ids (`claude-3-5-sonnet-20241022`, `gpt-4o-2024-05-13`,
`gemini-2.5-pro`, lowercase) and the leaderboards' display names of those ids
(`Claude 3.5 Sonnet (20241022)`, `GPT 4o (2024-05-13)`), and BFCL's registry entries,
whose function-calling mode is a suffix (`-FC`, or ` (FC)` in its tables).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

# A Hugging Face repo id: `org/name` of the Hub's characters (no path around it).
HF_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
# Folders under which a local copy of the Hub keeps `org/name` (the two folders after it
# are the repo id); a path with one folder after it (`.../huggingface/7B`) names no repo.
HUB_FOLDERS = frozenset({"huggingface", "hf_models", "huggingface_hub"})
# The Hub's own cache: `.../models--org--name/snapshots/<revision>`.
HUB_CACHE = re.compile(r"(?:^|/)models--([A-Za-z0-9._-]+?)--([A-Za-z0-9._-]+)(?:/|$)")


# Vendor families: how a display name's words start, the vendor's id prefix, whether the
# vendor writes a version's dot as a hyphen (`claude-3-5`), how it writes a date (`%Y%m%d`
# or `%Y-%m-%d`), and the provider such an id implies.
@dataclass(frozen=True)
class Family:
    prefix: str
    dots_as_hyphens: bool
    date_with_hyphens: bool
    provider: str


FAMILIES: dict[str, Family] = {
    "claude": Family("claude", dots_as_hyphens=True, date_with_hyphens=False, provider="anthropic"),
    "gpt": Family("gpt", dots_as_hyphens=False, date_with_hyphens=True, provider="openai"),
    "gemini": Family("gemini", dots_as_hyphens=False, date_with_hyphens=False, provider="google"),
}
# OpenAI's reasoning models (`o1`, `o3-mini`, `o4-mini`): a family of their own name.
O_SERIES = re.compile(r"^o[134](?:-|$)")
# Ids whose prefix names a vendor that serves them (its API ids, lowercase); an open-weights
# release served by many (`gpt-oss-120b`) implies no provider.
IMPLIED_PROVIDERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^claude-"), "anthropic"),
    (re.compile(r"^(?:gpt-(?:3\.5|4|5)|chatgpt-)"), "openai"),
    (O_SERIES, "openai"),
    (re.compile(r"^gemini-"), "google"),
)
NOT_IMPLIED = re.compile(r"^gpt-oss-")
VENDOR_CHARS = re.compile(r"[a-z0-9.-]+")

# A display name: family word, then version words, then a parenthesised date or none.
DISPLAY = re.compile(
    r"^(?P<family>claude|gpt|gemini)[ -](?P<words>[A-Za-z0-9. -]+?)"
    r"(?: \((?P<date>\d{8}|\d{4}-\d{2}-\d{2}|\d{4})\))?$",
    re.IGNORECASE,
)
O_DISPLAY = re.compile(
    r"^(?P<family>o[134])(?P<words>(?: [A-Za-z]+)*)(?: \((?P<date>\d{8}|\d{4}-\d{2}-\d{2})\))?$",
    re.IGNORECASE,
)
# BFCL's modes: a registry entry `name-FC`, its tables' `name (FC)`; `Prompt` likewise.
BFCL_MODE = re.compile(r"^(?P<base>.+?)(?:-(?P<suffix>FC|Prompt)| \((?P<paren>FC|Prompt)\))$")

# Names a source puts where it knows no model: never an identity of their own to join on.
UNRESOLVED = frozenset({"", "unknown"})


@dataclass(frozen=True)
class Resolution:
    """A stated name's id, the provider the id implies (or None), and the rule that gave
    the id (`stated` when no rule applied: the name is its own id)."""

    model_id: str
    provider: str | None
    rule: str


# A pure function of the name: a ledger's runs state a few hundred names, and every run's
# fold resolves its name again.
@functools.lru_cache(maxsize=4096)
def resolve_model(name: str) -> Resolution:
    """The `model_id` the shipped rules give a stated model name."""
    model_id, rule = _model_id(name)
    if model_id == name:
        rule = "stated"  # already the id: no rule changed it
    return Resolution(model_id, implied_provider(model_id), rule)


def implied_provider(model_id: str) -> str | None:
    """The vendor a vendor-API id implies (`claude-*` -> anthropic), or None."""
    if NOT_IMPLIED.match(model_id) or not VENDOR_CHARS.fullmatch(model_id):
        return None  # served by many, or several models in one name (`a+b`)
    for pattern, provider in IMPLIED_PROVIDERS:
        if pattern.match(model_id):
            return provider
    return None


def bfcl_mode(name: str) -> tuple[str, str | None]:
    """A BFCL name without its mode, and the mode (`FC`, `Prompt`) or None."""
    match = BFCL_MODE.match(name.strip())
    if match is None:
        return name.strip(), None
    return match["base"], match["suffix"] or match["paren"]


def bfcl_entry(name: str) -> str:
    """The registry entry BFCL names a model's handler by: the model's id and its mode
    (`Claude-Sonnet-4-5-20250929 (FC)` and `claude-sonnet-4-5-20250929-FC` are one)."""
    base, mode = bfcl_mode(name)
    model_id = resolve_model(base).model_id
    return f"{model_id}-{mode}" if mode else model_id


def _model_id(name: str) -> tuple[str, str]:
    stated = name.strip()
    if stated.lower() in UNRESOLVED:
        return name, "stated"
    base, mode = bfcl_mode(stated)
    if mode is not None:
        model_id, _ = _model_id(base)
        return model_id, "bfcl_mode"
    if (repo := local_hub_repo(stated)) is not None:
        return repo.lower(), "local_path"
    if HF_REPO.match(stated):
        return stated.lower(), "hf_repo_case"
    if (vendor := vendor_id(stated)) is not None:
        return vendor, ("vendor_case" if vendor == stated.lower() else "display_name")
    return name, "stated"


def local_hub_repo(path: str) -> str | None:
    """The repo id a local path to a Hub copy ends in, or None."""
    if not path.startswith(("/", "./", "../", "~")):
        return None
    if cached := HUB_CACHE.search(path):
        return f"{cached[1]}/{cached[2]}"
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 3 and parts[-3].lower() in HUB_FOLDERS:
        repo = f"{parts[-2]}/{parts[-1]}"
        return repo if HF_REPO.match(repo) else None
    return None


def vendor_id(name: str) -> str | None:
    """A vendor API id in any case (`Claude-3-5-Sonnet-20241022`), or a leaderboard's
    display name of one (`Claude 3.5 Sonnet (20241022)`, `GPT 4o (2024-05-13)`), as the
    vendor writes it; None for any other name."""
    lowered = name.lower()
    if re.fullmatch(r"(?:claude|gpt|gemini)-[a-z0-9.-]+|o[134](?:-[a-z0-9-]+)?", lowered):
        return lowered
    match = DISPLAY.match(name) or O_DISPLAY.match(name)
    if match is None:
        return None
    family_word = match["family"].lower()
    family = FAMILIES.get(family_word, FAMILIES["gpt"])
    words = [w for w in re.split(r"[ -]+", match["words"].strip().lower()) if w]
    if family.dots_as_hyphens:
        words = [part for w in words for part in w.split(".")]
    date = match["date"]
    if date:
        digits = date.replace("-", "")
        if len(digits) == 8 and family.date_with_hyphens:
            words.append(f"{digits[:4]}-{digits[4:6]}-{digits[6:]}")
        else:
            words.append(digits)
    return "-".join([family_word, *words])
