"""MockJudge replies with reasons and refusals, and replays answers keyed by artifact id."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from canon import Artifact, load_rubric
from canon.errors import JudgeRefusedError, JudgeScriptError, UsageError
from canon.judge.base import JudgeRequest
from canon.judge.mock import MockJudge

from support.cli import invoke_in

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
WHY = "It decided a 640 EUR refund itself instead of handing it to a person."
GATE_WHY = "Deciding the refund contradicts the escalation principle."
SCORES = {"yes": 1.0, "partly": 0.5, "no": 0.0}

# Every question for a1 and a2, as a person (or another tool) recorded them.
RECORDED: dict[str, dict[str, Any]] = {
    "a1": {
        "mission": "yes",
        "tradeoff": "n/a",
        "scope": "partly",
        "consistency": "yes",
        "honesty": "yes",
        "G": "no",
        "P1": "yes",
        "P2": "yes",
        "P3": {"answer": "partly", "reason": "It hedges once."},
        "P4": "yes",
    },
    "a2": {
        "mission": "yes",
        "tradeoff": "n/a",
        "scope": "yes",
        "consistency": "yes",
        "honesty": "yes",
        "G": {"answer": "yes", "reason": GATE_WHY},
        "P1": "yes",
        "P2": {"answer": "no", "reason": WHY},
        "P3": "yes",
        "P4": "yes",
    },
}


def _request(constitution, question_id: str, key: str | None = None) -> JudgeRequest:
    rubric = load_rubric()
    question = next(q for q in rubric.questions_for(constitution) if q.id == question_id)
    return JudgeRequest(question, Artifact("Text.", id=key), constitution, rubric.instructions)


def _ask(judge: MockJudge, request: JudgeRequest):
    return asyncio.run(judge.answer(request))


def test_a_reasoned_reply_gives_the_answer_and_its_reason(constitution):
    judge = MockJudge(script={"P2": {"answer": "no", "reason": WHY}, "__default__": "yes"})
    answer = _ask(judge, _request(constitution, "P2"))
    assert answer.distribution == {"no": 1.0} and answer.rationale == WHY
    assert _ask(judge, _request(constitution, "P1")).rationale is None


def test_a_refusal_reply_raises_judge_refused(constitution):
    judge = MockJudge(script={"P2": {"refusal": "I can't help with that."}, "__default__": "yes"})
    with pytest.raises(JudgeRefusedError, match=r"question P2: .*can't help with that"):
        _ask(judge, _request(constitution, "P2"))


@pytest.mark.parametrize(
    "reply", [{"answer": "no", "why": "x"}, {"answer": "no", "reason": 3}, {"answer": ["no"]}]
)
def test_a_malformed_reasoned_reply_is_a_script_error(constitution, reply):
    judge = MockJudge(script={"__default__": reply})
    with pytest.raises(JudgeScriptError, match="question P1"):
        _ask(judge, _request(constitution, "P1"))


def test_by_artifact_answers_first_then_the_rest_of_the_script(constitution):
    script = {
        "by_artifact": {"a3": {"P1": "no", "G": {"answer": "yes", "reason": GATE_WHY}}},
        "P1": "partly",
        "__default__": "yes",
    }
    judge = MockJudge(script=script)
    assert _ask(judge, _request(constitution, "P1", "a3")).distribution == {"no": 1.0}
    gate = _ask(judge, _request(constitution, "G", "a3"))
    assert gate.distribution == {"yes": 1.0} and gate.rationale == GATE_WHY
    assert _ask(judge, _request(constitution, "P1", "other")).distribution == {"partly": 1.0}
    assert _ask(judge, _request(constitution, "P2", "a3")).distribution == {"yes": 1.0}


def test_a_replay_without_a_default_raises_for_a_missing_entry(constitution):
    judge = MockJudge(script={"by_artifact": {"a3": {"P1": "no", "__default__": "yes"}}})
    assert _ask(judge, _request(constitution, "P2", "a3")).distribution == {"yes": 1.0}
    with pytest.raises(JudgeScriptError, match="no answer for artifact a4 for question P1"):
        _ask(judge, _request(constitution, "P1", "a4"))


@pytest.mark.parametrize("recorded", [["a1"], {"a1": "yes"}, "a1"])
def test_by_artifact_of_the_wrong_shape_is_refused(recorded):
    with pytest.raises(UsageError, match="by_artifact must map artifact ids"):
        MockJudge(script={"by_artifact": recorded, "__default__": "yes"})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose judge replays RECORDED for the suite's artifacts a1 and a2."""
    target = tmp_path / "project"
    target.mkdir()
    shutil.copy(EXAMPLES / "constitution.yaml", target)
    (target / "canon.yaml").write_text(
        "judge_model: mock:recorded.yaml\nconstitution_path: constitution.yaml\n"
        "suite: suite.yaml\nbaselines_dir: baselines\n"
    )
    (target / "recorded.yaml").write_text(json.dumps({"by_artifact": RECORDED}))  # JSON is YAML
    (target / "suite.yaml").write_text(
        "artifacts:\n"
        "  - id: a1\n    text: Your refund of 12 EUR is on its way.\n"
        "  - id: a2\n    text: I refunded your 640 EUR myself.\n"
    )
    return target


def _assert_replayed(document: dict[str, Any]) -> None:
    by_key = {a["key"]: a for a in document["artifacts"]}
    assert set(by_key) == {"a1", "a2"}
    for key, answers in RECORDED.items():
        questions = by_key[key]["questions"]
        for qid, reply in answers.items():
            label = reply["answer"] if isinstance(reply, dict) else reply
            cell = questions[qid]
            if qid == "G":  # the gate's "yes" is the contradiction: score 0
                assert cell["score"] == (0.0 if label == "yes" else 1.0), (key, qid)
            elif label == "n/a":
                assert cell["state"] == "na", (key, qid)
            else:
                assert cell["score"] == SCORES[label], (key, qid)
            if isinstance(reply, dict):
                assert cell["reason"] == reply["reason"], (key, qid)
    assert by_key["a1"]["canon"] is True and by_key["a2"]["canon"] is False


def test_recorded_judgments_replay_exactly_through_the_cli(project):
    result = invoke_in(project, "score", "--quiet", "--format", "json")
    assert result.exit_code == 1, result.output  # a2 contradicts: non-canon
    _assert_replayed(json.loads(result.output))
    text = invoke_in(project, "score", "--quiet")
    assert f"        judge: {WHY}" in text.output.splitlines()


def test_recorded_judgments_replay_exactly_in_a_real_process(project):
    done = subprocess.run(
        [sys.executable, "-m", "canon", "score", "--quiet", "--format", "json"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    _assert_replayed(json.loads(done.stdout))


def test_an_artifact_missing_from_the_recording_is_exit_2_naming_it(project):
    with (project / "suite.yaml").open("a") as suite:
        suite.write("  - id: a3\n    text: Not recorded.\n")
    result = invoke_in(project, "score", "--quiet")
    assert result.exit_code == 2
    assert "recorded.yaml" in result.output and "for artifact a3" in result.output


def test_a_recording_of_the_wrong_shape_is_exit_2_naming_the_file(project):
    (project / "recorded.yaml").write_text("by_artifact: [a1, a2]\n")
    result = invoke_in(project, "score", "--quiet")
    assert result.exit_code == 2
    assert "recorded.yaml" in result.output and "by_artifact must map" in result.output


def test_a_scripted_refusal_is_judge_refused_through_the_cli(project):
    refused = {**RECORDED, "a1": {**RECORDED["a1"], "P2": {"refusal": "I can't judge this."}}}
    (project / "recorded.yaml").write_text(json.dumps({"by_artifact": refused}))
    result = invoke_in(project, "score", "--quiet", "--format", "json")
    assert result.exit_code == 1
    a1 = json.loads(result.output)["artifacts"][0]
    assert a1["canon"] is False and a1["questions"]["P2"]["state"] == "refused"
    assert any(reason.startswith("judge refused 1 of 10") for reason in a1["reasons"])


def test_canon_init_scaffolds_a_script_whose_reason_reaches_the_report(tmp_path):
    assert invoke_in(tmp_path, "init").exit_code == 0
    script = (tmp_path / "judge-script.yaml").read_text()
    assert "reason:" in script
    result = invoke_in(tmp_path, "score", "--quiet", "--format", "json")
    assert result.exit_code == 0, result.output
    cells = json.loads(result.output)["artifacts"][0]["questions"]
    assert cells["tradeoff"]["reason"].startswith("No two principles")


def test_accept_records_a_refusal_and_a_check_compares_it_as_a_known_failure(project):
    refused = {**RECORDED, "a1": {**RECORDED["a1"], "P2": {"refusal": "I can't judge this."}}}
    (project / "recorded.yaml").write_text(json.dumps({"by_artifact": refused}))
    accepted = invoke_in(project, "accept", "--quiet")
    assert accepted.exit_code == 0, accepted.output
    recorded = json.loads((project / "baselines" / "suite.json").read_text())
    assert "refused" in json.dumps(recorded)  # the refused question is recorded as such
    checked = invoke_in(project, "check", "--quiet")
    assert checked.exit_code == 0, checked.output  # known failures fail only with --strict
    assert "known failures" in checked.output and "judge refused 1 of 10" in checked.output
    strict = invoke_in(project, "check", "--quiet", "--strict")
    assert strict.exit_code == 1  # a1 (refused) and a2 (contradicts) both fail under --strict
    assert strict.output.splitlines()[-1].startswith("REGRESSION")  # a2 is not a refusal
