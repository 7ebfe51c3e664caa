from __future__ import annotations

from pathlib import Path

import pytest

from canon.errors import ConfigError
from canon.judge.litellm_judge import LiteLLMJudge
from canon.judge.mock import MockJudge
from canon.project.judge_factory import judge_from_spec, litellm_model

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("spec", "model"),
    [
        ("openai:gpt-4o", "openai/gpt-4o"),
        (
            "together:deepseek-ai/DeepSeek-V4-Flash-0731",
            "together/deepseek-ai/DeepSeek-V4-Flash-0731",
        ),
        ("openai/gpt-4o", "openai/gpt-4o"),
        ("ollama:llama3:8b", "ollama/llama3:8b"),
        ("bedrock/anthropic.claude-v2:1", "bedrock/anthropic.claude-v2:1"),
        ("  OpenAI:gpt-4o ", "openai/gpt-4o"),
    ],
)
def test_provider_model_specs_normalize_to_litellm_form(spec, model):
    assert litellm_model(spec) == model


@pytest.mark.parametrize(
    "spec",
    ["gpt-4o", "openai:", ":gpt-4o", "openai:/gpt-4o", "openai:gpt 4o", "open ai:gpt-4o", ""],
)
def test_malformed_specs_are_config_errors_with_an_example(spec):
    with pytest.raises(ConfigError, match=r"not of the form provider:model \(e\.g\. openai:gpt-4o"):
        litellm_model(spec)


def test_a_provider_spec_builds_a_litellm_judge_named_by_its_model():
    judge = judge_from_spec("together:deepseek-ai/DeepSeek-V3", base_dir=Path("."))
    assert isinstance(judge, LiteLLMJudge)
    assert judge.name == "together/deepseek-ai/DeepSeek-V3"


def test_a_mock_spec_still_builds_a_mock_judge():
    judge = judge_from_spec("mock:judge-script.yaml", base_dir=EXAMPLES)
    assert isinstance(judge, MockJudge)
    assert judge.name == "mock:judge-script.yaml"


def test_judge_options_reach_the_model_judge():
    options = {"samples": 3, "temperature": 0.7, "constrain_answers": True, "max_attempts": 2}
    judge = judge_from_spec("openai:gpt-4o", base_dir=EXAMPLES, options=options)
    assert isinstance(judge, LiteLLMJudge)
    assert (judge.samples, judge.temperature, judge.max_attempts) == (3, 0.7, 2)
    assert judge.constrain_answers is True


def test_judge_options_out_of_range_are_config_errors():
    with pytest.raises(ConfigError, match=r"judge_options: .*samples"):
        judge_from_spec("openai:gpt-4o", base_dir=EXAMPLES, options={"samples": 0})


def test_logprobs_default_to_auto_and_take_only_true_false_or_auto():
    assert judge_from_spec("openai:gpt-4o", base_dir=EXAMPLES).logprobs == "auto"
    for value in (True, False, "auto"):
        options = {"logprobs": value}
        assert (
            judge_from_spec("openai:gpt-4o", base_dir=EXAMPLES, options=options).logprobs == value
        )
    for value in ("maybe", 1, "yes", None):
        with pytest.raises(ConfigError, match="logprobs must be true, false or auto"):
            judge_from_spec("openai:gpt-4o", base_dir=EXAMPLES, options={"logprobs": value})


def test_samples_default_to_auto_three_answers_an_ask_only_for_a_judge_reading_labels():
    def judge(model: str, **options: object) -> LiteLLMJudge:
        made = judge_from_spec(model, base_dir=EXAMPLES, options=options)
        assert isinstance(made, LiteLLMJudge)
        return made

    endpoint = {"api_base": "http://127.0.0.1:9/v1"}
    assert judge("openai:gpt-4o", **endpoint).sampling == "auto"
    assert judge("openai:gpt-4o", **endpoint).samples == 1  # it gives log-probabilities
    assert judge("openai:gpt-4o", logprobs=False, **endpoint).samples == 3
    assert judge("openai:gpt-4o", logprobs=False, samples="auto", **endpoint).samples == 3
    assert judge("openai:gpt-4o", logprobs=False, samples=1, **endpoint).samples == 1
    # a judge whose re-asks replay the first answer: more answers would be the same answer
    still = judge("openai:gpt-4o", logprobs=False, reask_temperature=0.0, **endpoint)
    assert still.samples == 1
    # litellm's tables: Mistral's API gives no log-probabilities and takes no n
    mistral = judge("mistral:mistral-small-latest")
    assert (mistral.samples, mistral.takes_n) == (3, False)
    for value in ("three", "Auto", 0, 1.5, None):
        with pytest.raises(ConfigError, match=r"samples"):
            judge_from_spec("openai:gpt-4o", base_dir=EXAMPLES, options={"samples": value})


def test_judge_options_on_a_scripted_judge_are_refused():
    with pytest.raises(ConfigError, match="apply to model judges only"):
        judge_from_spec("mock:judge-script.yaml", base_dir=EXAMPLES, options={"samples": 2})
