"""LiteLLMJudge and `canon score` against a real model: SmolLM2-135M served by llama.cpp.

A 135M model is a poor judge, so these tests check the plumbing, not its verdicts: every
question ends as a label it offers or as an unscored cell with a reason, never a crash and
never a pass on a reply Canon cannot read. With answers constrained by a grammar, every
question must get a label. The server starts once per session (the local_model fixture,
conftest.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from canon.core.rubric import Choice, Question
from canon.core.scoring import Answer
from canon.errors import CanonError, JudgeUnavailableError
from canon.judge.answer_formats import REASON_MAX_LENGTH
from canon.judge.base import JudgeRequest
from canon.judge.litellm_judge import LiteLLMJudge
from canon.judge.request_body import answer_grammar

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ARTIFACT = (
    "I can see two charges of 19.99 EUR on 3 March. Section 4.2 of the billing handbook "
    "covers duplicate charges, so I have refunded the second one."
)
FEW = ("mission", "G", "P1")  # both label sets: yes/partly/no/n/a and yes/no


def _judge(model: Any, **options: Any) -> LiteLLMJudge:
    settings: dict[str, Any] = {
        "api_base": model.base_url,
        "api_key": "none",
        "timeout": 60,
        "max_attempts": 1,  # temperature 0: a retry would get the same reply
        "max_tokens": 32,
    }
    settings.update(options)
    return LiteLLMJudge(model.model, **settings)


def _ask_all(
    judge: LiteLLMJudge, requests: list[JudgeRequest]
) -> dict[str, Answer | BaseException]:
    async def ask() -> list[Answer | BaseException]:
        # One at a time, as the server has one slot; gather would only queue them there.
        results: list[Answer | BaseException] = []
        for request in requests:
            try:
                results.append(await judge.answer(request))
            except CanonError as exc:  # unscored, or a model that ignores the format
                results.append(exc)
        return results

    return {r.question.id: out for r, out in zip(requests, asyncio.run(ask()), strict=True)}


def _labels(question: Question) -> set[str]:
    return {choice.label for choice in question.choices}


@pytest.fixture
def requests(questions: dict[str, Question], ask: Any) -> list[JudgeRequest]:
    """A few rubric questions about one short artifact."""
    return [ask(questions[qid], ARTIFACT) for qid in FEW]


def test_the_answer_grammar_admits_only_the_answer_line_with_the_questions_labels(questions):
    assert answer_grammar(questions["G"]) == 'root ::= "ANSWER: " ("yes" | "no")'
    choices = (Choice('say "hi"', 1.0), Choice("back\\slash", 0.0))
    quoted = Question("q", "facet", "Which?", choices)
    assert answer_grammar(quoted) == r'root ::= "ANSWER: " ("say \"hi\"" | "back\\slash")'


def test_a_constrained_judge_sends_the_grammar_and_an_unconstrained_one_does_not(
    make_judge, fake_llm, questions, ask
):
    fake_llm.script("", "ANSWER: no")
    request = ask(questions["G"], ARTIFACT)
    for judge in (make_judge(constrain_answers=True), make_judge()):
        assert asyncio.run(judge.answer(request)).distribution == {"no": 1.0}
    constrained, free = fake_llm.requests
    assert constrained["grammar"] == answer_grammar(questions["G"])
    assert "grammar" not in free


@pytest.mark.slow
def test_the_local_model_answers_with_an_offered_label_or_leaves_the_cell_unscored(
    local_model, requests
):
    results = _ask_all(_judge(local_model, structured_output=False), requests)
    for request in requests:
        result = results[request.question.id]
        if isinstance(result, Answer):
            assert set(result.distribution) <= _labels(request.question)
            assert sum(result.distribution.values()) == pytest.approx(1.0)
        else:
            # A reason naming the question, never an outage: the server did answer.
            assert not isinstance(result, JudgeUnavailableError), result
            assert f"question {request.question.id}" in str(result)


@pytest.mark.slow
def test_with_constrained_answers_the_local_model_labels_every_question(local_model, requests):
    # one answer an ask: labels read alone, every one a single label
    judge = _judge(local_model, constrain_answers=True, logprobs=False, samples=1)
    results = _ask_all(judge, requests)
    for request in requests:
        answer = results[request.question.id]
        assert isinstance(answer, Answer), answer
        ((label, mass),) = answer.distribution.items()
        assert label in _labels(request.question) and mass == 1.0


@pytest.mark.slow
def test_with_a_json_schema_the_local_model_labels_every_question(local_model, requests):
    judge = _judge(local_model, structured_output=True, max_tokens=None, logprobs=False, samples=1)
    results = _ask_all(judge, requests)
    for request in requests:
        answer = results[request.question.id]
        assert isinstance(answer, Answer), answer
        ((label, mass),) = answer.distribution.items()
        assert label in _labels(request.question) and mass == 1.0
        # The schema asks for a reason first; llama.cpp honours it, so one is there, and it
        # is the reason alone, not the JSON reply around it.
        assert answer.rationale and not answer.rationale.lstrip().startswith("{")
        assert len(answer.rationale) <= REASON_MAX_LENGTH


@pytest.mark.slow
def test_with_reasons_off_the_local_model_answers_the_bare_schema(local_model, requests):
    judge = _judge(local_model, structured_output=True, max_tokens=None, reasons=False)
    results = _ask_all(judge, requests)
    for request in requests:
        answer = results[request.question.id]
        assert isinstance(answer, Answer), answer
        assert answer.rationale is None


@pytest.mark.slow
@pytest.mark.parametrize("form", ["grammar", "schema"])
def test_by_default_llama_cpp_gives_real_confidences_over_the_offered_labels(
    local_model, requests, form
):
    # Without a reason: after writing one, this 135M model's (unconstrained) top tokens at
    # the answer hold no rival label, so every confidence would be 1.0 and prove nothing.
    options: dict[str, Any] = (
        {"constrain_answers": True} if form == "grammar" else {"max_tokens": None, "reasons": False}
    )
    results = _ask_all(_judge(local_model, **options), requests)  # logprobs: auto
    confidences = []
    for request in requests:
        answer = results[request.question.id]
        assert isinstance(answer, Answer), answer
        assert set(answer.distribution) <= _labels(request.question)
        assert sum(answer.distribution.values()) == pytest.approx(1.0)
        confidences.append(max(answer.distribution.values()))
    # One call per question, yet not every confidence is the 1.0 a single sample gives.
    assert min(confidences) < 0.999


@pytest.mark.slow
def test_canon_score_reaches_a_verdict_with_the_local_model_in_a_real_process(
    local_model, tmp_path
):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project)
    (project / "canon.yaml").write_text(
        "judge_model: openai:smollm2\nconstitution_path: constitution.yaml\n"
        # Default settings (concurrency 8, timeout 30) against llama.cpp's one slot: the
        # limiter must not queue requests there until they time out, and the JSON schema
        # keeps even a 135M model to the offered labels.
        "suite: one.yaml\n"
    )
    (project / "one.yaml").write_text(f"artifacts:\n  - id: refund\n    text: {ARTIFACT}\n")
    env = {**os.environ, "OPENAI_BASE_URL": local_model.base_url, "OPENAI_API_KEY": "none"}
    completed = subprocess.run(
        [sys.executable, "-m", "canon.cli", "score", "--quiet", "--format", "json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert completed.returncode in (0, 1), completed.stderr
    document = json.loads(completed.stdout)
    (artifact,) = document["artifacts"]
    assert len(artifact["questions"]) == 10
    for qid, cell in artifact["questions"].items():
        assert cell.get("error") is None, (qid, cell)
        assert cell["state"] != "unscored", (qid, cell)
    assert document["summary"]["unscored_questions"] == 0


@pytest.mark.slow
def test_read_from_labels_the_local_model_is_sampled_one_answer_a_request(local_model, requests):
    # llama.cpp's server gives one answer a request (it refuses n above 1 with a 400): by
    # default a judge reading labels alone asks three answers an ask, so each is a request
    # of its own, and the answer is their shares.
    judge = _judge(local_model, constrain_answers=True, logprobs=False)
    assert judge.samples == 3
    results = _ask_all(judge, requests[:3])
    for request in requests[:3]:
        answer = results[request.question.id]
        assert isinstance(answer, Answer), answer
        assert set(answer.distribution) <= _labels(request.question)
        assert sum(answer.distribution.values()) == pytest.approx(1.0)
        assert all(round(3 * mass, 6).is_integer() for mass in answer.distribution.values())
        assert answer.usage is not None and answer.usage.calls >= 3
