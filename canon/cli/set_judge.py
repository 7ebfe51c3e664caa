"""``canon set-judge``: write ``judge_model`` into the project's canon.yaml."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import click
import yaml

from canon.cli.common import HELP_OPTIONS, docs_epilog, reports_errors
from canon.errors import ConfigError, UsageError
from canon.project.config import discover_config_file
from canon.project.config_edit import KEY, new_config_text, set_judge_model
from canon.project.judge_factory import (
    DECISION_OPTIONS,
    MOCK_PREFIX,
    decision_wire,
    litellm_model,
)
from canon.project.store import SETTINGS_LIMIT, read_bytes, write_bytes_atomic

_FORM = (
    "expected --provider NAME --model MODEL, e.g. --provider openai --model gpt-5.6-luna, "
    "--provider together --model deepseek-ai/DeepSeek-V4-Flash-0731, "
    "or --provider mock --model judge-script.yaml"
)


@click.command(
    "set-judge", context_settings=HELP_OPTIONS, epilog=docs_epilog("configuration", "judge")
)
@click.option("--provider", required=True, help="Model provider, e.g. openai, anthropic, mock.")
@click.option("--model", required=True, help="Model name; may hold a slash (org/model).")
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Edit this canon.yaml instead of the one found by searching upward from here.",
)
@reports_errors
def set_judge(provider: str, model: str, config_path: Path | None) -> None:
    """Set judge_model to PROVIDER:MODEL in the project's canon.yaml.

    The file edited is the one Canon itself would use: the first canon.yaml or canon.yml
    found walking up from here (or the --config file). Only the judge_model line changes;
    comments and every other line stay as they are. With no config anywhere above, a new
    canon.yaml holding just judge_model is created here.

    A project configured through [tool.canon] in pyproject.toml is refused: set judge_model
    in that table instead, since a canon.yaml next to it would take over as the config.

    The model may hold a slash (org/model); the provider is lower-cased. For the mock
    judge, --model names its script file, a path resolved like the config's other paths.

    \b
    Examples:
      canon set-judge --provider openai --model gpt-5.6-luna
      canon set-judge --provider together --model deepseek-ai/DeepSeek-V4-Flash-0731
      canon set-judge --provider mock --model judge-script.yaml   (scripted, offline)

    Exit codes: 0 set, 2 bad arguments or a config that cannot be edited safely.
    """
    spec = judge_spec(provider, model)
    cwd = Path.cwd()
    target = discover_config_file(cwd) if config_path is None else cwd / config_path
    if config_path is not None and not (target and target.is_file()):
        # Unlike discovery, a named file is never created: a typo should not start a config.
        raise ConfigError(
            f"config file not found: {config_path}; check the path, or drop --config "
            f"to use the canon.yaml found from the current directory"
        )
    if target is None:
        created = cwd / "canon.yaml"
        _write(created, new_config_text(spec), mode=None)
        click.echo(
            f"{KEY} set to {spec} in {created} (new file: no canon.yaml, canon.yml or "
            f"[tool.canon] found in {cwd} or above)"
        )
        return
    if target.name.endswith(".toml"):
        raise ConfigError(
            f"{target} configures this project through [tool.canon]; set-judge only edits "
            f"canon.yaml, so add {KEY} = {json.dumps(spec)} under [tool.canon] there "
            f"(a canon.yaml beside it would replace that table as the project config)"
        )
    _edit(target, spec)
    _warn_llm_options(target, spec)


def _warn_llm_options(target: Path, spec: str) -> None:
    """Say which judge_options a decision judge will refuse, so the next run is no surprise
    (the file is left as it is: only the judge_model line is ever edited)."""
    if decision_wire(spec) is None:
        return
    try:
        data = yaml.safe_load(target.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return  # _edit read it a moment ago; the next command reports any problem
    options = data.get("judge_options") if isinstance(data, dict) else None
    if not isinstance(options, dict):
        return
    refused = sorted(str(k) for k in options if k not in DECISION_OPTIONS)
    if refused:
        # an LLM confirm_judge without options of its own may be what they were meant for
        move = data.get("confirm_judge") is not None and "confirm_judge_options" not in data
        fix = "move them to confirm_judge_options (the confirm_judge's own)" if move else ""
        click.echo(
            f"canon: note: judge_options {', '.join(refused)} in {target} apply to LLM judges "
            f"only; {fix or 'remove them'}, or every command refuses them with {spec} (a "
            f"decision judge takes {', '.join(sorted(DECISION_OPTIONS))})",
            err=True,
        )


def judge_spec(provider: str, model: str) -> str:
    """Check ``--provider``/``--model`` and join them into a ``judge_model`` string."""
    name, rest = provider.strip().lower(), model.strip()
    if not name:
        raise UsageError(f"--provider is empty; {_FORM}")
    if not rest:
        raise UsageError(f"--model is empty; {_FORM}")
    if ":" in name or "/" in name:
        raise UsageError(
            f"--provider {provider!r} holds ':' or '/'; give only the provider name "
            f"and the rest with --model ({_FORM})"
        )
    spec = f"{name}:{rest}"
    if spec.startswith(MOCK_PREFIX):
        # A mock judge names a script file, whose path may hold spaces.
        if "\n" in rest or "\r" in rest:
            raise UsageError(f"--model {model!r} for the mock judge must be one line")
        return spec
    try:
        litellm_model(spec)
    except ConfigError:
        raise UsageError(
            f"--provider {provider!r} --model {model!r} does not make a provider:model "
            f"string ({spec!r}); {_FORM}"
        ) from None
    return spec


def _edit(path: Path, spec: str) -> None:
    # Edit the real file behind a symlink instead of replacing the link with a copy.
    real = path.resolve()
    text = _read_exact(real)
    edit = set_judge_model(text, spec, source=str(path))
    if edit.text == text:
        click.echo(f"{KEY} is already {spec} in {path}; nothing changed")
        return
    # Keep the file's permissions: a replaced file would otherwise take the umask's.
    _write(real, edit.text, mode=stat.S_IMODE(os.stat(real).st_mode))
    if edit.previous is None:
        was = "was not set" if edit.added else "was empty"
    else:
        was = f"was {edit.previous}"
    click.echo(f"{KEY} set to {spec} in {path} ({was})")


def _write(path: Path, text: str, *, mode: int | None) -> None:
    try:
        write_bytes_atomic(path, text.encode("utf-8"), mode=mode)
    except OSError as exc:
        raise ConfigError(
            f"cannot write {path}: {exc.strerror}; check the directory's permissions"
        ) from None


def _read_exact(path: Path) -> str:
    # Bytes, not read_text: text mode would turn CRLF into LF and change untouched lines.
    data = read_bytes(path, "config file", ConfigError, limit=SETTINGS_LIMIT)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: config file is not UTF-8 text ({exc.reason} at byte {exc.start}); "
            f"save it as UTF-8, then run set-judge again"
        ) from None
