"""Model profiles: the provider, model and config extras `--model-profile` names.

`--model-profile VALUE` is looked up in this order, the first found wins:

1. a file at VALUE: a `.toml` file holds a registry profile's keys (`provider`, `model`,
   `extra`); any other file is an orchestrator profile, JSON, read unchanged;
2. the registry's `[profiles.VALUE]`;
3. `VALUE.json` (VALUE itself when it ends in `.json`) in the profile folders, in order:
   each folder of the environment's `BENCHLEDGER_PROFILES` (several separated by
   `os.pathsep`), the registry's `profiles_dir`, then `profiles/` beside the registry
   file. A VALUE with a path separator is a path only, never looked up by name.

An orchestrator profile (its `profiles/*.json`) is a JSON object of any of:

    provider        non-empty string
    model           non-empty string
    extra           object: config extras, as --extra gives them (`per_benchmark` too)
    per_benchmark   object of objects, one per benchmark id, as in the orchestrator's
                    `sample10.json` (which it passes as --extra): read as `extra`'s,
                    an entry of `extra.per_benchmark` overlaying it key by key

Any other key, or a key of the wrong type, is an error naming the file and the field.
`per_benchmark` entries may name benchmarks the registry does not declare (an
orchestrator profile covers its whole suite); a registry profile's may not.

What `run` does with a profile (`commands/work.py`): `--provider` and `--model`, when
given, win over the profile's (the orchestrator lets the profile win, its flags having
defaults); its `extra` is overlaid by `--extra` (see `registry.py` for the overlay).
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchledger.adapters.execution.registry import Profile, Registry
from benchledger.domain.errors import InputFormatError, NotFoundError

PROFILES_ENV = "BENCHLEDGER_PROFILES"
PROFILES_FOLDER = "profiles"
JSON_KEYS = ("provider", "model", "extra", "per_benchmark")


def find_profile(
    value: str, registry: Registry | None, registry_path: Path, environ: Mapping[str, str]
) -> Profile:
    """The profile `--model-profile value` names (see the module docstring)."""
    path = Path(value).expanduser()
    if path.is_file():
        return read_profile(path)
    if registry is not None and value in registry.profiles:
        return registry.profile(value)
    is_path = any(sep in value for sep in (os.sep, os.altsep or os.sep, "/"))
    if is_path:
        raise NotFoundError(f"no model profile file '{value}'")
    file_name = value if value.endswith(".json") else f"{value}.json"
    folders = profile_folders(registry, registry_path, environ)
    for folder in folders:
        candidate = folder / file_name
        if candidate.is_file():
            return read_profile(candidate)
    known = [*(registry.profiles if registry else ()), *names_in(folders)]
    looked = ", ".join(str(f) for f in folders)
    raise NotFoundError(
        f"unknown model profile '{value}': not a file, not a registry profile, and no "
        f"{file_name} in {looked} (known: {', '.join(dict.fromkeys(known)) or 'none'})"
    )


def profile_folders(
    registry: Registry | None, registry_path: Path, environ: Mapping[str, str]
) -> list[Path]:
    """Where profiles are looked up by name, in order, each once."""
    listed = [Path(p).expanduser() for p in environ.get(PROFILES_ENV, "").split(os.pathsep) if p]
    if registry is not None and registry.profiles_dir is not None:
        listed.append(registry.profiles_dir)
    beside = registry.path if registry is not None else registry_path
    listed.append(beside.absolute().parent / PROFILES_FOLDER)
    return list(dict.fromkeys(p.absolute() for p in listed))


def read_profile(path: Path) -> Profile:
    """A profile file: TOML with a registry profile's keys, else an orchestrator JSON one."""
    file = str(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise InputFormatError(file, f"cannot read the profile: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise InputFormatError(file, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    if path.suffix == ".toml":
        try:
            fields = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise InputFormatError(file, f"invalid TOML: {e}") from None
    else:
        fields = _orchestrator_fields(file, text)
    try:
        return Profile.model_validate({"name": path.stem, **fields})
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or None
        message = {"missing": "required key is missing", "extra_forbidden": "unknown key"}.get(
            first["type"], first["msg"].removeprefix("Value error, ")
        )
        raise InputFormatError(file, message, field=where) from None


def _orchestrator_fields(file: str, text: str) -> dict[str, Any]:
    """A JSON profile's provider, model and extra (its `per_benchmark` folded in)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputFormatError(file, f"not JSON: {e.msg}", line=e.lineno) from None
    if not isinstance(data, dict):
        raise InputFormatError(file, "a model profile is a JSON object")
    for key in data:
        if key not in JSON_KEYS:
            raise InputFormatError(file, f"unknown key (known: {', '.join(JSON_KEYS)})", field=key)
    fields: dict[str, Any] = {}
    for key in ("provider", "model"):
        if key in data:
            value = data[key]
            if not isinstance(value, str) or not value.strip():
                raise InputFormatError(file, "must be a non-empty string", field=key)
            fields[key] = value.strip()
        else:
            fields[key] = ""
    extra = data.get("extra", {})
    if not isinstance(extra, dict):
        raise InputFormatError(file, "must be an object", field="extra")
    per_benchmark = _per_benchmark(file, "per_benchmark", data.get("per_benchmark", {}))
    inner = _per_benchmark(file, "extra.per_benchmark", extra.get("per_benchmark", {}))
    for benchmark, overrides in inner.items():
        per_benchmark[benchmark] = {**per_benchmark.get(benchmark, {}), **overrides}
    fields["extra"] = {**extra, "per_benchmark": per_benchmark} if per_benchmark else extra
    return fields


def _per_benchmark(file: str, where: str, value: object) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict):
        raise InputFormatError(file, "must be an object of objects, one per benchmark", field=where)
    for benchmark, entry in value.items():
        if not isinstance(entry, dict):
            raise InputFormatError(file, "must be an object", field=f"{where}.{benchmark}")
    return {benchmark: dict(entry) for benchmark, entry in value.items()}


def names_in(folders: Sequence[Path]) -> list[str]:
    """The profile names (`*.json` stems) in these folders, for listing."""
    found: dict[str, None] = {}
    for folder in folders:
        try:
            found.update(dict.fromkeys(sorted(p.stem for p in folder.glob("*.json"))))
        except OSError:
            continue
    return list(found)
