"""HELM (`crfm-helm`) run folders: what `helm-run` writes to `runs/<suite>/<run name>/`.

A run is claimed through its `run_spec.json`; `stats.json` and `per_instance_stats.json`
beside it, and the suite's `schema.json` and `summary.json` (written by `helm-summarize`
beside the run folders), are its members. The other files of the folder (scenario_state,
instances, display_predictions ...) are part of the run and never imported alone.

Mapping:

- run key `<suite>/<run name>` (the suite is the folder holding the run folder): the same
  suite copied to two output folders is one run, never two.
- benchmark: the run name's scenario (`bbq` of `bbq:subject=all,...`, the run spec
  function HELM names runs by); the scenario class and its args, the adapter spec and
  the run's groups and metric specs are config. agent `helm`, model `adapter_spec.model`
  as HELM writes it (`meta/llama-3-70b`), provider the first part of `model_deployment`.
- metrics: every stats.json Stat, keyed by its whole MetricName (`helm_files.stat_key`:
  `quasi_exact_match@test`, `...~computed_on="worst",...` for a perturbation), its
  figures as stated (count, sum, mean, stddev ...); `count` is not the instance count.
- score: the mean of the Stat named by the suite schema's main metric of the run's group
  (`run_groups[].environment.main_name` on `main_split`, `test` when unnamed), without sub split or
  perturbation; lower_is_better from the schema. Without a schema.json, or when it
  names no main metric for the run's groups, or stats.json lacks it, there is no score
  (the provenance says why): HELM itself only names a main metric in the schema.
- cells: per_instance_stats merged by (instance_id, train_trial_index, perturbation)
  (HELM writes one entry per metric class, not adjacent); key `instance_id`, with
  `#trial=<i>` when the run has more than one train trial and `~<perturbation>` for a
  perturbed instance. Score = the instance's main metric, or, when that metric is
  run-level only (`bbq_accuracy`), `quasi_exact_match` / `exact_match` on the main split
  (named in provenance `cell_metric`); outcome passed when the value is above 0 (for a
  lower-is-better metric: at most 0), failed otherwise, skipped without a value. Cell
  metrics hold every stat of the instance (its figures as stated).
- `helm-summarize`'s tables (`groups/*.json`, `runs.json`) restate figures of the run
  folders and are not imported: a run is recorded only from its folder, so it is never
  counted twice. summary.json's date is provenance (it is no run's time).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from benchledger.adapters.formats import helm_files as files
from benchledger.adapters.formats.common import Owner
from benchledger.adapters.formats.helm_files import InstanceStats, RunSpec, Schema, Stat
from benchledger.adapters.formats.terminal_bench_files import validate
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import Cell, CellOutcome, RunHeader, RunRecord, SkipRecord

NAME = "helm"
SYSTEM = "helm"
AGENT = "helm"
# Used for cells when the main metric is computed over the whole run only.
CELL_FALLBACKS = ("quasi_exact_match", "exact_match")
# The split a main metric is on when the schema names none (HELM reports on test).
DEFAULT_SPLIT = "test"


def detect(path: Path, head: bytes) -> bool:
    """A `run_spec.json` stating HELM's scenario and adapter specs."""
    return path.name == files.RUN_SPEC and b'"scenario_spec"' in head and b'"adapter_spec"' in head


def members(path: Path) -> list[Path]:
    """The files `helm-run` wrote beside run_spec.json and the suite files read with them."""
    found = [*(path.parent / name for name in sorted(files.RUN_FILES)), *files.suite_files(path)]
    return [p for p in found if p.is_file()]


def owner(path: Path) -> Owner | None:
    """The run a file `helm-run` writes beside run_spec.json is part of."""
    spec = path.parent / files.RUN_SPEC
    if path.name in files.RUN_FILES and spec.is_file():
        return Owner(spec, "a HELM run", path.parent)
    return None


def parse(
    path: Path, data: bytes, defaults: dict[str, Any] | None = None
) -> Iterator[RunRecord | SkipRecord]:
    """The folder's one run; `defaults` are not needed: the run spec names everything."""
    spec: RunSpec = files.read_object(path, RunSpec, data)
    folder = path.parent
    stats_path = folder / files.STATS
    if not stats_path.is_file():
        raise InputFormatError(str(stats_path), "missing: a HELM run states its figures there")
    stats: list[Stat] = files.read_list(stats_path, Stat)
    schema_path, summary_path = files.suite_files(path)
    schema = files.read_object(schema_path, Schema) if schema_path.is_file() else None
    provenance: dict[str, Any] = {"suite": folder.parent.name, "run_name": spec.name}
    date = files.summary_date(summary_path)
    if date is not None:
        provenance["summary_date"] = date
    main = _main_metric(spec, schema, provenance)
    metrics = _metrics(stats_path, stats)
    score = _mean(metrics, main.key) if main else None
    if main and score is None:
        provenance["no_score"] = f"stats.json states no finite mean of {main.key}"
    instances_path = folder / files.PER_INSTANCE
    cells: tuple[Cell, ...] = ()
    if instances_path.is_file():
        entries: list[InstanceStats] = files.read_list(instances_path, InstanceStats)
        cells = _cells(instances_path, entries, main, provenance)
    header = {
        "run_key": f"{folder.parent.name}/{spec.name}",
        "benchmark": spec.name.split(":", 1)[0] or spec.name,
        "agent": AGENT,
        "provider": (spec.adapter_spec.model_deployment or "").split("/", 1)[0],
        "model": spec.adapter_spec.model,
        "config": _config(spec),
        "status": "succeeded",
        "score": score,
        "unit": main.name if main and score is not None else None,
        "higher_is_better": not (main and main.lower_is_better),
        "metrics": metrics,
        "provenance": provenance,
    }
    yield RunRecord(header=validate(RunHeader, header, path), cells=cells)


class Main(NamedTuple):
    """The run's main metric as the suite schema names it."""

    group: str
    name: str
    split: str
    lower_is_better: bool

    @property
    def key(self) -> str:
        return files.stat_key(files.MetricName(name=self.name, split=self.split))


def _main_metric(spec: RunSpec, schema: Schema | None, provenance: dict[str, Any]) -> Main | None:
    """The main metric of the run's first group the schema names one for."""
    if schema is None:
        provenance["no_score"] = "no schema.json beside the runs names the main metric"
        return None
    groups = {g.name: g for g in schema.run_groups}
    for group in spec.groups:
        env = groups[group].environment if group in groups else None
        if env is not None and env.main_name:
            name, split = env.main_name, env.main_split or DEFAULT_SPLIT
            lower = next((m.lower_is_better for m in schema.metrics if m.name == name), None)
            provenance["main_metric"] = {"group": group, "name": name, "split": split}
            return Main(group, name, split, bool(lower))
    provenance["no_score"] = "schema.json names no main metric for the run's groups"
    return None


def _metrics(path: Path, stats: list[Stat]) -> dict[str, Any]:
    """Every Stat by its whole name; two Stats of one name are refused."""
    metrics: dict[str, Any] = {}
    for i, stat in enumerate(stats):
        key = files.stat_key(stat.name)
        if key in metrics:
            raise InputFormatError(str(path), f"a second stat named {key}", field=f"[{i}].name")
        metrics[key] = files.figures(stat)
    return metrics


def _config(spec: RunSpec) -> dict[str, Any]:
    stated = spec.model_dump(mode="json", exclude={"name"}, exclude_none=True)
    return {k: v for k, v in stated.items() if v not in ({}, [])}


def _cells(
    path: Path,
    entries: list[InstanceStats],
    main: Main | None,
    provenance: dict[str, Any],
) -> tuple[Cell, ...]:
    merged = _merge(path, entries)
    trials = len({e.train_trial_index for e in entries}) > 1
    metric = _cell_metric(merged, main)
    if metric is not None:
        provenance["cell_metric"] = metric
    lower = bool(main and main.lower_is_better)
    cells = []
    for (instance, trial, perturbation), stats in merged.items():
        key = instance + (f"#trial={trial}" if trials else "")
        key += f"~{perturbation}" if perturbation else ""
        value = _mean(stats, metric) if metric else None
        stated = stats[metric].get("mean") if metric in stats else None
        if stated is not None and value is None:
            stats = {**stats, "score_not_finite": str(stated)}
        cells.append(Cell(key=key, outcome=_outcome(value, lower), score=value, metrics=stats))
    return tuple(cells)


def _merge(path: Path, entries: list[InstanceStats]) -> dict[tuple[str, int, str], dict[str, Any]]:
    """The entries' stats per (instance, trial, perturbation); one stat stated twice
    with different figures is refused."""
    merged: dict[tuple[str, int, str], dict[str, Any]] = {}
    for i, entry in enumerate(entries):
        perturbation = files.perturbation_text(entry.perturbation) if entry.perturbation else ""
        stats = merged.setdefault((entry.instance_id, entry.train_trial_index, perturbation), {})
        for j, stat in enumerate(entry.stats):
            key, figures = files.stat_key(stat.name), files.figures(stat)
            if stats.setdefault(key, figures) != figures:
                raise InputFormatError(
                    str(path), f"stat {key} stated twice, differently", field=f"[{i}].stats[{j}]"
                )
    return merged


def _cell_metric(
    merged: dict[tuple[str, int, str], dict[str, Any]],
    main: Main | None,
) -> str | None:
    """The stat cells are scored by: the main metric, else a per-instance fallback."""
    if main is None:
        return None
    for candidate in (main.name, *CELL_FALLBACKS):
        key = files.stat_key(files.MetricName(name=candidate, split=main.split))
        if any(key in stats for stats in merged.values()):
            return key
    return None


def _mean(stats: dict[str, Any], key: str) -> float | None:
    """The mean a stat states, as a float; None when absent or not finite."""
    mean = stats.get(key, {}).get("mean")
    return float(mean) if mean is not None and math.isfinite(mean) else None


def _outcome(value: float | None, lower_is_better: bool) -> CellOutcome:
    if value is None:
        return "skipped"
    passed = value <= 0 if lower_is_better else value > 0
    return "passed" if passed else "failed"
