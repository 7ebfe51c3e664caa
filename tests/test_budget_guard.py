"""The max_cost guard counts a request's prompt tokens once, however often it is sent again."""

from __future__ import annotations

from typing import Any

import pytest

import canon.check.spend as spend
from canon.check.spend import BudgetJudge, Ledger, completion_guess
from canon.core.usage import Usage
from canon.errors import BudgetExceededError
from canon.judge.litellm_judge import LiteLLMJudge
from canon.judge.litellm_module import load_litellm
from canon.judge.usage import price_of

MODEL = "openai/gpt-4o-mini"  # in litellm's price table


def _messages(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You judge replies."}, {"role": "user", "content": text}]


@pytest.fixture
def tokenizer_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every message text litellm's tokenizer is run on, in order."""
    litellm = load_litellm()
    real = litellm.token_counter
    runs: list[str] = []

    def counting(*, model: str, messages: list[dict[str, str]]) -> Any:
        runs.append(messages[-1]["content"])
        return real(model=model, messages=messages)

    monkeypatch.setattr(litellm, "token_counter", counting)
    return runs


def _guard(max_cost: float = 1e9) -> BudgetJudge:
    return BudgetJudge(
        LiteLLMJudge(MODEL, api_key="sk-test-not-a-real-key"), Ledger(max_cost, "c.yaml")
    )


def test_a_retried_request_is_tokenized_once_and_reserves_the_same_guess(tokenizer_runs):
    guard = _guard()
    messages = _messages("I refunded the duplicate charge.")
    first = guard.reserve(MODEL, messages, 1)
    guard.book(first, None)  # no reply came: retried
    again = guard.reserve(MODEL, [dict(m) for m in messages], 1)  # equal messages, new objects
    assert again == first
    assert tokenizer_runs == ["I refunded the duplicate charge."]
    litellm = load_litellm()
    prompt = int(litellm.token_counter(model=MODEL, messages=messages))
    assert first == price_of(litellm, MODEL, prompt, completion_guess(guard.inner))


def test_requests_that_differ_in_text_or_model_are_each_counted(tokenizer_runs):
    guard = _guard()
    short, long = _messages("Yes."), _messages("A much longer reply about the refund. " * 20)
    assert guard.reserve(MODEL, short, 1) < guard.reserve(MODEL, long, 1)
    guard.reserve("openai/gpt-4o", short, 1)
    assert len(tokenizer_runs) == 3


def test_the_kept_counts_are_bounded_and_the_oldest_is_counted_again(tokenizer_runs, monkeypatch):
    monkeypatch.setattr(spend, "PROMPT_COUNTS_KEPT", 2)
    guard = _guard()
    for text in ("one", "two", "one", "three", "two"):
        guard.reserve(MODEL, _messages(text), 1)
    # "one" was used again before "three" came, so "two" was the one dropped
    assert tokenizer_runs == ["one", "two", "three", "two"]


def test_a_cached_count_still_stops_the_run_before_the_budget_is_crossed(tokenizer_runs):
    messages = _messages("I refunded the duplicate charge.")
    probe = _guard()
    one_request = probe.reserve(MODEL, messages, 1)
    guard = _guard(max_cost=one_request * 1.5)
    reserved = guard.reserve(MODEL, messages, 1)
    guard.book(reserved, Usage(calls=1, prompt_tokens=1, cost=reserved))
    with pytest.raises(BudgetExceededError, match="stopped before crossing max_cost"):
        guard.reserve(MODEL, messages, 1)
