"""``samples: auto`` in what a run is estimated to cost: a judge read from labels alone asks
three answers an ask, in one request where the provider takes ``n`` and in three where it
does not (each then pays for the prompt again)."""

from __future__ import annotations

from pathlib import Path

import pytest

from canon.check.runner import ScoringPlan
from canon.check.spend import estimate_run
from canon.judge.litellm_judge import LiteLLMJudge
from canon.project.store import constitution_from_file, load_rubric
from canon.project.suite import read_suite

EXAMPLE = Path(__file__).resolve().parents[2] / "examples"


def _estimate(judge: LiteLLMJudge):  # type: ignore[no-untyped-def]
    plan = ScoringPlan(
        constitution_from_file(EXAMPLE / "constitution.yaml"), load_rubric(), judge, 0.85
    )
    return estimate_run(plan, read_suite(EXAMPLE / "suite.yaml"))


@pytest.mark.filterwarnings("ignore::UserWarning")  # pydantic, on litellm's mistral types
def test_a_judge_without_n_pays_the_prompt_of_every_sample():
    one = _estimate(LiteLLMJudge("mistral/mistral-small-latest", samples=1))
    auto = _estimate(LiteLLMJudge("mistral/mistral-small-latest"))
    assert auto.calls == one.calls  # asks: an ask's further samples are not asks
    assert auto.prompt_tokens == 3 * one.prompt_tokens
    assert auto.completion_tokens == 3 * one.completion_tokens
    assert auto.cost is not None and one.cost is not None
    assert auto.cost == pytest.approx(3 * one.cost)


def test_a_judge_taking_n_pays_the_prompt_once_and_every_answer():
    base = "http://127.0.0.1:9/v1"
    probabilities = _estimate(LiteLLMJudge("openai/gpt-4o-mini", api_base=base, api_key="k"))
    labels = _estimate(
        LiteLLMJudge("openai/gpt-4o-mini", api_base=base, api_key="k", logprobs=False)
    )
    assert labels.prompt_tokens == probabilities.prompt_tokens
    assert labels.completion_tokens == 3 * probabilities.completion_tokens
