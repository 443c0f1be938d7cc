"""The benchmark registry: which benchmarks exist, how to run them, and model profiles.

The registry is a TOML file, `benchledger.toml` in the working directory by
default. Every key is listed below; any other key is an error naming it.

    results_root = "results"     # optional; relative to this file's folder
    profiles_dir = "profiles"    # optional; a folder of the orchestrator's JSON model
                                 # profiles, looked up by name (see `profiles.py`)

    [benchmarks.bfcl]            # id: letters, digits, "_", "." and "-"
    description = "Berkeley function calling"            # optional
    directory = "bfcl"           # optional; the benchmark's directory as the
                                 # orchestrator names it (part of the signature);
                                 # default the id
    command = ["python", "run.py", "{config.limit}"]     # required; or a shell-split string
    cwd = "suites/bfcl"          # optional; relative to this file's folder; default "."
    result = "*.json"            # glob under the run's output dir; default "**/*.json"
    format = "native"            # result format name; default "native"
    progress = "progress.ndjson" # optional; glob under the output dir of a progress
                                 # file whose `type: cell` lines are cells, recorded
                                 # while the benchmark runs (its other lines are not)
    config = { limit = 10 }      # default config, any table
    required_env = ["OPENAI_API_KEY"]                    # optional
    # optional; what a real run needs on the host (runtime.py): a reachable Docker
    # daemon, env:NAME, command:NAME, path:PATH, or alternatives "A|B"
    requires = ["docker", "env:HL_PRIVATE_KEY", "command:opencode"]
    agents = ["eliza", "hermes"] # compatible agents; absent or empty means any (the
                                 # calibration agents run anything, and `compare`
                                 # runs what more than one agent can)
    required_agents = ["eliza", "hermes"]  # a complete row needs these; default: agents
    unit = "accuracy"            # optional
    higher_is_better = true      # optional; default true
    # optional; label and value required, unit, source and as_of optional
    high_score = { label = "gpt-5", value = 0.891, source = "leaderboard", as_of = 2026-09-30 }
    # optional; versions every run of it records (see `versions.py`): a literal, or
    # a command's output, a repository's commit or a package.json's version
    versions = { benchmark_version = "1.2", agent_version = { command = ["{agent}", "--version"] } }

    [versions]                   # optional; versions of every benchmark's runs, under
    agent_commit = { git = "../eliza" }    # the ones a benchmark's `versions` declares

    [accounts.codex]             # a credential pool (see `accounts`): --accounts
    root = "~/.local/state/eliza/auth/_codex-home"
    env = "CODEX_HOME"

    [profiles.cerebras-oss]      # used by --model-profile
    provider = "cerebras"
    model = "gpt-oss-120b"
    extra = { temperature = 0.0, per_benchmark = { bfcl = { limit = 5 } } }

Command placeholders, replaced inside each argument: {agent} {provider}
{model} {benchmark} {run_id} {output_dir}; {config.KEY} for one top-level
config value (strings as-is, anything else as JSON); {config} for the whole
config as compact JSON with sorted keys. Write {{ and }} for literal braces.

The effective config starts from the benchmark's `config`; each extra (the
profile's `extra`, then `--extra`) overlays first its `per_benchmark` entry
for the benchmark, then its other keys, so within one extra a plain key wins
over the same key under `per_benchmark`. Overlays are shallow. Then the
orchestrator's rules apply (`domain.signatures.effective_config`): a positive
integer `sample` the extras give becomes `limit` unless they give `limit`;
`agent` is set to the agent unless the extras give one (or the agent is
`compare`); `harness` is set to the agent if absent; `trust` with a real
harness gets `handler = "eliza"` unless the extras give one. The effective
config is what the command sees (`{config}`, `{config.agent}`,
`{config.harness}`), what the run records and what its signature hashes.

While the command runs, its cells are recorded as it writes them: the `type: cell`
lines of a native JSON Lines `result` (one naming `.jsonl` or `.ndjson` files), and of
the `progress` file, whose other lines are passed over (see `live.py`).

`requires` is the benchmark's runtime gate (see `runtime.py` for each kind): a
benchmark whose requirement is not met on this host is refused before it launches
(`LaunchRefused`, reason `runtime_gate`), `preflight` blocks on it, and `gate runtime`
(`validate-runtime-gates`) records the verdict. An unknown kind is a registry error
naming the entry and the value.

`required_agents` (or, without it, `agents`) is recorded in the ledger when the
benchmark runs: the publication then requires a row of each of them in the matrix,
publishes one comparable cohort of them in `latest`, and shows the agents `agents`
excludes as unsupported. Each one must be among `agents` when those are listed.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import tomllib
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from benchledger.adapters.execution import runtime
from benchledger.adapters.execution.accounts import AccountPool
from benchledger.adapters.execution.versions import (
    PLACEHOLDERS,
    Declared,
    declared_name_problem,
)
from benchledger.domain.errors import InputFormatError, NotFoundError, RuleViolationError
from benchledger.domain.publication import SYNTHETIC_AGENTS
from benchledger.domain.signatures import COMPARE_AGENT, effective_config

VALUE_NAMES = frozenset({"agent", "provider", "model", "benchmark", "run_id", "output_dir"})
# Config keys the effective config fills from the agent when no default gives them.
FILLED_KEYS = frozenset({"agent", "harness"})

_ID = re.compile(r"[A-Za-z0-9_.-]+")
_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_TOML_WHERE = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
_MESSAGES = {"missing": "required key is missing", "extra_forbidden": "unknown key"}
_MESSAGES |= {"model_type": "must be a table", "dict_type": "must be a table"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class HighScore(_Strict):
    """The best published score for a benchmark, for comparison with ours."""

    label: str
    value: float
    unit: str | None = None
    source: str | None = None
    as_of: date | None = None


class BenchmarkSpec(_Strict):
    """One benchmark as the registry declares it, with its cwd made absolute."""

    id: str
    description: str | None = None
    # The benchmark's directory as the orchestrator names it: part of the signature.
    directory: str = Field(min_length=1)
    command: tuple[str, ...]
    cwd: Path = Field(default=Path("."), validate_default=True)
    result: str = "**/*.json"
    format: str = "native"
    # A progress file (glob under the output dir) whose cell lines are followed live.
    progress: str | None = None
    config: dict[str, Any] = {}
    required_env: tuple[str, ...] = ()
    # What a real run needs on the host: the runtime gate (see `runtime.py`).
    requires: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    required_agents: tuple[str, ...] = ()
    unit: str | None = None
    higher_is_better: bool = True
    high_score: HighScore | None = None
    # The versions its runs record (`versions.py`), the registry's top-level ones included.
    versions: dict[str, Declared] = {}

    @model_validator(mode="before")
    @classmethod
    def _directory_defaults_to_the_id(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("directory") is None and "id" in data:
            return {**data, "directory": data["id"]}
        return data

    @field_validator(
        "command", "required_env", "requires", "agents", "required_agents", mode="before"
    )
    @classmethod
    def _array_as_tuple(cls, value: object, info: ValidationInfo) -> object:
        if info.field_name == "command" and isinstance(value, str):
            try:
                return tuple(shlex.split(value))
            except ValueError as e:
                raise ValueError(f"cannot split the command string: {e}") from None
        return tuple(value) if isinstance(value, list) else value

    @field_validator("requires")
    @classmethod
    def _known_requirements(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for requirement in value:
            runtime.parse(requirement)
        return tuple(dict.fromkeys(value))

    @field_validator("progress")
    @classmethod
    def _under_output_dir(cls, value: str | None) -> str | None:
        if value is not None and (
            not value or Path(value).is_absolute() or ".." in Path(value).parts
        ):
            raise ValueError("must be a glob relative to the run's output dir")
        return value

    @field_validator("cwd", mode="before")
    @classmethod
    def _under_registry_folder(cls, value: object, info: ValidationInfo) -> object:
        folder = Path((info.context or {}).get("folder", "."))
        return (folder / value).resolve() if isinstance(value, str | Path) else value

    @field_validator("required_agents")
    @classmethod
    def _required_are_compatible(
        cls, value: tuple[str, ...], info: ValidationInfo
    ) -> tuple[str, ...]:
        agents = info.data.get("agents") or ()
        if stray := [a for a in value if agents and a not in agents]:
            raise ValueError(f"{', '.join(stray)} not among agents ({', '.join(agents)})")
        if len(set(value)) != len(value):
            raise ValueError("lists an agent twice")
        return value

    def accepts(self, agent: str) -> bool:
        """Whether this agent may run the benchmark, by the orchestrator's rules: no
        agents listed means any; a calibration agent (`perfect_v1`, ...) runs anything;
        `compare` (a model comparison, `compare --run`) runs a benchmark that more than
        one agent can run, not one that wraps a single implementation."""
        if not self.agents or agent in self.agents or agent in SYNTHETIC_AGENTS:
            return True
        return agent == COMPARE_AGENT and len(self.agents) > 1

    def required(self) -> tuple[str, ...]:
        """The agents a complete matrix row needs: `required_agents`, else `agents`."""
        return self.required_agents or self.agents


class Profile(_Strict):
    """A named provider and model with config extras, for --model-profile."""

    name: str
    provider: str
    model: str
    extra: dict[str, Any] = {}

    @field_validator("extra")
    @classmethod
    def _per_benchmark_holds_tables(cls, value: dict[str, Any]) -> dict[str, Any]:
        per = value.get("per_benchmark", {})
        if not isinstance(per, dict) or not all(isinstance(v, dict) for v in per.values()):
            raise ValueError("per_benchmark must be a table of tables, one per benchmark id")
        return value


class _RegistryFile(_Strict):
    results_root: str = "results"
    profiles_dir: str | None = None
    benchmarks: dict[str, dict[str, Any]] = {}
    profiles: dict[str, dict[str, Any]] = {}
    accounts: dict[str, dict[str, Any]] = {}
    versions: dict[str, Any] = {}


class _TopVersions(_Strict):
    versions: dict[str, Declared] = {}


def _check_version_names(file: str, where: str, table: object) -> None:
    """A declared version's name is refused naming its field (`versions.py`)."""
    for name in table if isinstance(table, dict) else ():
        if (problem := declared_name_problem(name)) is not None:
            raise InputFormatError(file, problem, field=f"{where}.{name}")


_Entry = TypeVar("_Entry", BenchmarkSpec, Profile, AccountPool)


@dataclass(frozen=True)
class Registry:
    """The loaded registry file: benchmarks and profiles in file order."""

    path: Path
    results_root: Path
    benchmarks: dict[str, BenchmarkSpec]
    profiles: dict[str, Profile]
    accounts: dict[str, AccountPool] = field(default_factory=dict)
    profiles_dir: Path | None = None

    def get(self, benchmark_id: str) -> BenchmarkSpec:
        return _lookup("benchmark", self.benchmarks, benchmark_id)

    def profile(self, name: str) -> Profile:
        return _lookup("model profile", self.profiles, name)

    def account_pool(self, agent: str, name: str | None = None) -> AccountPool | None:
        """The pool `--account-pool NAME` names, else the agent's own pool, if declared."""
        if name is not None:
            return _lookup("account pool", self.accounts, name)
        return self.accounts.get(agent)

    def select(self, ids: Sequence[str]) -> list[BenchmarkSpec]:
        """The benchmarks with these ids, in the order given; every unknown id is named."""
        wanted = list(dict.fromkeys(ids))
        unknown = [i for i in wanted if i not in self.benchmarks]
        if unknown:
            raise NotFoundError(
                f"unknown benchmarks: {', '.join(unknown)} (known: {_listing(self.benchmarks)})"
            )
        return [self.benchmarks[i] for i in wanted]


@dataclass(frozen=True)
class Gap:
    """Something that keeps a registered benchmark from running as declared."""

    benchmark: str
    problem: str


def load_registry(path: Path) -> Registry:
    file = str(path)
    try:
        raw = _RegistryFile.model_validate(_read_toml(path))
    except ValidationError as e:
        raise _field_error(file, e) from None
    folder = path.resolve().parent
    _check_version_names(file, "versions", raw.versions)
    try:
        common = _TopVersions.model_validate(
            {"versions": raw.versions}, context={"folder": folder}
        ).versions
    except ValidationError as e:
        raise _field_error(file, e) from None
    benchmarks: dict[str, BenchmarkSpec] = {}
    for benchmark_id, table in raw.benchmarks.items():
        where = f"benchmarks.{benchmark_id}"
        if not _ID.fullmatch(benchmark_id):
            message = "a benchmark id uses only letters, digits, '_', '.' and '-'"
            raise InputFormatError(file, message, field=where)
        _check_version_names(file, f"{where}.versions", table.get("versions"))
        spec = _entry(file, BenchmarkSpec, where, folder, table, id=benchmark_id)
        if common:
            spec = spec.model_copy(update={"versions": {**common, **spec.versions}})
        benchmarks[benchmark_id] = spec
    profiles: dict[str, Profile] = {}
    for name, table in raw.profiles.items():
        where = f"profiles.{name}"
        profile = profiles[name] = _entry(file, Profile, where, folder, table, name=name)
        for benchmark_id in profile.extra.get("per_benchmark", {}):
            if benchmark_id not in benchmarks:
                field = f"{where}.extra.per_benchmark.{benchmark_id}"
                message = f"unknown benchmark (known: {_listing(benchmarks)})"
                raise InputFormatError(file, message, field=field)
    accounts = {
        name: _entry(file, AccountPool, f"accounts.{name}", folder, table, name=name)
        for name, table in raw.accounts.items()
    }
    results_root = (folder / raw.results_root).resolve()
    profiles_dir = (folder / Path(raw.profiles_dir).expanduser()) if raw.profiles_dir else None
    return Registry(path.resolve(), results_root, benchmarks, profiles, accounts, profiles_dir)


def split_ids(values: Sequence[str]) -> list[str]:
    """Ids from a repeatable comma-separated option, stripped, de-duplicated, in order."""
    ids = (part.strip() for value in values for part in value.split(","))
    return list(dict.fromkeys(i for i in ids if i))


def overlay_config(
    spec_config: Mapping[str, Any], benchmark_id: str, *extras: Mapping[str, Any]
) -> dict[str, Any]:
    """The benchmark's default config overlaid by each extra in turn (see module docstring),
    before the orchestrator's rules: the config benchledger hashed before it adopted them."""
    config = dict(spec_config)
    for extra in extras:
        config.update(extra.get("per_benchmark", {}).get(benchmark_id, {}))
        config.update((key, value) for key, value in extra.items() if key != "per_benchmark")
    return config


def work_config(
    spec: BenchmarkSpec, agent: str, provider: str, *extras: Mapping[str, Any]
) -> dict[str, Any]:
    """The effective config of running this benchmark for this agent and provider."""
    requested = overlay_config({}, spec.id, *extras)
    return effective_config(spec.id, agent, requested, defaults=spec.config, provider=provider)


def render_command(
    command: Sequence[str], values: Mapping[str, str], config: Mapping[str, Any]
) -> list[str]:
    """The command with every placeholder replaced; an unresolvable one is an error."""
    return [_render(argument, values, config) for argument in command]


def placeholders(command: Sequence[str]) -> set[str]:
    """The placeholder names a command uses, without braces."""
    return {m[1] for argument in command for m in _TOKEN.finditer(argument) if m[1] is not None}


def inventory(registry: Registry, known_formats: Collection[str]) -> list[Gap]:
    """Every problem that would stop a registered benchmark from running, in file order."""
    return [
        Gap(spec.id, problem)
        for spec in registry.benchmarks.values()
        for problem in _problems(spec, known_formats)
    ]


def command_problem(spec: BenchmarkSpec) -> str | None:
    """Why the benchmark's command cannot be started, if it cannot."""
    if not spec.command:
        return "command is empty"
    if not _resolvable(spec.command[0], spec.cwd):
        return f"command '{spec.command[0]}' is not on PATH and not a file under {spec.cwd}"
    return None


def _problems(spec: BenchmarkSpec, known_formats: Collection[str]) -> Iterator[str]:
    if (problem := command_problem(spec)) is not None:
        yield problem
    if not spec.cwd.exists():
        yield f"cwd {spec.cwd} does not exist"
    elif not spec.cwd.is_dir():
        yield f"cwd {spec.cwd} is not a directory"
    if spec.format not in known_formats:
        yield f"format '{spec.format}' is not known (known: {_listing(sorted(known_formats))})"
    for name in sorted(placeholders(spec.command)):
        if name.startswith("config."):
            if name.removeprefix("config.") not in {*spec.config, *FILLED_KEYS}:
                yield f"placeholder {{{name}}} has no default"
        elif name != "config" and name not in VALUE_NAMES:
            yield f"unknown placeholder {{{name}}}"
    if any(m[1] is None and len(m[0]) == 1 for a in spec.command for m in _TOKEN.finditer(a)):
        yield "command has a single brace; write {{ or }} for a literal one"
    for version, source in spec.versions.items():
        for name in sorted(placeholders(source.texts())):
            if name.startswith("config."):
                if name.removeprefix("config.") not in {*spec.config, *FILLED_KEYS}:
                    yield f"versions.{version}: placeholder {{{name}}} has no default"
            elif name != "config" and name not in PLACEHOLDERS:
                yield f"versions.{version}: unknown placeholder {{{name}}}"


def _resolvable(word: str, cwd: Path) -> bool:
    if placeholders([word]):
        return True  # only known once rendered; its placeholders are checked on their own
    program = Path(word)
    if program.is_absolute():
        return program.is_file()
    return (cwd / program).is_file() or shutil.which(word) is not None


def _render(argument: str, values: Mapping[str, str], config: Mapping[str, Any]) -> str:
    def substitute(match: re.Match[str]) -> str:
        token, name = match[0], match[1]
        if token in ("{{", "}}"):
            return token[0]
        if name is None:
            raise RuleViolationError(
                f"single '{token}' in command argument '{argument}'; "
                f"write '{token * 2}' for a literal brace"
            )
        return _value(name, argument, values, config)

    return _TOKEN.sub(substitute, argument)


def _value(name: str, argument: str, values: Mapping[str, str], config: Mapping[str, Any]) -> str:
    where = f"placeholder {{{name}}} in command argument '{argument}'"
    if name == "config":
        return _json(dict(config))
    if name.startswith("config."):
        key = name.removeprefix("config.")
        if key not in config:
            raise RuleViolationError(f"{where}: no config key '{key}' (keys: {_listing(config)})")
        value = config[key]
        return value if isinstance(value, str) else _json(value)
    if name not in VALUE_NAMES:
        known = ", ".join(f"{{{n}}}" for n in sorted(VALUE_NAMES))
        raise RuleViolationError(f"unknown {where} (known: {known}, {{config}}, {{config.KEY}})")
    if name not in values:
        raise RuleViolationError(f"{where} has no value for this run")
    return values[name]


def _json(value: Any) -> str:
    # TOML dates and times have no JSON spelling; ISO text is what a harness expects.
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=lambda v: v.isoformat(),
    )


def _listing(names: Collection[str]) -> str:
    return ", ".join(names) or "none"


def _lookup(kind: str, table: Mapping[str, _Entry], key: str) -> _Entry:
    try:
        return table[key]
    except KeyError:
        raise NotFoundError(f"unknown {kind} '{key}' (known: {_listing(table)})") from None


def _read_toml(path: Path) -> dict[str, Any]:
    file = str(path)
    try:
        return tomllib.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        message = "no registry file; create it to declare benchmarks and model profiles"
        raise InputFormatError(file, message) from None
    except OSError as e:
        raise InputFormatError(file, f"cannot read the registry: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise InputFormatError(file, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        where = _TOML_WHERE.search(str(e))
        if where is None:
            raise InputFormatError(file, f"invalid TOML: {e}") from None
        message = f"invalid TOML: {str(e)[: where.start()]} (column {where[2]})"
        raise InputFormatError(file, message, line=int(where[1])) from None


def _entry(
    file: str, model: type[_Entry], where: str, folder: Path, table: dict[str, Any], **name: str
) -> _Entry:
    """Validate one benchmark or profile table, its name taken from the table's key."""
    if clash := sorted(name.keys() & table.keys()):
        raise InputFormatError(file, "unknown key", field=f"{where}.{clash[0]}")
    try:
        return model.model_validate({**table, **name}, context={"folder": folder})
    except ValidationError as e:
        raise _field_error(file, e, prefix=f"{where}.") from None


def _field_error(file: str, error: ValidationError, *, prefix: str = "") -> InputFormatError:
    first = error.errors()[0]
    loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"]).lstrip(".")
    message = _MESSAGES.get(first["type"], first["msg"].removeprefix("Value error, "))
    return InputFormatError(file, message, field=f"{prefix}{loc}".rstrip(".") or None)
