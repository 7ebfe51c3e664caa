"""canon calibrate reports paraphrase and order stability, not only re-ask flips."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from canon.check.calibrate import calibrate, calibration_cells, paraphrases, reorderings
from canon.check.runner import ScoringPlan
from canon.cli import main
from canon.core.artifact import Artifact
from canon.core.constitution import Constitution, Principle
from canon.core.rubric import Question
from canon.core.scoring import Answer
from canon.judge.base import JudgeRequest
from canon.judge.mock import MockJudge, _match
from canon.project.store import load_rubric

RUBRIC = load_rubric()
CONSTITUTION = Constitution("Serve customers.", (Principle("Be honest."),))
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _biased(question: Question, text: str) -> str:
    """Misreads every facet in its third wording; picks the gate's first listed choice."""
    if question.kind == "gate":
        return question.choices[0].label
    return "no" if question.text in _third_wordings() else "yes"


def _third_wordings() -> set[str]:
    return {q.wordings[1] for q in RUBRIC.questions_for(CONSTITUTION) if q.wordings}


def test_paraphrase_and_order_stability_show_what_moves_the_answers():
    plan = ScoringPlan(CONSTITUTION, RUBRIC, MockJudge(_biased), 0.5)
    artifacts = [Artifact(f"Reply {i}.", id=f"a{i}") for i in range(10)]
    found = asyncio.run(calibrate(plan, artifacts, cells=70, repeats=2, seed=0))
    # one wording of three misread on every facet and principle cell
    assert found.paraphrase["facet"].flips * 3 == found.paraphrase["facet"].answers
    assert found.paraphrase["principle"].flips * 3 == found.paraphrase["principle"].answers
    assert found.paraphrase["gate"].flips == 0  # the gate's wording never mattered
    # the gate follows the order: one of its two orders disagrees; facets never move
    assert found.order["gate"].flips * 2 == found.order["gate"].answers > 0
    assert found.order["facet"].flips == 0 and found.order["facet"].answers > 0


def test_the_stability_questions_change_only_the_wording_or_only_the_order():
    question = RUBRIC.gate
    worded = paraphrases(question)
    assert [q.text for q in worded] == [question.text, *question.wordings]
    assert all(q.choices == question.choices for q in worded)
    ordered = reorderings(question)
    assert [tuple(c.label for c in q.choices) for q in ordered] == [("yes", "no"), ("no", "yes")]
    assert all(q.text == question.text for q in ordered)
    graded = reorderings(RUBRIC.fixed[0])
    assert len({tuple(c.label for c in q.choices) for q in graded}) == 3


def test_a_script_keyed_on_the_rubric_text_answers_every_wording():
    judge = MockJudge({"serve the mission": "no", "__default__": "yes"})
    for put in paraphrases(RUBRIC.fixed[0]):
        assert _match(judge._script, put) == "no"  # type: ignore[arg-type]
    # and a key never matches another question's alternate wording
    # ("contradicts" is in a wording of the consistency question, not in its text)
    gate_only = MockJudge({"contradict": "no", "__default__": "yes"})
    consistency = RUBRIC.fixed[3]
    assert "contradicts" in consistency.wordings[0]
    assert _match(gate_only._script, consistency) is None  # the default answers it
    assert _match(gate_only._script, RUBRIC.gate) == "no"  # type: ignore[arg-type]


def test_canon_calibrate_prints_both_stabilities(tmp_path, monkeypatch):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project)
    monkeypatch.chdir(project)
    result = CliRunner().invoke(main, ["calibrate", "--cells", "12", "--repeats", "3"])
    assert result.exit_code == 0, result.output
    assert "paraphrase stability" in result.stdout and "order stability" in result.stdout
    document = json.loads(
        CliRunner().invoke(main, ["calibrate", "--format", "json", "--cells", "8"]).stdout
    )
    for key in ("paraphrase_stability", "order_stability"):
        assert document[key] and all(v["flips"] == 0 for v in document[key].values())


@pytest.mark.parametrize("question", RUBRIC.questions_for(CONSTITUTION))
def test_every_question_has_three_wordings_to_calibrate(question):
    assert len(paraphrases(question)) == 3


def test_the_run_sends_exactly_the_requests_its_estimate_counts():
    sent: list[JudgeRequest] = []
    judge = MockJudge(_biased)

    class Recording:
        name = "recording"

        async def answer(self, request: JudgeRequest) -> Answer:
            sent.append(request)
            return await judge.answer(request)

    plan = ScoringPlan(CONSTITUTION, RUBRIC, Recording(), 0.5)
    artifacts = [Artifact(f"Reply {i}.", id=f"a{i}") for i in range(4)]
    listed = calibration_cells(plan, artifacts, cells=9, repeats=3, seed=2)
    done: list[tuple[int, int, str]] = []
    found = asyncio.run(
        calibrate(
            plan,
            artifacts,
            cells=9,
            repeats=3,
            seed=2,
            on_cell=lambda d, t, cell: done.append((d, t, cell.question.id)),
        )
    )
    expected = [request for cell in listed for request in cell.requests]
    assert sorted(map(repr, sent)) == sorted(map(repr, expected))
    assert [(d, t) for d, t, _ in done] == [(i, 9) for i in range(1, 10)]
    assert sorted(q for *_, q in done) == sorted(cell.question.id for cell in listed)
    assert found.usage.reused == len(expected) and found.usage.run.calls == 0
