"""Every answer is checked before it counts (unit tests of canon.judge.decisions.validate)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from canon.core.rubric import Choice, Question
from canon.core.scoring import Answer
from canon.errors import JudgeError, JudgeRefusedError
from canon.judge.decisions import openai_decisions, systemone
from canon.judge.decisions.asking import asked_questions
from canon.judge.decisions.validate import (
    AnswerProblem,
    ProblemKind,
    Unreadable,
    check_choice,
    envelope,
    parse_body,
)

QUESTION = Question(
    "M",
    "facet",
    "Does it serve the mission?",
    (Choice("yes", 1.0), Choice("partly", 0.5), Choice("no", 0.0), Choice("n/a", None)),
)
(ASKED,) = asked_questions((QUESTION,), {"artifact": "x"})
GOOD = [("yes", 0.7), ("partly", 0.2), ("no", 0.05), ("n/a", 0.05)]


def _check(pairs: list[tuple[Any, Any]], **fields: Any) -> Any:
    answer = {"type": "choice", "choice": "yes", "confidence": 0.6, **fields}
    return check_choice(ASKED, answer, pairs, 0.01)


def test_a_good_answer_is_its_distribution() -> None:
    outcome = _check(GOOD)
    assert isinstance(outcome, Answer)
    assert outcome.distribution == pytest.approx(dict(GOOD))


def test_a_rounded_sum_within_tolerance_counts_and_is_renormalised() -> None:
    pairs = [("yes", 0.7), ("partly", 0.2), ("no", 0.05), ("n/a", 0.04)]  # 0.99
    outcome = _check(pairs)
    assert isinstance(outcome, Answer)
    assert math.fsum(outcome.distribution.values()) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("pairs", "fields", "kind"),
    [
        (GOOD[:3], {}, ProblemKind.KEYS),  # an offered option left out
        ([*GOOD, ("maybe", 0.0)], {}, ProblemKind.KEYS),  # an option nobody offered
        ([("Yes", 0.7), *GOOD[1:]], {}, ProblemKind.KEYS),  # keys not byte for byte
        ([*GOOD, ("yes", 0.0)], {}, ProblemKind.KEYS),  # a key twice
        ([(True, 0.7), *GOOD[1:]], {}, ProblemKind.KEYS),  # a boolean value, not the label
        ([("yes", 1.2), *GOOD[1:]], {}, ProblemKind.PROBABILITY),
        ([("yes", -0.1), *GOOD[1:]], {}, ProblemKind.PROBABILITY),
        ([("yes", math.nan), *GOOD[1:]], {}, ProblemKind.PROBABILITY),
        ([("yes", "0.7"), *GOOD[1:]], {}, ProblemKind.PROBABILITY),
        ([("yes", True), *GOOD[1:]], {}, ProblemKind.PROBABILITY),
        ([("yes", 0.9), *GOOD[1:]], {}, ProblemKind.SUM),  # 1.2
        ([("yes", 0.6), *GOOD[1:]], {}, ProblemKind.SUM),  # 0.9
        (GOOD, {"choice": "no"}, ProblemKind.CHOICE),  # not the most probable
        (GOOD, {"choice": "never"}, ProblemKind.CHOICE),
        (GOOD, {"choice": None}, ProblemKind.CHOICE),
        (GOOD, {"confidence": 1.5}, ProblemKind.MALFORMED),
        (GOOD, {"type": "noul"}, ProblemKind.WRONG_TYPE),
    ],
)
def test_a_bad_answer_is_a_coded_problem_never_an_answer(
    pairs: list[tuple[Any, Any]], fields: dict[str, Any], kind: ProblemKind
) -> None:
    outcome = _check(pairs, **fields)
    assert isinstance(outcome, AnswerProblem)
    assert outcome.kind is kind


def test_a_missing_confidence_is_no_problem_canon_computes_its_own() -> None:
    answer = {"type": "choice", "choice": "yes"}
    assert isinstance(check_choice(ASKED, answer, GOOD, 0.01), Answer)


@pytest.mark.parametrize(
    "body",
    [b")]}'\n{}", b"<html></html>", b'{"x": NaN}', b"[1, 2]", b"\xff\xfe", b""],
)
def test_a_body_that_is_not_a_json_object_is_unreadable(body: bytes) -> None:
    with pytest.raises(Unreadable):
        parse_body(body)


@pytest.mark.parametrize(
    "data",
    [
        {"usage": {"input_tokens": 1}},  # no model
        {"model": "m"},  # no usage
        {"model": "m", "usage": {"input_tokens": 12.0}},  # tokens as a float
        {"model": "m", "usage": {"input_tokens": -1}},
        {"model": "m", "usage": {"input_tokens": 1, "output_tokens": True}},
    ],
)
def test_an_envelope_without_model_or_whole_token_counts_is_unreadable(
    data: dict[str, Any],
) -> None:
    with pytest.raises(Unreadable):
        envelope(data)


def test_a_problem_is_filed_as_a_per_question_judge_files_its_failure() -> None:
    refused = AnswerProblem(ProblemKind.REFUSED, "the server refused to answer 'G~w0'")
    error = refused.as_error("openai-decisions:gpt-6-luna")
    assert type(error) is JudgeRefusedError
    assert str(error) == (
        "judge openai-decisions:gpt-6-luna: the server refused to answer 'G~w0' (refused)"
    )
    unscored = AnswerProblem(ProblemKind.SUM, "the probabilities sum to 1.2, not 1")
    assert type(unscored.as_error("typesafe:jev-1.13.0")) is JudgeError


def _systemone_body(answers: str) -> bytes:
    return (
        '{"model": "jev-1.13.0", "usage": {"input_tokens": 9, "output_tokens": 0}, '
        f'"answers": {{{answers}}}}}'
    ).encode()


GOOD_JSON = (
    '{"type": "choice", "choice": "yes", '
    '"probabilities": {"yes": 0.7, "partly": 0.2, "no": 0.05, "n/a": 0.05}}'
)


def test_a_repeated_answer_id_in_a_system_one_body_is_extra_not_the_last_one() -> None:
    reply = systemone.read(
        parse_body(_systemone_body(f'"M~w0": {GOOD_JSON}, "M~w0": {GOOD_JSON}')), (ASKED,)
    )
    outcome = reply.outcomes[ASKED.id]
    assert isinstance(outcome, AnswerProblem) and outcome.kind is ProblemKind.EXTRA
    single = systemone.read(parse_body(_systemone_body(f'"M~w0": {GOOD_JSON}')), (ASKED,))
    assert isinstance(single.outcomes[ASKED.id], Answer)


def test_a_repeated_option_key_is_a_keys_problem() -> None:
    twice = GOOD_JSON.replace('"n/a": 0.05', '"n/a": 0.05, "yes": 0.0')
    reply = systemone.read(parse_body(_systemone_body(f'"M~w0": {twice}')), (ASKED,))
    outcome = reply.outcomes[ASKED.id]
    assert isinstance(outcome, AnswerProblem) and outcome.kind is ProblemKind.KEYS


@pytest.mark.parametrize(
    ("read", "answers"),
    [
        (systemone.read, None),
        (systemone.read, []),
        (openai_decisions.read, None),
        (openai_decisions.read, {}),
    ],
)
def test_a_reply_without_the_wires_answers_is_unreadable(read: Any, answers: Any) -> None:
    data = {"model": "m", "usage": {"input_tokens": 1, "output_tokens": 0}}
    if answers is not None:
        data["answers"] = answers
    with pytest.raises(Unreadable, match="answers"):
        read(data, (ASKED,))
