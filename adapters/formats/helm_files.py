"""The files of a HELM run and of its suite, as HELM's data classes write them.

`Stat` (metrics/statistic.py) is `{name: MetricName, count, sum, sum_squared, min, max,
mean, variance, stddev}`; a stat with `count: 0` states no mean/min/max. `MetricName` is
`{name, split, sub_split?, perturbation?}`. `PerInstanceStats` is `{instance_id,
train_trial_index, perturbation?, stats: [Stat]}`; `RunSpec` (run_spec.py) is `{name,
scenario_spec {class_name, args}, adapter_spec, metric_specs, data_augmenter_spec,
groups, annotators?}`. The suite's `schema.json` (presentation/schema.py) names each run
group's main metric in `run_groups[].environment` (`main_name`, `main_split`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt

from benchledger.adapters.formats.common import read_json
from benchledger.adapters.formats.terminal_bench_files import validate
from benchledger.domain.errors import InputFormatError

RUN_SPEC = "run_spec.json"
STATS = "stats.json"
PER_INSTANCE = "per_instance_stats.json"
SCHEMA = "schema.json"
SUMMARY = "summary.json"
# What `helm-run` writes beside run_spec.json; read through it, never alone.
RUN_FILES = frozenset(
    {
        STATS,
        PER_INSTANCE,
        "scenario.json",
        "scenario_state.json",
        "instances.json",
        "display_predictions.json",
        "display_requests.json",
        "costs.json",
    }
)
STAT_FIGURES = ("count", "sum", "sum_squared", "min", "max", "mean", "variance", "stddev")


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class ScenarioSpec(_Open):
    class_name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class AdapterSpec(_Open):
    model: str = Field(min_length=1)
    model_deployment: str | None = None


class RunSpec(_Open):
    name: str = Field(min_length=1)
    scenario_spec: ScenarioSpec
    adapter_spec: AdapterSpec
    groups: list[str] = Field(default_factory=list)
    metric_specs: list[dict[str, Any]] = Field(default_factory=list)
    annotators: list[dict[str, Any]] | None = None


class MetricName(_Open):
    name: str = Field(min_length=1)
    split: str | None = None
    sub_split: str | None = None
    perturbation: dict[str, Any] | None = None


# A figure as stated: an integer stays one (HELM writes `"sum": 3` for counts).
Figure = StrictInt | StrictFloat


class Stat(_Open):
    name: MetricName
    count: StrictInt
    sum: Figure | None = None
    sum_squared: Figure | None = None
    min: Figure | None = None
    max: Figure | None = None
    mean: Figure | None = None
    variance: Figure | None = None
    stddev: Figure | None = None


class InstanceStats(_Open):
    instance_id: str = Field(min_length=1)
    train_trial_index: int = 0
    perturbation: dict[str, Any] | None = None
    stats: list[Stat]


class Environment(_Open):
    main_name: str | None = None
    main_split: str | None = None


class RunGroup(_Open):
    name: str
    environment: Environment = Field(default_factory=Environment)


class SchemaMetric(_Open):
    name: str
    lower_is_better: bool | None = None


class Schema(_Open):
    metrics: list[SchemaMetric] = Field(default_factory=list)
    run_groups: list[RunGroup] = Field(default_factory=list)


def read_list(path: Path, model: type[Stat] | type[InstanceStats]) -> list[Any]:
    """A JSON list of `model`, each entry validated (errors name the file and index)."""
    raw = read_json(path)
    if not isinstance(raw, list):
        raise InputFormatError(str(path), "expected a list", field="(document)")
    return [validate(model, item, path, f"[{i}]") for i, item in enumerate(raw)]


def read_object(path: Path, model: type[Schema] | type[RunSpec], data: bytes | None = None) -> Any:
    """A JSON object as `model`."""
    raw = read_json(path, data)
    if not isinstance(raw, dict):
        raise InputFormatError(str(path), "expected an object", field="(document)")
    return validate(model, raw, path)


def suite_files(run_spec: Path) -> tuple[Path, Path]:
    """Where `helm-summarize` writes the suite's schema.json and summary.json: beside the runs."""
    suite = run_spec.parent.parent
    return suite / SCHEMA, suite / SUMMARY


def summary_date(path: Path) -> str | None:
    """The date `summary.json` states for the suite (None when absent or not stated)."""
    if not path.is_file():
        return None
    raw = read_json(path)
    date = raw.get("date") if isinstance(raw, dict) else None
    return date if isinstance(date, str) else None


def perturbation_text(perturbation: dict[str, Any]) -> str:
    """A perturbation as one stable text: its fields sorted, values as JSON."""
    return ",".join(f"{k}={json.dumps(v, sort_keys=True)}" for k, v in sorted(perturbation.items()))


def stat_key(name: MetricName) -> str:
    """One key per distinct MetricName: `name`, then `@split`, `/sub_split`, `~perturbation`."""
    key = name.name
    if name.split is not None:
        key += f"@{name.split}"
    if name.sub_split is not None:
        key += f"/{name.sub_split}"
    if name.perturbation is not None:
        key += f"~{perturbation_text(name.perturbation)}"
    return key


def figures(stat: Stat) -> dict[str, Any]:
    """What a Stat states besides its name, as stated (absent figures left out)."""
    found = {k: getattr(stat, k) for k in STAT_FIGURES if getattr(stat, k) is not None}
    found.update(stat.model_extra or {})
    return found
