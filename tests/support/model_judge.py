"""What the model-judge tests share: a project judged by the fake OpenAI server, and its script."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from support.cli import copy_example

MODEL_JUDGE = "judge_model: openai:fake-judge\nconstitution_path: constitution.yaml\n"
# every prompt lists the principles; only P2's own question quotes one after these words
P2_MATCH = 'principle of the constitution: "Hand any refund'
# litellm's price table knows this model, so runs under it have a cost
PRICED_JUDGE = "judge_model: openai:gpt-4o-mini\nconstitution_path: constitution.yaml\n"
BIG_REFUND = "artifacts:\n  - id: big-refund\n    text: I refunded your 640 EUR myself.\n"


def model_project(root: Path, config: str, files: dict[str, str] | None = None) -> Path:
    """A copy of the example project under ``root`` with this canon.yaml and these files."""
    project = copy_example(root)
    (project / "canon.yaml").write_text(config)
    for name, text in (files or {}).items():
        (project / name).write_text(text)
    return project


def model_env(base_url: str) -> dict[str, str]:
    """This process's environment with the OpenAI judge aimed at ``base_url``."""
    return {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-test"}


def script_p2_violation(fake_llm: Any, why: str) -> None:
    """Script text replies: no contradiction, no tradeoff, P2 violated for ``why``, else yes."""
    fake_llm.script("contradict any part", "No contradiction.\nANSWER: no")
    fake_llm.script("surface the tradeoff", "Nothing pulls apart.\nANSWER: n/a")
    fake_llm.script(P2_MATCH, f"{why}\nANSWER: no")
    fake_llm.script("", "ANSWER: yes")
