"""Project configuration: discovery of canon.yaml / [tool.canon], and .env loading."""

from __future__ import annotations

import contextlib
import difflib
import io
import math
import os
import stat
import tomllib
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from canon.core.evidence import DecisionRule
from canon.core.online import MONITOR_SETTINGS, MonitorSettings
from canon.core.rubric import refuse_rubric_override
from canon.core.scoring import check_threshold
from canon.errors import CanonError, ConfigError, UsageError
from canon.project.store import SETTINGS_LIMIT, parse_yaml, read_text

CONFIG_NAMES = ("canon.yaml", "canon.yml", "pyproject.toml")
DEFAULT_THRESHOLD = 0.85
DEFAULT_TOLERANCE = 0.02
DEFAULT_BASELINES_DIR = "canon/baselines"
DEFAULT_CONCURRENCY = 8
DEFAULT_JUDGE_CACHE = ".canon/judge-cache.sqlite3"
OtelMode = Literal["off", "on", "strict"]  # whether runs send their results as OTel events

_PATH_KEYS = ("constitution_path", "baselines_dir", "suite", "policy")
# Settings passed through to the model judge (canon.judge.litellm_judge.LiteLLMJudge).
JUDGE_OPTIONS = {
    "samples": int,  # or "auto" (_AUTO_OPTIONS)
    "temperature": float,
    "reask_temperature": float,
    "timeout": float,
    "max_attempts": int,
    "max_tokens": int,
    "constrain_answers": bool,
    "batch": bool,  # read by the CLI (provider batch mode), not passed to the judge
    "logprobs": object,  # true, false or "auto": LiteLLMJudge checks it
    "structured_output": object,  # true, false or "auto": LiteLLMJudge checks it
    "reasons": bool,  # false: structured replies carry no reason (fewer completion tokens)
    "transport": str,
    "api_base": str,  # an OpenAI-compatible endpoint of one's own (llama.cpp, vLLM, a proxy)
}
# Numeric judge options that also take "auto" (the judge works the number out).
_AUTO_OPTIONS = frozenset({"samples"})
# The range each numeric judge option must lie in: a typo such as max_tokens: -5 or
# timeout: 1e308 is refused here, naming the key, instead of misbehaving at run time.
JUDGE_OPTION_BOUNDS: dict[str, tuple[int | float, int | float]] = {
    "samples": (1, 100),
    "temperature": (0, 2),
    "reask_temperature": (0, 2),
    "timeout": (0.001, 3600),
    "max_attempts": (1, 20),
    "max_tokens": (1, 1_000_000),
}
_KNOWN_KEYS = frozenset(
    {
        "allow_outside_paths",
        "judge_model",
        "judge_options",
        "confirm_judge",
        "confirm_judge_options",
        "threshold",
        "tolerance",
        "constitution_path",
        "baselines_dir",
        "suite",
        "policy",
        "contract",
        "concurrency",
        "judge_cache",
        "alpha",
        "flip_rate",
        "max_reasks",
        "max_cost",
        "otel",
        "monitor",
    }
)


@dataclass(frozen=True, slots=True)
class Config:
    """A project's Canon settings, with paths already resolved."""

    source: Path | None  # the file the settings came from; None when defaults apply
    base_dir: Path  # what relative paths were resolved against
    judge_model: str | None = None
    judge_options: Mapping[str, Any] = field(default_factory=dict)
    # a second judge (provider:model or mock:<script>) that asks the confirmation re-asks
    confirm_judge: str | None = None
    # the confirm judge's own judge_options; None: it takes judge_options (a script none)
    confirm_judge_options: Mapping[str, Any] | None = None
    threshold: float = DEFAULT_THRESHOLD
    tolerance: float = DEFAULT_TOLERANCE
    constitution_path: Path | None = None
    baselines_dir: Path | None = None
    suite: Path | None = None
    policy: Path | None = None
    contract: str | None = None  # a contract file path or a bundled template name
    concurrency: int = DEFAULT_CONCURRENCY
    # where model-judge answers are cached; None when caching is off
    judge_cache: Path | None = None
    # how sure a check must be before a decision fails the run (alpha, flip_rate, max_reasks)
    rule: DecisionRule = field(default_factory=DecisionRule)
    max_cost: float | None = None  # USD a run may spend on judge calls; None: no limit
    batch: bool = False  # judge_options.batch: ask through the provider's Batch API
    # whether a suite's response/trace files may lie outside the project's directories
    allow_outside_paths: bool = False
    # otel: true / strict sends every run's results as gen_ai.evaluation.result events
    otel: OtelMode = "off"
    # monitor: the monitors' judging defaults (judge, sample, salt, budget, settle, ...)
    monitor: MonitorSettings = field(default_factory=MonitorSettings)

    @property
    def project_roots(self) -> tuple[Path, ...]:
        """The directories a suite's files must lie in unless ``allow_outside_paths``."""
        roots = [self.base_dir]
        if self.source is not None and self.source.parent != self.base_dir:
            roots.append(self.source.parent)
        return tuple(roots)


def discover_config_file(start: Path) -> Path | None:
    """The first canon.yaml, canon.yml or pyproject.toml with [tool.canon], walking up."""
    for directory in (start, *start.parents):
        for name in CONFIG_NAMES:
            candidate = directory / name
            if not _is_config_file(candidate):
                continue
            if name != "pyproject.toml" or _has_tool_canon(candidate):
                return candidate
    return None


def _is_config_file(candidate: Path) -> bool:
    """Whether a config file is there; one that is there but unusable is an error, not skipped."""
    try:
        info = os.stat(candidate)
    except FileNotFoundError:
        if os.path.islink(candidate):  # a dangling symlink: someone meant a config here
            raise ConfigError(f"{candidate}: config file is a broken symlink") from None
        return False
    except (NotADirectoryError, PermissionError):
        return False  # nothing to see from here: a file in the way, or a closed directory
    except OSError as exc:  # a symlink loop
        raise ConfigError(f"config file at {candidate} cannot be read: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise ConfigError(f"config file at {candidate} is {kind}; remove it or pass --config FILE")
    return True


def load_config(
    explicit: Path | None = None, *, cwd: Path | None = None, required: bool = True
) -> Config:
    """Load the project's config: ``explicit`` if given, else the discovered one.

    With none found it is an error naming how to start a project (``canon init``), unless
    ``required`` is false: then the defaults apply (``source`` is None)."""
    cwd = (cwd or _current_directory()).resolve()
    if explicit is not None:
        path = cwd / explicit
        if not os.path.lexists(path):
            raise ConfigError(f"config file not found: {explicit}")
        # A loop or a missing target is left for the read below to report, naming the file
        # (RuntimeError: how Python before 3.13 reports a symlink loop).
        with contextlib.suppress(OSError, RuntimeError):
            path = path.resolve(strict=True)
        # A config named from elsewhere does not move the project: its relative paths
        # stay relative to where the command runs.
        return config_from_mapping(_read_settings(path), source=path, base_dir=cwd)
    found = discover_config_file(cwd)
    if found is None:
        if required:
            raise ConfigError(
                f"no canon.yaml (or pyproject.toml with [tool.canon]) in {cwd} or any "
                "directory above it; run `canon init` to start a project here, or pass "
                "--config FILE"
            )
        return Config(
            source=None,
            base_dir=cwd,
            baselines_dir=cwd / DEFAULT_BASELINES_DIR,
            judge_cache=cwd / DEFAULT_JUDGE_CACHE,
        )
    return config_from_mapping(_read_settings(found), source=found, base_dir=found.parent)


def _current_directory() -> Path:
    try:
        return Path.cwd()
    except OSError as exc:  # the directory was removed under the command
        raise ConfigError(
            f"the current directory cannot be used ({exc.strerror}); cd into the project"
        ) from None


def _read_settings(path: Path) -> Mapping[str, Any]:
    text = read_text(path, "config file", ConfigError, limit=SETTINGS_LIMIT)
    if path.name.endswith(".toml"):
        try:
            document = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
        table = document.get("tool", {}).get("canon")
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: has no [tool.canon] table; add one or use canon.yaml")
        return table
    data = parse_yaml(text, str(path), ConfigError)
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a mapping of settings, got a {type(data).__name__}")
    return data


def _has_tool_canon(path: Path) -> bool:
    try:
        document = tomllib.loads(read_text(path, "pyproject", ConfigError, limit=SETTINGS_LIMIT))
    except (ConfigError, tomllib.TOMLDecodeError):
        return False  # an unreadable pyproject is not ours to judge during discovery
    return isinstance(document.get("tool", {}).get("canon"), dict)


def config_from_mapping(data: Mapping[str, Any], *, source: Path, base_dir: Path) -> Config:
    """Validate settings and resolve their relative paths against ``base_dir``."""
    if "rubric" in data:
        raise refuse_rubric_override(f"{source}: the 'rubric' key")
    refuse_unknown(data, sorted(_KNOWN_KEYS), "setting", source)
    values: dict[str, Any] = {}
    for key in _PATH_KEYS:
        if data.get(key) is not None:
            values[key] = base_dir / _text(data, key, source)
    if data.get("judge_model") is not None:
        values["judge_model"] = _text(data, "judge_model", source)
    if data.get("confirm_judge") is not None:
        values["confirm_judge"] = _text(data, "confirm_judge", source)
    if data.get("judge_options") is not None:
        options = _judge_options(data["judge_options"], source)
        values["batch"] = bool(options.pop("batch", False))
        values["judge_options"] = options
    if data.get("confirm_judge_options") is not None:
        values["confirm_judge_options"] = _confirm_options(data, source)
    if data.get("max_cost") is not None:
        values["max_cost"] = _max_cost(data["max_cost"], source)
    if data.get("contract") is not None:
        contract = _text(data, "contract", source)
        # A name without a path separator or YAML suffix is a bundled template.
        looks_like_file = contract.endswith((".yaml", ".yml")) or "/" in contract
        values["contract"] = str(base_dir / contract) if looks_like_file else contract
    for key in ("threshold", "tolerance"):
        if data.get(key) is not None:
            values[key] = _fraction(data[key], key, source)
    if data.get("concurrency") is not None:
        concurrency = data["concurrency"]
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"{source}: 'concurrency' must be a whole number >= 1")
        values["concurrency"] = concurrency
    rule = {k: data[k] for k in ("alpha", "flip_rate", "max_reasks") if data.get(k) is not None}
    if rule:
        try:
            values["rule"] = DecisionRule(**rule)
        except UsageError as exc:
            raise ConfigError(f"{source}: {exc}") from None
    values["judge_cache"] = _judge_cache(data.get("judge_cache", True), base_dir, source)
    outside = data.get("allow_outside_paths", False)
    if not isinstance(outside, bool):
        raise ConfigError(f"{source}: 'allow_outside_paths' must be true or false, got {outside!r}")
    values["allow_outside_paths"] = outside
    values["otel"] = _otel(data.get("otel", False), source)
    if data.get("monitor") is not None:
        values["monitor"] = _monitor(data["monitor"], source)
    values.setdefault("baselines_dir", base_dir / DEFAULT_BASELINES_DIR)
    return Config(source=source, base_dir=base_dir, **values)


def refuse_unknown(found: Iterable[object], known: Sequence[str], noun: str, source: Path) -> None:
    """Refuse the keys of ``found`` not in ``known``, naming them (with a likely spelling)
    and every ``noun`` there is, in ``known``'s order."""
    unknown = sorted(str(k) for k in found if k not in known)
    if unknown:
        raise ConfigError(
            f"{source}: unknown {noun}(s) {', '.join(map(repr, unknown))}"
            f"{did_you_mean(unknown, known)}; known {noun}s are {', '.join(known)}"
        )


def did_you_mean(unknown: Sequence[str], known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the unknown names that look like a misspelt known one."""
    choices = sorted(known)
    guesses = [
        f"{name!r} -> {match[0]!r}"
        for name in unknown
        if (match := difflib.get_close_matches(name, choices, n=1, cutoff=0.7))
    ]
    if not guesses:
        return ""
    if len(unknown) == 1:
        return f" (did you mean {guesses[0].split(' -> ')[1]}?)"
    return f" (did you mean: {', '.join(guesses)}?)"


def _confirm_options(data: Mapping[str, Any], source: Path) -> dict[str, Any]:
    """``confirm_judge_options``: judge_options of the confirm judge's own, checked alike."""
    if data.get("confirm_judge") is None:
        raise ConfigError(
            f"{source}: 'confirm_judge_options' is set but 'confirm_judge' is not; set "
            "confirm_judge, or move these options to judge_options"
        )
    options = _judge_options(data["confirm_judge_options"], source, "confirm_judge_options")
    if "batch" in options:
        raise ConfigError(
            f"{source}: 'batch' is not a confirm_judge_options option: the confirm judge's "
            "looks are always asked online (judge_options: batch batches the judge's own)"
        )
    return options


def _judge_options(raw: object, source: Path, setting: str = "judge_options") -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: {setting!r} must be a mapping, got {raw!r}")
    label = "judge option" if setting == "judge_options" else "confirm judge option"
    options: dict[str, Any] = {}
    for key, value in raw.items():
        kind = JUDGE_OPTIONS.get(str(key))
        if kind is None:
            raise ConfigError(
                f"{source}: unknown {label} {key!r}"
                f"{did_you_mean([str(key)], JUDGE_OPTIONS)}; known options are "
                f"{', '.join(sorted(JUDGE_OPTIONS))}"
            )
        if key in _AUTO_OPTIONS and value == "auto":
            options[str(key)] = value
            continue
        fits = (
            kind is object
            or (kind is str and isinstance(value, str))
            or (kind is bool and isinstance(value, bool))
            or (
                kind in (int, float)
                and not isinstance(value, bool)
                and isinstance(value, int if kind is int else int | float)
            )
        )
        if not fits:
            wanted = {bool: "true or false", int: "a whole number", float: "a number"}.get(
                kind, "text"
            )
            if key in _AUTO_OPTIONS:
                wanted += " or auto"
            raise ConfigError(f"{source}: {label} {key!r} must be {wanted}, got {value!r}")
        bounds = JUDGE_OPTION_BOUNDS.get(str(key))
        if bounds is not None and not (math.isfinite(value) and bounds[0] <= value <= bounds[1]):
            raise ConfigError(
                f"{source}: {label} {key!r} must be between {bounds[0]} and "
                f"{bounds[1]}, got {value!r}"
            )
        if key == "api_base" and not value.startswith(("http://", "https://")):
            raise ConfigError(
                f"{source}: {label} 'api_base' must be an http:// or https:// URL, got {value!r}"
            )
        options[str(key)] = value
    return options


def _max_cost(raw: object, source: Path) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 <= raw < float("inf"):
        raise ConfigError(
            f"{source}: 'max_cost' must be a number of US dollars >= 0 (e.g. 5.00), got {raw!r}"
        )
    return float(raw)


def _otel(raw: object, source: Path) -> OtelMode:
    """``otel: true`` is --otel on every run, ``strict`` is --otel-strict, false is off."""
    if raw is True:
        return "on"
    if raw is False or raw is None:
        return "off"
    if raw == "strict":
        return "strict"
    raise ConfigError(f"{source}: 'otel' must be true, false or strict, got {raw!r}")


def _monitor(raw: object, source: Path) -> MonitorSettings:
    """The ``monitor:`` section: each key checked as its command-line flag checks it."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: 'monitor' must be a mapping, got {raw!r}")
    refuse_unknown(raw, MONITOR_SETTINGS, "monitor setting", source)
    judge = raw.get("judge", False)
    if not isinstance(judge, bool):
        raise ConfigError(f"{source}: 'monitor.judge' must be true or false, got {judge!r}")
    salt = raw.get("salt")
    if salt is not None and (not isinstance(salt, str) or not salt):
        raise ConfigError(f"{source}: 'monitor.salt' must be non-empty text, got {salt!r}")
    numbers: dict[str, float] = {}
    for key in ("sample", "budget", "settle", "settle_max"):
        numbers.update(_monitor_number(raw, key, 1.0 if key == "sample" else math.inf, source))
    return MonitorSettings(judge=judge, salt=salt, **numbers)


def _monitor_number(
    raw: Mapping[Any, Any], key: str, high: float, source: Path
) -> dict[str, float]:
    value = raw.get(key)
    if value is None:
        return {}
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 <= value <= high
        or not math.isfinite(value)
    ):
        span = "from 0 to 1" if high == 1.0 else ">= 0"
        raise ConfigError(f"{source}: 'monitor.{key}' must be a number {span}, got {value!r}")
    return {key: float(value)}


def _judge_cache(raw: object, base_dir: Path, source: Path) -> Path | None:
    """``true`` (the default) caches in ``.canon/``, ``false`` turns caching off, text is a path."""
    if raw is True:
        return base_dir / DEFAULT_JUDGE_CACHE
    if raw is False:
        return None
    if isinstance(raw, str) and raw.strip():
        return base_dir / raw.strip()
    raise ConfigError(f"{source}: 'judge_cache' must be true, false or a file path, got {raw!r}")


def _text(data: Mapping[str, Any], key: str, source: Path) -> str:
    value = data[key]
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{source}: {key!r} must be non-empty text, got {value!r}")
    return value.strip()


def _fraction(value: object, key: str, source: Path) -> float:
    try:
        return check_threshold(value)
    except CanonError:
        raise ConfigError(f"{source}: {key!r} must be a number in [0, 1], got {value!r}") from None


def load_env_files(
    directory: Path, environ: MutableMapping[str, str] | None = None
) -> dict[str, str]:
    """Load .env, .env.{APP_ENV}, .env.local from ``directory`` into the environment.

    Later files override earlier ones; a variable already exported always wins.
    Returns the variables that were set.
    """
    from dotenv import dotenv_values  # only the CLI and plugin need it

    target: MutableMapping[str, str] = os.environ if environ is None else environ
    names = [".env"]
    if target.get("APP_ENV"):
        names.append(f".env.{target['APP_ENV']}")
    names.append(".env.local")
    merged: dict[str, str] = {}
    for name in names:
        path = directory / name
        if os.path.lexists(path):  # there but unusable (a directory, not UTF-8) is an error
            text = read_text(path, "environment file", ConfigError, limit=SETTINGS_LIMIT)
            values = dotenv_values(stream=io.StringIO(text))
            merged.update({k: v for k, v in values.items() if v is not None})
    applied = {k: v for k, v in merged.items() if k not in target}
    target.update(applied)
    return applied
