"""Principles with ids keep their comparisons when the constitution is reordered."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from canon.cli import main
from canon.core.artifact import Artifact
from canon.core.baseline import baseline_from_results, recorded_question
from canon.core.compare import gate
from canon.core.constitution import Constitution, Principle
from canon.core.scoring import Answer, judge_verdict, score_cell
from canon.judge.base import JudgeRequest
from canon.judge.mock import MockJudge
from canon.project.store import load_rubric

RUBRIC = load_rubric()
HONEST = Principle("Be honest.", id="honest")
ESCALATE = Principle("Escalate refunds.", id="escalate")
NEW = Principle("Answer in the customer's language.", id="language")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _result(constitution: Constitution, key: str, **replies: str):
    cells = []
    for question in RUBRIC.questions_for(constitution):
        label = replies.get(
            question.principle or question.id, "no" if question.kind == "gate" else "yes"
        )
        cells.append(score_cell(question, Answer({label: 1.0})))
    return judge_verdict(key, cells, 0.5)


def _baseline(constitution: Constitution):
    return baseline_from_results(
        [_result(constitution, "a")], rubric=RUBRIC, judge="mock", constitution="x", threshold=0.5
    )


def test_a_principle_inserted_at_the_top_keeps_every_comparison():
    before = Constitution("Serve.", (HONEST, ESCALATE))
    after = Constitution("Serve.", (NEW, HONEST, ESCALATE))
    comparison = gate([_result(after, "a", escalate="no")], _baseline(before), 0.5)
    (flip,) = comparison.flips
    # escalate was P2 in the baseline and is P3 now: matched by its id, not its position
    assert (flip.question, flip.principle, flip.label) == ("P3", "escalate", "P3 [escalate]")
    assert not any("different principle" in note for note in comparison.notes)


def test_per_question_rates_after_an_inserted_principle_compare_the_same_principle():
    before = Constitution("Serve.", (HONEST, ESCALATE))
    after = Constitution("Serve.", (NEW, HONEST, ESCALATE))
    baseline = baseline_from_results(
        [_result(before, "a", escalate="no"), _result(before, "b")],
        rubric=RUBRIC,
        judge="mock",
        constitution="x",
        threshold=0.5,
    )
    now = [_result(after, "a", escalate="no"), _result(after, "b", language="no")]
    rates = gate(now, baseline, 0.5).question_rates
    then_rate, now_rate = rates["P3"]  # escalate: P2 in the baseline, P3 now
    assert (then_rate.successes, then_rate.trials) == (1, 2)
    assert (now_rate.successes, now_rate.trials) == (1, 2)
    then_rate, now_rate = rates["P1"]  # the new principle had no baseline row
    assert (then_rate.trials, now_rate.successes, now_rate.trials) == (0, 1, 2)
    then_rate, _ = rates["P2"]  # honest: P1 in the baseline, P2 now
    assert (then_rate.successes, then_rate.trials) == (2, 2)


def test_a_removed_principle_keeps_its_baseline_rate_under_its_id():
    before = Constitution("Serve.", (HONEST, ESCALATE))
    baseline = _baseline(before)
    rates = gate([_result(Constitution("Serve.", (ESCALATE,)), "a")], baseline, 0.5).question_rates
    then_rate, now_rate = rates["honest"]
    assert (then_rate.trials, now_rate.trials) == (1, 0)
    assert rates["P1"][0].trials == 1  # escalate, matched by id


def test_a_new_principle_has_no_baseline_row_and_reordering_is_harmless():
    before = Constitution("Serve.", (HONEST, ESCALATE))
    record = _baseline(before).artifacts["a"]
    after = RUBRIC.questions_for(Constitution("Serve.", (ESCALATE, NEW, HONEST)))
    by_principle = {q.principle: q for q in after if q.principle}
    assert recorded_question(record, by_principle["language"]) is None
    honest = recorded_question(record, by_principle["honest"])
    assert honest is not None and honest.subject == "Be honest."
    swapped = gate(
        [_result(Constitution("Serve.", (ESCALATE, HONEST)), "a")], _baseline(before), 0.5
    )
    assert swapped.flips == () and swapped.status == "conforms"


def test_principles_without_ids_still_compare_by_position_with_the_note():
    before = Constitution("Serve.", (Principle("Be honest."), Principle("Escalate refunds.")))
    after = Constitution("Serve.", (Principle("Escalate refunds."), Principle("Be honest.")))
    comparison = gate([_result(after, "a")], _baseline(before), 0.5)
    assert any("P1 asks about a different principle" in note for note in comparison.notes)


def test_a_mock_judge_key_may_name_a_principle_by_id():
    constitution = Constitution("Serve.", (HONEST, ESCALATE))
    questions = {q.principle: q for q in RUBRIC.questions_for(constitution) if q.principle}
    judge = MockJudge(script={"escalate": "no", "__default__": "yes"})
    import asyncio

    ask = lambda q: asyncio.run(  # noqa: E731
        judge.answer(JudgeRequest(q, Artifact("x"), constitution, RUBRIC.instructions))
    )
    assert ask(questions["escalate"]).distribution == {"no": 1.0}
    assert ask(questions["honest"]).distribution == {"yes": 1.0}


def test_check_after_inserting_a_principle_with_an_id_still_catches_its_flip(tmp_path, monkeypatch):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project)
    monkeypatch.chdir(project)
    runner = CliRunner()
    assert runner.invoke(main, ["accept", "--quiet"]).exit_code == 0
    constitution = project / "constitution.yaml"
    text = constitution.read_text()
    constitution.write_text(
        text.replace(
            "principles:\n", "principles:\n  - id: be-brief\n    text: Keep replies short.\n", 1
        )
    )
    script = project / "judge-script.yaml"
    script.write_text('escalate-large-refunds: "no"\n' + script.read_text())
    result = runner.invoke(main, ["check", "--quiet"])
    assert result.exit_code == 1, result.output
    assert "[escalate-large-refunds]" in result.stdout and "REGRESSION" in result.stdout
