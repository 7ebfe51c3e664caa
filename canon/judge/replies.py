"""Reading a judge's replies: the texts (and tokens) a completion holds, and the answer they give.

A reply that names no offered choice is unreadable; an answer is the mean of its readable
samples' distributions, and a question with none is a failure a retry may fix. A question
whose replies are all unreadable and at least one is a refusal (the endpoint's ``refusal``
field, a ``content_filter`` stop, or a reply that opens by declining) is refused instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from canon.core.prompt import parse_reply
from canon.core.rubric import Question
from canon.core.scoring import Answer
from canon.errors import JudgeError
from canon.judge.answer_formats import (
    Token,
    logprob_distribution,
    looks_structured,
    read_structured,
    tokens_from,
)
from canon.judge.failures import Failure

RATIONALE_LIMIT = 1000


@dataclass(frozen=True, slots=True)
class Reply:
    """One sampled reply: its text and, with logprobs on, its tokens."""

    text: str
    tokens: tuple[Token, ...] = ()
    refusal: str | None = None  # why the model declined to judge, when it did


# A reply that opens by declining (and names no choice) is a refusal, not a misformat.
_DECLINES = re.compile(
    r"\s*(?:i[’']?m sorry|i am sorry|sorry|unfortunately)?[,.!]?\s*(?:but\s+)?"
    r"i\s*(?:can(?:[’']|no)?t|can not|won[’']?t|will not|am unable to|[’']m unable to|"
    r"am not able to|[’']m not able to|must decline to|must refuse to)\s+"
    r"(?:help|assist|comply|provide|do that|engage|evaluate|judge|answer|review|continue)",
    re.IGNORECASE,
)


def _refusal(message: Any, finish_reason: Any) -> str | None:
    """Why a choice is a refusal: the ``refusal`` field, or the provider's content filter."""
    refusal = message.get("refusal") if isinstance(message, dict) else None
    if refusal is None and message is not None and not isinstance(message, dict):
        refusal = getattr(message, "refusal", None)
    if isinstance(refusal, str) and refusal.strip():
        return " ".join(refusal.split())[:RATIONALE_LIMIT]
    if finish_reason == "content_filter":
        return "the provider's content filter stopped the reply"
    return None


@dataclass(frozen=True, slots=True)
class Completion:
    """The replies of one request and its ``usage`` (token counts) as the endpoint sent it."""

    replies: list[Reply]
    usage: dict[str, Any] | None = None


def completion_from_json(data: dict[str, Any]) -> Completion:
    """Replies from an OpenAI-style JSON completion (the direct transport's)."""
    replies = []
    for choice in data["choices"]:
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
        finish = choice.get("finish_reason") if isinstance(choice, dict) else None
        replies.append(
            Reply(
                content if isinstance(content, str) else "",
                tuple(tokens_from(logprobs)),
                _refusal(message, finish),
            )
        )
    usage = data.get("usage")
    return Completion(replies, usage if isinstance(usage, dict) else None)


def completion_from_litellm(response: Any) -> Completion:
    """Replies from litellm's response object."""
    replies = []
    for choice in response.choices:
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None)
        logprobs = getattr(choice, "logprobs", None)
        replies.append(
            Reply(
                content if isinstance(content, str) else "",
                tuple(tokens_from(logprobs)),
                _refusal(message, getattr(choice, "finish_reason", None)),
            )
        )
    usage = getattr(response, "usage", None)
    dump = getattr(usage, "model_dump", None)
    as_dict = dump() if callable(dump) else usage
    return Completion(replies, as_dict if isinstance(as_dict, dict) else None)


def tally(
    question: Question, replies: list[Reply], *, samples: int, structured: bool, logprobs: bool
) -> Answer | Failure:
    """Turn replies into an answer (mean of per-sample distributions), or the failure."""
    shares: list[dict[str, float]] = []
    reasons: list[str | None] = []
    problem = ""
    refusal: str | None = None
    for reply in replies:
        if reply.refusal is not None:
            refusal = refusal or reply.refusal
            continue
        try:
            share, reason = read_reply(question, reply, structured=structured, logprobs=logprobs)
        except JudgeError as exc:
            problem = str(exc)
            if refusal is None and _DECLINES.match(reply.text):
                refusal = " ".join(reply.text.split())[:RATIONALE_LIMIT]
            continue
        shares.append(share)
        reasons.append(reason)
    if not shares and refusal is not None:
        return Failure("refused", f"question {question.id}: the judge refused to judge: {refusal}")
    if not shares:
        return Failure("unparseable", problem or f"question {question.id}: no reply")
    total: dict[str, float] = {}
    for share in shares:
        for label, mass in share.items():
            total[label] = total.get(label, 0.0) + mass / len(shares)
    distribution = {label: total[label] for label in sorted(total)}
    first = reasons[0]
    rationale = first[:RATIONALE_LIMIT] if first and len(shares) == len(replies) else None
    if len(shares) < samples:
        rationale = f"{samples - len(shares)} of {samples} samples were unreadable and ignored"
    return Answer(distribution=distribution, rationale=rationale)


def read_reply(
    question: Question, reply: Reply, *, structured: bool, logprobs: bool
) -> tuple[dict[str, float], str | None]:
    """One reply's distribution (its label, or the labels' probabilities with logprobs) and
    its reason: a JSON reply's ``reason``, or a text reply's whole text."""
    as_json = structured and looks_structured(reply.text)
    if as_json:
        found = read_structured(question, reply.text)
        if found is None:
            raise JudgeError(
                f"question {question.id}: the judge's JSON reply names none of "
                f"{', '.join(c.label for c in question.choices)}; got "
                f"{' '.join(reply.text.split())[:160]!r}"
            )
        choice, reason = found
    else:
        choice, reason = parse_reply(question, reply.text), reply.text.strip() or None
    if logprobs and reply.tokens:
        spread = logprob_distribution(question, reply.tokens, choice, as_json)
        if spread is not None:
            return spread, reason
    return {choice.label: 1.0}, reason
