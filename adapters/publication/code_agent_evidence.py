"""A code-agent row's evidence on disk: each side's command, result and trajectory, as
files a validator can open, and the reading of a trajectory directory back.

`head-to-head --publish-latest-dir DIR` writes, for each side of each row,
`DIR/code-agent-evidence/<benchmark>__<pair>/<side>/` with `command.json` (the run's
recorded, redacted command), `result.json` (the run as the ledger holds it) and
`trajectories/trajectory-NNNN.jsonl` (one line per model call of the run's `turns`,
one file per trajectory file: `prompt_tokens`, `completion_tokens`, `total_tokens`,
`cached_tokens` when measured, `cache_creation_input_tokens`, `latency_ms`,
`prompt_chars`). Those are the per-turn fields the orchestrator's trajectory analyzer
reads, so its validators and ours sum the same figures the row states.

`summarize_trajectories` reads such a directory (and the flat per-turn JSON shapes
harnesses commonly write: one object per line, or a list, or `turns`/`steps`).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EVIDENCE = "code-agent-evidence"
PROMPT = ("prompt_tokens", "input_tokens", "promptTokens", "inputTokens")
COMPLETION = ("completion_tokens", "output_tokens", "completionTokens", "outputTokens")
TOTAL = ("total_tokens", "totalTokens")
CACHED = ("cached_tokens", "cache_read_input_tokens", "cachedTokens", "cacheReadInputTokens")
LATENCY = ("latency_ms", "latencyMs", "duration_ms", "durationMs")
# The turns read model's columns, and the per-turn key each is written as.
TURN_KEYS = {
    "prompt_tokens": "prompt_tokens",
    "completion_tokens": "completion_tokens",
    "total_tokens": "total_tokens",
    "cached_tokens": "cached_tokens",
    "cache_creation_tokens": "cache_creation_input_tokens",
    "latency_ms": "latency_ms",
    "prompt_chars": "prompt_chars",
}


@dataclass
class TrajectorySummary:
    files: int = 0
    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    turns_with_cached: int = 0
    llm_calls: int = 0
    latencies: list[float] = field(default_factory=list)

    @property
    def mean_latency_ms(self) -> float | None:
        return sum(self.latencies) / len(self.latencies) if self.latencies else None

    @property
    def p95_latency_ms(self) -> float | None:
        """The nearest-rank 95th percentile (the orchestrator's analyzer's)."""
        if not self.latencies:
            return None
        ordered = sorted(self.latencies)
        return ordered[max(0, min(len(ordered) - 1, round((len(ordered) - 1) * 0.95)))]


def summarize_trajectories(directory: Path) -> TrajectorySummary:
    """Per-turn token, cache, call and latency sums of every trajectory file under it."""
    summary = TrajectorySummary()
    files = sorted(
        p for p in directory.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")
    )
    summary.files = len(files)
    for path in files:
        for turn in _turns(path):
            prompt, completion = _int(turn, PROMPT), _int(turn, COMPLETION)
            cached_key = next((k for k in CACHED if k in turn), None)
            cached = _int(turn, CACHED)
            latency = next((float(turn[k]) for k in LATENCY if _number(turn.get(k))), None)
            if not (prompt or completion or cached) and latency is None:
                continue
            summary.turns += 1
            summary.llm_calls += 1
            summary.prompt_tokens += prompt
            summary.completion_tokens += completion
            summary.total_tokens += _int(turn, TOTAL) or prompt + completion
            summary.cached_tokens += cached
            summary.turns_with_cached += cached_key is not None
            if latency is not None:
                summary.latencies.append(latency)
    return summary


def _turns(path: Path) -> Iterator[dict[str, Any]]:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".jsonl":
        for line in text.splitlines():
            item = _loads(line)
            if isinstance(item, dict):
                yield _flat(item)
        return
    data = _loads(text)
    if isinstance(data, dict):
        sequences = ("turns", "steps", "trajectory")
        listed = [data[k] for k in sequences if isinstance(data.get(k), list)]
        data = listed[0] if listed else [data]
    for item in data if isinstance(data, list) else []:
        if isinstance(item, dict):
            yield _flat(item)


def _flat(turn: dict[str, Any]) -> dict[str, Any]:
    """A turn whose token counts sit in `usage` read like a flat one."""
    usage = turn.get("usage")
    return {**usage, **turn} if isinstance(usage, dict) else turn


def _loads(text: str) -> Any:
    try:
        return json.loads(text) if text.strip() else None
    except json.JSONDecodeError:
        return None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _int(turn: dict[str, Any], keys: tuple[str, ...]) -> int:
    value = next((turn[k] for k in keys if k in turn), 0)
    return int(value) if _number(value) else 0


# -- writing ------------------------------------------------------------------------------


def turn_lines(turns: list[dict[str, Any]]) -> dict[str, str]:
    """The turns (rows of the `turns` read model, in order) as JSONL, by trajectory file:
    a measured value is written, an unmeasured one left out (so a turn without cache
    telemetry states none)."""
    files: dict[str, list[str]] = {}
    for turn in turns:
        line = {"trajectory_file": turn["trajectory_file"], "turn_index": turn["turn_index"]}
        line.update({key: turn[c] for c, key in TURN_KEYS.items() if turn.get(c) is not None})
        files.setdefault(turn["trajectory_file"], []).append(json.dumps(line, sort_keys=True))
    return {
        f"trajectory-{n:04d}.jsonl": "\n".join(lines) + "\n"
        for n, lines in enumerate(files.values(), start=1)
    }


def write_side(
    folder: Path, command: dict[str, Any], result: dict[str, Any], turns: list[dict[str, Any]]
) -> dict[str, str | None]:
    """One side's files (the folder emptied first, so no older trajectory file adds to the
    sums); the paths as the row states them, the trajectory directory None without turns."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    paths: dict[str, str | None] = {}
    for name, content in (("command", command), ("result", result)):
        path = folder / f"{name}.json"
        path.write_text(json.dumps(content, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        paths[f"{name}_path"] = str(path)
    paths["trajectory_dir"] = None
    if turns:
        trajectories = folder / "trajectories"
        trajectories.mkdir()
        for name, text in turn_lines(turns).items():
            (trajectories / name).write_text(text, encoding="utf-8")
        paths["trajectory_dir"] = str(trajectories)
    return paths


def prune(evidence: Path, pair: str, keep: set[str]) -> None:
    """Remove this pair's evidence folders of rows the report no longer has."""
    if not evidence.is_dir():
        return
    for folder in evidence.glob(f"*__{pair}"):
        if folder.is_dir() and folder.name not in keep:
            shutil.rmtree(folder)
