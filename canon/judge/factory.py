"""Turn a ``judge_model`` setting into a Judge."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from canon.errors import ConfigError
from canon.judge.base import Judge
from canon.judge.mock import MockJudge
from canon.store import read_yaml

MOCK_PREFIX = "mock:"


def judge_from_spec(spec: str, *, base_dir: Path) -> Judge:
    """Build the judge a ``judge_model`` string names.

    ``mock:<script.yaml>`` is a scripted MockJudge read from a YAML mapping of
    question-substring → choice (relative to ``base_dir``); it lets demos and CI run
    without a model.
    """
    if spec.startswith(MOCK_PREFIX):
        return mock_judge_from_file(base_dir / spec[len(MOCK_PREFIX) :].strip())
    provider, sep, model = spec.replace("/", ":", 1).partition(":")
    if not sep or not provider or not model:
        raise ConfigError(
            f"judge_model {spec!r} is not of the form provider:model (e.g. openai:gpt-4o) "
            "or mock:<script.yaml>"
        )
    raise ConfigError(
        f"judge_model {spec!r}: model-backed judges are not available in this version of "
        "Canon yet; use a mock:<script.yaml> judge, or pass a Judge object to CoherenceMetric"
    )


def mock_judge_from_file(path: Path) -> MockJudge:
    """A MockJudge whose script is a YAML mapping of question-substring → choice label."""
    script = read_yaml(path, "mock judge script", ConfigError)
    if not isinstance(script, Mapping) or not script:
        raise ConfigError(
            f"{path}: a mock judge script is a non-empty mapping of question text → choice"
        )
    for key, reply in script.items():
        if not isinstance(key, str) or not isinstance(reply, str | Mapping):
            raise ConfigError(
                f"{path}: entry {key!r} must map text to a choice label, got {reply!r}"
            )
    return MockJudge(script={str(k): v for k, v in script.items()}, name=f"mock:{path.name}")
