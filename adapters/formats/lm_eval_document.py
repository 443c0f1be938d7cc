"""lm-evaluation-harness results JSON: loading, validation and value normalisation."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
)

from benchledger.adapters.formats import common
from benchledger.domain.errors import InputFormatError


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("expected a number, not true/false")
    return value


# A number (numeric text accepted: lm-eval writes some durations as strings), never a bool.
Real = Annotated[float, BeforeValidator(_not_bool)]
FiniteReal = Annotated[Real, Field(allow_inf_nan=False)]
Scalar = StrictInt | Real | str | None
# lm_eval.utils.get_model_name: the first of these model_args keys names the model.
MODEL_ARG_KEYS = ("peft", "delta", "pretrained", "model", "path", "engine")


class HarnessConfig(BaseModel):
    """The `config` block: backend, model arguments and run-wide settings."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    model_args: str | dict[str, Any] | None = None
    num_fewshot: StrictInt | None = None
    batch_size: StrictInt | str | None = None
    limit: Real | None = None
    gen_kwargs: str | dict[str, Any] | None = None
    description_dict: dict[str, Any] | None = None
    model_dtype: str | None = None
    model_revision: str | None = None
    model_sha: str | None = None
    model_num_parameters: StrictInt | None = None
    random_seed: StrictInt | None = None
    numpy_seed: StrictInt | None = None
    torch_seed: StrictInt | None = None
    fewshot_seed: StrictInt | None = None


class ResultsDocument(BaseModel):
    """One results file; keys of every era from v0 to 0.4.x, all but `results` optional."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    results: dict[str, dict[str, Any]]
    groups: dict[str, dict[str, Any]] = Field(default_factory=dict)
    group_subtasks: dict[str, list[str]] = Field(default_factory=dict)
    configs: dict[str, dict[str, Any]] = Field(default_factory=dict)
    versions: dict[str, Scalar] = Field(default_factory=dict)
    n_shot: dict[str, Scalar] = Field(default_factory=dict, alias="n-shot")
    higher_is_better: dict[str, dict[str, StrictBool | None]] = Field(default_factory=dict)
    n_samples: dict[str, dict[str, Any]] = Field(default_factory=dict, alias="n-samples")
    task_hashes: dict[str, str] = Field(default_factory=dict)
    samples: dict[str, list[dict[str, Any]]] | None = None
    config: HarnessConfig | None = None
    git_hash: str | None = None
    upper_git_hash: str | None = None
    lm_eval_version: str | None = None
    transformers_version: str | None = None
    date: FiniteReal | None = None
    start_time: Real | None = None
    end_time: Real | None = None
    total_evaluation_time_seconds: FiniteReal | None = Field(default=None, ge=0)
    duration: Real | None = None
    model_name: str | None = None
    model_name_sanitized: str | None = None
    model_source: str | None = None
    fewshot_as_multiturn: StrictBool | None = None
    chat_template_sha: str | None = None
    system_instruction_sha: str | None = None


def loads(name: str, data: bytes) -> Any:
    """JSON as Python's json reads it: bare NaN / Infinity become floats."""
    return common.loads(name, data)


def validate(name: str, raw: Any) -> ResultsDocument:
    if not isinstance(raw, dict):
        raise InputFormatError(name, "expected a JSON object (an lm-eval results file)")
    try:
        return ResultsDocument.model_validate(raw)
    except ValidationError as e:
        raise field_error(name, e) from None


def field_error(name: str, error: ValidationError, *, line: int | None = None) -> InputFormatError:
    """The failing field; for a union that matched no member, the field itself, not a member."""
    errors = error.errors()
    locs = [tuple(e["loc"]) for e in errors]
    loc, message = locs[0], errors[0]["msg"]
    common = _common_prefix(locs) if len(locs) > 1 else ()
    if common:  # the members of one union, each refusing the value
        loc = common
        message = " or ".join(
            dict.fromkeys(e["msg"] for e in errors if tuple(e["loc"])[: len(common)] == common)
        )
    field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
    return InputFormatError(name, message, line=line, field=field or None)


def _common_prefix(locs: list[tuple[int | str, ...]]) -> tuple[int | str, ...]:
    prefix = locs[0]
    for loc in locs[1:]:
        n = 0
        while n < min(len(prefix), len(loc)) and prefix[n] == loc[n]:
            n += 1
        prefix = prefix[:n]
    return prefix


def json_safe(value: Any) -> Any:
    """Non-finite floats as the strings the ledger stores them as ("NaN", "Infinity"), and
    object keys sorted, so a re-serialised copy of a file states the same records."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: json_safe(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    return value


def parse_args(value: str | dict[str, Any] | None) -> dict[str, Any]:
    """model_args / gen_kwargs as lm-eval itself reads them, so the string and dict forms
    of the same arguments compare equal (lm_eval.utils.simple_parse_args_string)."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return dict(value)
    args: dict[str, Any] = {}
    for item in value.strip().split(","):
        if item:
            key, _, text = item.partition("=")
            args[key] = _arg_value(text)
    return args


def _arg_value(text: str) -> Any:
    """lm_eval.utils.handle_arg_string, keeping text that would become NaN or Infinity."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text.isnumeric():
        try:
            return int(text)
        except ValueError:
            return text  # numeric by Unicode but not a decimal literal, e.g. "²"
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def model_from_args(args: dict[str, Any]) -> str:
    for key in MODEL_ARG_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def number(value: Any) -> float | None:
    """A metric value as a float (finite or not), or None for anything that is not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:  # an integer too large for a float
        return math.inf if value > 0 else -math.inf


def canonical_digest(raw: Any) -> str:
    """Content fingerprint of a document (key order and layout do not matter)."""
    text = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
