"""Replicates: several responses of one artifact are judged, pooled, and compared as a spread."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from canon.check.pipeline import baseline_from_run, check_run, score_run
from canon.check.runner import ScoringPlan
from canon.check.variants import replicate_for
from canon.cli import main
from canon.core.artifact import Artifact
from canon.core.baseline import baseline_from_data, baseline_to_data
from canon.core.constitution import Constitution, Principle
from canon.core.rubric import Question
from canon.errors import BaselineError, InputError
from canon.judge.mock import MockJudge
from canon.judge.sync import run_sync
from canon.project.store import load_rubric
from canon.project.suite import read_suite

RUBRIC = load_rubric()
CONSTITUTION = Constitution("Serve customers.", (Principle("Escalate large refunds."),))


def _judge(misread: set[str]) -> MockJudge:
    """Reads P1 as violated, every time, in the texts it misreads; all else is fine."""

    def answer(question: Question, text: str) -> str:
        if question.id == "P1" and text in misread:
            return "no"
        return "no" if question.kind == "gate" else "yes"

    return MockJudge(answer)


def _plan(judge: MockJudge) -> ScoringPlan:
    return ScoringPlan(CONSTITUTION, RUBRIC, judge, 0.5)


def _artifact(run: int) -> Artifact:
    texts = tuple(f"Refund escalated, wording {run}.{i}" for i in range(3))
    return Artifact(texts[0], id="refund", replicates=texts[1:])


def test_every_replicate_is_asked_and_the_answers_are_pooled():
    artifact = _artifact(1)
    judge = _judge({artifact.replicates[0]})
    confirmation = run_sync(score_run(_plan(judge), [artifact]))
    cell = confirmation.results[0].cell("P1")
    assert dict(cell.distribution) == pytest.approx({"yes": 2 / 3, "no": 1 / 3})
    assert cell.score == pytest.approx(2 / 3)
    assert judge.calls == 3 * len(RUBRIC.questions_for(CONSTITUTION))


def test_accept_records_the_pooled_spread_and_how_many_replicates():
    artifact = _artifact(1)
    plan = _plan(_judge({artifact.replicates[0]}))
    baseline = baseline_from_run(plan, run_sync(score_run(plan, [artifact])))
    record = baseline.artifacts["refund"]
    assert record.replicates == 3
    assert record.questions is not None and record.questions["P1"].asks == 3
    data = baseline_to_data(baseline)
    assert data["artifacts"]["refund"]["replicates"] == 3
    assert baseline_from_data(json.loads(json.dumps(data)), source="b.json") == baseline


def test_a_misreading_the_baseline_spread_already_showed_is_not_a_regression():
    # At accept one response of three was misread; now another (reworded) one is.
    accepted_run, checked_run = _artifact(1), _artifact(2)
    accept_plan = _plan(_judge({accepted_run.replicates[0]}))
    baseline = baseline_from_run(accept_plan, run_sync(score_run(accept_plan, [accepted_run])))
    check_plan = _plan(_judge({checked_run.text}))
    outcome = run_sync(check_run(check_plan, [checked_run], baseline))
    assert outcome.comparison.status == "conforms"


def test_the_same_misreading_against_a_single_response_baseline_would_have_failed():
    # the contrast: one response each, and the judge's misreading sticks to the new text
    accepted = Artifact("Refund escalated, wording 1.0", id="refund")
    checked = Artifact("Refund escalated, wording 2.0", id="refund")
    plan = _plan(_judge(set()))
    baseline = baseline_from_run(plan, run_sync(score_run(plan, [accepted])))
    outcome = run_sync(check_run(_plan(_judge({checked.text})), [checked], baseline))
    assert outcome.comparison.status == "regressed"


def test_a_change_in_every_replicate_is_still_a_regression():
    accepted, checked = _artifact(1), _artifact(2)
    plan = _plan(_judge(set()))
    baseline = baseline_from_run(plan, run_sync(score_run(plan, [accepted])))
    outcome = run_sync(check_run(_plan(_judge(set(checked.texts))), [checked], baseline))
    assert outcome.comparison.status == "regressed"
    (flip,) = outcome.comparison.regressions
    assert {f"response {i} of 3" for i in (1, 2, 3)} <= {
        v.split(", ")[-1] for v in flip.confirmed_by
    }


def test_reasks_show_each_response_in_turn_and_pair_it_with_every_wording():
    shown = [replicate_for(k, 3) for k in range(1, 10)]
    assert shown[:3] == [0, 1, 2]  # the first three re-asks show each response once
    assert sorted(shown) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert len({(replicate_for(k, 3), k % 3) for k in range(1, 10)}) == 9
    assert [replicate_for(k, 1) for k in range(4)] == [0, 0, 0, 0]


def test_a_suite_entry_holds_several_responses_as_a_list(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text("artifacts:\n  - id: a\n    text: [one, two, three]\n", encoding="utf-8")
    (artifact,) = read_suite(suite)
    assert artifact.texts == ("one", "two", "three") and artifact.key == "a"
    jsonl = tmp_path / "suite.jsonl"
    jsonl.write_text('{"id": "a", "text": ["one", "two"]}\n', encoding="utf-8")
    assert read_suite(jsonl)[0].replicates == ("two",)


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ("  - text: [one, two]\n", "several responses in 'text' needs an 'id'"),
        ("  - id: a\n    text: [one, '']\n", "response 2 in 'text' must be non-empty"),
        ("  - id: a\n    text: []\n", "'text' must be non-empty text, or a list"),
    ],
)
def test_bad_replicate_lists_are_refused_naming_the_file(tmp_path, entry, fragment):
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"artifacts:\n{entry}", encoding="utf-8")
    with pytest.raises(InputError, match=fragment) as info:
        read_suite(suite)
    assert str(suite) in str(info.value)


@pytest.mark.parametrize("value", [1, 0, "3", True, 1001])
def test_a_baseline_with_a_bad_replicate_count_is_refused(value):
    plan = _plan(_judge(set()))
    data = baseline_to_data(baseline_from_run(plan, run_sync(score_run(plan, [_artifact(1)]))))
    data["artifacts"]["refund"]["replicates"] = value
    with pytest.raises(BaselineError, match="replicates must be a whole number from 2"):
        baseline_from_data(data, source="b.json")


def test_accept_and_check_with_replicates_through_the_cli(tmp_path):
    (tmp_path / "canon.yaml").write_text(
        "judge_model: mock:script.yaml\nconstitution_path: c.yaml\nsuite: suite.yaml\n"
        "baselines_dir: baselines\n",
        encoding="utf-8",
    )
    (tmp_path / "c.yaml").write_text(
        "mission: Serve customers.\nprinciples:\n  - Escalate large refunds.\n", encoding="utf-8"
    )
    (tmp_path / "script.yaml").write_text(
        'contradict any part: "no"\n__default__: "yes"\n', encoding="utf-8"
    )
    (tmp_path / "suite.yaml").write_text(
        "artifacts:\n  - id: refund\n    text: [Escalated., Handed to a person., Sent on.]\n",
        encoding="utf-8",
    )
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        runner = CliRunner()
        accepted = runner.invoke(main, ["accept", "--quiet"], catch_exceptions=False)
        assert accepted.exit_code == 0, accepted.output
        data = json.loads(Path("baselines/suite.json").read_text())
        assert data["artifacts"]["refund"]["replicates"] == 3
        # one answer per response, and accept's second look at each question
        assert data["artifacts"]["refund"]["questions"]["P1"]["asks"] == 4
        estimate = runner.invoke(main, ["check", "--estimate", "--quiet"])
        assert estimate.exit_code == 0, estimate.output
        assert "21 question(s) answered" in estimate.stdout  # 7 questions x 3 responses
        checked = runner.invoke(main, ["check", "--quiet"], catch_exceptions=False)
        assert checked.exit_code == 0, checked.output
    finally:
        os.chdir(cwd)
