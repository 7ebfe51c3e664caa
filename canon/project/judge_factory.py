"""Turn a ``judge_model`` setting into a Judge."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from canon.errors import ConfigError, UsageError
from canon.judge.base import Judge
from canon.judge.mock import BY_ARTIFACT_KEY, MockJudge
from canon.project.store import read_yaml

MOCK_PREFIX = "mock:"
_PROVIDER = re.compile(r"[a-z0-9][a-z0-9_.-]*")


def judge_from_spec(
    spec: str,
    *,
    base_dir: Path,
    options: Mapping[str, Any] | None = None,
    setting: str = "judge_options",
) -> Judge:
    """Build the judge a ``judge_model`` string names.

    ``provider:model`` and ``provider:org/model`` (or litellm's own ``provider/model``)
    name a model judge, asked through litellm. ``mock:<script.yaml>`` is a scripted
    MockJudge read from a YAML mapping of question-substring → choice (relative to
    ``base_dir``); it lets demos and CI run without a model. ``options`` (the config's
    ``judge_options``, or the ``setting`` that holds them) go to the model judge: samples,
    temperature, timeout, ...
    """
    if spec.startswith(MOCK_PREFIX):
        if options:
            raise ConfigError(
                f"{setting} ({', '.join(sorted(options))}) apply to model judges only, "
                f"not to {spec!r}"
            )
        return mock_judge_from_file(base_dir / spec[len(MOCK_PREFIX) :].strip())
    wire = decision_wire(spec)
    if wire is not None:
        return decision_judge(wire, spec, options, setting)
    # Imported here so a mock-only run never loads the model judge's module.
    from canon.judge.litellm_judge import LiteLLMJudge

    try:
        return LiteLLMJudge(litellm_model(spec), **dict(options or {}))
    except UsageError as exc:
        raise ConfigError(f"{setting}: {exc}") from None


# judge_options a decision judge takes; the rest shape an LLM's text and mean nothing here.
DECISION_OPTIONS = frozenset({"timeout", "max_attempts", "api_base"})


def decision_wire(spec: str) -> str | None:
    """The decision wire a ``judge_model`` names (``typesafe:jev-1.13.0`` → ``typesafe``),
    or None for an LLM judge."""
    from canon.judge.decisions.wires import WIRES

    provider, colon, _ = spec.strip().partition(":")
    return provider if colon and provider in WIRES else None


def decision_judge(
    wire: str, spec: str, options: Mapping[str, Any] | None, setting: str = "judge_options"
) -> Judge:
    """The decision judge ``wire:model`` names, with the judge_options (or ``setting``) it
    takes."""
    from canon.judge.decisions.judge import DecisionJudge

    given = dict(options or {})
    # batch is read by the CLI, which refuses it for a decision judge (no batch wire)
    others = sorted(set(given) - DECISION_OPTIONS - {"batch"})
    if others:
        raise ConfigError(
            f"{setting} {', '.join(others)} apply to LLM judges only; a decision judge "
            f"({spec.strip()}) takes {', '.join(sorted(DECISION_OPTIONS))}"
        )
    model = spec.strip().partition(":")[2].strip()
    try:
        return DecisionJudge(
            wire,
            model,
            api_base=given.get("api_base"),
            timeout=float(given.get("timeout", 10.0)),
            max_attempts=int(given.get("max_attempts", 3)),
        )
    except UsageError as exc:
        raise ConfigError(f"judge_model {spec!r}: {exc}") from None


def litellm_model(spec: str) -> str:
    """Normalize ``provider:model`` / ``provider:org/model`` to litellm's ``provider/model``."""
    text = spec.strip()
    # The provider ends at the first ':' or '/', whichever comes first, so a model name may
    # itself hold either (``ollama:llama3:8b``, ``together:deepseek-ai/DeepSeek-V3``).
    cut = min((i for i in (text.find(":"), text.find("/")) if i >= 0), default=-1)
    provider, model = (text[:cut].lower(), text[cut + 1 :]) if cut >= 0 else ("", "")
    if (
        not _PROVIDER.fullmatch(provider)
        or not model
        or model.startswith(("/", ":"))
        or any(c.isspace() for c in model)
    ):
        raise ConfigError(
            f"judge_model {spec!r} is not of the form provider:model (e.g. openai:gpt-4o, "
            "together:deepseek-ai/DeepSeek-V3) or mock:<script.yaml>"
        )
    return f"{provider}/{model}"


def mock_judge_from_file(path: Path) -> MockJudge:
    """A MockJudge whose script is a YAML mapping of question-substring → reply (a label,
    ``{answer, reason}`` or ``{refusal}``), with answers keyed by artifact id under
    ``by_artifact``."""
    script = read_yaml(path, "mock judge script", ConfigError)
    if not isinstance(script, Mapping) or not script:
        raise ConfigError(
            f"{path}: a mock judge script is a non-empty mapping of question text → choice"
        )
    for key, reply in script.items():
        if key == BY_ARTIFACT_KEY:
            continue  # MockJudge checks its shape
        if not isinstance(key, str) or not isinstance(reply, str | Mapping):
            raise ConfigError(
                f"{path}: entry {key!r} must map text to a choice label, got {reply!r}"
            )
    try:
        return MockJudge(
            script={str(k): v for k, v in script.items()},
            name=f"mock:{path.name}",
            source=str(path),
        )
    except UsageError as exc:
        raise ConfigError(f"{path}: {exc}") from None
