"""OpenAI's Decisions wire: body and response.

``POST {OPENAI_BASE_URL}/decisions`` (the root includes ``/v1``, as for every OpenAI
endpoint) with ``{model, input, questions: [choice]}``: the input is text, so the state goes
as its compact JSON (the questions' backticked names still point into it). Each question carries its
wire id as ``name``, which the response echoes; answers are a list, probabilities a list of
``{value, probability}``, and any question may come back as ``{"type": "refusal"}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from canon.judge.decisions.asking import AskedQuestion, compact
from canon.judge.decisions.validate import (
    AnswerProblem,
    Outcome,
    ProblemKind,
    Unreadable,
    WireReply,
    check_choice,
    envelope,
    match_answers,
)

ROUNDING = 0.01


def build(model: str, state: Mapping[str, Any], asked: Sequence[AskedQuestion]) -> dict[str, Any]:
    """The request body: the state as JSON text, every asked question a named choice."""
    return {
        "model": model,
        "input": "STATE (JSON)\n" + compact(state),
        "questions": [
            {
                "type": "choice",
                "name": item.id,
                "instructions": item.instructions,
                "choices": [
                    {"value": c.label, "description": c.meaning}
                    if c.meaning
                    else {"value": c.label}
                    for c in item.options
                ],
            }
            for item in asked
        ],
    }


def billed(body: Mapping[str, Any]) -> list[Any]:
    """What of ``body`` the model reads, as far as is known: the input text and each
    question, its ``name`` included (nothing documents that the model never sees it)."""
    return [body["input"], *body["questions"]]


def read(data: Mapping[str, Any], asked: Sequence[AskedQuestion]) -> WireReply:
    """The response, checked: per asked id an answer or a problem."""
    model, input_tokens, output_tokens = envelope(data)
    answers = data.get("answers")
    if not isinstance(answers, list):
        raise Unreadable("the response has no 'answers' list")
    ids = {item.id for item in asked}
    found: dict[str, list[object]] = {}
    strays: list[str] = []
    for answer in answers:
        name = answer.get("name") if isinstance(answer, Mapping) else None
        if isinstance(name, str) and name in ids:
            found.setdefault(name, []).append(answer)
        else:
            strays.append(repr(name))
    outcomes = match_answers(asked, found, strays, _outcome)
    return WireReply(model, outcomes, input_tokens, output_tokens)


def _outcome(item: AskedQuestion, answer: object) -> Outcome:
    assert isinstance(answer, Mapping)  # only mappings carry a name
    if answer.get("type") == "refusal":
        return AnswerProblem(ProblemKind.REFUSED, f"the server refused to answer {item.id!r}")
    probabilities = answer.get("probabilities")
    pairs: list[tuple[object, object]] = []
    if answer.get("type") == "choice":
        if not isinstance(probabilities, list) or not all(
            isinstance(p, Mapping) and set(p) >= {"value", "probability"} for p in probabilities
        ):
            return AnswerProblem(
                ProblemKind.MALFORMED, "'probabilities' is not a list of {value, probability}"
            )
        pairs = [(p["value"], p["probability"]) for p in probabilities]
    return check_choice(item, answer, pairs, ROUNDING)
