from __future__ import annotations

import asyncio

import pytest

from canon import Artifact, load_rubric
from canon.errors import JudgeScriptError, UsageError
from canon.judge.base import Judge, JudgeRequest
from canon.judge.mock import MockJudge


def _request(constitution, question_id: str, text: str = "An artifact.") -> JudgeRequest:
    rubric = load_rubric()
    question = next(q for q in rubric.questions_for(constitution) if q.id == question_id)
    return JudgeRequest(question, Artifact(text), constitution, rubric.instructions)


def _ask(judge: MockJudge, request: JudgeRequest):
    return asyncio.run(judge.answer(request))


def test_mock_judge_is_a_judge():
    assert isinstance(MockJudge(script={"__default__": "yes"}), Judge)


def test_substring_of_the_question_picks_the_choice(constitution):
    judge = MockJudge(script={"serve the mission": "partly", "__default__": "no"})
    assert _ask(judge, _request(constitution, "mission")).distribution == {"partly": 1.0}
    assert _ask(judge, _request(constitution, "scope")).distribution == {"no": 1.0}
    assert judge.calls == 2


def test_question_id_keys_win_over_substrings(constitution):
    judge = MockJudge(script={"principle": "no", "P2": "n/a"})
    assert _ask(judge, _request(constitution, "P2")).distribution == {"n/a": 1.0}
    assert _ask(judge, _request(constitution, "P1")).distribution == {"no": 1.0}


def test_unmatched_question_raises_naming_the_question(constitution):
    judge = MockJudge(script={"serve the mission": "yes"})
    with pytest.raises(JudgeScriptError) as info:
        _ask(judge, _request(constitution, "scope"))
    assert "question scope" in str(info.value)
    assert "__default__" in str(info.value)


def test_a_label_the_question_does_not_offer_raises(constitution):
    judge = MockJudge(script={"__default__": "partly"})
    with pytest.raises(JudgeScriptError, match="offers only: yes, no"):
        _ask(judge, _request(constitution, "G"))


def test_callable_script_sees_the_question_and_artifact_text(constitution):
    seen = []

    def script(question, text):
        seen.append((question.id, text))
        return {"yes": 0.75, "no": 0.25}

    judge = MockJudge(script=script)
    answer = _ask(judge, _request(constitution, "P3", "hello"))
    assert answer.distribution == {"yes": 0.75, "no": 0.25}
    assert seen == [("P3", "hello")]


@pytest.mark.parametrize("script", [42, ["yes"], {"": "yes"}])
def test_a_script_of_the_wrong_shape_is_refused(script):
    with pytest.raises(UsageError):
        MockJudge(script=script)
