"""The direct call path prices tokens from litellm's bundled table without importing it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from canon.judge.litellm_module import load_litellm
from canon.judge.usage import table_price


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "openai/gpt-4o", "gpt-4o-mini"])
def test_the_bundled_table_prices_like_litellm_itself(model):
    litellm = load_litellm()
    expected = sum(
        litellm.cost_per_token(
            model=model, prompt_tokens=400, completion_tokens=25, cache_read_input_tokens=300
        )
    )
    assert table_price(model, 400, 25, 300) == pytest.approx(expected)


def test_a_model_the_table_does_not_know_costs_unknown():
    assert table_price("openai/in-house-judge", 400, 25) is None


SCRIPT = """
import asyncio, sys
from canon.core.artifact import Artifact
from canon.judge.base import JudgeRequest
from canon.judge.litellm_judge import LiteLLMJudge
from canon.judge.usage import open_meter
from canon.project.store import constitution_from_file, load_rubric

constitution = constitution_from_file(sys.argv[1])
rubric = load_rubric()
question = rubric.questions_for(constitution)[0]

async def main():
    open_meter()
    answer = await LiteLLMJudge("openai/gpt-4o-mini").answer(
        JudgeRequest(question, Artifact("Refunded."), constitution, rubric.instructions)
    )
    print(answer.usage.calls, answer.usage.cost is not None, "litellm" in sys.modules)

asyncio.run(main())
"""


def test_an_answer_on_the_direct_path_is_priced_and_litellm_never_imported(fake_llm, tmp_path):
    from pathlib import Path

    constitution = Path(__file__).resolve().parents[2] / "examples" / "constitution.yaml"
    fake_llm.script("", "ANSWER: yes")
    env = {"OPENAI_BASE_URL": fake_llm.base_url, "OPENAI_API_KEY": "sk-test", "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(constitution)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "True", "False"]
