"""What an lm-eval results file says once for all its tasks: model, config, times, versions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from benchledger.adapters.formats.lm_eval_document import (
    ResultsDocument,
    canonical_digest,
    json_safe,
    model_from_args,
    parse_args,
)
from benchledger.domain.errors import InputFormatError

UNKNOWN_MODEL = "unknown"
# Credentials passed as model_args (API backends); not flags such as add_bos_token.
_SECRET_ARG = re.compile(
    r"^(.*_)?(api_?key|secret|password)$|^((hf|auth|access|api)_)?token$", re.IGNORECASE
)


@dataclass(frozen=True)
class Evaluation:
    """What a file says once for all its tasks."""

    provider: str
    model: str
    who: str
    evaluation: str
    config: dict[str, Any]
    started_at: datetime | None
    ended_at: datetime | None
    provenance: dict[str, Any]
    quirks: tuple[str, ...]

    @classmethod
    def of(cls, name: str, raw: dict[str, Any], doc: ResultsDocument) -> Evaluation:
        setup = doc.config
        provider = (setup.model if setup else None) or doc.model_source or ""
        args, redacted = _redacted(parse_args(setup.model_args if setup else None))
        model = doc.model_name or model_from_args(args) or UNKNOWN_MODEL
        quirks = []
        if doc.model_name == "" and model != UNKNOWN_MODEL:
            quirks.append("model_name_empty")
        if model == UNKNOWN_MODEL:
            quirks.append("model_unknown")
        if redacted:
            quirks.append("secrets_redacted")
        if doc.start_time is not None or doc.end_time is not None:
            quirks.append("monotonic_times_not_used")
        started, ended = _times(name, doc)
        if started is None:
            quirks.append("no_wall_clock_time")
        if setup and setup.limit is not None:
            quirks.append("limited")
        return cls(
            provider=provider,
            model=model,
            who=f"{provider}:{model}" if provider else model,
            evaluation=(
                started.isoformat(timespec="microseconds")
                if started
                else f"sha256:{canonical_digest(raw)[:16]}"
            ),
            config=_config(doc, args),
            started_at=started,
            ended_at=ended,
            provenance=_provenance(raw, doc),
            quirks=tuple(quirks),
        )

    def run_key(self, task: str) -> str:
        return f"{self.who}|{task}|{self.evaluation}"


def _times(name: str, doc: ResultsDocument) -> tuple[datetime | None, datetime | None]:
    if doc.date is None:
        return None, None
    try:
        started = datetime.fromtimestamp(doc.date, tz=UTC)
    except (OverflowError, OSError, ValueError) as e:
        raise InputFormatError(name, f"not a usable epoch time ({e})", field="date") from None
    if doc.total_evaluation_time_seconds is None:
        return started, None
    try:
        return started, started + timedelta(seconds=doc.total_evaluation_time_seconds)
    except OverflowError:
        raise InputFormatError(
            name, "too large a duration", field="total_evaluation_time_seconds"
        ) from None


def _redacted(args: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    secret = [k for k, v in args.items() if _SECRET_ARG.search(k) and v not in (None, "")]
    return {k: "<redacted>" if k in secret else v for k, v in args.items()}, bool(secret)


def _config(doc: ResultsDocument, args: dict[str, Any]) -> dict[str, Any]:
    """Run-wide settings that change what a score means (per-task ones are added per run)."""
    setup = doc.config
    config: dict[str, Any] = {"model_args": json_safe(args)} if args else {}
    if setup is None:
        return config
    gen_kwargs = parse_args(setup.gen_kwargs)
    wanted: dict[str, Any] = {
        "limit": setup.limit,
        "batch_size": setup.batch_size,
        "gen_kwargs": gen_kwargs or None,
        "description_dict": setup.description_dict or None,
        "model_dtype": setup.model_dtype,
        "model_revision": setup.model_revision,
        "random_seed": setup.random_seed,
        "numpy_seed": setup.numpy_seed,
        "torch_seed": setup.torch_seed,
        "fewshot_seed": setup.fewshot_seed,
        "fewshot_as_multiturn": doc.fewshot_as_multiturn,
        "chat_template_sha": doc.chat_template_sha,
        "system_instruction_sha": doc.system_instruction_sha,
    }
    config.update((k, json_safe(v)) for k, v in wanted.items() if v is not None)
    return config


def _provenance(raw: dict[str, Any], doc: ResultsDocument) -> dict[str, Any]:
    """The file's own versions, hashes and clocks, as stated (versions are never inferred)."""
    setup = raw.get("config")
    args = doc.config.model_args if doc.config else None
    stated = {
        "lm_eval_version": doc.lm_eval_version,
        "git_hash": doc.git_hash,
        "upper_git_hash": doc.upper_git_hash,
        "transformers_version": doc.transformers_version,
        "model_source": doc.model_source,
        "model_name": doc.model_name,
        "model_name_sanitized": doc.model_name_sanitized,
        "model_sha": doc.config.model_sha if doc.config else None,
        "model_num_parameters": doc.config.model_num_parameters if doc.config else None,
        "peft_sha": setup.get("peft_sha") if isinstance(setup, dict) else None,
        "date": doc.date,
        "start_time": doc.start_time,
        "end_time": doc.end_time,
        "total_evaluation_time_seconds": raw.get("total_evaluation_time_seconds"),
        "duration": doc.duration,
        "model_args_form": None if args is None else type(args).__name__,
    }
    return {k: json_safe(v) for k, v in stated.items() if v is not None}
