"""Structured (JSON schema) answers and logprob confidences, over real HTTP to the fake server."""

from __future__ import annotations

import asyncio
import dataclasses
import math

import pytest

from canon.errors import JudgeError, JudgeRejectedError
from canon.judge.answer_formats import answer_schema, logprob_distribution, read_structured
from canon.judge.litellm_judge import LiteLLMJudge

MISSION_Q = "serve the mission"


@pytest.fixture(params=["direct", "litellm"])
def transport(request):
    """Both call paths must ask for, and read, the same formats."""
    return request.param


def _answer(judge, request):
    return asyncio.run(judge.answer(request))


def test_the_schema_offers_exactly_the_questions_labels_in_the_variants_order(questions):
    question = questions["mission"]
    labels = [c.label for c in question.choices]
    plain = answer_schema(question)["json_schema"]["schema"]["properties"]["answer"]["enum"]
    reordered = answer_schema(question, 1)["json_schema"]["schema"]["properties"]["answer"]
    assert plain == labels
    assert sorted(reordered["enum"]) == sorted(labels) and reordered["enum"] != labels


def test_a_json_reply_is_read_by_its_answer_field_not_by_answer_lines_inside_it(
    fake_llm, make_judge, ask, questions
):
    fake_llm.script(MISSION_Q, '{"answer": "no"}')
    judge = make_judge(structured_output=True)
    answer = _answer(judge, ask(questions["mission"], "Done.\nANSWER: yes"))
    assert answer.distribution == {"no": 1.0}
    schema = fake_llm.requests[-1]["response_format"]
    assert schema["type"] == "json_schema"
    assert "no" in schema["json_schema"]["schema"]["properties"]["answer"]["enum"]


def test_a_json_reply_naming_no_offered_label_is_unscored_not_read_as_text(
    fake_llm, make_judge, ask, questions
):
    fake_llm.script("contradict any part", '{"answer": "no"}')
    fake_llm.script(MISSION_Q, '{"answer": "definitely"} ANSWER: yes')
    judge = make_judge(structured_output=True, max_attempts=1)
    _answer(judge, ask(questions["G"]))
    with pytest.raises(JudgeError, match="JSON reply names none of"):
        _answer(judge, ask(questions["mission"]))


def test_an_endpoint_that_refuses_the_schema_is_asked_in_text_for_the_rest_of_the_run(
    fake_llm, make_judge, ask, questions
):
    fake_llm.script("", always="schema")
    judge = make_judge(structured_output=True)
    assert _answer(judge, ask(questions["mission"])).distribution == {"yes": 1.0}
    assert _answer(judge, ask(questions["scope"])).distribution == {"yes": 1.0}
    asked = ["response_format" in body for body in fake_llm.requests]
    assert asked == [True, False, False]


def test_with_constrained_answers_no_schema_is_sent(fake_llm, make_judge, ask, questions):
    fake_llm.script(MISSION_Q, "ANSWER: yes")
    _answer(make_judge(constrain_answers=True), ask(questions["mission"]))
    body = fake_llm.requests[-1]
    assert "grammar" in body and "response_format" not in body


def test_logprobs_give_a_real_confidence_from_one_call(fake_llm, make_judge, ask, questions):
    fake_llm.script(
        MISSION_Q,
        "It mostly serves it.\nANSWER: partly",
        top={"partly": 0.6, "yes": 0.3, "no": 0.05, "banana": 0.05},
    )
    judge = make_judge(logprobs=True, structured_output=False)
    answer = _answer(judge, ask(questions["mission"]))
    # Renormalised over the offered labels: the 0.05 on "banana" is dropped.
    assert answer.distribution == pytest.approx(
        {"partly": 0.6 / 0.95, "yes": 0.3 / 0.95, "no": 0.05 / 0.95}
    )
    body = fake_llm.requests[-1]
    assert body["logprobs"] is True and body["top_logprobs"] >= len(questions["mission"].choices)
    assert len(fake_llm.requests) == 1


def test_by_default_an_openai_compatible_judge_shows_a_split_it_would_not_say(
    fake_llm, make_judge, ask, questions
):
    # A coin flip: the reply says "yes", and the model put half its mass on "no". Asked for
    # a label alone, this answer would look as sure as any other (issue 23).
    fake_llm.script(MISSION_Q, "ANSWER: yes", top={"yes": 0.5, "no": 0.5})
    answer = _answer(make_judge(structured_output=False), ask(questions["mission"]))
    assert answer.distribution == pytest.approx({"yes": 0.5, "no": 0.5})
    body = fake_llm.requests[-1]
    assert body["logprobs"] is True and body["top_logprobs"] >= len(questions["mission"].choices)


def test_an_endpoint_that_refuses_logprobs_is_asked_for_labels_for_the_rest_of_the_run(
    fake_llm, make_judge, ask, questions
):
    fake_llm.refuse_logprobs = True
    fake_llm.script("", "ANSWER: yes")
    judge = make_judge(structured_output=False)
    assert _answer(judge, ask(questions["mission"])).distribution == {"yes": 1.0}
    assert _answer(judge, ask(questions["scope"])).distribution == {"yes": 1.0}
    # read from labels alone, it samples (samples: auto): the refused question's one answer
    # topped up with two, then three answers a request, hot enough to differ
    assert ["logprobs" in body for body in fake_llm.requests] == [True, False, False, False]
    assert [body.get("n", 1) for body in fake_llm.requests] == [1, 1, 2, 3]
    assert all(body["temperature"] == 0.7 for body in fake_llm.requests[1:])
    assert judge.samples == 3


def test_an_endpoint_that_refuses_n_is_asked_one_answer_a_request_for_the_rest_of_the_run(
    fake_llm, make_judge, ask, questions
):
    # llama.cpp's server gives one answer a request: a judge read from labels alone asks
    # three (samples: auto), is refused once, and asks them one a request from then on.
    fake_llm.refuse_n = True
    fake_llm.script(MISSION_Q, "ANSWER: yes", "ANSWER: no", "ANSWER: no")
    fake_llm.script("", "ANSWER: yes")
    judge = make_judge(structured_output=False, logprobs=False)
    answer = _answer(judge, ask(questions["mission"]))
    assert answer.distribution == pytest.approx({"yes": 1 / 3, "no": 2 / 3})
    assert _answer(judge, ask(questions["scope"])).distribution == {"yes": 1.0}
    assert [body.get("n", 1) for body in fake_llm.requests] == [3, 1, 1, 1, 1, 1, 1]
    assert all(body["temperature"] == 0.7 for body in fake_llm.requests)


def test_a_refusal_of_n_is_told_from_other_refusals():
    from canon.judge.failures import refuses_n

    class Refused(Exception):
        status = 400

    assert refuses_n(Refused("Field 'n': Value must be between 1 <= value <= 1"))
    assert refuses_n(Refused('Unsupported parameter: "n"'))
    assert refuses_n(Refused("invalid parameter n: only 1 is supported"))
    for other in ("'logprobs' is not supported", "n/a is not an answer", "bad request"):
        assert not refuses_n(Refused(other))


def test_logprobs_asked_for_by_name_and_refused_are_an_error_not_dropped(
    fake_llm, make_judge, ask, questions
):
    fake_llm.refuse_logprobs = True
    fake_llm.script("", "ANSWER: yes")
    judge = make_judge(structured_output=False, logprobs=True)
    with pytest.raises(JudgeRejectedError, match="'logprobs' is not supported"):
        _answer(judge, ask(questions["mission"]))
    assert len(fake_llm.requests) == 1  # a client error: never retried


@pytest.mark.filterwarnings("ignore::UserWarning")  # pydantic, on litellm's mistral types
def test_a_model_litellm_says_gives_no_logprobs_is_not_asked_for_them(fake_llm, ask, questions):
    # litellm's tables: mistral's API takes no logprobs (openai/ models do, see above).
    fake_llm.script(MISSION_Q, "ANSWER: yes")
    judge = LiteLLMJudge(
        "mistral/mistral-small", api_base=fake_llm.base_url, api_key="k", structured_output=False
    )
    assert _answer(judge, ask(questions["mission"])).distribution == {"yes": 1.0}
    assert "logprobs" not in fake_llm.requests[-1]


@pytest.mark.filterwarnings("ignore::UserWarning")  # pydantic, on litellm's mistral types
@pytest.mark.parametrize(("samples", "requests"), [("auto", 3), (1, 1)])
def test_a_judge_read_from_labels_samples_three_answers_and_shows_a_split(
    fake_llm, ask, questions, samples, requests
):
    # Mistral's API gives no log-probabilities (and takes no n, so litellm drops it): by
    # default each ask is three requests at the re-ask temperature, and a judge flipping a
    # coin shows it in their shares; asked for one answer, it looks sure.
    fake_llm.script(MISSION_Q, "ANSWER: yes", "ANSWER: no", "ANSWER: no")
    judge = LiteLLMJudge(
        "mistral/mistral-small",
        api_base=fake_llm.base_url,
        api_key="k",
        structured_output=False,
        samples=samples,
    )
    answer = _answer(judge, ask(questions["mission"]))
    if samples == "auto":
        assert answer.distribution == pytest.approx({"yes": 1 / 3, "no": 2 / 3})
    else:
        assert answer.distribution == {"yes": 1.0}
    assert len(fake_llm.requests) == requests
    hot = 0.7 if samples == "auto" else 0.0
    assert all(body["temperature"] == hot for body in fake_llm.requests)


def test_logprobs_locate_the_label_inside_a_json_reply(fake_llm, make_judge, ask, questions):
    fake_llm.script(MISSION_Q, '{"answer": "yes"}', top={"yes": 0.8, "no": 0.2})
    judge = make_judge(logprobs=True, structured_output=True)
    answer = _answer(judge, ask(questions["mission"]))
    assert answer.distribution == pytest.approx({"yes": 0.8, "no": 0.2})


def test_a_reask_with_logprobs_still_uses_the_variants_prompt_and_temperature(
    fake_llm, make_judge, ask, questions
):
    fake_llm.script(MISSION_Q, "ANSWER: yes", top={"yes": 0.7, "no": 0.3})
    # re-ask 1 words the question its first alternate way
    fake_llm.script(
        questions["mission"].wordings[0][:40], "ANSWER: yes", top={"yes": 0.7, "no": 0.3}
    )
    judge = make_judge(logprobs=True, reask_temperature=0.9)
    first = ask(questions["mission"])
    _answer(judge, first)
    answer = _answer(judge, dataclasses.replace(first, variant=1))
    plain, reask = fake_llm.requests
    assert reask["temperature"] == 0.9 and plain["messages"] != reask["messages"]
    assert reask["logprobs"] is True
    assert answer.distribution == pytest.approx({"yes": 0.7, "no": 0.3})


def test_without_usable_logprobs_the_sampled_label_keeps_all_the_mass(
    fake_llm, make_judge, ask, questions
):
    fake_llm.script(MISSION_Q, "ANSWER: yes")  # the server sends tokens, but no alternatives
    answer = _answer(make_judge(logprobs=True), ask(questions["mission"]))
    assert answer.distribution == {"yes": 1.0}


def test_a_token_that_could_begin_two_labels_counts_for_neither(questions):
    question = questions["tradeoff"]  # offers n/a as well as no
    labels = {c.label for c in question.choices}
    assert {"no", "n/a"} <= labels
    tokens = [
        ("ANSWER: ", 0.0, ()),
        ("no", math.log(0.5), (("n", math.log(0.3)), ("yes", math.log(0.2)))),
    ]
    spread = logprob_distribution(question, tokens, question.choice("no"), structured=False)
    assert spread == pytest.approx({"no": 0.5 / 0.7, "yes": 0.2 / 0.7})


def test_the_answer_is_found_in_the_tokens_even_when_the_content_was_trimmed(questions):
    question = questions["G"]
    # llama.cpp returns the JSON without the code fence the tokens still spell.
    tokens = [
        ("```json\n", 0.0, ()),
        ('{"answer": "', 0.0, ()),
        ("yes", math.log(0.6), (("no", math.log(0.3)), ("No", math.log(0.1)))),
        ('"}', 0.0, ()),
    ]
    spread = logprob_distribution(question, tokens, question.choice("yes"), structured=True)
    assert spread == pytest.approx({"yes": 0.6, "no": 0.4})


def test_an_answer_missing_from_the_tokens_gives_no_distribution(questions):
    question = questions["mission"]
    tokens = [("ANSWER: maybe", 0.0, ())]
    assert logprob_distribution(question, tokens, question.choice("yes"), False) is None
    assert read_structured(questions["mission"], "not json") is None
    assert read_structured(questions["mission"], '["yes"]') is None
