"""The round trip of an orchestrator results folder, field by field (for
`orchestrator_parity.py`): benchledger's exports of an imported folder must write what the
orchestrator wrote, adding only.

- `EXPORT <dir>/`: every file of the orchestrator's latest/, quarantine/ and baselines/
  (and latest/index.json) has a twin in benchledger's `export-latest` whose every field
  equals the orchestrator's (a key benchledger adds is allowed; one it lacks or changes is
  not). The index's `latest[*].path` names the file where each export wrote it: compared
  below its results root (the orchestrator writes its host's absolute path, benchledger
  the path below the export's root: where each wrote the file, not a fact of a run).
- `EXPORT viewer_data.json`: benchledger's `export-viewer-data` against the
  orchestrator's: `runs` and `run_groups` item by item, matched by id and in the
  orchestrator's order (an item only benchledger lists, such as its import's own group, is
  an addition); every other member whole.

A difference is listed as `<file>: <path>: orchestrator <value>, benchledger <value>`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MISSING = object()


def differences(theirs: Any, ours: Any, path: str = "") -> list[str]:
    """Where `ours` does not state what `theirs` states (additions in `ours` allowed)."""
    if isinstance(theirs, dict) and isinstance(ours, dict):
        out = []
        for key, value in theirs.items():
            if key not in ours:
                out.append(f"{path}/{key}: orchestrator {_short(value)}, benchledger missing")
            else:
                out += differences(value, ours[key], f"{path}/{key}")
        return out
    if isinstance(theirs, list) and isinstance(ours, list):
        if len(theirs) != len(ours):
            return [f"{path}: orchestrator {len(theirs)} items, benchledger {len(ours)}"]
        out = []
        for i, (a, b) in enumerate(zip(theirs, ours, strict=True)):
            out += differences(a, b, f"{path}[{i}]")
        return out
    if type(theirs) is not type(ours) or theirs != ours:
        return [f"{path or '/'}: orchestrator {_short(theirs)}, benchledger {_short(ours)}"]
    return []


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return {"unreadable": str(exc)}


def _below_root(index: dict[str, Any]) -> dict[str, Any]:
    """The index with each `latest[*].path` cut to its part below the results root
    (`latest/<file>`): each export names where it wrote the file."""
    out = json.loads(json.dumps(index))
    for entry in (out.get("latest") or {}).values():
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            path = Path(entry["path"])
            entry["path"] = f"{path.parent.name}/{path.name}"
    return out


def compare_folder(kind: str, orchestrator: Path, ours: Path) -> tuple[int, int, list[str]]:
    """(files equal, files, differences) of one managed folder of the two exports."""
    folder = orchestrator / kind
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    equal, found = 0, []
    for path in files:
        twin = ours / kind / path.name
        if not twin.is_file():
            found.append(f"{kind}/{path.name}: benchledger wrote no such file")
            continue
        theirs, mine = _load(path), _load(twin)
        if path.name == "index.json":
            theirs, mine = _below_root(theirs), _below_root(mine)
        diffs = differences(theirs, mine)
        found += [f"{kind}/{path.name}: {d}" for d in diffs]
        equal += not diffs
    return equal, len(files), found


def compare_viewer(orchestrator: Path, ours: Path) -> tuple[int, int, list[str]]:
    """(members equal, members, differences) of the two viewer_data.json files."""
    theirs, mine = _load(orchestrator), _load(ours)
    equal, found = 0, []
    for key, value in theirs.items():
        if key not in mine:
            found.append(f"viewer_data.json: /{key}: benchledger missing")
            continue
        if key in ("runs", "run_groups") and isinstance(value, list):
            diffs = _items(key, value, mine[key])
        else:
            diffs = differences(value, mine[key], f"/{key}")
        found += [f"viewer_data.json: {d}" for d in diffs]
        equal += not diffs
    return equal, len(theirs), found


def _items(key: str, theirs: list[Any], ours: Any) -> list[str]:
    name = "run_id" if key == "runs" else "run_group_id"
    if not isinstance(ours, list):
        return [f"/{key}: benchledger {_short(ours)}"]
    mine = {str(item.get(name)): (i, item) for i, item in enumerate(ours) if isinstance(item, dict)}
    out, order = [], []
    for item in theirs:
        ident = str(item.get(name))
        if ident not in mine:
            out.append(f"/{key}[{name}={ident}]: benchledger missing")
            continue
        at, twin = mine[ident]
        order.append(at)
        out += differences(item, twin, f"/{key}[{name}={ident}]")
    if order != sorted(order):
        out.append(f"/{key}: listed in another order than the orchestrator's")
    return out
