"""Reading a judge's reply: a JSON answer under a schema, and the labels' log-probabilities.

With structured output the endpoint is asked for a JSON object whose ``answer`` is one of
the offered labels (an enum), so the reply is read by a JSON parser rather than by
searching text the artifact might have forged. Unless reasons are turned off, the object
holds a short ``reason`` first: a model that writes its reason before its answer weighs the
artifact before committing, and the reports quote it. With logprobs on, the answer's
confidence is the probability the model gave each offered label at the position where the
label begins, renormalised over the offered labels.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from canon.core.prompt import choice_order
from canon.core.rubric import Choice, Question

# (token text, its log-probability, the top alternatives at that position as (text, logprob))
Token = tuple[str, float, tuple[tuple[str, float], ...]]


# The longest reason the schema allows: a sentence or two, so reasons cost a bounded number
# of completion tokens (docs/judge.md has the measured cost).
REASON_MAX_LENGTH = 200


def answer_schema(question: Question, variant: int = 0, *, reasons: bool = True) -> dict[str, Any]:
    """An OpenAI ``response_format`` whose only valid replies name one offered label.

    With ``reasons`` the object has a bounded ``reason`` string first (property order is
    generation order for constrained decoders), then the ``answer``.
    """
    labels = [choice.label for choice in choice_order(question, variant)]
    properties: dict[str, Any] = {}
    if reasons:
        properties["reason"] = {
            "type": "string",
            "description": "One or two sentences weighing the artifact against the question.",
            "maxLength": REASON_MAX_LENGTH,
        }
    properties["answer"] = {"type": "string", "enum": labels}
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "canon_answer",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": properties,
                "required": list(properties),
                "additionalProperties": False,
            },
        },
    }


def looks_structured(reply: str) -> bool:
    """Whether a reply is meant as a JSON object (and so must parse as one)."""
    return reply.lstrip().startswith("{")


def read_structured(question: Question, reply: str) -> tuple[Choice, str | None] | None:
    """The choice a JSON reply's ``answer`` names and its ``reason`` (None if it gave none),
    or None when the reply names no offered choice."""
    try:
        data = json.loads(reply)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    value = data.get("answer")
    choice = question.choice(value) if isinstance(value, str) else None
    if choice is None:
        return None
    reason = data.get("reason")
    return choice, reason.strip() if isinstance(reason, str) and reason.strip() else None


def logprob_distribution(
    question: Question, tokens: Sequence[Token], choice: Choice, structured: bool
) -> dict[str, float] | None:
    """The offered labels' probabilities at the token where the answer begins, or None.

    The answer is found in the tokens' own text (a server may trim the content it returns,
    e.g. a code fence around JSON): after the ``"answer"`` key in a JSON reply, else the
    label's last occurrence. Each alternative token counts for the label it spells or
    uniquely begins (``"ye"`` for ``yes``, in any case); a token that could begin two labels
    counts for neither. None when the answer is not found or no alternative names a label.
    """
    joined = "".join(text for text, _, _ in tokens).lower()
    label = choice.label.lower()
    if structured:
        key = joined.rfind('"answer"')
        offset = joined.find(label, key) if key >= 0 else -1
    else:
        offset = joined.rfind(label)
    if offset < 0:
        return None
    position = 0
    for text, logprob, alternatives in tokens:
        end = position + len(text)
        if position <= offset < end:
            lead = text[: offset - position]  # e.g. the space or quote before the label
            mass: dict[str, float] = {}
            seen: set[str] = set()
            for alt_text, alt_logprob in ((text, logprob), *alternatives):
                if alt_text in seen:
                    continue
                seen.add(alt_text)
                found = _label_for(question, alt_text, lead)
                if found is not None and math.isfinite(alt_logprob):
                    mass[found] = mass.get(found, 0.0) + math.exp(alt_logprob)
            total = sum(mass.values())
            if total <= 0.0:
                return None
            return {name: p / total for name, p in sorted(mass.items())}
        position = end
    return None


def _label_for(question: Question, token: str, lead: str) -> str | None:
    piece = token[len(lead) :] if lead and token.startswith(lead) else token.lstrip(" \"'*")
    piece = piece.strip().lower()
    if not piece:
        return None
    exact = [c.label for c in question.choices if c.label.lower() == piece]
    if exact:
        return exact[0]
    starts = [c.label for c in question.choices if c.label.lower().startswith(piece)]
    return starts[0] if len(starts) == 1 else None


def tokens_from(logprobs: Any) -> list[Token]:
    """Tokens from an OpenAI-style ``choice.logprobs`` (a dict or litellm's objects)."""
    content = _get(logprobs, "content")
    tokens: list[Token] = []
    for entry in content if isinstance(content, list) else []:
        text, value = _get(entry, "token"), _get(entry, "logprob")
        if not isinstance(text, str) or not isinstance(value, int | float):
            return []
        top = _get(entry, "top_logprobs")
        alternatives = tuple(
            (alt_text, float(alt_value))
            for alt in (top if isinstance(top, list) else [])
            if isinstance(alt_text := _get(alt, "token"), str)
            and isinstance(alt_value := _get(alt, "logprob"), int | float)
        )
        tokens.append((text, float(value), alternatives))
    return tokens


def _get(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)
