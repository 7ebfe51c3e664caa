"""A judge that refuses on a re-ask has refused: the cell is refused, never an outage."""

from __future__ import annotations

import asyncio

from canon.check.pipeline import baseline_from_run, check_run, score_run
from canon.check.runner import ScoringPlan
from canon.core.artifact import Artifact
from canon.core.baseline import baseline_from_data, baseline_to_data
from canon.core.constitution import Constitution, Principle
from canon.core.scoring import Answer
from canon.errors import JudgeRefusedError
from canon.judge.base import JudgeRequest
from canon.project.store import load_rubric
from canon.report.check import exit_code_for, remedy

RUBRIC = load_rubric()
CONSTITUTION = Constitution("Help with billing.", (Principle("Quote only the handbook."),))


class RefusesOnReask:
    """Clean answers, except that a0's gate first reads a contradiction and every re-ask or
    second look of it is refused."""

    name = "refuses-on-reask"

    def __init__(self, *, refuse: bool) -> None:
        self.refuse = refuse
        self.refusals = 0

    async def answer(self, request: JudgeRequest) -> Answer:
        question, key = request.question, request.artifact.key
        if self.refuse and key == "a0" and question.id == "G":
            if request.variant == 0:
                return Answer({"yes": 1.0}, "It contradicts the mission.")
            self.refusals += 1
            raise JudgeRefusedError(f"question {question.id}: the judge refused to judge: unsafe")
        return Answer({"no" if question.id == "G" else "yes": 1.0})


def _suite(run: int) -> list[Artifact]:
    return [Artifact(f"Reply {i}, run {run}.", id=f"a{i}") for i in range(3)]


def _check(judge: RefusesOnReask):
    plan = ScoringPlan(CONSTITUTION, RUBRIC, RefusesOnReask(refuse=False), 0.85)
    baseline = baseline_from_data(
        baseline_to_data(baseline_from_run(plan, asyncio.run(score_run(plan, _suite(0))))),
        source="test",
    )
    plan = ScoringPlan(CONSTITUTION, RUBRIC, judge, 0.85)
    return asyncio.run(check_run(plan, _suite(1), baseline)), baseline


def test_a_refused_reask_makes_the_cell_refused_and_the_check_judge_refused_not_incomplete():
    judge = RefusesOnReask(refuse=True)
    outcome, baseline = _check(judge)
    assert judge.refusals >= 1
    (result,) = (r for r in outcome.results if r.key == "a0")
    (cell,) = (c for c in result.cells if c.id == "G")
    assert cell.state == "refused" and "unsafe" in (cell.error or "")
    assert not result.canon
    comparison = outcome.comparison
    # Before: the failed re-ask left the gate "unavailable" and the check exit 3 (retry CI).
    assert comparison.status == "regressed" and exit_code_for(comparison) == 1
    assert [n.key for n in comparison.failures] == ["a0"]
    assert remedy(comparison, baseline).startswith("JUDGE REFUSED")


def test_the_other_artifacts_are_untouched_by_one_refusal():
    outcome, _ = _check(RefusesOnReask(refuse=True))
    assert {r.key for r in outcome.results if r.canon} == {"a1", "a2"}
