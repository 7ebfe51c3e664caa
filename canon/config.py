"""Project configuration: discovery of canon.yaml / [tool.canon], and .env loading."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from canon.core.rubric import refuse_rubric_override
from canon.core.scoring import check_threshold
from canon.errors import CanonError, ConfigError
from canon.store import parse_yaml, read_text

CONFIG_NAMES = ("canon.yaml", "canon.yml", "pyproject.toml")
DEFAULT_THRESHOLD = 0.85
DEFAULT_TOLERANCE = 0.02
DEFAULT_BASELINES_DIR = "canon/baselines"
DEFAULT_CONCURRENCY = 8
DEFAULT_JUDGE_CACHE = ".canon/judge-cache.sqlite3"

_PATH_KEYS = ("constitution_path", "baselines_dir", "suite", "policy")
# Settings passed through to the model judge (canon.judge.litellm_judge.LiteLLMJudge).
JUDGE_OPTIONS = {
    "samples": int,
    "temperature": float,
    "reask_temperature": float,
    "timeout": float,
    "max_attempts": int,
    "max_tokens": int,
    "constrain_answers": bool,
    "logprobs": bool,
    "structured_output": object,  # true, false or "auto": LiteLLMJudge checks it
    "transport": str,
}
_KNOWN_KEYS = frozenset(
    {
        "judge_model",
        "judge_options",
        "threshold",
        "tolerance",
        "constitution_path",
        "baselines_dir",
        "suite",
        "policy",
        "contract",
        "concurrency",
        "judge_cache",
    }
)


@dataclass(frozen=True, slots=True)
class Config:
    """A project's Canon settings, with paths already resolved."""

    source: Path | None  # the file the settings came from; None when defaults apply
    base_dir: Path  # what relative paths were resolved against
    judge_model: str | None = None
    judge_options: Mapping[str, Any] = field(default_factory=dict)
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


def discover_config_file(start: Path) -> Path | None:
    """The first canon.yaml, canon.yml or pyproject.toml with [tool.canon], walking up."""
    for directory in (start, *start.parents):
        for name in CONFIG_NAMES:
            candidate = directory / name
            if not candidate.is_file():
                continue
            if name != "pyproject.toml" or _has_tool_canon(candidate):
                return candidate
    return None


def load_config(explicit: Path | None = None, *, cwd: Path | None = None) -> Config:
    """Load the project's config: ``explicit`` if given, else the discovered one."""
    cwd = (cwd or Path.cwd()).resolve()
    if explicit is not None:
        path = (cwd / explicit).resolve()
        if not path.is_file():
            raise ConfigError(f"config file not found: {explicit}")
        # A config named from elsewhere does not move the project: its relative paths
        # stay relative to where the command runs.
        return config_from_mapping(_read_settings(path), source=path, base_dir=cwd)
    found = discover_config_file(cwd)
    if found is None:
        return Config(
            source=None,
            base_dir=cwd,
            baselines_dir=cwd / DEFAULT_BASELINES_DIR,
            judge_cache=cwd / DEFAULT_JUDGE_CACHE,
        )
    return config_from_mapping(_read_settings(found), source=found, base_dir=found.parent)


def _read_settings(path: Path) -> Mapping[str, Any]:
    text = read_text(path, "config file", ConfigError)
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
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False  # an unreadable pyproject is not ours to judge during discovery
    return isinstance(document.get("tool", {}).get("canon"), dict)


def config_from_mapping(data: Mapping[str, Any], *, source: Path, base_dir: Path) -> Config:
    """Validate settings and resolve their relative paths against ``base_dir``."""
    if "rubric" in data:
        raise refuse_rubric_override(f"{source}: the 'rubric' key")
    unknown = sorted(str(k) for k in data if k not in _KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"{source}: unknown setting(s) {', '.join(map(repr, unknown))}; "
            f"known settings are {', '.join(sorted(_KNOWN_KEYS))}"
        )
    values: dict[str, Any] = {}
    for key in _PATH_KEYS:
        if data.get(key) is not None:
            values[key] = base_dir / _text(data, key, source)
    if data.get("judge_model") is not None:
        values["judge_model"] = _text(data, "judge_model", source)
    if data.get("judge_options") is not None:
        values["judge_options"] = _judge_options(data["judge_options"], source)
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
    values["judge_cache"] = _judge_cache(data.get("judge_cache", True), base_dir, source)
    values.setdefault("baselines_dir", base_dir / DEFAULT_BASELINES_DIR)
    return Config(source=source, base_dir=base_dir, **values)


def _judge_options(raw: object, source: Path) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: 'judge_options' must be a mapping, got {raw!r}")
    options: dict[str, Any] = {}
    for key, value in raw.items():
        kind = JUDGE_OPTIONS.get(str(key))
        if kind is None:
            raise ConfigError(
                f"{source}: unknown judge option {key!r}; known options are "
                f"{', '.join(sorted(JUDGE_OPTIONS))}"
            )
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
            raise ConfigError(f"{source}: judge option {key!r} must be {wanted}, got {value!r}")
        options[str(key)] = value
    return options


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
        if path.is_file():
            merged.update({k: v for k, v in dotenv_values(path).items() if v is not None})
    applied = {k: v for k, v in merged.items() if k not in target}
    target.update(applied)
    return applied
