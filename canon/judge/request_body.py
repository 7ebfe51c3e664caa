"""The request a judge sends for one question: the OpenAI-style fields both transports share."""

from __future__ import annotations

import json
from typing import Any

from canon.core.prompt import ANSWER_TAG
from canon.core.rubric import Question
from canon.judge.answer_formats import answer_schema


def request_body(
    messages: list[dict[str, str]],
    question: Question,
    variant: int,
    temperature: float,
    *,
    max_tokens: int | None,
    constrain_answers: bool,
    structured: bool,
    logprobs: bool,
    reasons: bool = True,
) -> dict[str, Any]:
    """The request fields: messages and temperature, plus the answer format asked for."""
    body: dict[str, Any] = {"messages": messages, "temperature": temperature}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if constrain_answers:
        body["grammar"] = answer_grammar(question)
    if structured:
        body["response_format"] = answer_schema(question, variant, reasons=reasons)
    if logprobs:
        body["logprobs"] = True
        # Enough alternatives to see every offered label, as llama.cpp and OpenAI allow.
        body["top_logprobs"] = min(20, max(5, 2 * len(question.choices)))
    return body


def answer_grammar(question: Question) -> str:
    """A llama.cpp GBNF grammar whose only sentences are ``ANSWER: <one of the labels>``."""
    # A JSON string literal is also a valid GBNF one for any printable label (quotes and
    # backslashes escaped the same way), so json.dumps does the quoting.
    labels = " | ".join(json.dumps(choice.label, ensure_ascii=False) for choice in question.choices)
    return f'root ::= "{ANSWER_TAG}: " ({labels})'
