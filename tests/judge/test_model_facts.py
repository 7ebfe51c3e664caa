"""What litellm knows about a model is asked once per model, and costs stay right where it prices.

At width (thousands of questions to one model) every per-request lookup in litellm's tables
costs milliseconds of CPU; the judge asks each once per model and keeps the answer
(canon.judge.litellm_module.model_facts), and reads the cost litellm already put on the
response instead of pricing the completion a second time.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from canon.judge.litellm_judge import LiteLLMJudge
from canon.judge.litellm_module import load_litellm, model_facts
from canon.judge.usage import context_window, open_meter

PRICED = "openai/gpt-4o-mini"  # litellm's price table knows it
UNPRICED = "openai/fake-judge"


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count Canon's calls into litellm's model tables and its cost calculator.

    litellm calls some of these itself, per request; only calls made from Canon's own
    modules are counted.
    """
    litellm = load_litellm()
    model_facts.cache_clear()  # earlier tests may have asked already
    calls: Counter[str] = Counter()
    for name in ("get_model_info", "supports_response_schema", "completion_cost"):
        original = getattr(litellm, name)

        def counted(*args: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
            if sys._getframe(1).f_globals.get("__name__", "").startswith("canon."):
                calls[_name] += 1
            return _original(*args, **kw)

        monkeypatch.setattr(litellm, name, counted)
    yield calls
    model_facts.cache_clear()


def _judge(model: str, base_url: str) -> LiteLLMJudge:
    return LiteLLMJudge(model, api_base=base_url, api_key="sk-test", transport="litellm")


def _ask_all(judge: LiteLLMJudge, requests: list[Any]) -> list[Any]:
    async def run() -> list[Any]:
        async def one(request: Any) -> Any:
            open_meter()  # each question in its own task, as the runner asks them
            return await judge.answer(request)

        return list(await asyncio.gather(*(one(r) for r in requests)))

    return asyncio.run(run())


def test_model_lookups_are_made_once_per_model_not_per_request(
    fake_llm: Any,
    lookups: Counter[str],
    ask: Callable[..., Any],
    questions: dict[str, Any],
) -> None:
    fake_llm.script("", "ANSWER: yes")
    requests = [ask(q, f"Refund {i}.") for i in range(3) for q in questions.values()]
    for model in (PRICED, UNPRICED):
        # two judges of one model share what litellm said about it
        for judge in (_judge(model, fake_llm.base_url), _judge(model, fake_llm.base_url)):
            answers = _ask_all(judge, requests)
            assert len(answers) == len(requests)
    assert len(fake_llm.requests) == 4 * len(requests)
    assert lookups["get_model_info"] == 2  # one per model
    assert lookups["supports_response_schema"] == 2
    assert lookups["completion_cost"] == 0  # litellm priced each response on its way back


def test_a_priced_model_costs_what_litellm_charges_per_token(
    fake_llm: Any, ask: Callable[..., Any], questions: dict[str, Any]
) -> None:
    litellm = load_litellm()
    fake_llm.script("", "ANSWER: yes")
    [answer] = _ask_all(_judge(PRICED, fake_llm.base_url), [ask(questions["P1"])])
    usage = answer.usage
    assert usage.calls == 1 and usage.prompt_tokens == 10 and usage.completion_tokens == 3
    expected = sum(litellm.cost_per_token(model=PRICED, prompt_tokens=10, completion_tokens=3))
    assert expected > 0
    assert usage.cost == pytest.approx(expected)


def test_an_unpriced_model_has_an_unknown_cost_never_zero(
    fake_llm: Any, ask: Callable[..., Any], questions: dict[str, Any]
) -> None:
    fake_llm.script("", "ANSWER: yes")
    [answer] = _ask_all(_judge(UNPRICED, fake_llm.base_url), [ask(questions["P1"])])
    assert answer.usage.calls == 1 and answer.usage.cost is None


def test_the_context_window_is_litellms_input_limit_or_unknown() -> None:
    assert context_window(PRICED) == 128_000  # max_input_tokens, not the reply's max_tokens
    assert context_window(UNPRICED) is None
    facts = model_facts(PRICED)
    assert facts.provider == "openai" and facts.priced and facts.supports_schema
