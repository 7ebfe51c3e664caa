"""The System One wire (TypeSafe's Jev and compatible servers): body and response.

``POST {TYPESAFE_BASE_URL}/v1/systemone`` with ``{model, state, questions: {id: choice}}``;
the response is ``{model, answers: {id: answer}, usage}`` with each choice's probabilities
keyed by the option names exactly as sent. Hosted values are rounded to two decimals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from canon.judge.decisions.asking import AskedQuestion
from canon.judge.decisions.validate import (
    AnswerProblem,
    Outcome,
    ProblemKind,
    Unreadable,
    WireReply,
    check_choice,
    envelope,
    match_answers,
    repeated,
)

ROUNDING = 0.01


def build(model: str, state: Mapping[str, Any], asked: Sequence[AskedQuestion]) -> dict[str, Any]:
    """The request body: every asked question a choice keyed by its wire id."""
    return {
        "model": model,
        "state": dict(state),
        "questions": {
            item.id: {
                "type": "choice",
                "instructions": item.instructions,
                # null: the option is judged by its name alone (the wire's own convention)
                "criteria": {c.label: c.meaning or None for c in item.options},
            }
            for item in asked
        },
    }


def billed(body: Mapping[str, Any]) -> list[Any]:
    """What of ``body`` the model reads, so the server bills: the state and each question
    (the ids are never shown to the model, the wire's documentation says)."""
    return [body["state"], *body["questions"].values()]


def read(data: Mapping[str, Any], asked: Sequence[AskedQuestion]) -> WireReply:
    """The response, checked: per asked id an answer or a problem."""
    model, input_tokens, output_tokens = envelope(data)
    answers = data.get("answers")
    if not isinstance(answers, Mapping):
        raise Unreadable("the response has no 'answers' object")
    ids = {item.id for item in asked}
    twice = repeated(answers)
    found = {key: [value] * (2 if key in twice else 1) for key, value in answers.items()}
    strays = [key for key in answers if key not in ids]
    outcomes = match_answers(asked, found, strays, _outcome)
    return WireReply(model, outcomes, input_tokens, output_tokens)


def _outcome(item: AskedQuestion, answer: object) -> Outcome:
    if not isinstance(answer, Mapping):
        return AnswerProblem(ProblemKind.MALFORMED, f"the answer is {answer!r}, not an object")
    probabilities = answer.get("probabilities")
    if answer.get("type") == "choice" and not isinstance(probabilities, Mapping):
        return AnswerProblem(ProblemKind.MALFORMED, "the answer has no 'probabilities' object")
    if repeated(probabilities):
        return AnswerProblem(
            ProblemKind.KEYS, f"probabilities repeat {sorted(repeated(probabilities))!r}"
        )
    pairs = list(probabilities.items()) if isinstance(probabilities, Mapping) else []
    return check_choice(item, answer, pairs, ROUNDING)
